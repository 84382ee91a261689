// CPU-only builds: the fused MLP cannot run.
#include "fk/error.h"
#include "nefi/field/fused_mlp_device.h"

namespace nefi {

std::string fused_mlp_unsupported_on(const FusedMlpSpec&, int64_t, int) {
  return "this build has no CUDA backend";
}

fk::Tensor fused_mlp_device(const fk::Tensor& features, const fk::Tensor& params,
                            const FusedMlpSpec&) {
  throw fk::Error("nefi::fused_mlp_device",
                  "operands on a CUDA device (this build has no CUDA backend)",
                  "features, params on " + features.device().str() + ", " + params.device().str());
}

}  // namespace nefi
