#pragma once
// What the CPU feature kernels of minkowski/ops share about their operands:
// the dtype they compute in and the check of an N x C feature matrix.
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

// f: a defined CPU floating-point tensor of shape rows x C (`what` names it).
inline void check_feature_rows(const fk::Tensor& f, int64_t rows, const char* where,
                               const char* what) {
  FK_CHECK(f.defined(), where, std::string("a ") + what + " tensor", "an undefined tensor");
  FK_CHECK(f.device().is_cpu(), where, "CPU tensors (only the convolutions have CUDA kernels yet)",
           f.device().str());
  FK_CHECK(fk::is_floating(f.dtype()), where, "f32, f64, f16 or bf16 features",
           fk::name(f.dtype()));
  FK_CHECK(f.dim() == 2 && f.size(0) == rows, where,
           std::string(what) + " of shape " + std::to_string(rows) + " x C", f.shape().str());
}

}  // namespace minkowski::detail
