// CPU-only builds: no angular-spectrum propagation on a device (no tensor
// can live on one here either; these keep the declarations linkable).
#include "fk/error.h"
#include "nefi/operators/angular_spectrum_device.h"

namespace nefi {

fk::Tensor propagate_device(const fk::Tensor& u, const fk::Tensor&, const PropagationOptions&,
                            bool) {
  throw fk::Error("nefi::propagate", "fields on the CPU (this build has no CUDA backend)",
                  u.device().str());
}

fk::Tensor holography_device(const HolographyOperator&, const fk::Tensor& phi) {
  throw fk::Error("nefi::HolographyOperator", "a phase on the CPU (this build has no CUDA backend)",
                  phi.device().str());
}

}  // namespace nefi
