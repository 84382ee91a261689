#pragma once
// LowRankField: each raw channel a rank-R canonical polyadic (CP) sum over
// the grid's axes, x(i, j, k) = sum_r a_r(i) b_r(j) c_r(k) (in 1-D just the
// sum of R vectors), then the heads (the reference's low-rank field). It
// holds R (n_0 + ... + n_d) numbers per channel instead of n_0 ... n_d, so
// it suits fields that are nearly separable (layered media, smooth
// backgrounds) and regularises by its rank.
//   forward    1-D a sum over r; 2-D one batched product A^T B per channel;
//              3-D the outer product of A and B, then one batched product
//              with C (fk ops: autograd through them)
//   init       the first term starts the product at the heads' initial value
//              (its factors the d-th root of it, the sign on the first
//              axis), the others small (U(-0.1, 0.1) times that root's
//              scale) so every term has a gradient from the start
//   stages     each factor is area-resampled along its axis to a new grid
// On a CUDA device (to()) the same fk ops run there (bmm through cuBLAS); a
// stage's resampling goes through the host, as a grid field's does.
#include <cstdint>
#include <vector>

#include "nefi/field/field.h"
#include "nefi/field/heads.h"

namespace nefi {

class LowRankField : public Field {
 public:
  LowRankField(const fk::Dims& shape, std::vector<HeadPtr> heads, int rank = 8, uint64_t seed = 0);
  FieldMap forward(const Domain& domain, double progress) override;
  void on_stage_start(const Domain& domain) override;
  void reset_parameters(uint64_t seed) override;
  std::string kind() const override { return "lowrank"; }
  int rank() const { return rank_; }

  bool has_device_path() const override { return true; }
  // Moves the factors to d; later stages' factors are allocated there.
  void to(fk::Device d) override;
  // The factors have nothing progress moves: true on a device while no head reads it.
  bool retarget(double progress) override;

 private:
  void allocate(const fk::Dims& shape);
  std::vector<HeadPtr> heads_;
  int rank_ = 0, n_out_ = 0;
  fk::Dims shape_;
  fk::Device device_ = fk::kCPU;
};

}  // namespace nefi
