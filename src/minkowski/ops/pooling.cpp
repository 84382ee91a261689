#include "minkowski/ops/pooling.h"

#include <algorithm>
#include <string>

#include "fk/autograd.h"
#include "fk/cpu_isa.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/profile.h"
#include "minkowski/coords/block_schedule.h"
#include "minkowski/ops/feature_rows.h"
#include "minkowski/ops/max_order.h"
#include "minkowski/ops/pooling_device.h"

namespace minkowski {

namespace {

// Rows per block a thread takes: a few tens of KiB of output, so a block's
// rows stay in L1/L2 while their terms are added.
constexpr int64_t kRowBlock = 256;
constexpr int64_t kBlocksPerGrab = 4;

// One pass of the kernel: the rows of `dst` made from rows of `src` through
// `idx` (the made rows' pairs, `other` = the row of src).
template <typename T>
struct RowRange {
  const T* src;
  int64_t channels;
  const RowIndex* idx;
  const int64_t* counts;     // backward of Average: by_out.begin of the map (pairs per output)
  const int32_t* argmax_in;  // backward of Max
  int32_t* argmax_out;       // forward of Max
  T* dst;
};

// Pairs ahead whose source row is prefetched: rows are gathered from a few
// interleaved streams with gaps (one per offset line), which the hardware
// prefetcher follows only in part (measured: sum pooling forward, kernel 2
// stride 2, 100k x 64 f32, one thread, ~1.7 -> ~1.3 ms). The backward reads
// its rows in output order, near-sequential: no gain there.
constexpr int64_t kPrefetchAhead = 8;

template <typename T>
[[gnu::always_inline]] inline void prefetch_source(const RowRange<T>& r, const RowEntry* e,
                                                   int64_t j, int64_t entries) {
  if (j + kPrefetchAhead >= entries) return;
  const char* p = reinterpret_cast<const char*>(
      r.src + static_cast<int64_t>(e[j + kPrefetchAhead].other) * r.channels);
  const int64_t bytes = r.channels * static_cast<int64_t>(sizeof(T));
  for (int64_t b = 0; b < bytes; b += 64) __builtin_prefetch(p + b);
}

// Forward: dst[o] = reduction of src[i] over o's pairs, in pair (offset) order.
// The first term is copied (no zeroing pass); Max keeps max_order.h's order
// (a NaN wins, the first of equal values holds).
template <typename T, PoolingMode M>
[[gnu::always_inline]] inline void reduce(const RowRange<T>& r, int64_t r0, int64_t r1) {
  const int64_t c = r.channels;
  const int64_t* begin = r.idx->begin.data();
  const RowEntry* e = r.idx->entries.data();
  const int64_t entries = static_cast<int64_t>(r.idx->entries.size());
  for (int64_t o = r0; o < r1; ++o) {
    T* __restrict d = r.dst + o * c;
    int32_t* __restrict a = M == PoolingMode::Max ? r.argmax_out + o * c : nullptr;
    const int64_t j0 = begin[o], j1 = begin[o + 1];
    if (j0 == j1) {
      std::fill(d, d + c, T(0));
      if constexpr (M == PoolingMode::Max) std::fill(a, a + c, -1);
      continue;
    }
    prefetch_source(r, e, j0, entries);
    const T* __restrict s = r.src + static_cast<int64_t>(e[j0].other) * c;
    for (int64_t x = 0; x < c; ++x) d[x] = s[x];
    if constexpr (M == PoolingMode::Max)
      for (int64_t x = 0; x < c; ++x) a[x] = e[j0].other;
    for (int64_t j = j0 + 1; j < j1; ++j) {
      prefetch_source(r, e, j, entries);
      const int32_t i = e[j].other;
      s = r.src + static_cast<int64_t>(i) * c;
      if constexpr (M == PoolingMode::Max) {
        for (int64_t x = 0; x < c; ++x) {
          // Branch-free and written unconditionally: as a conditional store
          // GCC emits masked stores (vmaskmovps), microcoded on AMD: max pooling
          // kernel 3 stride 2 on 100k x 64 f32 took ~10 ms instead of ~2.5.
          const T dv = d[x], sv = s[x];
          const bool replace = replaces_max(sv, dv);
          const int32_t take = -static_cast<int32_t>(replace);
          d[x] = replace ? sv : dv;
          a[x] = (a[x] & ~take) | (i & take);
        }
      } else {
        for (int64_t x = 0; x < c; ++x) d[x] += s[x];
      }
    }
    if constexpr (M == PoolingMode::Average) {
      const T n = static_cast<T>(j1 - j0);
      for (int64_t x = 0; x < c; ++x) d[x] /= n;
    }
  }
}

// Backward: dst[i] = sum over i's pairs (offset order) of what output o of
// the pair sends back: G[o] (Sum), G[o] / count(o) (Average), G[o, c] where
// i is o's arg-max in channel c (Max).
template <typename T, PoolingMode M>
[[gnu::always_inline]] inline void route(const RowRange<T>& r, int64_t r0, int64_t r1) {
  const int64_t c = r.channels;
  const int64_t* begin = r.idx->begin.data();
  const RowEntry* e = r.idx->entries.data();
  for (int64_t i = r0; i < r1; ++i) {
    T* __restrict d = r.dst + i * c;
    std::fill(d, d + c, T(0));
    for (int64_t j = begin[i]; j < begin[i + 1]; ++j) {
      const int64_t o = e[j].other;
      const T* __restrict g = r.src + o * c;
      if constexpr (M == PoolingMode::Max) {
        const int32_t* __restrict a = r.argmax_in + o * c;
        const int32_t self = static_cast<int32_t>(i);
        for (int64_t x = 0; x < c; ++x) d[x] += a[x] == self ? g[x] : T(0);
      } else if constexpr (M == PoolingMode::Average) {
        const T n = static_cast<T>(r.counts[o + 1] - r.counts[o]);
        for (int64_t x = 0; x < c; ++x) d[x] += g[x] / n;
      } else {
        for (int64_t x = 0; x < c; ++x) d[x] += g[x];
      }
    }
  }
}

template <typename T, PoolingMode M>
void forward_generic(const RowRange<T>& r, int64_t r0, int64_t r1) {
  reduce<T, M>(r, r0, r1);
}
template <typename T, PoolingMode M>
__attribute__((target("avx2,fma"))) void forward_avx2(const RowRange<T>& r, int64_t r0,
                                                      int64_t r1) {
  reduce<T, M>(r, r0, r1);
}
template <typename T, PoolingMode M>
void backward_generic(const RowRange<T>& r, int64_t r0, int64_t r1) {
  route<T, M>(r, r0, r1);
}
template <typename T, PoolingMode M>
__attribute__((target("avx2,fma"))) void backward_avx2(const RowRange<T>& r, int64_t r0,
                                                       int64_t r1) {
  route<T, M>(r, r0, r1);
}

// Runs fn over all rows of r in blocks, in parallel when the job is worth a
// team (every row is written by exactly one call).
template <typename T>
void over_rows(const RowRange<T>& r, int64_t rows, int64_t terms,
               void (*fn)(const RowRange<T>&, int64_t, int64_t)) {
  const int64_t blocks = (rows + kRowBlock - 1) / kRowBlock;
  const bool parallel = terms * r.channels >= (int64_t{1} << 16);
  for_blocks(blocks, kBlocksPerGrab, parallel, [&](auto&& each_block) {
    each_block([&](int64_t b) { fn(r, b * kRowBlock, std::min(rows, (b + 1) * kRowBlock)); });
  });
}

template <typename T, PoolingMode M>
void forward_impl(const RowRange<T>& r, const KernelMap& m) {
  bool avx2 = fk::cpu_isa() >= fk::CpuIsa::Avx2;
  over_rows<T>(r, m.out_size, m.pairs(), avx2 ? forward_avx2<T, M> : forward_generic<T, M>);
}

template <typename T, PoolingMode M>
void backward_impl(const RowRange<T>& r, const KernelMap& m) {
  bool avx2 = fk::cpu_isa() >= fk::CpuIsa::Avx2;
  over_rows<T>(r, m.in_size, m.pairs(), avx2 ? backward_avx2<T, M> : backward_generic<T, M>);
}

template <typename T>
void dispatch_forward(PoolingMode mode, const RowRange<T>& r, const KernelMap& m) {
  switch (mode) {
    case PoolingMode::Max:
      return forward_impl<T, PoolingMode::Max>(r, m);
    case PoolingMode::Average:
      return forward_impl<T, PoolingMode::Average>(r, m);
    case PoolingMode::Sum:
      return forward_impl<T, PoolingMode::Sum>(r, m);
  }
}

template <typename T>
void dispatch_backward(PoolingMode mode, const RowRange<T>& r, const KernelMap& m) {
  switch (mode) {
    case PoolingMode::Max:
      return backward_impl<T, PoolingMode::Max>(r, m);
    case PoolingMode::Average:
      return backward_impl<T, PoolingMode::Average>(r, m);
    case PoolingMode::Sum:
      return backward_impl<T, PoolingMode::Sum>(r, m);
  }
}

using detail::check_feature_rows;
using detail::check_same_device;
using detail::compute_dtype;

class PoolingBackward : public fk::autograd::Node {
 public:
  std::shared_ptr<const KernelMap> map;
  PoolingMode mode = PoolingMode::Sum;
  fk::autograd::SavedTensor argmax;

  std::vector<fk::Tensor> apply(std::vector<fk::Tensor>&& grads) override {
    if (!grads[0].defined()) return {fk::Tensor()};
    return {pool_backward(grads[0], *map, mode, argmax.unpack(name()))};
  }
  const char* name() const override { return "minkowski::PoolingBackward"; }
  void for_each_saved(const std::function<void(fk::autograd::SavedTensor&)>& fn) override {
    fn(argmax);
  }
};

}  // namespace

const char* pooling_mode_name(PoolingMode mode) {
  switch (mode) {
    case PoolingMode::Max:
      return "max";
    case PoolingMode::Average:
      return "average";
    case PoolingMode::Sum:
      return "sum";
  }
  return "?";
}

PoolingResult pool_forward(const fk::Tensor& features, const KernelMap& m, PoolingMode mode) {
  const char* where = "minkowski::pooling";
  check_feature_rows(features, m.in_size, where, "features");
  const int64_t c = features.size(1);
  fk::DType ct = compute_dtype(features.dtype());
  fk::Tensor f = features.to(ct).contiguous();
  PoolingResult res;
  if (f.device().is_cuda()) {
    res = device_pool_forward(f, m, mode);
    res.out = res.out.to(features.dtype());
    return res;
  }
  fk::Tensor out = fk::empty({m.out_size, c}, {ct});  // every row written
  if (mode == PoolingMode::Max) res.argmax = fk::empty({m.out_size, c}, {fk::DType::I32});
  int32_t* amax = res.argmax.defined() ? res.argmax.data<int32_t>() : nullptr;
  const RowIndex& idx = m.by_out();
  if (ct == fk::DType::F32)
    dispatch_forward<float>(
        mode, {f.data<float>(), c, &idx, nullptr, nullptr, amax, out.data<float>()}, m);
  else
    dispatch_forward<double>(
        mode, {f.data<double>(), c, &idx, nullptr, nullptr, amax, out.data<double>()}, m);
  res.out = out.to(features.dtype());
  return res;
}

fk::Tensor pool_backward(const fk::Tensor& grad_out, const KernelMap& m, PoolingMode mode,
                         const fk::Tensor& argmax) {
  const char* where = "minkowski::pooling backward";
  check_feature_rows(grad_out, m.out_size, where, "grad_out");
  const int64_t c = grad_out.size(1);
  if (mode == PoolingMode::Max)
    FK_CHECK(argmax.defined() && argmax.dtype() == fk::DType::I32 && argmax.dim() == 2 &&
                 argmax.size(0) == m.out_size && argmax.size(1) == c,
             where,
             "int32 arg-max rows of shape " + fk::to_text(m.out_size) + " x " + fk::to_text(c),
             argmax.defined() ? argmax.shape().str() : "none");
  if (mode == PoolingMode::Max) check_same_device(grad_out, argmax, where, "arg-max rows");
  fk::DType ct = compute_dtype(grad_out.dtype());
  fk::Tensor g = grad_out.to(ct).contiguous();
  if (g.device().is_cuda()) return device_pool_backward(g, m, mode, argmax).to(grad_out.dtype());
  fk::Tensor a = mode == PoolingMode::Max ? argmax.contiguous() : fk::Tensor();
  const int32_t* amax = a.defined() ? a.data<int32_t>() : nullptr;
  fk::Tensor gin = fk::empty({m.in_size, c}, {ct});  // every row written
  const RowIndex& by_in = m.by_in();
  // Average needs each output's count: its number of pairs (by_out's row lengths).
  const int64_t* counts = mode == PoolingMode::Average ? m.by_out().begin.data() : nullptr;
  if (ct == fk::DType::F32)
    dispatch_backward<float>(
        mode, {g.data<float>(), c, &by_in, counts, amax, nullptr, gin.data<float>()}, m);
  else
    dispatch_backward<double>(
        mode, {g.data<double>(), c, &by_in, counts, amax, nullptr, gin.data<double>()}, m);
  return gin.to(grad_out.dtype());
}

fk::Tensor pool_features(const fk::Tensor& features, std::shared_ptr<const KernelMap> map,
                         PoolingMode mode) {
  fk::profile::OpScope scope("minkowski.pooling");
  PoolingResult r;
  {
    fk::autograd::NoGradGuard ng;
    r = pool_forward(features.detach(), *map, mode);
  }
  if (fk::autograd::needs_grad(features)) {
    auto node = std::make_shared<PoolingBackward>();
    node->map = std::move(map);
    node->mode = mode;
    node->argmax = r.argmax;
    fk::autograd::record(node, {features}, r.out);
  }
  return r.out;
}

KernelRegion pooling_region(const KernelRegion& kernel, const std::vector<int32_t>& stride,
                            int dimension) {
  const char* where = "minkowski::pooling_region";
  if (kernel.type == RegionType::Custom) return kernel;
  const auto k = expand_axes(kernel.kernel_size, dimension, where, "kernel_size");
  const auto d = expand_axes(kernel.dilation, dimension, where, "dilation");
  const auto s = expand_axes(stride, dimension, where, "stride");
  if (k != s) return kernel;
  bool same = true;  // the region's own map is the stride map already
  for (int a = 0; a < dimension; ++a)
    same =
        same && (s[a] == 1 || (s[a] % 2 == 0 && d[a] == 1 && kernel.type == RegionType::HyperCube));
  if (same) return kernel;
  // Every offset of 0..s-1 per axis, axis 0 fastest (a cube's order).
  std::vector<int32_t> offsets, at(dimension, 0);
  while (true) {
    offsets.insert(offsets.end(), at.begin(), at.end());
    int a = 0;
    while (a < dimension && ++at[a] == s[a]) at[a++] = 0;
    if (a == dimension) break;
  }
  return KernelRegion::custom(std::move(offsets), dimension);
}

SparseTensor local_pooling(const SparseTensor& x, PoolingMode mode, const KernelRegion& kernel,
                           const std::vector<int32_t>& stride) {
  const char* where = "minkowski::local_pooling";
  FK_CHECK(x.defined(), where, "a sparse tensor", "an empty handle");
  auto s = expand_axes(stride, x.dimension(), where, "stride");
  auto& mgr = x.manager();
  MapKey ok = mgr->stride(x.key(), s);
  auto map = mgr->kernel_map(x.key(), ok, pooling_region(kernel, s, x.dimension()), false);
  return SparseTensor(pool_features(x.F(), std::move(map), mode), ok, mgr);
}

SparseTensor max_pooling(const SparseTensor& x, const KernelRegion& kernel,
                         const std::vector<int32_t>& stride) {
  return local_pooling(x, PoolingMode::Max, kernel, stride);
}
SparseTensor avg_pooling(const SparseTensor& x, const KernelRegion& kernel,
                         const std::vector<int32_t>& stride) {
  return local_pooling(x, PoolingMode::Average, kernel, stride);
}
SparseTensor sum_pooling(const SparseTensor& x, const KernelRegion& kernel,
                         const std::vector<int32_t>& stride) {
  return local_pooling(x, PoolingMode::Sum, kernel, stride);
}

}  // namespace minkowski
