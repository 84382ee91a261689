// CPU-only builds: no photoacoustic wave solve on a device (no tensor can live
// on one here either; this keeps the declaration linkable).
#include "fk/error.h"
#include "nefi/operators/wave/wave_initial_device.h"

namespace nefi {

fk::Tensor wave_initial_device(const WaveInitialConditionOperator&, const fk::Tensor& p0) {
  throw fk::Error("nefi::WaveInitialConditionOperator",
                  "p0 on the CPU (this build has no CUDA backend)", p0.device().str());
}

}  // namespace nefi
