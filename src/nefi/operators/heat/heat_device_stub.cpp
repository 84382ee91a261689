// CPU-only builds: the heat operator cannot run on a CUDA device.
#include "fk/error.h"
#include "nefi/operators/heat/heat_device.h"

namespace nefi::heat {

std::unique_ptr<StepSolver> make_device_step_solver(const fk::Tensor& alpha, const StepGeometry&,
                                                    bool, const SolverOptions&) {
  throw fk::Error("nefi::heat", "alpha on the CPU (this build has no CUDA backend)",
                  alpha.device().str());
}

void device_face_products(fk::Tensor&, const fk::Tensor& mu, const fk::Tensor&,
                          const StepGeometry&) {
  throw fk::Error("nefi::heat::accumulate_face_products",
                  "tensors on the CPU (this build has no CUDA backend)", mu.device().str());
}

fk::Tensor device_alpha_gradient(const fk::Tensor&, const fk::Tensor& alpha, const StepGeometry&) {
  throw fk::Error("nefi::heat::alpha_gradient", "alpha on the CPU (this build has no CUDA backend)",
                  alpha.device().str());
}

}  // namespace nefi::heat
