// CPU-only builds: no Radon projection on a device (no tensor can live on one
// here either; this keeps the declaration linkable).
#include "fk/error.h"
#include "nefi/operators/radon_device.h"

namespace nefi {

fk::Tensor radon_device(const RadonOperator&, const fk::Tensor& x) {
  throw fk::Error("nefi::RadonOperator", "an image on the CPU (this build has no CUDA backend)",
                  x.device().str());
}

}  // namespace nefi
