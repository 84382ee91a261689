// CPU-only builds: no Poisson DST solve on a device (no tensor can live on
// one here either; these keep the declarations linkable).
#include "fk/error.h"
#include "nefi/operators/poisson_dst_device.h"

namespace nefi {

fk::Tensor poisson_solve_device(const PoissonOperator&, const fk::Tensor& f) {
  throw fk::Error("nefi::PoissonOperator", "a field on the CPU (this build has no CUDA backend)",
                  f.device().str());
}

fk::Tensor poisson_device(const PoissonOperator& op, const fk::Tensor& x) {
  return poisson_solve_device(op, x);
}

}  // namespace nefi
