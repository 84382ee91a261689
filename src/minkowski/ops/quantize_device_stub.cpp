// CPU-only builds: features on a CUDA device cannot be quantized.
#include "fk/error.h"
#include "minkowski/ops/quantize_device.h"

namespace minkowski {

fk::Tensor device_group_argmax(const fk::Tensor& features, const std::vector<int64_t>&, int64_t) {
  throw fk::Error("minkowski::quantize", "features on the CPU (this build has no CUDA backend)",
                  "features on " + features.device().str());
}

}  // namespace minkowski
