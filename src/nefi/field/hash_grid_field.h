#pragma once
// HashGridField: a multiresolution hash-grid encoding followed by a small MLP
// (Instant-NGP's representation; the reference's "hash" field). Level l of L
// is a grid of N_l cells across the domain, N_l = floor(N_min b^l) with b
// spreading N_min .. N_max geometrically; each vertex holds F trainable
// features, looked up directly while the level's (N_l + 1)^d vertices fit
// its table and through a spatial hash (XOR of vertex index x large primes)
// into T = 2^log2_table entries above that. A point's encoding is every
// level's (multi)linear interpolation of its cell's 2^d vertices, L F
// values, fed to the MLP (ReLU hidden layers, a linear output), then the
// heads.
//   annealing   with `annealed`, level 0 is always on and level l >= 1
//               ramps in linearly while progress goes from (l - 1) / L to
//               l / L: the coarse-to-fine schedule of the Fourier features,
//               so early steps fit the coarse levels
//   init        features U(-1e-4, 1e-4) (the encoding starts near 0 and the
//               field at the heads' initial value); hidden layers
//               He-uniform, the output layer Glorot-uniform scaled by
//               out_init_scale, with the heads' bias
// The encoding is one op each way: forward interpolates in parallel over
// points; backward scatters into each level's table, one level per thread,
// points in order (deterministic at any thread count).
// On a CUDA device (to()) the encoding runs as kernels
// (hash_grid_device.h: the same forward bits, a deterministic backward) and
// the MLP as nefi::dense's device layers; the annealing window is a device
// row that retarget() rewrites, so a captured step replays while levels
// ramp in.
#include <cstdint>
#include <memory>
#include <vector>

#include "nefi/cuda/hash_grid_kernels.h"
#include "nefi/field/field.h"
#include "nefi/field/heads.h"

namespace nefi {

struct HashGridPoints;  // hash_grid_device.h

struct HashGridConfig {
  int levels = 12;
  int features = 2;
  int log2_table = 15;
  int base_resolution = 4;     // N_min
  int finest_resolution = 0;   // N_max; 0: twice the largest axis of the construction grid
  int hidden = 64, depth = 2;  // the MLP after the encoding
  bool annealed = true;
  double out_init_scale = 0.1;
};

// The levels' grids and tables (offsets into one (entries, F) table).
struct HashGridLayout {
  int ndim = 0, features = 0;
  std::vector<int64_t> resolution, table_size, offset;
  int64_t entries = 0;
  bool hashed(int level) const;
};

HashGridLayout hash_grid_layout(int ndim, const HashGridConfig& cfg, int64_t largest_axis);

// The layout's per-level constants, as the cell arithmetic reads them
// (cuda/hash_grid_cells.h, on the host and on a device).
cuda::HashGridLevels hash_grid_levels(const HashGridLayout& layout);

// coords (N, ndim) f32 in (-1, 1); table (entries, F) f32; level_weight one
// per level (the annealing window). Returns (N, levels F) f32,
// differentiable in `table`.
fk::Tensor hash_grid_encode(const fk::Tensor& coords, const fk::Tensor& table,
                            const HashGridLayout& layout, const std::vector<double>& level_weight);

// The annealing window at `progress` (all ones when not annealed).
std::vector<double> hash_grid_level_weights(int levels, double progress, bool annealed);

class HashGridField : public Field {
 public:
  // shape: the grid the field is built for (it sets N_max when not given).
  HashGridField(const fk::Dims& shape, std::vector<HeadPtr> heads, HashGridConfig cfg = {},
                uint64_t seed = 0);
  FieldMap forward(const Domain& domain, double progress) override;
  void reset_parameters(uint64_t seed) override;
  std::string kind() const override { return "hash"; }
  const HashGridLayout& layout() const { return layout_; }
  const HashGridConfig& config() const { return cfg_; }
  const std::vector<HeadPtr>& heads() const { return heads_; }

  bool has_device_path() const override { return true; }
  // Moves the parameters to d (cpu or an available CUDA device); a stage's
  // points and their inverse map follow on the next forward.
  void to(fk::Device d) override;
  // On a device after a forward: writes the annealing window at `progress`
  // into the device row the kernels read; true while no head reads progress.
  bool retarget(double progress) override;
  // The annealing window the device kernels read (undefined before a device
  // forward). Every device forward writes its progress's window there, so a
  // forward between captured steps must be at the steps' progress (the
  // solver's are).
  const fk::Tensor& window() const { return level_weight_; }

 private:
  // The annealing window at `progress` on the device (rewritten in place).
  const fk::Tensor& level_weight_on_device(double progress);

  std::vector<HeadPtr> heads_;
  HashGridConfig cfg_;
  HashGridLayout layout_;
  int n_out_ = 0;
  fk::Dims coords_shape_;
  fk::Tensor coords_;
  fk::Device device_ = fk::kCPU;
  std::shared_ptr<const HashGridPoints> points_;  // coords_ on device_, with their inverse map
  fk::Tensor level_weight_;                       // (levels) f32 on device_
  std::vector<float> level_weight_values_;        // what level_weight_ holds
};

}  // namespace nefi
