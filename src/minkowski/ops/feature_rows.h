#pragma once
// What the feature kernels of minkowski/ops share about their operands: the
// dtype they compute in, the check of an N x C feature matrix and of operands
// on one device.
#include <cstdint>
#include <string>

#include "fk/dtype.h"
#include "fk/error.h"
#include "fk/tensor.h"

namespace minkowski::detail {

// f64 stays f64; f32, f16 and bf16 are computed (accumulated) in f32.
inline fk::DType compute_dtype(fk::DType d) {
  return d == fk::DType::F64 ? fk::DType::F64 : fk::DType::F32;
}

// f: a defined floating-point tensor of shape rows x C (`what` names it), on
// any device (the callers' device paths take CUDA tensors).
inline void check_feature_rows(const fk::Tensor& f, int64_t rows, const char* where,
                               const char* what) {
  FK_CHECK(f.defined(), where, std::string("a ") + what + " tensor", "an undefined tensor");
  FK_CHECK(fk::is_floating(f.dtype()), where, "f32, f64, f16 or bf16 features",
           fk::name(f.dtype()));
  FK_CHECK(f.dim() == 2 && f.size(0) == rows, where,
           std::string(what) + " of shape " + fk::to_text(rows) + " x C", f.shape().str());
}

// t (`what`, defined) on the device of `like`: an op's operands on one device.
inline void check_same_device(const fk::Tensor& like, const fk::Tensor& t, const char* where,
                              const char* what) {
  FK_CHECK(t.device() == like.device(), where,
           std::string(what) + " on " + like.device().str() + " (the other operands' device)",
           std::string(what) + " on " + t.device().str());
}

}  // namespace minkowski::detail
