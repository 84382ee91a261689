// CPU-only builds: a ParametricField's shapes on a CUDA device cannot run.
#include "fk/error.h"
#include "nefi/field/parametric_device.h"

namespace nefi {

fk::Tensor parametric_shapes_device(const fk::Tensor&, const fk::Tensor& shapes, const fk::Tensor&,
                                    const std::string&, int, const fk::Tensor&) {
  throw fk::Error("nefi::parametric_shapes_device",
                  "shapes on the cpu (this build has no CUDA backend)", shapes.device().str());
}

}  // namespace nefi
