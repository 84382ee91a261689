#pragma once
// The heat operator's pieces for α on a CUDA device. step_solver.cpp and
// heat_system.cpp come here whenever their operand lives on one: the flat
// backend with jacobi or chebyshev runs as DeviceFlatSweeper (nefi/cuda), the
// adjoint's face sums and dJ/dα as one kernel each. The system (and the
// Chebyshev weights) are built on the device from α: between α and the frames
// or the gradient nothing is read back to the host.
// CUDA builds implement these in nefi/cuda/heat_dispatch.cpp; CPU-only builds
// in heat_device_stub.cpp, which refuses.
#include <memory>

#include "fk/tensor.h"
#include "nefi/operators/heat/heat_system.h"
#include "nefi/operators/heat/step_solver.h"

namespace nefi::heat {

// alpha on a CUDA device; flat && solver jacobi | chebyshev (anything else
// is refused with an fk::Error naming the setting).
std::unique_ptr<StepSolver> make_device_step_solver(const fk::Tensor& alpha, const StepGeometry& g,
                                                    bool flat, const SolverOptions& o);
// accumulate_face_products and alpha_gradient with every operand on one CUDA device.
void device_face_products(fk::Tensor& sums, const fk::Tensor& mu, const fk::Tensor& t,
                          const StepGeometry& g);
fk::Tensor device_alpha_gradient(const fk::Tensor& sums, const fk::Tensor& alpha,
                                 const StepGeometry& g);

}  // namespace nefi::heat
