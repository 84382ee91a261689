// CPU-only builds: no elliptic solve on a device (no tensor can live on one
// here either; this keeps the declaration linkable).
#include "fk/error.h"
#include "nefi/operators/elliptic/elliptic_device.h"

namespace nefi::elliptic {

fk::Tensor solve_elliptic_device(const fk::Tensor& sigma, const fk::Tensor&, const fk::Tensor&,
                                 const EllipticGrid&, const SolveOptions&, const SolveLayout&,
                                 const std::shared_ptr<WarmStart>&) {
  throw fk::Error("nefi::elliptic::solve_elliptic",
                  "a conductivity on the CPU (this build has no CUDA backend)",
                  sigma.device().str());
}

}  // namespace nefi::elliptic
