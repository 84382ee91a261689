#pragma once
// Element types of fk tensors and the NumPy-style promotion between them.
// f16 and bf16 are stored as 16-bit words; arithmetic on them happens in f32
// (see half.h), because GCC 12 has no vector half arithmetic on this CPU.
#include <complex>
#include <cstdint>
#include <string>

namespace fk {

enum class DType : uint8_t { Bool, I32, I64, F16, BF16, F32, F64, C64, C128 };
inline constexpr int kNumDTypes = 9;

struct Half {
  uint16_t bits = 0;
};
struct BFloat16 {
  uint16_t bits = 0;
};
using c64 = std::complex<float>;
using c128 = std::complex<double>;

inline size_t itemsize(DType t) {
  constexpr unsigned char kSizes[kNumDTypes] = {1, 4, 8, 2, 2, 4, 8, 8, 16};
  return kSizes[static_cast<int>(t)];
}
const char* name(DType t);                    // "f32", "c64", ...
DType dtype_from_name(const std::string& s);  // throws fk::Error on unknown names

inline bool is_floating(DType t) {
  return t == DType::F16 || t == DType::BF16 || t == DType::F32 || t == DType::F64;
}
inline bool is_half(DType t) {
  return t == DType::F16 || t == DType::BF16;
}
inline bool is_complex(DType t) {
  return t == DType::C64 || t == DType::C128;
}
inline bool is_integral(DType t) {
  return t == DType::Bool || t == DType::I32 || t == DType::I64;
}
inline bool is_inexact(DType t) {
  return is_floating(t) || is_complex(t);
}

// NumPy/PyTorch promotion: bool < integers < floats < complex; within a kind the
// wider type wins; f16 with bf16 gives f32; a complex type is widened to hold
// the other operand's float precision.
DType promote(DType a, DType b);
// Whether an in-place op may write a value of dtype `value` into a tensor of
// dtype `self`: a lower kind always; within a kind, floating and complex values
// at any width (rounded, as torch's can_cast), integers only when self's width
// holds them (an i64 value into i32 would wrap).
bool can_write_into(DType self, DType value);
// c64 -> f32, c128 -> f64; other types unchanged.
DType real_type(DType t);
// f32/f16/bf16 -> c64, f64 -> c128; complex unchanged; others -> c64.
DType complex_type(DType t);
// The type arithmetic runs in: f16/bf16 compute in f32, everything else in itself.
inline DType compute_type(DType t) {
  return is_half(t) ? DType::F32 : t;
}

// The C++ type stored for a dtype, for templates in kernels.
template <DType T>
struct CppType;
template <>
struct CppType<DType::Bool> {
  using type = bool;
};
template <>
struct CppType<DType::I32> {
  using type = int32_t;
};
template <>
struct CppType<DType::I64> {
  using type = int64_t;
};
template <>
struct CppType<DType::F16> {
  using type = Half;
};
template <>
struct CppType<DType::BF16> {
  using type = BFloat16;
};
template <>
struct CppType<DType::F32> {
  using type = float;
};
template <>
struct CppType<DType::F64> {
  using type = double;
};
template <>
struct CppType<DType::C64> {
  using type = c64;
};
template <>
struct CppType<DType::C128> {
  using type = c128;
};

template <typename T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<bool>() {
  return DType::Bool;
}
template <>
constexpr DType dtype_of<int32_t>() {
  return DType::I32;
}
template <>
constexpr DType dtype_of<int64_t>() {
  return DType::I64;
}
template <>
constexpr DType dtype_of<Half>() {
  return DType::F16;
}
template <>
constexpr DType dtype_of<BFloat16>() {
  return DType::BF16;
}
template <>
constexpr DType dtype_of<float>() {
  return DType::F32;
}
template <>
constexpr DType dtype_of<double>() {
  return DType::F64;
}
template <>
constexpr DType dtype_of<c64>() {
  return DType::C64;
}
template <>
constexpr DType dtype_of<c128>() {
  return DType::C128;
}

}  // namespace fk
