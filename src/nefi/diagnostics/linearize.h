#pragma once
// The forward operator linearized at a field x, as a LinearMap on flat f64
// vectors: J^T u is the operator's own vjp (autograd or a hand adjoint); J v
// is exact for a linear operator (F itself) and a central difference
//   (F(x + h v) - F(x - h v)) / 2h,  h = eps^(1/3) (1 + max|x|) / max|v|
// otherwise (eps of x's dtype; error O(h^2), about 1e-5 relative in f32).
// Products run in x's dtype on x's device (the operator's tables made
// there first); the vectors cross as f64 host vectors.
#include <string>

#include "fk/tensor.h"
#include "nefi/diagnostics/lanczos.h"
#include "nefi/operators/operator.h"

namespace nefi::diagnostics {

struct Linearization {
  LinearMap map;
  std::string jvp_mode;  // "exact (linear operator)" | "central difference"
  fk::Dims in_shape, out_shape;
};

// `op` must outlive the returned map.
Linearization linearize(const Operator& op, const fk::Tensor& x);

}  // namespace nefi::diagnostics
