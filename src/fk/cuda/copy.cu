// Strided copies with dtype conversion, and fills. One kernel per source dtype
// with the destination dtype switched inside (9 kernels, not 81). Conversion
// rules mirror src/fk/ops/copy.cpp: f16/bf16 always go through f32 (from a
// wider source rounded to odd, so the half is correctly rounded), complex ->
// real keeps the real part, everything else is a static_cast.
#include <cstring>
#include <limits>
#include <type_traits>

#include "fk/cuda/common.cuh"
#include "fk/half.h"

namespace fk::cuda {
namespace {
using namespace detail;

template <typename T>
inline constexpr bool kIsCx = false;
template <typename R>
inline constexpr bool kIsCx<Cx<R>> = true;
template <typename T>
inline constexpr bool kIsHalf = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

// The host's rule (copy.cpp): a floating value truncated toward zero where
// the integer type holds it, else (NaN, inf, out of range) the type's lowest
// value; CUDA's own conversion saturates (NaN -> 0), which the host does not.
template <typename D, typename F>
__device__ D to_integer(F v) {
  constexpr D lowest = std::numeric_limits<D>::min();  // a constant: no host call on the device
  constexpr F lo = static_cast<F>(lowest);
  return v >= lo && v < -lo ? static_cast<D>(v) : lowest;
}

// half.h's double_to_f32_odd and int_to_f32_odd on the device: exact when it
// can be, else the f32 neighbour whose last bit is set.
__device__ inline float f32_odd(double d) {
  const float f = static_cast<float>(d);
  if (d != d || static_cast<double>(f) == d || f - f != 0.0f) return f;  // NaN, exact, past f32
  int u = __float_as_int(f);
  if (u & 1) return f;
  if (f == 0.0f) return __int_as_float((d > 0 ? 0 : static_cast<int>(0x80000000u)) | 1);
  // One step toward d: a step away from zero when d lies beyond f.
  const bool toward_larger = static_cast<double>(f) < d;
  return __int_as_float(u + (toward_larger == (f > 0) ? 1 : -1));
}
__device__ inline float f32_odd(long long v) {
  const unsigned long long m =
      v < 0 ? 0ull - static_cast<unsigned long long>(v) : static_cast<unsigned long long>(v);
  const int bits = 64 - __clzll(static_cast<long long>(m));
  const int shift = bits > 24 ? bits - 24 : 0;
  unsigned long long kept = m >> shift;
  if (shift > 0 && (m & ((1ull << shift) - 1)) != 0) kept |= 1;                  // the sticky bit
  const float f = static_cast<float>(kept) * static_cast<float>(1ull << shift);  // exact
  return v < 0 ? -f : f;
}

template <typename D, typename S>
__device__ D convert(S v) {
  if constexpr (std::is_same_v<D, S>) {
    return v;
  } else if constexpr (kIsHalf<S>) {
    return convert<D, float>(Num<S>::load(v));
  } else if constexpr (kIsHalf<D>) {
    if constexpr (std::is_same_v<S, double>)
      return Num<D>::store(f32_odd(v));
    else if constexpr (std::is_same_v<S, Cx<double>>)
      return Num<D>::store(f32_odd(v.re));
    else if constexpr (std::is_same_v<S, int64_t> || std::is_same_v<S, int32_t>)
      return Num<D>::store(f32_odd(static_cast<long long>(v)));
    else
      return Num<D>::store(convert<float, S>(v));
  } else if constexpr (kIsCx<D>) {
    using R = decltype(D{}.re);
    if constexpr (kIsCx<S>) {
      return D{static_cast<R>(v.re), static_cast<R>(v.im)};
    } else {
      return D{static_cast<R>(v), R(0)};
    }
  } else if constexpr (kIsCx<S>) {
    if constexpr (std::is_same_v<D, bool>) return v.re != 0 || v.im != 0;  // 1i is true
    if constexpr (std::is_integral_v<D>) return to_integer<D>(v.re);
    return static_cast<D>(v.re);
  } else if constexpr (std::is_integral_v<D> && !std::is_same_v<D, bool> &&
                       std::is_floating_point_v<S>) {
    return to_integer<D>(v);
  } else {
    return static_cast<D>(v);
  }
}

template <typename D, typename S>
__device__ inline void store_as(void* dst, int64_t off, S v) {
  static_cast<D*>(dst)[off] = convert<D, S>(v);
}

// Operand order in the geometry: dst, src.
template <typename S>
__global__ void convert_kernel(const S* src, int dst_dtype, void* dst, Geometry g, bool flat) {
  FK_CUDA_LOOP(i, g.numel) {
    int64_t off[2] = {i, i};
    if (!flat) offsets<2>(g, i, off);
    S v = src[off[1]];
    switch (dst_dtype) {
      case kBool:
        store_as<bool>(dst, off[0], v);
        break;
      case kI32:
        store_as<int32_t>(dst, off[0], v);
        break;
      case kI64:
        store_as<int64_t>(dst, off[0], v);
        break;
      case kF16:
        store_as<__half>(dst, off[0], v);
        break;
      case kBF16:
        store_as<__nv_bfloat16>(dst, off[0], v);
        break;
      case kF32:
        store_as<float>(dst, off[0], v);
        break;
      case kF64:
        store_as<double>(dst, off[0], v);
        break;
      case kC64:
        store_as<Cx<float>>(dst, off[0], v);
        break;
      default:
        store_as<Cx<double>>(dst, off[0], v);
        break;
    }
  }
}

// Same-dtype strided copy: moves words of the element size.
template <typename W>
__global__ void copy_kernel(const W* src, W* dst, Geometry g) {
  FK_CUDA_LOOP(i, g.numel) {
    int64_t off[2];
    offsets<2>(g, i, off);
    dst[off[0]] = src[off[1]];
  }
}

template <typename W>
__global__ void fill_kernel(W* out, W value, Geometry g, bool flat) {
  FK_CUDA_LOOP(i, g.numel) {
    int64_t off = i;
    if (!flat) {
      int64_t o[1];
      offsets<1>(g, i, o);
      off = o[0];
    }
    out[off] = value;
  }
}

// The bytes of `value` stored as dtype, converted on the host by the same rules.
void encode(int dtype, double re, double im, unsigned char* bytes) {
  auto put = [&](auto v) { std::memcpy(bytes, &v, sizeof(v)); };
  switch (dtype) {
    case kBool:
      put(static_cast<uint8_t>(re != 0.0));
      break;
    case kI32:
      put(static_cast<int32_t>(re));
      break;
    case kI64:
      put(static_cast<int64_t>(re));
      break;
    case kF16:
      put(__float2half_rn(fk::double_to_f32_odd(re)));
      break;
    case kBF16:
      put(__float2bfloat16_rn(fk::double_to_f32_odd(re)));
      break;
    case kF32:
      put(static_cast<float>(re));
      break;
    case kF64:
      put(re);
      break;
    case kC64:
      put(Cx<float>{static_cast<float>(re), static_cast<float>(im)});
      break;
    case kC128:
      put(Cx<double>{re, im});
      break;
    default:
      dtype_size(dtype);  // throws
  }
}

void fill_geometry(int dtype, void* out, const Geometry& g, double re, double im, void* stream) {
  const char* where = "cuda::launch_fill";
  if (g.numel == 0) return;
  const size_t size = dtype_size(dtype);
  alignas(16) unsigned char bytes[16] = {};
  encode(dtype, re, im, bytes);
  bool zero = true;
  for (size_t i = 0; i < size; ++i) zero = zero && bytes[i] == 0;
  const bool flat = is_flat(g, 1);
  if (flat && zero) {
    check_cuda(cudaMemsetAsync(out, 0, static_cast<size_t>(g.numel) * size, as_stream(stream)),
               where);
    return;
  }
  visit_itemsize(dtype, [&](auto tag) {
    using W = typename decltype(tag)::type;
    W value;
    std::memcpy(&value, bytes, sizeof(W));
    fill_kernel<W><<<blocks_for(g.numel), kThreads, 0, as_stream(stream)>>>(static_cast<W*>(out),
                                                                            value, g, flat);
  });
  check_launch(where);
}

void copy_geometry(int src_dtype, const void* src, int dst_dtype, void* dst, const Geometry& g,
                   void* stream) {
  const char* where = "cuda::launch_copy_strided";
  dtype_size(src_dtype);
  dtype_size(dst_dtype);
  if (g.numel == 0) return;
  const bool flat = is_flat(g, 2);
  cudaStream_t s = as_stream(stream);
  if (src_dtype == dst_dtype) {
    if (flat) {
      check_cuda(cudaMemcpyAsync(dst, src, static_cast<size_t>(g.numel) * dtype_size(src_dtype),
                                 cudaMemcpyDeviceToDevice, s),
                 where);
      return;
    }
    visit_itemsize(src_dtype, [&](auto tag) {
      using W = typename decltype(tag)::type;
      copy_kernel<W><<<blocks_for(g.numel), kThreads, 0, s>>>(static_cast<const W*>(src),
                                                              static_cast<W*>(dst), g);
    });
    check_launch(where);
    return;
  }
  auto run = [&](auto tag) {
    using S = typename decltype(tag)::type;
    convert_kernel<S><<<blocks_for(g.numel), kThreads, 0, s>>>(static_cast<const S*>(src),
                                                               dst_dtype, dst, g, flat);
  };
  switch (src_dtype) {
    case kBool:
      run(Tag<bool>{});
      break;
    case kI32:
      run(Tag<int32_t>{});
      break;
    case kI64:
      run(Tag<int64_t>{});
      break;
    case kF16:
      run(Tag<__half>{});
      break;
    case kBF16:
      run(Tag<__nv_bfloat16>{});
      break;
    case kF32:
      run(Tag<float>{});
      break;
    case kF64:
      run(Tag<double>{});
      break;
    case kC64:
      run(Tag<Cx<float>>{});
      break;
    default:
      run(Tag<Cx<double>>{});
      break;
  }
  check_launch(where);
}

}  // namespace

void launch_fill(int dtype, void* out, int64_t n, double re, double im, void* stream) {
  fill_geometry(dtype, out, make_geometry(1, &n, 1, nullptr, "cuda::launch_fill"), re, im, stream);
}

void launch_fill_strided(int dtype, void* out, int ndim, const int64_t* shape,
                         const int64_t* strides, double re, double im, void* stream) {
  fill_geometry(dtype, out, make_geometry(ndim, shape, 1, &strides, "cuda::launch_fill"), re, im,
                stream);
}

void launch_copy_strided(int src_dtype, const void* src, const int64_t* src_strides, int dst_dtype,
                         void* dst, const int64_t* dst_strides, int ndim, const int64_t* shape,
                         void* stream) {
  const int64_t* strides[2] = {dst_strides, src_strides};
  copy_geometry(src_dtype, src, dst_dtype, dst,
                make_geometry(ndim, shape, 2, strides, "cuda::launch_copy_strided"), stream);
}

void launch_convert(int src_dtype, const void* src, int dst_dtype, void* dst, int64_t n,
                    void* stream) {
  copy_geometry(src_dtype, src, dst_dtype, dst,
                make_geometry(1, &n, 2, nullptr, "cuda::launch_convert"), stream);
}

}  // namespace fk::cuda
