#pragma once
// Run-time dtype -> compile-time type for CPU kernels. Each visitor lists the
// dtypes a kernel is instantiated for and throws a clear error for the rest, so
// only what is declared is compiled.
#include <cstdint>
#include <string>

#include "fk/dtype.h"
#include "fk/error.h"

namespace fk::cpu {

template <typename T>
struct Tag {
  using type = T;
};

[[noreturn]] inline void unsupported(const char* op, DType t, const char* supported) {
  throw Error(op, std::string("dtype ") + supported, name(t));
}

// f32, f64 (f16/bf16 are computed in f32 by the callers).
template <typename F>
decltype(auto) visit_float(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::F32:
      return f(Tag<float>{});
    case DType::F64:
      return f(Tag<double>{});
    default:
      unsupported(op, t, "f32 or f64");
  }
}

// f32, f64, c64, c128.
template <typename F>
decltype(auto) visit_inexact(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::F32:
      return f(Tag<float>{});
    case DType::F64:
      return f(Tag<double>{});
    case DType::C64:
      return f(Tag<c64>{});
    case DType::C128:
      return f(Tag<c128>{});
    default:
      unsupported(op, t, "f32, f64, c64 or c128");
  }
}

// i32, i64, f32, f64.
template <typename F>
decltype(auto) visit_real(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::I32:
      return f(Tag<int32_t>{});
    case DType::I64:
      return f(Tag<int64_t>{});
    case DType::F32:
      return f(Tag<float>{});
    case DType::F64:
      return f(Tag<double>{});
    default:
      unsupported(op, t, "i32, i64, f32 or f64");
  }
}

// i32, i64, f32, f64, c64, c128.
template <typename F>
decltype(auto) visit_numeric(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::I32:
      return f(Tag<int32_t>{});
    case DType::I64:
      return f(Tag<int64_t>{});
    case DType::F32:
      return f(Tag<float>{});
    case DType::F64:
      return f(Tag<double>{});
    case DType::C64:
      return f(Tag<c64>{});
    case DType::C128:
      return f(Tag<c128>{});
    default:
      unsupported(op, t, "i32, i64, f32, f64, c64 or c128");
  }
}

// Every dtype except the 16-bit floats.
template <typename F>
decltype(auto) visit_stored(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::Bool:
      return f(Tag<bool>{});
    case DType::I32:
      return f(Tag<int32_t>{});
    case DType::I64:
      return f(Tag<int64_t>{});
    case DType::F32:
      return f(Tag<float>{});
    case DType::F64:
      return f(Tag<double>{});
    case DType::C64:
      return f(Tag<c64>{});
    case DType::C128:
      return f(Tag<c128>{});
    default:
      unsupported(op, t, "bool, i32, i64, f32, f64, c64 or c128");
  }
}

// Ops that only move elements are instantiated per element width, not per dtype.
struct Bytes16 {
  uint64_t lo, hi;
};
template <typename F>
decltype(auto) visit_width(size_t width, F&& f) {
  switch (width) {
    case 1:
      return f(Tag<uint8_t>{});
    case 2:
      return f(Tag<uint16_t>{});
    case 4:
      return f(Tag<uint32_t>{});
    case 8:
      return f(Tag<uint64_t>{});
    default:
      return f(Tag<Bytes16>{});
  }
}

}  // namespace fk::cpu
