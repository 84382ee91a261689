#include "minkowski/ops/broadcast.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "fk/autograd.h"
#include "fk/cpu_isa.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/index.h"
#include "fk/ops/join.h"
#include "fk/parallel.h"
#include "fk/profile.h"
#include "minkowski/ops/feature_rows.h"

namespace minkowski {

namespace {

constexpr int64_t kParallelElements = int64_t{1} << 16;

// out[i] = f[i] op g[group[i]] over rows [r0, r1); Concatenate writes
// [f[i], g[group[i]]] (cf + cg wide), the others cf = cg channels.
template <typename T, BroadcastMode M>
[[gnu::always_inline]] inline void apply_rows(const T* f, int64_t cf, const T* g, int64_t cg,
                                              const int32_t* group, int64_t r0, int64_t r1,
                                              T* out) {
  for (int64_t i = r0; i < r1; ++i) {
    const T* __restrict a = f + i * cf;
    const T* __restrict b = g + static_cast<int64_t>(group[i]) * cg;
    if constexpr (M == BroadcastMode::Concatenate) {
      T* __restrict d = out + i * (cf + cg);
      for (int64_t x = 0; x < cf; ++x) d[x] = a[x];
      for (int64_t x = 0; x < cg; ++x) d[cf + x] = b[x];
    } else {
      T* __restrict d = out + i * cf;
      for (int64_t x = 0; x < cf; ++x) {
        if constexpr (M == BroadcastMode::Add)
          d[x] = a[x] + b[x];
        else
          d[x] = a[x] * b[x];
      }
    }
  }
}

template <typename T, BroadcastMode M>
void rows_generic(const T* f, int64_t cf, const T* g, int64_t cg, const int32_t* group, int64_t r0,
                  int64_t r1, T* out) {
  apply_rows<T, M>(f, cf, g, cg, group, r0, r1, out);
}
template <typename T, BroadcastMode M>
__attribute__((target("avx2,fma"))) void rows_avx2(const T* f, int64_t cf, const T* g, int64_t cg,
                                                   const int32_t* group, int64_t r0, int64_t r1,
                                                   T* out) {
  apply_rows<T, M>(f, cf, g, cg, group, r0, r1, out);
}

template <typename T, BroadcastMode M>
void forward_impl(const T* f, int64_t cf, const T* g, int64_t cg, const RowGroups& rg, T* out) {
  auto fn = fk::cpu_isa() >= fk::CpuIsa::Avx2 ? rows_avx2<T, M> : rows_generic<T, M>;
  const int64_t n = static_cast<int64_t>(rg.group.size());
  fk::parallel_for(0, n, std::max<int64_t>(1024, kParallelElements / std::max<int64_t>(cf + cg, 1)),
                   [&](int64_t lo, int64_t hi) { fn(f, cf, g, cg, rg.group.data(), lo, hi, out); });
}

template <typename T>
void dispatch_forward(BroadcastMode mode, const T* f, int64_t cf, const T* g, int64_t cg,
                      const RowGroups& rg, T* out) {
  switch (mode) {
    case BroadcastMode::Add:
      return forward_impl<T, BroadcastMode::Add>(f, cf, g, cg, rg, out);
    case BroadcastMode::Multiply:
      return forward_impl<T, BroadcastMode::Multiply>(f, cf, g, cg, rg, out);
    case BroadcastMode::Concatenate:
      return forward_impl<T, BroadcastMode::Concatenate>(f, cf, g, cg, rg, out);
  }
}

using detail::compute_dtype;

// The device path: fk's device ops, no kernel of its own. Each row's glob row
// gathered (index_select), then one elementwise add or mul, or a cat: the
// same single rounding per element as the CPU loop, so the CPU's values.
fk::Tensor device_forward(const fk::Tensor& f, const fk::Tensor& g, const RowGroups& rg,
                          BroadcastMode mode) {
  // The host-index form: checked on the host and uploaded, no read back.
  const std::vector<int64_t> rows(rg.group.begin(), rg.group.end());
  const fk::Tensor at = fk::index_select(g, 0, rows);
  switch (mode) {
    case BroadcastMode::Add:
      return fk::binary(fk::BinaryOp::Add, f, at);
    case BroadcastMode::Multiply:
      return fk::binary(fk::BinaryOp::Mul, f, at);
    case BroadcastMode::Concatenate:
      break;
  }
  return fk::cat({f, at}, 1);
}

// The first `cols` columns of m (N x W) as a new N x cols matrix: a row copy
// per row, in parallel (fk's generic strided copy walks element by element).
fk::Tensor leading_columns(const fk::Tensor& m, int64_t cols) {
  if (m.device().is_cuda()) return m.narrow(1, 0, cols).contiguous();
  fk::Tensor src = m.stride(1) == 1 ? m : m.contiguous();
  const int64_t n = src.size(0), ld = src.stride(0);
  const size_t es = src.itemsize(), row = static_cast<size_t>(cols) * es;
  fk::Tensor out = fk::empty({n, cols}, {src.dtype()});
  const char* s = static_cast<const char*>(src.data_ptr());
  char* d = static_cast<char*>(out.data_ptr());
  if (row == 0) return out;
  fk::parallel_for(0, n, std::max<int64_t>(1024, kParallelElements / std::max<int64_t>(cols, 1)),
                   [&](int64_t lo, int64_t hi) {
                     for (int64_t i = lo; i < hi; ++i)
                       std::memcpy(d + i * row, s + i * ld * static_cast<int64_t>(es), row);
                   });
  return out;
}

class BroadcastBackward : public fk::autograd::Node {
 public:
  std::shared_ptr<const RowGroups> groups;
  BroadcastMode mode = BroadcastMode::Add;
  fk::autograd::SavedTensor features, glob;  // Multiply only
  int64_t features_channels = 0, glob_channels = 0;

  std::vector<fk::Tensor> apply(std::vector<fk::Tensor>&& grads) override {
    if (!grads[0].defined()) return {fk::Tensor(), fk::Tensor()};
    // Multiply reads the saved inputs; Concatenate only their widths.
    fk::Tensor f = mode == BroadcastMode::Multiply ? features.unpack(name())
                                                   : fk::empty({0, features_channels});
    fk::Tensor g =
        mode == BroadcastMode::Multiply ? glob.unpack(name()) : fk::empty({0, glob_channels});
    BroadcastGrads r = broadcast_backward(grads[0], f, g, *groups, mode, next[0].fn != nullptr,
                                          next[1].fn != nullptr);
    return {r.features, r.glob};
  }
  const char* name() const override { return "minkowski::BroadcastBackward"; }
  void for_each_saved(const std::function<void(fk::autograd::SavedTensor&)>& fn) override {
    fn(features);
    fn(glob);
  }
};

SparseTensor broadcast_op(const SparseTensor& x, const SparseTensor& glob, BroadcastMode mode,
                          const char* where) {
  auto groups = std::make_shared<const RowGroups>(broadcast_groups(x, glob, where));
  FK_CHECK(mode == BroadcastMode::Concatenate || glob.channels() == x.channels(), where,
           "a global tensor of the input's " + fk::to_text(x.channels()) + " channels",
           fk::to_text(glob.channels()) + " channels");
  fk::Tensor out;
  {
    fk::autograd::NoGradGuard ng;
    out = broadcast_forward(x.F().detach(), glob.F().detach(), *groups, mode);
  }
  if (fk::autograd::needs_grad(x.F(), glob.F())) {
    auto node = std::make_shared<BroadcastBackward>();
    node->groups = std::move(groups);
    node->mode = mode;
    if (mode == BroadcastMode::Multiply) {
      node->features = x.F();
      node->glob = glob.F();
    }
    node->features_channels = x.channels();
    node->glob_channels = glob.channels();
    fk::autograd::record(node, {x.F(), glob.F()}, out);
  }
  return SparseTensor(out, x.key(), x.manager());
}

std::string coordinate_text(const int32_t* row, int width) {
  std::string s = "(";
  for (int a = 0; a < width; ++a) s += (a ? ", " : "") + std::to_string(row[a]);
  return s + ")";
}

}  // namespace

RowGroups broadcast_groups(const SparseTensor& x, const SparseTensor& glob, const char* where) {
  FK_CHECK(x.defined() && glob.defined(), where, "two sparse tensors", "an empty handle");
  check_same_manager(x, glob, where);
  auto gm = x.manager()->map(glob.key());
  auto xm = x.manager()->map(x.key());
  const int w = gm->width();
  // (batch item, glob row), sorted by item: any batch index, no table of
  // max-index size
  std::vector<std::pair<int32_t, int32_t>> item_row;
  for (int64_t r = 0; r < gm->size(); ++r) {
    const int32_t* c = gm->row(r);
    FK_CHECK(c[0] >= 0 && std::all_of(c + 1, c + w, [](int32_t v) { return v == 0; }), where,
             "a global tensor: rows at (b, 0, .., 0), b >= 0 (e.g. from global_pooling)",
             "row " + fk::to_text(r) + " at " + coordinate_text(c, w));
    item_row.emplace_back(c[0], static_cast<int32_t>(r));
  }
  std::sort(item_row.begin(), item_row.end());
  std::vector<int32_t> label(static_cast<size_t>(xm->size()));
  int32_t last_b = 0, last_g = -1;  // rows mostly come grouped by item: one search per run
  for (int64_t i = 0; i < xm->size(); ++i) {
    const int32_t b = xm->row(i)[0];
    if (i == 0 || b != last_b) {
      auto it = std::lower_bound(item_row.begin(), item_row.end(), std::pair{b, int32_t{-1}});
      last_b = b;
      last_g = it != item_row.end() && it->first == b ? it->second : -1;
    }
    FK_CHECK(last_g >= 0, where,
             "a global row for every batch item of the input (the glob has " +
                 fk::to_text(gm->size()) + " rows)",
             "no global row for batch item " + fk::to_text(b));
    label[i] = last_g;
  }
  return group_by(std::move(label), gm->size());
}

fk::Tensor broadcast_forward(const fk::Tensor& features, const fk::Tensor& glob,
                             const RowGroups& rg, BroadcastMode mode) {
  const char* where = "minkowski::broadcast";
  const int64_t n = static_cast<int64_t>(rg.group.size());
  FK_CHECK(features.defined() && glob.defined(), where, "features and a global feature",
           "an undefined tensor");
  detail::check_same_device(features, glob, where, "the global feature");
  FK_CHECK(fk::is_floating(features.dtype()), where, "f32, f64, f16 or bf16 features",
           fk::name(features.dtype()));
  FK_CHECK(glob.dtype() == features.dtype(), where,
           "a global feature of the features' dtype " + std::string(fk::name(features.dtype())),
           fk::name(glob.dtype()));
  FK_CHECK(features.dim() == 2 && features.size(0) == n, where,
           "features of shape " + fk::to_text(n) + " x C", features.shape().str());
  const int64_t cf = features.size(1);
  const bool cat = mode == BroadcastMode::Concatenate;
  FK_CHECK(glob.dim() == 2 && glob.size(0) == rg.groups && (cat || glob.size(1) == cf), where,
           "a global feature of shape " + fk::to_text(rg.groups) + " x " +
               (cat ? std::string("C_glob") : fk::to_text(cf)),
           glob.shape().str());
  const int64_t cg = glob.size(1), width = cat ? cf + cg : cf;
  fk::DType ct = compute_dtype(features.dtype());
  fk::Tensor f = features.to(ct).contiguous(), g = glob.to(ct).contiguous();
  if (f.device().is_cuda()) return device_forward(f, g, rg, mode).to(features.dtype());
  fk::Tensor out = fk::empty({n, width}, {ct});
  if (ct == fk::DType::F32)
    dispatch_forward<float>(mode, f.data<float>(), cf, g.data<float>(), cg, rg, out.data<float>());
  else
    dispatch_forward<double>(mode, f.data<double>(), cf, g.data<double>(), cg, rg,
                             out.data<double>());
  return out.to(features.dtype());
}

BroadcastGrads broadcast_backward(const fk::Tensor& grad_out, const fk::Tensor& features,
                                  const fk::Tensor& glob, const RowGroups& rg, BroadcastMode mode,
                                  bool need_features, bool need_glob) {
  BroadcastGrads r;
  switch (mode) {
    case BroadcastMode::Add:
      // d/dx: the gradient itself; d/dglob: its sum over each item's rows.
      if (need_features) r.features = grad_out;
      if (need_glob) r.glob = global_pool_forward(grad_out, rg, PoolingMode::Sum).out;
      break;
    case BroadcastMode::Multiply:
      // d/dx[i] = G[i] * glob[b(i)]; d/dglob[b] = sum over b's rows of G[i] * x[i].
      if (need_features)
        r.features = broadcast_forward(grad_out, glob, rg, BroadcastMode::Multiply);
      if (need_glob) r.glob = group_sum_of_products(grad_out, features, rg);
      break;
    case BroadcastMode::Concatenate: {
      // the two column blocks of G: the first is x's, the second summed per item
      const int64_t cf = features.size(1), cg = glob.size(1);
      FK_CHECK(grad_out.dim() == 2 && grad_out.size(1) == cf + cg, "minkowski::broadcast backward",
               "a gradient of " + fk::to_text(cf + cg) + " columns", grad_out.shape().str());
      if (need_features) r.features = leading_columns(grad_out, cf);
      if (need_glob)
        r.glob = global_pool_forward(grad_out.narrow(1, cf, cg), rg, PoolingMode::Sum).out;
      break;
    }
  }
  return r;
}

SparseTensor broadcast_add(const SparseTensor& x, const SparseTensor& glob) {
  return broadcast_op(x, glob, BroadcastMode::Add, "minkowski::broadcast_add");
}

SparseTensor broadcast_multiply(const SparseTensor& x, const SparseTensor& glob) {
  return broadcast_op(x, glob, BroadcastMode::Multiply, "minkowski::broadcast_multiply");
}

SparseTensor broadcast_concatenation(const SparseTensor& x, const SparseTensor& glob) {
  return broadcast_op(x, glob, BroadcastMode::Concatenate, "minkowski::broadcast_concatenation");
}

}  // namespace minkowski
