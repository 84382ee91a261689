#include "minkowski/ops/spmm.h"

#include <memory>
#include <string>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/parallel.h"
#include "fk/profile.h"
#include "minkowski/ops/feature_rows.h"
#include "minkowski/ops/spmm_device.h"

namespace minkowski {

namespace {

constexpr const char* kWhere = "minkowski::spmm";

std::vector<int64_t> index_values(const fk::Tensor& t, const char* what) {
  FK_CHECK(t.defined(), kWhere, std::string("a ") + what + " index tensor", "an undefined tensor");
  FK_CHECK(t.dtype() == fk::DType::I32 || t.dtype() == fk::DType::I64, kWhere,
           std::string("i32 or i64 ") + what, fk::name(t.dtype()));
  FK_CHECK(t.dim() == 1, kWhere, std::string("1-D ") + what, t.shape().str());
  return t.to_vector<int64_t>();  // from any device: the grouping is built on the host
}

fk::DType compute_dtype(const fk::Tensor& values, const fk::Tensor& dense) {
  return values.dtype() == fk::DType::F64 || dense.dtype() == fk::DType::F64 ? fk::DType::F64
                                                                             : fk::DType::F32;
}

// Entries grouped by `key` (counting sort, stable): begin (n_keys + 1), order.
struct Grouping {
  std::vector<int64_t> begin, order;
};
Grouping group_by(const std::vector<int64_t>& key, int64_t n_keys) {
  Grouping g;
  g.begin.assign(static_cast<size_t>(n_keys) + 1, 0);
  for (int64_t r : key) ++g.begin[r + 1];
  for (int64_t r = 0; r < n_keys; ++r) g.begin[r + 1] += g.begin[r];
  g.order.resize(key.size());
  std::vector<int64_t> fill(g.begin.begin(), g.begin.end() - 1);
  for (size_t p = 0; p < key.size(); ++p) g.order[fill[key[p]]++] = static_cast<int64_t>(p);
  return g;
}

// out[to[p]] += v[p] * in[from[p]] over the entries, rows of `out` owned by
// one thread each, entries in input order.
template <typename T>
fk::Tensor multiply(const std::vector<int64_t>& to, const std::vector<int64_t>& from,
                    int64_t out_rows, const fk::Tensor& v, const fk::Tensor& in) {
  const int64_t c = in.size(1);
  Grouping g = group_by(to, out_rows);
  fk::Tensor out = fk::zeros({out_rows, c}, {in.dtype()});
  const T* vp = v.data<T>();
  const T* ip = in.data<T>();
  T* op = out.data<T>();
  fk::parallel_for(0, out_rows, 256, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      T* o = op + r * c;
      for (int64_t e = g.begin[r]; e < g.begin[r + 1]; ++e) {
        const int64_t p = g.order[e];
        const T w = vp[p];
        const T* x = ip + from[p] * c;
        for (int64_t ch = 0; ch < c; ++ch) o[ch] += w * x[ch];
      }
    }
  });
  return out;
}

// multiply<T> on the operands' device (v and in in the compute dtype).
fk::Tensor product(const std::vector<int64_t>& to, const std::vector<int64_t>& from,
                   int64_t out_rows, const fk::Tensor& v, const fk::Tensor& in) {
  if (in.device().is_cuda()) {
    const Grouping g = group_by(to, out_rows);
    return device_spmm_rows(g.begin, g.order, from, v, in);
  }
  return in.dtype() == fk::DType::F64 ? multiply<double>(to, from, out_rows, v, in)
                                      : multiply<float>(to, from, out_rows, v, in);
}

template <typename T>
fk::Tensor value_grads(const CooList& a, const fk::Tensor& g, const fk::Tensor& dense) {
  const int64_t c = dense.size(1), nnz = static_cast<int64_t>(a.rows.size());
  fk::Tensor out = fk::empty({nnz}, {dense.dtype()});
  const T* gp = g.data<T>();
  const T* dp = dense.data<T>();
  T* op = out.data<T>();
  fk::parallel_for(0, nnz, 4096, [&](int64_t lo, int64_t hi) {
    for (int64_t p = lo; p < hi; ++p) {
      T s = 0;
      for (int64_t ch = 0; ch < c; ++ch) s += gp[a.rows[p] * c + ch] * dp[a.cols[p] * c + ch];
      op[p] = s;
    }
  });
  return out;
}

void check_operands(const CooList& a, const fk::Tensor& values, const fk::Tensor& dense) {
  const int64_t nnz = static_cast<int64_t>(a.rows.size());
  FK_CHECK(dense.defined() && dense.dim() == 2, kWhere, "a 2-D dense matrix (K x C)",
           dense.defined() ? dense.shape().str() : "undefined");
  FK_CHECK(dense.size(0) == a.k, kWhere,
           "a dense matrix of " + fk::to_text(a.k) + " rows (the sparse matrix's columns)",
           dense.shape().str());
  FK_CHECK(fk::is_floating(dense.dtype()), kWhere, "an f64, f32, f16 or bf16 dense matrix",
           fk::name(dense.dtype()));
  FK_CHECK(values.defined() && values.dim() == 1 && values.size(0) == nnz, kWhere,
           "values of shape (" + fk::to_text(nnz) + "), one per entry",
           values.defined() ? values.shape().str() : "undefined");
  FK_CHECK(fk::is_floating(values.dtype()), kWhere, "floating values", fk::name(values.dtype()));
  detail::check_same_device(dense, values, kWhere, "values");
}

class SpmmBackward : public fk::autograd::Node {
 public:
  fk::autograd::SavedTensor values, dense;
  std::shared_ptr<const CooList> a;

  std::vector<fk::Tensor> apply(std::vector<fk::Tensor>&& grads) override {
    if (!grads[0].defined()) return {fk::Tensor(), fk::Tensor()};
    SpmmGrads g = spmm_backward(grads[0], *a, values.unpack(name()), dense.unpack(name()),
                                next[0].fn != nullptr, next[1].fn != nullptr);
    return {g.values, g.dense};
  }
  const char* name() const override { return "minkowski::SpmmBackward"; }
  void for_each_saved(const std::function<void(fk::autograd::SavedTensor&)>& fn) override {
    fn(values);
    fn(dense);
  }
};

}  // namespace

CooList coo_list(std::vector<int64_t> rows, std::vector<int64_t> cols,
                 std::array<int64_t, 2> size) {
  FK_CHECK(size[0] >= 0 && size[1] >= 0, kWhere, "a non-negative size",
           fk::to_text(size[0]) + " x " + fk::to_text(size[1]));
  FK_CHECK(rows.size() == cols.size(), kWhere,
           "as many column indices as row indices (" + fk::to_text(rows.size()) + ")",
           fk::to_text(cols.size()));
  for (size_t p = 0; p < rows.size(); ++p) {
    FK_CHECK(rows[p] >= 0 && rows[p] < size[0], kWhere,
             "row indices in [0, " + fk::to_text(size[0]) + ")",
             fk::to_text(rows[p]) + " at entry " + fk::to_text(p));
    FK_CHECK(cols[p] >= 0 && cols[p] < size[1], kWhere,
             "column indices in [0, " + fk::to_text(size[1]) + ")",
             fk::to_text(cols[p]) + " at entry " + fk::to_text(p));
  }
  return CooList{std::move(rows), std::move(cols), size[0], size[1]};
}

CooList coo_list(const fk::Tensor& rows, const fk::Tensor& cols, std::array<int64_t, 2> size) {
  return coo_list(index_values(rows, "rows"), index_values(cols, "cols"), size);
}

fk::Tensor spmm_forward(const CooList& a, const fk::Tensor& values, const fk::Tensor& dense) {
  check_operands(a, values, dense);
  const fk::DType cd = compute_dtype(values, dense);
  fk::Tensor v = values.to(cd).contiguous(), d = dense.to(cd).contiguous();
  return product(a.rows, a.cols, a.m, v, d).to(dense.dtype());
}

SpmmGrads spmm_backward(const fk::Tensor& grad, const CooList& a, const fk::Tensor& values,
                        const fk::Tensor& dense, bool need_values, bool need_dense) {
  detail::check_same_device(dense, values, kWhere, "values");
  detail::check_same_device(dense, grad, kWhere, "the gradient");
  const fk::DType cd = compute_dtype(values, dense);
  fk::Tensor g = grad.to(cd).contiguous();
  SpmmGrads r;
  if (need_dense) {
    fk::Tensor v = values.to(cd).contiguous();
    r.dense = product(a.cols, a.rows, a.k, v, g).to(dense.dtype());
  }
  if (need_values) {
    fk::Tensor d = dense.to(cd).contiguous();
    r.values = (d.device().is_cuda()   ? device_spmm_value_grads(a.rows, a.cols, g, d)
                : cd == fk::DType::F64 ? value_grads<double>(a, g, d)
                                       : value_grads<float>(a, g, d))
                   .to(values.dtype());
  }
  return r;
}

fk::Tensor spmm(const CooList& a, const fk::Tensor& values, const fk::Tensor& dense) {
  fk::profile::OpScope scope("minkowski.spmm");
  fk::Tensor out;
  {
    fk::autograd::NoGradGuard ng;
    out = spmm_forward(a, values.detach(), dense.detach());
  }
  if (fk::autograd::needs_grad(values, dense)) {
    auto node = std::make_shared<SpmmBackward>();
    node->values = values;
    node->dense = dense;
    node->a = std::make_shared<const CooList>(a);
    fk::autograd::record(node, {values, dense}, out);
  }
  return out;
}

fk::Tensor spmm(const fk::Tensor& rows, const fk::Tensor& cols, const fk::Tensor& values,
                std::array<int64_t, 2> size, const fk::Tensor& dense) {
  return spmm(coo_list(rows, cols, size), values, dense);
}

fk::Tensor spmm_average(const fk::Tensor& rows, const fk::Tensor& cols, std::array<int64_t, 2> size,
                        const fk::Tensor& dense) {
  CooList a = coo_list(rows, cols, size);
  std::vector<double> count(static_cast<size_t>(a.m), 0.0), v(a.rows.size());
  for (int64_t r : a.rows) count[r] += 1;
  for (size_t p = 0; p < v.size(); ++p) v[p] = 1.0 / count[a.rows[p]];
  fk::DType vd =
      dense.defined() && dense.dtype() == fk::DType::F64 ? fk::DType::F64 : fk::DType::F32;
  const fk::Device dev = dense.defined() ? dense.device() : fk::kCPU;
  return spmm(a, fk::from_vector(v, fk::Dims{static_cast<int64_t>(v.size())}, dev).to(vd), dense);
}

}  // namespace minkowski
