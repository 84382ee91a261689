#include "fk/ops/copy.h"

#include <immintrin.h>

#include <cstring>
#include <limits>
#include <type_traits>

#include "fk/autograd.h"
#include "fk/cuda/kernels.h"
#include "fk/cuda/runtime.h"
#include "fk/factory.h"
#include "fk/half.h"
#include "fk/ops/cpu/copy_bytes.h"
#include "fk/ops/cpu/dispatch.h"
#include "fk/ops/cpu/loops.h"
#include "fk/ops/cuda_dispatch.h"
#include "fk/profile.h"
#include "fk/sync_debug.h"

namespace fk {
namespace {

// A floating value as an integer type: truncated toward zero where it fits.
// A NaN or a value out of range has no C++ conversion (undefined behaviour);
// it gets the type's lowest value, what x86's conversion (and torch's CPU)
// gives, now defined; the device (cuda/copy.cu) converts by the same rule.
template <typename To, typename F>
To to_integer(F v) {
  constexpr F lo = static_cast<F>(std::numeric_limits<To>::min());  // -2^31 / -2^63, exact
  return v >= lo && v < -lo ? static_cast<To>(v) : std::numeric_limits<To>::min();
}

template <typename To, typename From>
To convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<To, c64> || std::is_same_v<To, c128>) {
    using R = typename To::value_type;
    if constexpr (std::is_same_v<From, c64> || std::is_same_v<From, c128>) {
      return To(static_cast<R>(v.real()), static_cast<R>(v.imag()));
    } else {
      return To(static_cast<R>(v), R(0));
    }
  } else if constexpr (std::is_same_v<From, c64> || std::is_same_v<From, c128>) {
    if constexpr (std::is_same_v<To, bool>) return v != From{};  // 1i is true (numpy's)
    if constexpr (std::is_integral_v<To>) return to_integer<To>(v.real());
    return static_cast<To>(v.real());
  } else if constexpr (std::is_integral_v<To> && !std::is_same_v<To, bool> &&
                       std::is_floating_point_v<From>) {
    return to_integer<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

// One tile of a transpose: dst[a * d1 + c] = src[c * s0 + a] for c < nc, a < na.
// Full 16x16 tiles of 4- and 8-byte elements: SSE2 4x4 / 2x2 register
// transposes from the source rows into a 1 KiB (2 KiB) buffer, then each
// buffer row out to its destination row in whole cache lines. Writing the
// 4x4 blocks straight to the destination instead touches 16 lines 4 KiB
// apart at once, which share one L1 set when rows are a power of two long
// and thrash (a 1024^2 f32 transpose ran 3.5x slower). The former scalar
// buffer loop cost ~2 cycles per element, half of it in memmove calls GCC
// made of the buffer's row copies.
template <typename T>
void transpose_tile(const T* src, int64_t s0, T* dst, int64_t d1, int64_t nc, int64_t na) {
  constexpr int64_t kB = 16;
  if (nc < kB || na < kB || (sizeof(T) != 4 && sizeof(T) != 8)) {
    for (int64_t a = 0; a < na; ++a) {
      for (int64_t c = 0; c < nc; ++c) dst[a * d1 + c] = src[c * s0 + a];
    }
    return;
  }
  alignas(64) T buf[kB][kB];
  if constexpr (sizeof(T) == 4) {
    for (int64_t c = 0; c < kB; c += 4) {
      for (int64_t a = 0; a < kB; a += 4) {
        const float* s = reinterpret_cast<const float*>(src + c * s0 + a);
        __m128 r0 = _mm_loadu_ps(s), r1 = _mm_loadu_ps(s + s0), r2 = _mm_loadu_ps(s + 2 * s0),
               r3 = _mm_loadu_ps(s + 3 * s0);
        _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
        _mm_store_ps(reinterpret_cast<float*>(&buf[a][c]), r0);
        _mm_store_ps(reinterpret_cast<float*>(&buf[a + 1][c]), r1);
        _mm_store_ps(reinterpret_cast<float*>(&buf[a + 2][c]), r2);
        _mm_store_ps(reinterpret_cast<float*>(&buf[a + 3][c]), r3);
      }
    }
  } else if constexpr (sizeof(T) == 8) {
    for (int64_t c = 0; c < kB; c += 2) {
      for (int64_t a = 0; a < kB; a += 2) {
        const double* s = reinterpret_cast<const double*>(src + c * s0 + a);
        __m128d r0 = _mm_loadu_pd(s), r1 = _mm_loadu_pd(s + s0);
        _mm_store_pd(reinterpret_cast<double*>(&buf[a][c]), _mm_unpacklo_pd(r0, r1));
        _mm_store_pd(reinterpret_cast<double*>(&buf[a + 1][c]), _mm_unpackhi_pd(r0, r1));
      }
    }
  }
  for (int64_t a = 0; a < kB; ++a) std::memcpy(dst + a * d1, buf[a], sizeof(buf[a]));
}

// A copy whose source runs contiguously along the destination's second loop
// dimension (a transpose): done in square tiles so both sides stay in cache.
// Handles up to one extra (batch) dimension; returns false for other layouts.
template <typename T>
bool copy_tiled_transpose(Tensor& dst, const Tensor& src) {
  auto L = cpu::make_loop<2>(dst.shape(), {&dst, &src});
  constexpr int64_t es = sizeof(T);
  if (L.ndim < 2 || L.ndim > 3 || L.strides[0][0] != es || L.strides[1][1] != es ||
      L.strides[1][0] == es || L.shape[0] < 16 || L.shape[1] < 16) {
    return false;
  }
  // 16x16 tiles: every cache line is read whole and written whole, so
  // power-of-two row strides (which map rows to one L1 set) cannot make lines
  // thrash between their halves. Tiles are walked in strips of kStrip
  // destination rows so each source page is visited for 1 KiB at a time
  // rather than 64 B (TLB misses dominated otherwise).
  constexpr int64_t kB = 16, kStrip = 256 / sizeof(T) * 4;
  const int64_t n0 = L.shape[0], n1 = L.shape[1], nb = L.ndim == 3 ? L.shape[2] : 1;
  const int64_t d1 = L.strides[0][1] / es, s0 = L.strides[1][0] / es;
  const int64_t db = L.ndim == 3 ? L.strides[0][2] / es : 0;
  const int64_t sb = L.ndim == 3 ? L.strides[1][2] / es : 0;
  T* out = reinterpret_cast<T*>(L.base[0]);
  const T* in = reinterpret_cast<const T*>(L.base[1]);
  const int64_t tiles1 = (n1 + kStrip - 1) / kStrip;
  parallel_for(0, nb * tiles1, std::max<int64_t>(1, cpu::kElementwiseGrain / (kStrip * n0)),
               [&](int64_t lo, int64_t hi) {
                 for (int64_t t = lo; t < hi; ++t) {
                   int64_t b = t / tiles1, s0a = (t % tiles1) * kStrip;
                   int64_t s1a = std::min(n1, s0a + kStrip);
                   for (int64_t c0 = 0; c0 < n0; c0 += kB) {
                     int64_t nc = std::min(kB, n0 - c0);
                     for (int64_t a0 = s0a; a0 < s1a; a0 += kB) {
                       int64_t na = std::min(kB, s1a - a0);
                       transpose_tile(in + b * sb + a0 + c0 * s0, s0, out + b * db + a0 * d1 + c0,
                                      d1, nc, na);
                     }
                   }
                 }
               });
  return true;
}

// Contiguous to contiguous, same dtype: a byte copy split over threads by
// index. Not through the elementwise engine, whose identity loop GCC turns into
// a libc memcpy call, slow for misaligned views (see cpu/copy_bytes.h).
bool copy_flat(Tensor& dst, const Tensor& src) {
  if (!(dst.is_contiguous() && src.is_contiguous() && dst.shape() == src.shape())) return false;
  const int64_t es = static_cast<int64_t>(dst.itemsize());
  char* o = static_cast<char*>(dst.data_ptr());
  const char* i = static_cast<const char*>(src.data_ptr());
  parallel_for(0, dst.numel(), cpu::kElementwiseGrain, [&](int64_t lo, int64_t hi) {
    cpu::copy_bytes(o + lo * es, i + lo * es, (hi - lo) * es);
  });
  return true;
}

// Same-dtype copy: moves bytes by element size, so one instantiation per width.
void copy_same_dtype(Tensor& dst, const Tensor& src) {
  if (copy_flat(dst, src)) return;
  if (dst.itemsize() == 4 && copy_tiled_transpose<uint32_t>(dst, src)) return;
  if (dst.itemsize() == 8 && copy_tiled_transpose<uint64_t>(dst, src)) return;
  cpu::visit_width(dst.itemsize(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    cpu::map1<T, T>(dst, src, [](T v) { return v; });
  });
}

// f16/bf16 <-> f32 in bulk when both sides are contiguous, else elementwise.
void copy_half(Tensor& dst, const Tensor& src) {
  bool flat = dst.is_contiguous() && src.is_contiguous() && src.shape() == dst.shape();
  if (dst.dtype() == DType::F32 && flat) {
    float* o = dst.data<float>();
    if (src.dtype() == DType::F16) return half_to_float(src.data<Half>(), o, dst.numel());
    return bf16_to_float(src.data<BFloat16>(), o, dst.numel());
  }
  if (src.dtype() == DType::F32 && flat) {
    const float* i = src.data<float>();
    if (dst.dtype() == DType::F16) return float_to_half(i, dst.data<Half>(), dst.numel());
    return float_to_bf16(i, dst.data<BFloat16>(), dst.numel());
  }
  if (is_half(src.dtype()) && dst.dtype() == DType::F32) {
    if (src.dtype() == DType::F16)
      return cpu::map1<float, Half>(dst, src, [](Half h) { return half_to_float(h); });
    return cpu::map1<float, BFloat16>(dst, src, [](BFloat16 h) { return bf16_to_float(h); });
  }
  if (is_half(dst.dtype()) && src.dtype() == DType::F32) {
    if (dst.dtype() == DType::F16)
      return cpu::map1<Half, float>(dst, src, [](float f) { return float_to_half(f); });
    return cpu::map1<BFloat16, float>(dst, src, [](float f) { return float_to_bf16(f); });
  }
  // Anything else goes through f32: a source wider than f32 (f64, c128, i32,
  // i64) rounded to odd on the way (half.h), so the half is correctly rounded.
  Tensor tmp = empty(dst.shape(), {DType::F32});
  const DType st = src.dtype();
  if (is_half(dst.dtype()) &&
      (st == DType::F64 || st == DType::C128 || st == DType::I32 || st == DType::I64)) {
    cpu::visit_stored(st, "copy_", [&](auto tag) {
      using From = typename decltype(tag)::type;
      cpu::map1<float, From>(tmp, src, [](From v) {
        if constexpr (std::is_same_v<From, double>)
          return double_to_f32_odd(v);
        else if constexpr (std::is_same_v<From, c128>)
          return double_to_f32_odd(v.real());
        else if constexpr (std::is_integral_v<From> && !std::is_same_v<From, bool>)
          return int_to_f32_odd(v);
        else
          return convert<float, From>(v);
      });
    });
  } else {
    copy_(tmp, src);
  }
  copy_(dst, tmp);
}

void copy_cpu(Tensor& dst, const Tensor& src) {
  if (dst.dtype() == src.dtype()) return copy_same_dtype(dst, src);
  if (is_half(dst.dtype()) || is_half(src.dtype())) return copy_half(dst, src);
  cpu::visit_stored(dst.dtype(), "copy_", [&](auto to_tag) {
    using To = typename decltype(to_tag)::type;
    cpu::visit_stored(src.dtype(), "copy_", [&](auto from_tag) {
      using From = typename decltype(from_tag)::type;
      cpu::map1<To, From>(dst, src, [](From v) { return convert<To, From>(v); });
    });
  });
}

struct ToDTypeBackward : autograd::Node {
  DType src_dtype;
  std::vector<Tensor> apply(std::vector<Tensor>&& g) override {
    return {to_dtype_backward(g[0], src_dtype)};
  }
  const char* name() const override { return "ToDTypeBackward"; }
};

struct ToDeviceBackward : autograd::Node {
  Device src_device;
  std::vector<Tensor> apply(std::vector<Tensor>&& g) override {
    return {to_device_backward(g[0], src_device)};
  }
  const char* name() const override { return "ToDeviceBackward"; }
};

struct IdentityBackward : autograd::Node {
  const char* name_;
  explicit IdentityBackward(const char* n) : name_(n) {}
  std::vector<Tensor> apply(std::vector<Tensor>&& g) override { return {g[0]}; }
  const char* name() const override { return name_; }
};

// The byte range [first, last] a non-empty view can touch.
std::pair<const char*, const char*> byte_span(const Tensor& t) {
  const char* at = static_cast<const char*>(t.data_ptr());
  int64_t lo = 0, hi = 0;
  for (int64_t d = 0; d < t.dim(); ++d)
    (t.stride(d) < 0 ? lo : hi) += (t.size(d) - 1) * t.stride(d);
  const int64_t es = static_cast<int64_t>(t.itemsize());
  return {at + lo * es, at + (hi + 1) * es - 1};
}

Tensor copy_of(const Tensor& t, DType dtype, Device device) {
  Tensor out = empty(t.shape(), {dtype, device});
  copy_(out, t);
  return out;
}

}  // namespace

bool overlaps(const Tensor& a, const Tensor& b) {
  if (a.storage() != b.storage() || a.numel() == 0 || b.numel() == 0) return false;
  auto [a0, a1] = byte_span(a);
  auto [b0, b1] = byte_span(b);
  return a0 <= b1 && b0 <= a1;
}

bool repeats_elements(const Tensor& t) {
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.stride(d) == 0 && t.size(d) > 1) return true;
  return false;
}

bool same_view(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.offset() == b.offset() && a.shape() == b.shape() &&
         a.strides() == b.strides();
}

void copy_(Tensor& dst, const Tensor& src) {
  FK_CHECK(!autograd::needs_grad(dst, src), "copy_",
           "tensors that do not require grad (in-place ops are not recorded)",
           "a tensor that requires grad");
  Dims b = broadcast_shapes(dst.shape(), src.shape(), "copy_");
  FK_CHECK(b == dst.shape(), "copy_", "a source broadcastable to " + dst.shape().str(),
           src.shape().str());
  FK_CHECK(!repeats_elements(dst), "copy_",
           "a destination whose elements are distinct memory (clone() an expanded tensor "
           "before writing to it)",
           "shape " + dst.shape().str() + " with strides " + dst.strides().str());
  profile::OpScope op("copy_");
  // A source overlapping the destination (a shifted view of the same storage)
  // would be read after parts of it were written: copy it out first. The same
  // view onto itself is left alone (every element is written with itself).
  if (overlaps(dst, src) && !same_view(dst, src)) {
    Tensor staged = clone(src);
    return copy_(dst, staged);
  }
  dst.bump_version();
  if (dst.device().is_cpu() && src.device().is_cpu()) return copy_cpu(dst, src);
  // Across devices: stage a contiguous copy of the same dtype and shape, move its bytes.
  if (dst.device() != src.device()) {
    Tensor s = src.expand(dst.shape()).contiguous();
    if (s.dtype() != dst.dtype() && s.device().is_cpu()) s = copy_of(s, dst.dtype(), kCPU);
    Tensor staged = (dst.is_contiguous() && s.dtype() == dst.dtype())
                        ? dst
                        : empty(dst.shape(), {s.dtype(), dst.device()});
    int sd = s.device().is_cpu() ? -1 : s.device().index;
    int dd = staged.device().is_cpu() ? -1 : staged.device().index;
    // FK_SYNC_DEBUG: a copy of a device tensor to the host is a host read.
    const HostRead read("a copy to the host (Tensor::to, copy_)", dd < 0 ? s.device() : kCPU);
    cuda::copy_bytes(staged.data_ptr(), dd, s.data_ptr(), sd, static_cast<size_t>(s.nbytes()));
    profile::count_launch();
    if (!staged.is_same(dst)) copy_(dst, staged);
    return;
  }
  // Same CUDA device: one strided, converting, broadcasting copy kernel.
  Dims src_strides = cuda_ops::broadcast_strides(src, dst.shape());
  cuda::launch_copy_strided(static_cast<int>(src.dtype()), src.data_ptr(), src_strides.data(),
                            static_cast<int>(dst.dtype()), dst.data_ptr(), dst.strides().data(),
                            dst.dim(), dst.shape().data(), cuda_ops::stream_of(dst));
  cuda_ops::launched(dst);
}

Tensor contiguous(const Tensor& t) {
  if (t.is_contiguous()) return t;
  Tensor out;
  {
    autograd::NoGradGuard ng;
    out = copy_of(t, t.dtype(), t.device());
  }
  if (autograd::needs_grad(t)) {
    autograd::record(std::make_shared<IdentityBackward>("ContiguousBackward"), {t}, out);
  }
  return out;
}

Tensor clone(const Tensor& t) {
  Tensor out;
  {
    autograd::NoGradGuard ng;
    out = copy_of(t, t.dtype(), t.device());
  }
  if (autograd::needs_grad(t)) {
    autograd::record(std::make_shared<IdentityBackward>("CloneBackward"), {t}, out);
  }
  return out;
}

Tensor to_dtype(const Tensor& t, DType dtype) {
  if (t.dtype() == dtype) return t;
  Tensor out;
  {
    autograd::NoGradGuard ng;
    out = copy_of(t, dtype, t.device());
  }
  if (autograd::needs_grad(t) && is_inexact(dtype)) {
    auto node = std::make_shared<ToDTypeBackward>();
    node->src_dtype = t.dtype();
    autograd::record(node, {t}, out);
  }
  return out;
}

Tensor to_device(const Tensor& t, Device device) {
  if (t.device() == device) return t;
  Tensor out;
  {
    autograd::NoGradGuard ng;
    out = copy_of(t, t.dtype(), device);
  }
  if (autograd::needs_grad(t)) {
    auto node = std::make_shared<ToDeviceBackward>();
    node->src_device = t.device();
    autograd::record(node, {t}, out);
  }
  return out;
}

Tensor to_dtype_backward(const Tensor& g, DType in_dtype) {
  Tensor gi = g;
  if (is_complex(gi.dtype()) && !is_complex(in_dtype)) gi = gi.real();
  return gi.to(in_dtype);
}

Tensor to_device_backward(const Tensor& g, Device in_device) {
  return g.to(in_device);
}

}  // namespace fk
