// CPU-only builds: no advection-diffusion steps on a device (no tensor can
// live on one here either; this keeps the declaration linkable).
#include "fk/error.h"
#include "nefi/operators/advection_diffusion_device.h"

namespace nefi {

fk::Tensor advection_diffusion_device(const AdvectionDiffusionOperator&, const fk::Tensor& x) {
  throw fk::Error("nefi::AdvectionDiffusionOperator",
                  "a field on the CPU (this build has no CUDA backend)", x.device().str());
}

}  // namespace nefi
