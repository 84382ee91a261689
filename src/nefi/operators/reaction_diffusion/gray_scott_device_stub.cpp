// CPU-only builds: no Gray-Scott solve on a device (no tensor can live on one
// here either; this keeps the declaration linkable).
#include "fk/error.h"
#include "nefi/operators/reaction_diffusion/gray_scott_device.h"

namespace nefi {

fk::Tensor gray_scott_device(const ReactionDiffusionOperator&, const fk::Tensor& x) {
  throw fk::Error("nefi::ReactionDiffusionOperator",
                  "a field on the CPU (this build has no CUDA backend)", x.device().str());
}

}  // namespace nefi
