#pragma once
// GridField: free values on the stage grid (the classical pixel/voxel
// baseline), with the same heads as a neural field. At each stage start the
// values are carried over to the new grid like the reference does: area means
// when no axis grows, otherwise (bi/tri)linear interpolation of the cell
// centres (edge cells clamped). The values may live on a CUDA device (to()):
// the solver trains them there as it does a neural field's weights.
#include <vector>

#include "nefi/field/field.h"
#include "nefi/field/heads.h"

namespace nefi {

class GridField : public Field {
 public:
  GridField(const fk::Dims& shape, std::vector<HeadPtr> heads);
  FieldMap forward(const Domain& domain, double progress) override;
  void on_stage_start(const Domain& domain) override;
  void reset_parameters(uint64_t seed) override;
  std::string kind() const override { return "grid"; }
  const fk::Dims& shape() const { return shape_; }
  const std::vector<HeadPtr>& heads() const { return heads_; }
  bool has_device_path() const override { return true; }
  // Moves the values to device d; later stages' grids are allocated there.
  void to(fk::Device d) override;
  // The values have nothing progress moves: true while no head reads it (and on a device).
  bool retarget(double progress) override;

 private:
  void allocate(const fk::Dims& shape);
  std::vector<HeadPtr> heads_;
  int n_out_ = 0;
  fk::Dims shape_;
  fk::Device device_ = fk::kCPU;
};

}  // namespace nefi
