#include "fk/dtype.h"

#include "fk/error.h"

namespace fk {

const char* name(DType t) {
  switch (t) {
    case DType::Bool:
      return "bool";
    case DType::I32:
      return "i32";
    case DType::I64:
      return "i64";
    case DType::F16:
      return "f16";
    case DType::BF16:
      return "bf16";
    case DType::F32:
      return "f32";
    case DType::F64:
      return "f64";
    case DType::C64:
      return "c64";
    case DType::C128:
      return "c128";
  }
  return "?";
}

DType dtype_from_name(const std::string& s) {
  for (int i = 0; i < kNumDTypes; ++i) {
    auto t = static_cast<DType>(i);
    if (s == name(t)) return t;
  }
  if (s == "float32" || s == "float") return DType::F32;
  if (s == "float64" || s == "double") return DType::F64;
  if (s == "float16" || s == "half") return DType::F16;
  if (s == "bfloat16") return DType::BF16;
  if (s == "int32" || s == "int") return DType::I32;
  if (s == "int64" || s == "long") return DType::I64;
  if (s == "complex64" || s == "cfloat") return DType::C64;
  if (s == "complex128" || s == "cdouble") return DType::C128;
  throw Error("dtype name",
              "one of bool, i32, i64, f16, bf16, f32, f64, c64, c128 (or torch's names: int32, "
              "int64, float16, bfloat16, float32, float64, complex64, complex128, int, long, "
              "half, float, double, cfloat, cdouble)",
              "'" + s + "'");
}

namespace {
int kind(DType t) {
  if (t == DType::Bool) return 0;
  if (is_integral(t)) return 1;
  if (is_floating(t)) return 2;
  return 3;
}
}  // namespace

DType promote(DType a, DType b) {
  if (a == b) return a;
  int ka = kind(a), kb = kind(b);
  if (ka != kb) {
    DType hi = ka > kb ? a : b, lo = ka > kb ? b : a;
    if (kind(hi) == 3 && lo == DType::F64) return DType::C128;
    return hi;
  }
  switch (ka) {
    case 1:
      return DType::I64;
    case 2:
      if (a == DType::F64 || b == DType::F64) return DType::F64;
      return DType::F32;  // f16+bf16, or half with f32
    default:
      return DType::C128;
  }
}

bool can_write_into(DType self, DType value) {
  const int ks = kind(self), kv = kind(value);
  if (kv != ks) return kv < ks;
  return ks >= 2 || promote(self, value) == self;
}

DType real_type(DType t) {
  if (t == DType::C64) return DType::F32;
  if (t == DType::C128) return DType::F64;
  return t;
}

DType complex_type(DType t) {
  if (t == DType::F64 || t == DType::C128) return DType::C128;
  return DType::C64;
}

}  // namespace fk
