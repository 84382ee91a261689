#include "minkowski/nn/autocast.h"

#include <string>

#include "fk/error.h"

namespace minkowski::nn {

fk::Tensor autocast(const fk::Tensor& t) {
  const std::optional<fk::DType> ac = fk::amp::autocast_dtype();
  if (!ac || !t.defined() || t.dtype() == *ac) return t;
  if (t.dtype() == fk::DType::F32 || fk::is_half(t.dtype())) return t.to(*ac);
  return t;
}

fk::Tensor to_norm_input(const fk::Tensor& features, fk::DType param) {
  if (!fk::amp::autocast_dtype() || !fk::is_half(features.dtype()) || fk::is_half(param))
    return features;
  return features.to(param);
}

Precision::Precision(fk::DType dtype) {
  FK_CHECK(dtype == fk::DType::F32 || dtype == fk::DType::BF16 || dtype == fk::DType::F16,
           "nn::Precision", "f32, bf16 or f16", fk::name(dtype));
  if (dtype != fk::DType::F32) guard_.emplace(dtype);
}

fk::DType parse_precision(const std::string& name, const std::string& where) {
  if (name == "f32") return fk::DType::F32;
  if (name == "bf16") return fk::DType::BF16;
  if (name == "fp16" || name == "f16") return fk::DType::F16;
  throw fk::Error(where, "f32, bf16 or fp16", "'" + name + "'");
}

}  // namespace minkowski::nn
