// CPU-only builds: a dense layer on a CUDA device cannot run.
#include "fk/error.h"
#include "nefi/field/dense_device.h"

namespace nefi {

fk::Tensor dense_device(const fk::Tensor& x, const fk::Tensor& w, const fk::Tensor& b,
                        DeviceActivation, DevicePrecision, double) {
  throw fk::Error(
      "nefi::dense", "operands on the CPU (this build has no CUDA backend)",
      "x, w, b on " + x.device().str() + ", " + w.device().str() + ", " + b.device().str());
}

}  // namespace nefi
