#pragma once
// A dense matrix as a bring-your-own forward model: y = A x over the field's
// cells in C order (A of shape (measurements, cells)), its adjoint A^T g.
// What `nefi fit --matrix A.npy` and the tests solve; both products are one
// BLAS call in f64.
#include <memory>

#include "fk/tensor.h"
#include "nefi/operators/function_operator.h"

namespace nefi {

// A real (m, n) matrix (any floating dtype; held as f64), the field's shape
// (n cells) and the measurement's shape (m cells). Throws fk::Error naming
// what does not fit.
std::shared_ptr<FunctionOperator> matrix_operator(const fk::Tensor& a, const fk::Dims& shape,
                                                  const fk::Dims& out_shape,
                                                  const std::string& name = "matrix");

}  // namespace nefi
