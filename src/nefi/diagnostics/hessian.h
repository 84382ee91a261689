#pragma once
// The curvature of the training loss in the field's parameters (the
// reference's hessian_spectrum and hessian_condition_number): H =
// d^2 L / d theta^2 of the problem's own losses on its measurement at its
// domain, annealing done (progress 1), at the field's current parameters
// theta (left as they were). H is known through products
//   H v = (g(theta + h v) - g(theta - h v)) / 2h,  g = dL/dtheta by backward,
//   h = 1e-3 (1 + max|theta|) / max|v|
// (the parameters are f32: a smaller step drowns in their rounding; the
// error is O(h^2) + O(eps_f32 / h), about 1e-4 relative), and symmetric
// Lanczos (lanczos.h) gives its extreme eigenvalues. Cost: n_iter steps of
// two forward/backward passes each, n_iter vectors of the parameter count
// kept (reorthogonalisation). A grid field with an affine head x = s theta + c
// has H = s^2 times the losses' curvature in the cells; a network's is that
// curvature seen through its Jacobian: their spectra compare how each
// parameterization shapes the fit (NeTMY's preconditioning argument). At the
// kinks of a non-smooth loss (tv, l1, a softplus near 0 is smooth) there is
// no Hessian, and the products measure the gradient's jump over the step.
// On a CUDA device the two gradients of each product run there (the field
// and the operator's trainable parameters moved there for the call and back
// after it, the operator's tables made first, the observations uploaded
// once); the Lanczos arithmetic stays on the host in f64, each product's
// vectors crossing between them.
#include <cstdint>
#include <vector>

#include "fk/device.h"
#include "nefi/diagnostics/lanczos.h"
#include "nefi/solve/problem.h"

namespace nefi::diagnostics {

struct HessianSpectrum {
  Eigenvalues eigenvalues;  // the largest and smallest Ritz values
  int64_t parameters = 0;
  // largest / smallest eigenvalue when H is positive definite there (the
  // spread of curvatures one gradient step has to serve at once); inf when
  // the smallest is <= 0: negative or zero curvature, or a value within the
  // products' error of 0 (about 1e-4 of the largest), which f32 parameters
  // cannot resolve. With n_iter below the parameter count the smallest
  // Ritz value bounds the smallest eigenvalue from above, so this is a
  // lower bound.
  double condition = 0;
};

// device: where the gradients run (the CPU by default; a CUDA device needs a
// field and an operator with a device path: fk::Error naming the part
// without one).
HessianSpectrum hessian_spectrum(const InverseProblem& problem, int k, int n_iter, uint64_t seed,
                                 fk::Device device = fk::kCPU);

}  // namespace nefi::diagnostics
