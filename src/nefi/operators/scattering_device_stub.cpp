// CPU-only builds: no Born or Rytov operator on a device (no tensor can live
// on one here either; this keeps the declaration linkable).
#include "fk/error.h"
#include "nefi/operators/scattering_device.h"

namespace nefi {

fk::Tensor born_device(const BornOperator& op, const fk::Tensor& x) {
  throw fk::Error("nefi::BornOperator (" + op.kind() + ")",
                  "a field on the CPU (this build has no CUDA backend)", x.device().str());
}

}  // namespace nefi
