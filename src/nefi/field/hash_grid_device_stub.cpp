// CPU-only builds: the hash-grid encoding on a CUDA device cannot run.
#include "fk/error.h"
#include "nefi/field/hash_grid_device.h"

namespace nefi {

std::shared_ptr<const HashGridPoints> hash_grid_points(const fk::Tensor&, const HashGridLayout&,
                                                       fk::Device device) {
  throw fk::Error("nefi::HashGridField", "the cpu (this build has no CUDA backend)", device.str());
}

fk::Tensor hash_grid_encode_device(std::shared_ptr<const HashGridPoints>, const fk::Tensor& table,
                                   const HashGridLayout&, const fk::Tensor&) {
  throw fk::Error("nefi::hash_grid_encode", "a table on the cpu (this build has no CUDA backend)",
                  table.device().str());
}

}  // namespace nefi
