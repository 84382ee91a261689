#pragma once
// fk::testing::gradcheck: compares the gradients autograd computes with central
// finite differences, element by element of the full Jacobian. Use f64/c128
// inputs, on the CPU or a CUDA device (a device input is perturbed through a
// host copy). Complex numbers are checked through their real and imaginary parts:
// seeding an output with 1 differentiates Re(y), with i differentiates Im(y),
// and a complex input's gradient is dL/dRe + i dL/dIm.
#include <functional>
#include <string>
#include <vector>

#include "fk/tensor.h"

namespace fk::testing {

struct GradcheckOptions {
  double eps = 1e-6;
  double atol = 1e-6;
  double rtol = 1e-4;
};

using TensorFn = std::function<Tensor(const std::vector<Tensor>&)>;

// Checks the inputs that require grad (the others are constants); when none
// does, every f64 or c128 input (a call with no input marked means them all:
// before, it checked nothing and passed whatever the gradient). Returns an
// empty string when every entry matches, else a description of the first
// mismatch (input, element, analytic and numerical values), or of why
// nothing could be checked.
std::string gradcheck(const TensorFn& fn, const std::vector<Tensor>& inputs,
                      GradcheckOptions options = {});

}  // namespace fk::testing
