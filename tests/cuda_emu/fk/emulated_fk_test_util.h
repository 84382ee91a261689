#pragma once
// What the emulated-device tests of fk's own kernels share beyond
// cuda_emu/emulated_test_util.h: raw element buffers of any dtype with random
// values, CPU tensors viewing those buffers with any strides (so fk's CPU ops
// are the reference over the very bytes the kernel read), and an element comparison
// that is bitwise except that any NaN equals any NaN (the f16 and bf16
// converters of CUDA's headers and of fk/half.h pick different NaN payloads),
// or, for complex results of different formulas, within a few ulp.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cuda_emu/emulated_test_util.h"
#include "fk/dtype.h"
#include "fk/half.h"
#include "fk/tensor.h"

namespace fk_emu_test {

inline constexpr fk::DType kAllDTypes[] = {fk::DType::Bool, fk::DType::I32,  fk::DType::I64,
                                           fk::DType::F16,  fk::DType::BF16, fk::DType::F32,
                                           fk::DType::F64,  fk::DType::C64,  fk::DType::C128};

inline int code(fk::DType t) {
  return static_cast<int>(t);
}

// The bytes of `n` elements of one dtype (16-byte aligned, as device memory).
struct Buffer {
  fk::DType dtype;
  std::vector<std::complex<double>> storage;  // 16-byte words (any element fits one)
  int64_t n;

  Buffer(fk::DType t, int64_t count)
      : dtype(t), storage(static_cast<size_t>(count + 1)), n(count) {}
  size_t itemsize() const { return fk::itemsize(dtype); }
  size_t nbytes() const { return static_cast<size_t>(n) * itemsize(); }
  unsigned char* bytes() { return reinterpret_cast<unsigned char*>(storage.data()); }
  const unsigned char* bytes() const {
    return reinterpret_cast<const unsigned char*>(storage.data());
  }
  void* data() { return storage.data(); }

  // Element i set to re + i im by fk's conversion rules (f16/bf16 through f32).
  void set(int64_t i, double re, double im = 0.0) {
    unsigned char* at = bytes() + static_cast<size_t>(i) * itemsize();
    auto put = [&](auto v) { std::memcpy(at, &v, sizeof(v)); };
    switch (dtype) {
      case fk::DType::Bool:
        put(static_cast<uint8_t>(re != 0.0));
        break;
      case fk::DType::I32:
        put(static_cast<int32_t>(re));
        break;
      case fk::DType::I64:
        put(static_cast<int64_t>(re));
        break;
      case fk::DType::F16:
        put(fk::float_to_half(static_cast<float>(re)));
        break;
      case fk::DType::BF16:
        put(fk::float_to_bf16(static_cast<float>(re)));
        break;
      case fk::DType::F32:
        put(static_cast<float>(re));
        break;
      case fk::DType::F64:
        put(re);
        break;
      case fk::DType::C64:
        put(std::complex<float>(static_cast<float>(re), static_cast<float>(im)));
        break;
      case fk::DType::C128:
        put(std::complex<double>(re, im));
        break;
    }
  }
};

// Random values that every dtype holds and every conversion keeps defined:
// finite, |v| < 2^31 (float -> int truncation), bool 0/1; with fractions,
// negative zeros and values past f16's and f32's integer precision.
inline Buffer random_buffer(fk::DType t, int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  Buffer b(t, n);
  for (int64_t i = 0; i < n; ++i) {
    double re = 0.0, im = 0.0;
    switch (rng() % 6) {
      case 0:
        re = unit(rng) * 4.0;
        break;
      case 1:
        re = std::trunc(unit(rng) * 300.0) + 0.5;  // ties of truncation and rounding
        break;
      case 2:
        re = unit(rng) * (t == fk::DType::F16 ? 6.0e4 : 2.0e9);  // past f32's 24 bits
        break;
      case 3:
        re = (rng() % 2 ? -1.0 : 1.0) * std::ldexp(1.0 + unit(rng), -20);  // f16 subnormal
        break;
      case 4:
        re = rng() % 2 ? -0.0 : 0.0;
        break;
      default:
        re = static_cast<double>(static_cast<int32_t>(rng() % 2001) - 1000);
        break;
    }
    im = unit(rng) * 100.0;
    if (t == fk::DType::I64 && rng() % 4 == 0)
      re = static_cast<double>((int64_t{1} << 40) + static_cast<int64_t>(rng()));
    b.set(i, re, im);
  }
  return b;
}

// A CPU tensor viewing `data` (not owned) with the given geometry.
inline fk::Tensor view_of(void* data, size_t nbytes, fk::DType t, const fk::Dims& shape,
                          const fk::Dims& strides, int64_t offset = 0) {
  auto storage = std::make_shared<fk::Storage>(fk::kCPU, data, nbytes, [](void*) {});
  return fk::make_tensor(std::move(storage), t, shape, strides, offset);
}
inline fk::Tensor view_of(Buffer& b, const fk::Dims& shape, const fk::Dims& strides,
                          int64_t offset = 0) {
  return view_of(b.data(), b.nbytes(), b.dtype, shape, strides, offset);
}
inline fk::Tensor view_of(Buffer& b) {
  return view_of(b, fk::Dims{b.n}, fk::Dims{1});
}

// C-contiguous strides of shape.
inline fk::Dims contiguous_strides(const fk::Dims& shape) {
  fk::Dims s = shape;
  int64_t run = 1;
  for (int d = shape.size() - 1; d >= 0; --d) {
    s[d] = run;
    run *= shape[d];
  }
  return s;
}

// Whether one floating component (of `size` bytes, f16 and bf16 both 2) is NaN.
inline bool is_nan_component(fk::DType t, const unsigned char* at) {
  switch (t) {
    case fk::DType::F16: {
      uint16_t h;
      std::memcpy(&h, at, 2);
      return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0;
    }
    case fk::DType::BF16: {
      uint16_t h;
      std::memcpy(&h, at, 2);
      return (h & 0x7f80u) == 0x7f80u && (h & 0x7fu) != 0;
    }
    case fk::DType::F32:
    case fk::DType::C64: {
      float f;
      std::memcpy(&f, at, 4);
      return std::isnan(f);
    }
    case fk::DType::F64:
    case fk::DType::C128: {
      double f;
      std::memcpy(&f, at, 8);
      return std::isnan(f);
    }
    default:
      return false;
  }
}

// Elements equal bit for bit, or NaN in the same components.
inline bool same_element(fk::DType t, const unsigned char* a, const unsigned char* b) {
  const size_t size = fk::itemsize(t);
  const bool complex = t == fk::DType::C64 || t == fk::DType::C128;
  const size_t part = complex ? size / 2 : size;
  for (size_t at = 0; at < size; at += part) {
    const bool nan_a = is_nan_component(t, a + at), nan_b = is_nan_component(t, b + at);
    if (nan_a != nan_b) return false;
    if (!nan_a && std::memcmp(a + at, b + at, part) != 0) return false;
  }
  return true;
}

inline std::string hex_of(const unsigned char* at, size_t size) {
  static const char digits[] = "0123456789abcdef";
  std::string s;
  for (size_t i = size; i-- > 0;) {
    s += digits[at[i] >> 4];
    s += digits[at[i] & 15];
  }
  return s;
}

// n elements of dtype t equal (same_element), at most five differences reported.
inline void expect_same_elements(fk::DType t, const void* got, const void* want, int64_t n,
                                 const std::string& what) {
  const size_t size = fk::itemsize(t);
  const auto* g = static_cast<const unsigned char*>(got);
  const auto* w = static_cast<const unsigned char*>(want);
  int64_t wrong = 0;
  for (int64_t i = 0; i < n; ++i) {
    const unsigned char* gi = g + static_cast<size_t>(i) * size;
    const unsigned char* wi = w + static_cast<size_t>(i) * size;
    if (!same_element(t, gi, wi) && wrong++ < 5)
      ADD_FAILURE() << what << " [" << i << "]: got 0x" << hex_of(gi, size) << ", want 0x"
                    << hex_of(wi, size);
  }
  EXPECT_EQ(wrong, 0) << what << ": elements differing from the reference";
}

// Complex results equal, or within `ulps` epsilons of the reference's
// magnitude (a NaN part matches a NaN part; infinities must be equal).
template <typename R>
void expect_close_complex(const void* got, const void* want, int64_t n, const std::string& what,
                          R ulps = 8) {
  const auto* g = static_cast<const std::complex<R>*>(got);
  const auto* w = static_cast<const std::complex<R>*>(want);
  int64_t wrong = 0;
  for (int64_t i = 0; i < n; ++i) {
    const bool nan_g = std::isnan(g[i].real()) || std::isnan(g[i].imag());
    const bool nan_w = std::isnan(w[i].real()) || std::isnan(w[i].imag());
    bool ok = g[i] == w[i];
    if (!ok && (nan_g || nan_w)) ok = nan_g && nan_w;
    if (!ok && !nan_g && !nan_w)
      ok = std::abs(g[i] - w[i]) <= ulps * std::numeric_limits<R>::epsilon() * std::abs(w[i]);
    if (!ok && wrong++ < 5)
      ADD_FAILURE() << what << " [" << i << "]: got " << g[i] << ", want " << w[i];
  }
  EXPECT_EQ(wrong, 0) << what << ": elements differing from the reference";
}

// Elements of a shape; its contiguous strides.
inline int64_t numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

inline std::vector<int64_t> contiguous(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size());
  int64_t run = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    s[d] = run;
    run *= shape[d];
  }
  return s;
}

// Elements a view of `shape` with `strides` reaches (at least one).
inline int64_t extent(const std::vector<int64_t>& shape, const std::vector<int64_t>& strides) {
  int64_t last = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0) return 1;
    last += (shape[d] - 1) * strides[d];
  }
  return last + 1;
}

}  // namespace fk_emu_test
