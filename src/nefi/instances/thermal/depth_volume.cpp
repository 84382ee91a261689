#include "nefi/instances/thermal/depth_volume.h"

#include "fk/error.h"

namespace nefi::thermal {

std::vector<double> depth_map_alpha_volume(const std::vector<bool>& defect,
                                           const std::vector<double>& depth, const fk::Dims& shape,
                                           double thickness, double alpha_bulk, double alpha_defect,
                                           double defect_thickness) {
  FK_CHECK(shape.size() == 3 && static_cast<int64_t>(depth.size()) == shape[0] * shape[1] &&
               defect.size() == depth.size(),
           "nefi::thermal::depth_map_alpha_volume", "a volume whose columns match the depth map",
           shape.str() + " vs " + fk::to_text(depth.size()) + " columns");
  const int64_t nz = shape[2];
  const double hz = thickness / static_cast<double>(nz);
  std::vector<double> v(shape.numel(), alpha_bulk);
  for (size_t p = 0; p < depth.size(); ++p) {
    if (!defect[p]) continue;
    for (int64_t z = 0; z < nz; ++z) {
      const double zc = (z + 0.5) * hz;
      if (zc >= depth[p] - 0.5 * hz && zc <= depth[p] + defect_thickness)
        v[p * nz + z] = alpha_defect;
    }
  }
  return v;
}

}  // namespace nefi::thermal
