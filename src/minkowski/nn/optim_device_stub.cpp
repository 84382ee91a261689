// CPU-only builds: parameters on a CUDA device cannot be updated.
#include "fk/error.h"
#include "minkowski/nn/optim_device.h"

namespace minkowski::nn {

namespace {
[[noreturn]] void no_cuda(const fk::Tensor& p) {
  throw fk::Error("optimizer", "parameters on the CPU (this build has no CUDA backend)",
                  "a parameter on " + p.device().str());
}
}  // namespace

void device_sgd_update(const fk::Tensor& param, const fk::Tensor&, const SgdUpdate&) {
  no_cuda(param);
}
void device_adam_update(const std::vector<AdamOperands>& params, const AdamUpdate&) {
  if (!params.empty()) no_cuda(params[0].param);
}

}  // namespace minkowski::nn
