// scatter_add, in two modes (see kernels.h):
// - atomic: one atomicAdd per source element. Equal targets are summed in
//   whatever order the hardware serializes them, so float results vary in the
//   last bits run to run.
// - deterministic: each source element's target offset is a sort key; a
//   stable radix sort (CUB) of (key, source offset) pairs groups equal targets
//   with their sources in increasing iteration order; the first thread of each
//   group then adds the group's sources to the target in that order (the CPU's
//   order). This is the only TU that includes CUB (~7 s to compile).
#include <cub/device/device_radix_sort.cuh>

#include "fk/cuda/common.cuh"

namespace fk::cuda {
namespace {
using namespace detail;

// Compute-type accumulation: halves in f32, complex componentwise.
template <typename T>
struct Acc {
  using C = typename Num<T>::C;
  __device__ static C load(T v) { return Num<T>::load(v); }
  __device__ static T store(C v) { return Num<T>::store(v); }
  __device__ static C add(C a, C b) { return a + b; }
};
template <typename R>
struct Acc<Cx<R>> {
  using C = Cx<R>;
  __device__ static C load(C v) { return v; }
  __device__ static C store(C v) { return v; }
  __device__ static C add(C a, C b) { return {a.re + b.re, a.im + b.im}; }
};

template <typename T>
__device__ inline void atomic_add(T* p, T v) {
  atomicAdd(p, v);
}
template <>
__device__ inline void atomic_add<int64_t>(int64_t* p, int64_t v) {
  atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
}
template <>
__device__ inline void atomic_add<Cx<float>>(Cx<float>* p, Cx<float> v) {
  atomicAdd(&p->re, v.re);
  atomicAdd(&p->im, v.im);
}
template <>
__device__ inline void atomic_add<Cx<double>>(Cx<double>* p, Cx<double> v) {
  atomicAdd(&p->re, v.re);
  atomicAdd(&p->im, v.im);
}

// The target offset in out of iteration position i, or -1 for a bad index.
// Geometry operands: out (its stride along dim set to 0), src, index.
__device__ inline int64_t target(const Geometry& g, int64_t i, const int64_t* index,
                                 int64_t out_dim_stride, int64_t out_dim_size, bool wrap,
                                 int64_t* bad, int64_t& src_off) {
  int64_t off[3];
  offsets<3>(g, i, off);
  src_off = off[1];
  int64_t idx = index[off[2]];
  const int64_t raw = idx;
  if (wrap && idx < 0) idx += out_dim_size;
  if (idx < 0 || idx >= out_dim_size) {
    if (bad) {
      bad[1] = raw;
      bad[2] = out_dim_size;
      bad[0] = 1;
    }
    return -1;
  }
  return off[0] + idx * out_dim_stride;
}

template <typename T>
__global__ void scatter_atomic_kernel(T* out, int64_t out_dim_stride, int64_t out_dim_size,
                                      const T* src, const int64_t* index, Geometry g, bool wrap,
                                      int64_t* bad) {
  FK_CUDA_LOOP(i, g.numel) {
    int64_t src_off;
    int64_t t = target(g, i, index, out_dim_stride, out_dim_size, wrap, bad, src_off);
    if (t >= 0) atomic_add(out + t, src[src_off]);
  }
}

__global__ void scatter_keys_kernel(int64_t out_dim_stride, int64_t out_dim_size,
                                    const int64_t* index, Geometry g, bool wrap, int64_t* bad,
                                    uint64_t sentinel, uint64_t* keys, int64_t* src_offsets) {
  FK_CUDA_LOOP(i, g.numel) {
    int64_t src_off;
    int64_t t = target(g, i, index, out_dim_stride, out_dim_size, wrap, bad, src_off);
    keys[i] = t >= 0 ? static_cast<uint64_t>(t) : sentinel;
    src_offsets[i] = src_off;
  }
}

template <typename T>
__global__ void scatter_segments_kernel(T* out, const T* src, const uint64_t* keys,
                                        const int64_t* src_offsets, int64_t n, uint64_t sentinel) {
  FK_CUDA_LOOP(k, n) {
    const uint64_t key = keys[k];
    if (key == sentinel || (k > 0 && keys[k - 1] == key)) continue;
    auto acc = Acc<T>::load(out[key]);
    for (int64_t j = k; j < n && keys[j] == key; ++j) {
      acc = Acc<T>::add(acc, Acc<T>::load(src[src_offsets[j]]));
    }
    out[key] = Acc<T>::store(acc);
  }
}

int bits_for(uint64_t v) {
  int b = 1;
  while (b < 64 && (v >> b) != 0) ++b;
  return b;
}

template <typename T>
void scatter_deterministic(T* out, int64_t out_dim_stride, int64_t out_dim_size, const T* src,
                           const int64_t* index, const Geometry& g, IndexCheck check,
                           uint64_t max_key, cudaStream_t s) {
  const char* where = "cuda::launch_scatter_add (deterministic)";
  const int64_t n = g.numel;
  const uint64_t sentinel = max_key + 1;
  const int end_bit = bits_for(sentinel);
  size_t temp_bytes = 0;
  check_cuda(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, static_cast<uint64_t*>(nullptr),
                                             static_cast<uint64_t*>(nullptr),
                                             static_cast<int64_t*>(nullptr),
                                             static_cast<int64_t*>(nullptr), n, 0, end_bit, s),
             where);
  // One buffer: keys in/out, offsets in/out, then CUB's scratch (256-aligned).
  const size_t arrays = 4 * static_cast<size_t>(n) * 8;
  const size_t scratch_at = (arrays + 255) / 256 * 256;
  char* buf = nullptr;
  check_cuda(cudaMallocAsync(reinterpret_cast<void**>(&buf), scratch_at + temp_bytes, s), where);
  auto* keys_in = reinterpret_cast<uint64_t*>(buf);
  auto* keys_out = keys_in + n;
  auto* offs_in = reinterpret_cast<int64_t*>(keys_out + n);
  auto* offs_out = offs_in + n;
  cudaError_t e = cudaSuccess;
  scatter_keys_kernel<<<blocks_for(n), kThreads, 0, s>>>(out_dim_stride, out_dim_size, index, g,
                                                         check.wrap_negative, check.bad, sentinel,
                                                         keys_in, offs_in);
  e = cudaGetLastError();
  if (e == cudaSuccess) {
    e = cub::DeviceRadixSort::SortPairs(buf + scratch_at, temp_bytes, keys_in, keys_out, offs_in,
                                        offs_out, n, 0, end_bit, s);
  }
  if (e == cudaSuccess) {
    scatter_segments_kernel<T>
        <<<blocks_for(n), kThreads, 0, s>>>(out, src, keys_out, offs_out, n, sentinel);
    e = cudaGetLastError();
  }
  cudaFreeAsync(buf, s);
  check_cuda(e, where);
}

}  // namespace

void launch_scatter_add(int dtype, void* out, const int64_t* out_strides, int64_t out_dim_size,
                        const void* src, const int64_t* src_strides, const int64_t* index,
                        const int64_t* index_strides, int ndim, const int64_t* shape, int dim,
                        bool deterministic, IndexCheck check, void* stream) {
  const char* where = "cuda::launch_scatter_add";
  FK_CHECK(dim >= 0 && dim < ndim, where, "dim in [0, " + fk::to_text(ndim) + ")",
           fk::to_text(dim));
  FK_CHECK(out_dim_size >= 0, where, "a non-negative output size along dim",
           fk::to_text(out_dim_size));
  // out's strides (contiguous over shape with dim resized when not given), the
  // dim's stride kept apart and zeroed in the geometry, and the largest target.
  int64_t out_st[kMaxDims], geo_st[kMaxDims];
  int64_t run = 1;
  for (int d = ndim - 1; d >= 0; --d) {
    out_st[d] = out_strides ? out_strides[d] : run;
    run *= d == dim ? out_dim_size : shape[d];
  }
  uint64_t max_key = 0;
  for (int d = 0; d < ndim; ++d) {
    geo_st[d] = d == dim ? 0 : out_st[d];
    const int64_t extent = d == dim ? out_dim_size : shape[d];
    if (extent > 0) max_key += static_cast<uint64_t>((extent - 1) * out_st[d]);
  }
  const int64_t* strides[3] = {geo_st, src_strides, index_strides};
  Geometry g = make_geometry(ndim, shape, 3, strides, where);
  if (g.numel == 0) return;
  cudaStream_t s = as_stream(stream);
  auto run_type = [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (deterministic) {
      scatter_deterministic<T>(static_cast<T*>(out), out_st[dim], out_dim_size,
                               static_cast<const T*>(src), index, g, check, max_key, s);
      return;
    }
    scatter_atomic_kernel<T><<<blocks_for(g.numel), kThreads, 0, s>>>(
        static_cast<T*>(out), out_st[dim], out_dim_size, static_cast<const T*>(src), index, g,
        check.wrap_negative, check.bad);
    check_launch(where);
  };
  switch (dtype) {
    case kF32:
      return run_type(Tag<float>{});
    case kF64:
      return run_type(Tag<double>{});
    case kF16:
      return run_type(Tag<__half>{});
    case kBF16:
      return run_type(Tag<__nv_bfloat16>{});
    case kI32:
      return run_type(Tag<int32_t>{});
    case kI64:
      return run_type(Tag<int64_t>{});
    case kC64:
      return run_type(Tag<Cx<float>>{});
    case kC128:
      return run_type(Tag<Cx<double>>{});
    default:
      unsupported(where, "f32 f64 f16 bf16 i32 i64 c64 or c128", dtype);
  }
}

}  // namespace fk::cuda
