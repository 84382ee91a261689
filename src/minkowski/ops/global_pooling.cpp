#include "minkowski/ops/global_pooling.h"

#include <algorithm>
#include <string>

#include "fk/autograd.h"
#include "fk/cpu_isa.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/parallel.h"
#include "fk/profile.h"
#include "minkowski/ops/feature_rows.h"
#include "minkowski/ops/max_order.h"
#include "minkowski/ops/pooling_device.h"

namespace minkowski {

namespace {

// Below this many elements an op runs on the calling thread.
constexpr int64_t kParallelElements = int64_t{1} << 16;

// The rows reduced: a's rows (row stride lda), or with `b` the elementwise
// products a[i] * b[i] (Sum only: the glob gradient of broadcast multiply).
template <typename T>
struct Source {
  const T* a;
  int64_t lda;
  const T* b;
  int64_t ldb;
};

// acc = the reduction of the source's rows[0 .. n) (n >= 1), in row order;
// Max keeps max_order.h's order (a NaN wins, ties keep the first). Products
// are rounded before they are added, in every clone (this file is built with
// -ffp-contract=off): the device's kernel rounds them so too (pooling.cu,
// mul_rn).
template <typename T, PoolingMode M, bool Product>
[[gnu::always_inline]] inline void fold(const Source<T>& src, int64_t c, const int32_t* rows,
                                        int64_t n, T* __restrict acc, int32_t* __restrict amax) {
  for (int64_t p = 0; p < n; ++p) {
    const int64_t i = rows[p];
    const T* __restrict s = src.a + i * src.lda;
    if constexpr (Product) {
      const T* __restrict t = src.b + i * src.ldb;
      if (p == 0)
        for (int64_t x = 0; x < c; ++x) acc[x] = s[x] * t[x];
      else
        for (int64_t x = 0; x < c; ++x) acc[x] += s[x] * t[x];
    } else if (p == 0) {
      for (int64_t x = 0; x < c; ++x) acc[x] = s[x];
      if constexpr (M == PoolingMode::Max) std::fill(amax, amax + c, rows[0]);
    } else if constexpr (M == PoolingMode::Max) {
      const int32_t r = rows[p];
      for (int64_t x = 0; x < c; ++x) {
        // branch-free, unconditional stores (see pooling.cpp's reduce)
        const T av = acc[x], sv = s[x];
        const bool replace = replaces_max(sv, av);
        const int32_t take = -static_cast<int32_t>(replace);
        acc[x] = replace ? sv : av;
        amax[x] = (amax[x] & ~take) | (r & take);
      }
    } else {
      for (int64_t x = 0; x < c; ++x) acc[x] += s[x];
    }
  }
}

template <typename T, PoolingMode M, bool P>
void fold_generic(const Source<T>& src, int64_t c, const int32_t* rows, int64_t n, T* acc,
                  int32_t* amax) {
  fold<T, M, P>(src, c, rows, n, acc, amax);
}
template <typename T, PoolingMode M, bool P>
__attribute__((target("avx2,fma"))) void fold_avx2(const Source<T>& src, int64_t c,
                                                   const int32_t* rows, int64_t n, T* acc,
                                                   int32_t* amax) {
  fold<T, M, P>(src, c, rows, n, acc, amax);
}

// out[g] = reduction of group g's rows: each group's rows in fixed blocks
// (one partial each, in parallel), the partials combined in block order.
template <typename T, PoolingMode M, bool P = false>
void forward_impl(const Source<T>& src, int64_t c, const RowGroups& rg, T* out, int32_t* amax) {
  struct Job {
    int64_t p0, p1;
  };
  std::vector<Job> jobs;
  std::vector<int64_t> first(rg.groups + 1);
  for (int64_t g = 0; g < rg.groups; ++g) {
    first[g] = static_cast<int64_t>(jobs.size());
    for (int64_t p = rg.begin[g]; p < rg.begin[g + 1]; p += kGlobalBlock)
      jobs.push_back({p, std::min(p + kGlobalBlock, rg.begin[g + 1])});
  }
  first[rg.groups] = static_cast<int64_t>(jobs.size());
  const int64_t nj = static_cast<int64_t>(jobs.size());
  std::vector<T> part(static_cast<size_t>(nj * c));
  std::vector<int32_t> part_arg(M == PoolingMode::Max ? static_cast<size_t>(nj * c) : 0);
  auto fn = fk::cpu_isa() >= fk::CpuIsa::Avx2 ? fold_avx2<T, M, P> : fold_generic<T, M, P>;
  const int64_t elements = static_cast<int64_t>(rg.rows.size()) * c;
  fk::parallel_for(0, nj, elements >= kParallelElements ? 1 : nj, [&](int64_t lo, int64_t hi) {
    for (int64_t j = lo; j < hi; ++j)
      fn(src, c, rg.rows.data() + jobs[j].p0, jobs[j].p1 - jobs[j].p0, part.data() + j * c,
         M == PoolingMode::Max ? part_arg.data() + j * c : nullptr);
  });
  for (int64_t g = 0; g < rg.groups; ++g) {
    T* d = out + g * c;
    int32_t* a = M == PoolingMode::Max ? amax + g * c : nullptr;
    if (first[g] == first[g + 1]) {  // an empty group
      std::fill(d, d + c, T(0));
      if (a) std::fill(a, a + c, -1);
      continue;
    }
    std::copy(part.begin() + first[g] * c, part.begin() + (first[g] + 1) * c, d);
    if (a) std::copy(part_arg.begin() + first[g] * c, part_arg.begin() + (first[g] + 1) * c, a);
    for (int64_t j = first[g] + 1; j < first[g + 1]; ++j) {
      const T* s = part.data() + j * c;
      for (int64_t x = 0; x < c; ++x) {
        if constexpr (M == PoolingMode::Max) {
          if (replaces_max(s[x], d[x])) d[x] = s[x], a[x] = part_arg[j * c + x];
        } else {
          d[x] += s[x];
        }
      }
    }
    if constexpr (M == PoolingMode::Average) {
      const T n = static_cast<T>(rg.size(g));
      for (int64_t x = 0; x < c; ++x) d[x] /= n;
    }
  }
}

template <typename T, PoolingMode M>
[[gnu::always_inline]] inline void route(const T* G, int64_t c, const RowGroups& rg,
                                         const int32_t* amax, int64_t r0, int64_t r1, T* gin) {
  for (int64_t i = r0; i < r1; ++i) {
    const int64_t g = rg.group[i];
    const T* __restrict s = G + g * c;
    T* __restrict d = gin + i * c;
    if constexpr (M == PoolingMode::Max) {
      const int32_t* __restrict a = amax + g * c;
      const int32_t self = static_cast<int32_t>(i);
      for (int64_t x = 0; x < c; ++x) d[x] = a[x] == self ? s[x] : T(0);
    } else if constexpr (M == PoolingMode::Average) {
      const T k = static_cast<T>(rg.size(g));
      for (int64_t x = 0; x < c; ++x) d[x] = s[x] / k;
    } else {
      for (int64_t x = 0; x < c; ++x) d[x] = s[x];
    }
  }
}

template <typename T, PoolingMode M>
void route_generic(const T* G, int64_t c, const RowGroups& rg, const int32_t* amax, int64_t r0,
                   int64_t r1, T* gin) {
  route<T, M>(G, c, rg, amax, r0, r1, gin);
}
template <typename T, PoolingMode M>
__attribute__((target("avx2,fma"))) void route_avx2(const T* G, int64_t c, const RowGroups& rg,
                                                    const int32_t* amax, int64_t r0, int64_t r1,
                                                    T* gin) {
  route<T, M>(G, c, rg, amax, r0, r1, gin);
}

// gin[i] = what row i's group sends back: G[g] (Sum), G[g] / size (Average),
// G[g, x] where i is the arg-max of channel x (Max).
template <typename T, PoolingMode M>
void backward_impl(const T* G, int64_t c, const RowGroups& rg, const int32_t* amax, T* gin) {
  const int64_t n = static_cast<int64_t>(rg.group.size());
  auto fn = fk::cpu_isa() >= fk::CpuIsa::Avx2 ? route_avx2<T, M> : route_generic<T, M>;
  fk::parallel_for(0, n,
                   std::max<int64_t>(kGlobalBlock, kParallelElements / std::max<int64_t>(c, 1)),
                   [&](int64_t lo, int64_t hi) { fn(G, c, rg, amax, lo, hi, gin); });
}

template <typename T>
void dispatch_forward(PoolingMode mode, const Source<T>& src, int64_t c, const RowGroups& rg,
                      T* out, int32_t* amax) {
  switch (mode) {
    case PoolingMode::Max:
      return forward_impl<T, PoolingMode::Max>(src, c, rg, out, amax);
    case PoolingMode::Average:
      return forward_impl<T, PoolingMode::Average>(src, c, rg, out, amax);
    case PoolingMode::Sum:
      return forward_impl<T, PoolingMode::Sum>(src, c, rg, out, amax);
  }
}

template <typename T>
void dispatch_backward(PoolingMode mode, const T* G, int64_t c, const RowGroups& rg,
                       const int32_t* amax, T* gin) {
  switch (mode) {
    case PoolingMode::Max:
      return backward_impl<T, PoolingMode::Max>(G, c, rg, amax, gin);
    case PoolingMode::Average:
      return backward_impl<T, PoolingMode::Average>(G, c, rg, amax, gin);
    case PoolingMode::Sum:
      return backward_impl<T, PoolingMode::Sum>(G, c, rg, amax, gin);
  }
}

using detail::check_feature_rows;
using detail::check_same_device;
using detail::compute_dtype;

// t itself when each row is contiguous (e.g. a column slice of a wider
// matrix), else a contiguous copy: the kernels take a row stride.
fk::Tensor rows_contiguous(const fk::Tensor& t) {
  return t.dim() == 2 && (t.stride(1) == 1 || t.size(1) <= 1) && t.stride(0) >= t.size(1)
             ? t
             : t.contiguous();
}

class GlobalPoolingBackward : public fk::autograd::Node {
 public:
  std::shared_ptr<const RowGroups> groups;
  PoolingMode mode = PoolingMode::Sum;
  fk::autograd::SavedTensor argmax;

  std::vector<fk::Tensor> apply(std::vector<fk::Tensor>&& grads) override {
    if (!grads[0].defined()) return {fk::Tensor()};
    return {global_pool_backward(grads[0], *groups, mode, argmax.unpack(name()))};
  }
  const char* name() const override { return "minkowski::GlobalPoolingBackward"; }
  void for_each_saved(const std::function<void(fk::autograd::SavedTensor&)>& fn) override {
    fn(argmax);
  }
};

}  // namespace

RowGroups group_by(std::vector<int32_t> label, int64_t groups) {
  RowGroups r;
  r.groups = groups;
  r.begin.assign(groups + 1, 0);
  for (int32_t g : label) ++r.begin[g + 1];
  for (int64_t g = 0; g < groups; ++g) r.begin[g + 1] += r.begin[g];
  r.rows.resize(label.size());
  std::vector<int64_t> at(r.begin.begin(), r.begin.end() - 1);
  for (size_t i = 0; i < label.size(); ++i) r.rows[at[label[i]]++] = static_cast<int32_t>(i);
  r.group = std::move(label);
  return r;
}

RowGroups batch_groups(const CoordinateMap& map, const char* where) {
  std::vector<int32_t> batch(static_cast<size_t>(map.size()));
  for (int64_t i = 0; i < map.size(); ++i) batch[i] = map.row(i)[0];
  return batch_groups(std::move(batch), where);
}

RowGroups batch_groups(std::vector<int32_t> batch, const char* where) {
  // No rows (a generative net's pruning left none): no item, an empty origin
  // map, (0, C) features, as every other op gives on an empty tensor.
  if (batch.empty()) return group_by({}, 0);
  const auto [lo, hi] = std::minmax_element(batch.begin(), batch.end());
  FK_CHECK(*lo >= 0, where, "batch indices >= 0", "batch index " + fk::to_text(*lo));
  // The items with points, ascending, and each row's rank among them: by a
  // table over 0..max when that is no larger than the rows (the usual dense
  // batch), else by sorting, so a huge index sizes nothing.
  std::vector<int32_t> items;
  const int64_t n = static_cast<int64_t>(batch.size()), top = *hi;
  if (top < n) {
    std::vector<int32_t> rank(static_cast<size_t>(top) + 1, -1);
    for (int32_t b : batch) rank[b] = 0;
    for (int32_t b = 0; b <= top; ++b)
      if (rank[b] == 0) {
        rank[b] = static_cast<int32_t>(items.size());
        items.push_back(b);
      }
    for (int32_t& b : batch) b = rank[b];
  } else {
    items = batch;
    std::sort(items.begin(), items.end());
    items.erase(std::unique(items.begin(), items.end()), items.end());
    for (int32_t& b : batch)
      b = static_cast<int32_t>(std::lower_bound(items.begin(), items.end(), b) - items.begin());
  }
  RowGroups r = group_by(std::move(batch), static_cast<int64_t>(items.size()));
  r.items = std::move(items);
  return r;
}

GlobalPoolingResult global_pool_forward(const fk::Tensor& features, const RowGroups& rg,
                                        PoolingMode mode) {
  const char* where = "minkowski::global_pooling";
  check_feature_rows(features, static_cast<int64_t>(rg.group.size()), where, "features");
  const int64_t c = features.size(1);
  fk::DType ct = compute_dtype(features.dtype());
  GlobalPoolingResult r;
  if (features.device().is_cuda()) {
    r = device_global_pool_forward(features.to(ct).contiguous(), fk::Tensor(), rg, mode);
    r.out = r.out.to(features.dtype());
    return r;
  }
  fk::Tensor f = rows_contiguous(features.to(ct));
  fk::Tensor out = fk::empty({rg.groups, c}, {ct});
  if (mode == PoolingMode::Max) r.argmax = fk::empty({rg.groups, c}, {fk::DType::I32});
  int32_t* amax = r.argmax.defined() ? r.argmax.data<int32_t>() : nullptr;
  if (ct == fk::DType::F32)
    dispatch_forward<float>(mode, {f.data<float>(), f.stride(0), nullptr, 0}, c, rg,
                            out.data<float>(), amax);
  else
    dispatch_forward<double>(mode, {f.data<double>(), f.stride(0), nullptr, 0}, c, rg,
                             out.data<double>(), amax);
  r.out = out.to(features.dtype());
  return r;
}

fk::Tensor global_pool_backward(const fk::Tensor& grad_out, const RowGroups& rg, PoolingMode mode,
                                const fk::Tensor& argmax) {
  const char* where = "minkowski::global_pooling backward";
  check_feature_rows(grad_out, rg.groups, where, "grad_out");
  const int64_t c = grad_out.size(1);
  if (mode == PoolingMode::Max)
    FK_CHECK(argmax.defined() && argmax.dtype() == fk::DType::I32 && argmax.dim() == 2 &&
                 argmax.size(0) == rg.groups && argmax.size(1) == c,
             where,
             "int32 arg-max rows of shape " + fk::to_text(rg.groups) + " x " + fk::to_text(c),
             argmax.defined() ? argmax.shape().str() : "none");
  if (mode == PoolingMode::Max) check_same_device(grad_out, argmax, where, "arg-max rows");
  fk::DType ct = compute_dtype(grad_out.dtype());
  fk::Tensor g = grad_out.to(ct).contiguous();
  if (g.device().is_cuda())
    return device_global_pool_backward(g, rg, mode, argmax).to(grad_out.dtype());
  fk::Tensor a = mode == PoolingMode::Max ? argmax.contiguous() : fk::Tensor();
  const int32_t* amax = a.defined() ? a.data<int32_t>() : nullptr;
  fk::Tensor gin = fk::empty({static_cast<int64_t>(rg.group.size()), c}, {ct});
  if (ct == fk::DType::F32)
    dispatch_backward<float>(mode, g.data<float>(), c, rg, amax, gin.data<float>());
  else
    dispatch_backward<double>(mode, g.data<double>(), c, rg, amax, gin.data<double>());
  return gin.to(grad_out.dtype());
}

fk::Tensor group_sum_of_products(const fk::Tensor& a, const fk::Tensor& b, const RowGroups& rg) {
  const char* where = "minkowski::group_sum_of_products";
  const int64_t n = static_cast<int64_t>(rg.group.size());
  check_feature_rows(a, n, where, "a");
  check_feature_rows(b, n, where, "b");
  check_same_device(a, b, where, "b");
  FK_CHECK(a.dtype() == b.dtype() && a.size(1) == b.size(1), where,
           "two matrices of one dtype and shape " + a.shape().str(),
           b.shape().str() + " " + fk::name(b.dtype()));
  const int64_t c = a.size(1);
  fk::DType ct = compute_dtype(a.dtype());
  if (a.device().is_cuda())
    return device_global_pool_forward(a.to(ct).contiguous(), b.to(ct).contiguous(), rg,
                                      PoolingMode::Sum)
        .out.to(a.dtype());
  fk::Tensor x = rows_contiguous(a.to(ct)), y = rows_contiguous(b.to(ct));
  fk::Tensor out = fk::empty({rg.groups, c}, {ct});
  if (ct == fk::DType::F32)
    forward_impl<float, PoolingMode::Sum, true>(
        {x.data<float>(), x.stride(0), y.data<float>(), y.stride(0)}, c, rg, out.data<float>(),
        nullptr);
  else
    forward_impl<double, PoolingMode::Sum, true>(
        {x.data<double>(), x.stride(0), y.data<double>(), y.stride(0)}, c, rg, out.data<double>(),
        nullptr);
  return out.to(a.dtype());
}

MapKey origin_key(CoordinateManager& mgr, const MapKey& in, const std::vector<int32_t>& items) {
  const int w = mgr.dimension() + 1;
  const int64_t n = static_cast<int64_t>(items.size());
  MapKey key{in.tensor_stride, in.tag + "@origin"};
  if (mgr.has(key)) {
    auto m = mgr.map(key);
    bool same = m->size() == n;
    for (int64_t r = 0; same && r < n; ++r)
      same = m->row(r)[0] == items[r] &&
             std::all_of(m->row(r) + 1, m->row(r) + w, [](int32_t v) { return v == 0; });
    if (same) return key;
  }
  std::vector<int32_t> rows(static_cast<size_t>(n * w), 0);
  for (int64_t r = 0; r < n; ++r) rows[r * w] = items[r];
  return mgr.insert_rows(rows.data(), n, key.tensor_stride, key.tag).key;
}

fk::Tensor global_pool_features(const fk::Tensor& features, std::shared_ptr<const RowGroups> groups,
                                PoolingMode mode) {
  fk::profile::OpScope scope("minkowski.global_pooling");
  GlobalPoolingResult r;
  {
    fk::autograd::NoGradGuard ng;
    r = global_pool_forward(features.detach(), *groups, mode);
  }
  if (fk::autograd::needs_grad(features)) {
    auto node = std::make_shared<GlobalPoolingBackward>();
    node->groups = std::move(groups);
    node->mode = mode;
    node->argmax = r.argmax;
    fk::autograd::record(node, {features}, r.out);
  }
  return r.out;
}

SparseTensor global_pooling(const SparseTensor& x, PoolingMode mode) {
  const char* where = "minkowski::global_pooling";
  FK_CHECK(x.defined(), where, "a sparse tensor", "an empty handle");
  auto groups = std::make_shared<const RowGroups>(batch_groups(*x.manager()->map(x.key()), where));
  MapKey ok = origin_key(*x.manager(), x.key(), groups->items);
  return SparseTensor(global_pool_features(x.F(), groups, mode), ok, x.manager());
}

SparseTensor global_max_pooling(const SparseTensor& x) {
  return global_pooling(x, PoolingMode::Max);
}
SparseTensor global_avg_pooling(const SparseTensor& x) {
  return global_pooling(x, PoolingMode::Average);
}
SparseTensor global_sum_pooling(const SparseTensor& x) {
  return global_pooling(x, PoolingMode::Sum);
}

}  // namespace minkowski
