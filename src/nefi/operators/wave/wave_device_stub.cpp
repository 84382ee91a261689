// CPU-only builds: no wave solve on a device (no tensor can live on one here
// either; this keeps the declaration linkable).
#include "fk/error.h"
#include "nefi/operators/wave/wave_device.h"

namespace nefi {

fk::Tensor wave_device(const WaveOperator&, const fk::Tensor& c) {
  throw fk::Error("nefi::WaveOperator", "a velocity on the CPU (this build has no CUDA backend)",
                  c.device().str());
}

}  // namespace nefi
