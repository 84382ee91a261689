#pragma once
// LayeredField: each raw channel K layers stacked along one axis, then the
// heads (the reference's layered / layer-cake field: strata, coatings,
// sediments, tissue layers). Along the axis coordinate z in (-1, 1) the
// layers meet at K - 1 interfaces whose positions vary across the other
// axes x' as a cosine series:
//   z_i(x')  = d_i + sum_k a_ik phi_k(x')
//   raw(x)   = b + sum_i j_i sigmoid((z - z_i(x')) / eps)
// so layer 0 (the axis's low end) has value b and layer i the value
// b + j_1 + ... + j_i. phi_k is the product over the lateral axes of
// sqrt(2) cos(pi k_a (x'_a + 1) / 2) (a cosine series with free ends,
// mean square 1), k_a in 0..D not all 0: D modes in 2-D, (D + 1)^2 - 1 in
// 3-D, none in 1-D (flat layers of a profile). Modes of degree max(k_a) = l
// open (a raised cosine from 0 to 1) while progress goes from (l - 1) / D
// to l / D, and eps anneals from eps_start to eps_end (in the axis's
// normalised units) over the same progress, so the interfaces find their
// depths on soft, flat steps and bend and sharpen later. Until progress
// 0.1 the interfaces are held (their gradient cut) while the values fit:
// with every jump 0 an interface's gradient is 0, and Adam's first steps,
// which have a full step's size whatever the gradient's, walked the
// interfaces at random until two merged (half the learning rates tried
// ended so). Interfaces may cross (a layer pinching out) and are not
// ordered.
// It holds C (1 + (K - 1) (2 + modes)) numbers whatever the grid (a stage
// change keeps them all; each stage anneals anew, so a stage change
// softens the interfaces, shuts the mode gates and holds the interfaces
// again for its first tenth, as the shapes of parametric_field.h re-soften).
// The start is the same for every seed (restarts and ensembles of a layered
// problem repeat one run).
//   init     b at the heads' initial value, every jump 0 (the field starts
//            there), the interfaces flat and evenly spaced: d_i = -1 + 2 i / K
//   forward  fk ops (autograd through them): one matmul for the interfaces,
//            one sigmoid over (cells, K - 1) per channel
// On a CUDA device the same fk ops run there, the basis and the axis
// coordinates uploaded once per grid and progress (LayeredRows). The
// width is a number of each forward and the gates rows remade as progress
// moves, so steps are captured only while progress stays put (eager while
// the fit anneals).
#include <cstdint>
#include <string>
#include <vector>

#include "nefi/field/field.h"
#include "nefi/field/heads.h"

namespace nefi {

// The highest lateral cosine degree D taken.
constexpr int kLayeredMaxDegree = 8;

struct LayeredConfig {
  int layers = 3;                            // K
  int axis = 0;                              // the axis the layers stack along
  int modes = 6;                             // D: the interfaces' lateral cosine degree
  double eps_start = 0.25, eps_end = 0.005;  // interface width (normalised axis units)
};

// Lateral cosine modes of degree 1..D over `lateral` axes (0, 1 or 2).
int layered_mode_count(int lateral, int degree);

// The basis phi (lateral cells, modes) on the lateral grid `lateral_shape`
// (row major), each column times its mode's gate at `progress`.
fk::Tensor layered_modes(const fk::Dims& lateral_shape, int degree, double progress,
                         fk::DType dtype);

// raw (n_axis, lateral cells, C) from z (n_axis), phi (lateral cells, M),
// base (C), jumps (C, K - 1), depths (C, K - 1), modes (C, K - 1, M) (M may
// be 0: modes undefined), one real dtype; differentiable in the last four.
fk::Tensor layered_values(const fk::Tensor& z, const fk::Tensor& phi, const fk::Tensor& base,
                          const fk::Tensor& jumps, const fk::Tensor& depths,
                          const fk::Tensor& modes, double eps);

// Throws fk::Error (naming `who`) unless cfg suits a field of `shape`'s
// dimension: 2-64 layers, an axis of it, a mode degree in [0,
// kLayeredMaxDegree], widths > 0.
void check_layered_config(const LayeredConfig& cfg, const fk::Dims& shape, const char* who);

// Reserves the interfaces of `channels` layered channels in `params` (jumps,
// depths, then modes when the lateral degree gives any): a layered field's,
// or a background's under other parameters. Returns the jumps' index.
int add_layered_interfaces(FlatParams& params, int64_t channels, const LayeredConfig& cfg,
                           int ndim);
// The interfaces' start (no jumps, flat and evenly spaced), at `first`.
void reset_layered_interfaces(FlatParams& params, int first, const LayeredConfig& cfg);

// The interface width at `progress` (eps_start to eps_end, geometrically).
double layered_eps(const LayeredConfig& cfg, double progress);

// The host-made rows layered_grid reads on a CUDA device: the axis
// coordinates z and the gated lateral modes phi of one grid at one
// progress, uploaded once and reused while neither moves (a captured step
// then finds them made: it uploads nothing).
struct LayeredRows {
  fk::Dims shape;
  double progress = -1;
  fk::Tensor z, phi;
};

// The layers' raw values on the grid `shape` (1-3 axes), (cells, C) in C
// order, from params = the views (base, jumps, depths[, modes]) as
// layered_values takes them, on their device; before progress 0.1 the
// interfaces (depths, modes) are held (their gradient cut): see above.
// rows: where a device run keeps its uploaded rows (required there).
fk::Tensor layered_grid(const fk::Dims& shape, const LayeredConfig& cfg, double progress,
                        std::vector<fk::Tensor> params, LayeredRows* rows = nullptr);

class LayeredField : public Field {
 public:
  // shape: only its dimension is read (the field has no grid).
  LayeredField(const fk::Dims& shape, std::vector<HeadPtr> heads, LayeredConfig cfg = {});
  FieldMap forward(const Domain& domain, double progress) override;
  void reset_parameters(uint64_t seed) override;
  std::string kind() const override { return "layers"; }
  const LayeredConfig& config() const { return cfg_; }
  double eps(double progress) const;
  // Trains on a CUDA device through fk's ops (eagerly while progress moves:
  // the width and gates are host numbers of each forward; retarget keeps
  // Field's false).
  bool has_device_path() const override { return true; }
  void to(fk::Device d) override;

 private:
  std::vector<HeadPtr> heads_;
  LayeredConfig cfg_;
  int ndim_ = 0, n_out_ = 0;
  LayeredRows rows_;
};

}  // namespace nefi
