#pragma once
// ParametricField: each raw channel a background plus K shapes, then the
// heads (the reference's parametric field, families gaussian_blobs and
// ellipses, and its star-shape and polygon fields). Shape k of channel c
// has an amplitude a, a centre m and a d x d matrix M; at a point x
// (normalised coordinates, (-1, 1) per axis)
//   q = |(x - m) M|^2          (M M^T is the shape's inverse covariance:
//                               rotated and stretched in any direction)
//   blobs     g = exp(-q / 2)
//   ellipses  g = sigmoid((1 - q) / (2 eps)), eps = eps_start
//             (eps_end / eps_start)^progress: the boundary q = 1 is an
//             edge about eps wide in units of the shape's radius, soft while
//             the fit anneals (so the centre and the axes feel the data from
//             far off) and sharp at the end
//   stars     the ellipse's profile of q = |u|^2 exp(-2 h(u / |u|)),
//             u = (x - m) M: an ellipse whose radius along each direction is
//             scaled by exp(h), h the outline's angular harmonics of
//             degrees 3..L (star_harmonics.h; the reference's star-shape
//             field, 2-D and 3-D), opened one degree after another while
//             progress goes from 0 to 1, so a star starts as an ellipse and
//             finds its place and size before its outline (each stage
//             anneals anew: a stage change shuts the gates again, as it
//             softens the ellipses' edges again; the coefficients are kept)
//   polygons  the same with h the log radius of a star-shaped polygon of V
//             vertices (polygon_outline.h; 2-D): corners and straight
//             sides, where a star's harmonics round them off. h enters
//             gated, gate * h, the gate opening over the first half of
//             each stage (polygon_gate), so a polygon too starts as an
//             ellipse
//   raw_c(x) = b_c + sum_k a_ck g_ck(x)
// The amplitude is trained as alpha: an optimizer's steps of a fixed size
// then take it to either sign and, geometrically, to peaks tens of times the
// field's starting value (a few bright sources on a dark background) in tens
// of steps, where steps in a itself would take thousands.
// It holds C (1 + K (1 + d + d^2 + H)) numbers whatever the grid (H the
// stars' harmonic coefficients or the polygons' V vertex log radii, 0 for
// the others; a layered background adds
// its C (K' - 1) (2 + modes)), so it suits
// scenes that are a few compact objects (sources, inclusions, cells) and
// regularises by its count. It reads no grid: a stage change keeps every
// parameter, and a coarse stage sees the same shapes.
//   init     b at the heads' initial value and every alpha 0 (the field
//            starts at that value); polygons' vertices at the regular
//            polygon of the circle's area (polygon_start_log_radius);
//            M = I / r, r half the spacing of a ceil(K^(1/d))-per-axis
//            lattice; the centres in distinct cells of that lattice (a
//            seeded choice, jittered by a quarter cell), or, given a start
//            map for the channel (start_at_extrema), at the strongest local
//            extrema of the map (smoothed, when sparse,
//            by a gaussian as wide as the spacing of its nonzero cells) of
//            the strongest one's sign, and of the other sign from half its
//            strength where the cells keeping half the extremum's value stay
//            off the map's edge (by the smoothing's width), off a known
//            support's rim and apart from the shapes placed (an object
//            darker than the start among brighter ones; a region reaching
//            the edge is the background's pull), one per object (an extremum
//            joined to a placed one by cells keeping 3/4 of its value is
//            a shoulder of that object, as the lobes of one inclusion
//            are), each
//            as wide as its extremum's half width at half value (r / 4 to
//            r) and outside the ones placed before (their radii, at least
//            r / 2), and the lattice for the rest (cells within r of a
//            placed shape last) at r / 4, so that a spare shape on the
//            background starts with little reach: gradient descent
//            moves a shape only as far as its own reach, so a shape started
//            where the data pull hardest finds its object, where one started
//            on the background, or wider than its object, turns into a wide
//            negative sheet
// The starts (the lattice, a map's extrema and their rules) are in
// parametric_start.cpp.
// One op each way: forward in parallel over points, backward over fixed
// chunks of points reduced in order (deterministic at any thread count); a
// layered background adds the LayeredField's fk ops (a matmul, a sigmoid and
// a sum per channel, whose reductions fk orders by chunk, so a given
// thread count gives the same bits). On a CUDA device every family runs the
// same arithmetic (cuda/parametric_cells.h) as one kernel each way
// (parametric_device.h), its 1 / (2 eps) and gates a device row that
// retarget rewrites as the fit anneals; a layered background's fk ops run
// there too (layered_field.h), eagerly while progress moves.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nefi/field/field.h"
#include "nefi/field/heads.h"
#include "nefi/field/layered_field.h"

namespace nefi {

struct ParametricConfig {
  std::string family = "blobs";            // blobs | ellipses | stars | polygons
  int count = 4;                           // K shapes per channel
  double eps_start = 1.0, eps_end = 0.02;  // the edge width but for blobs (radius units)
  int harmonics = 6;                       // stars: the outline's highest degree L (3..8)
  int vertices = 6;                        // polygons: V (3..16)
  // A layered background (the reference's anomaly field over layers):
  // raw_c = b_c + the layers' steps (layered_field.h, its base b_c) + the
  // shapes. The layers start flat, evenly spaced and without jumps, as a
  // LayeredField does, and hold their interfaces until progress 0.1.
  std::optional<LayeredConfig> layers;
};

// Entries per shape in `shapes`: alpha = asinh(amplitude), centre (d), M
// (d x d, row major), then the outline's coefficients: stars (harmonics = L
// >= 3) star_harmonic_count(d, L), polygons the V vertices' log radii.
int parametric_shape_size(int ndim, int harmonics = 0, int vertices = 0);

// coords (N, d) and shapes (C, K, parametric_shape_size(d, L)) and
// background (C), one real dtype (f32 or f64), on the CPU. Returns raw
// (N, C), differentiable in shapes and background. eps is read by all but
// blobs; degree_gates by stars (L - 2 entries in [0, 1], star_degree_gates;
// d of 2 or 3) and polygons (one, polygon_gate; d = 2, V read from the
// shapes' size), which need them.
fk::Tensor parametric_shapes(const fk::Tensor& coords, const fk::Tensor& shapes,
                             const fk::Tensor& background, const std::string& family, double eps,
                             const std::vector<double>& degree_gates = {});

// Shapes' starting centres and radii along the axes (K x d each, row major).
struct ParametricStart {
  std::vector<double> centres, radii;
};

class ParametricField : public Field {
 public:
  // shape: only its dimension is read (the field has no grid).
  ParametricField(const fk::Dims& shape, std::vector<HeadPtr> heads, ParametricConfig cfg = {},
                  uint64_t seed = 0);
  FieldMap forward(const Domain& domain, double progress) override;
  void reset_parameters(uint64_t seed) override;
  // The family, "layers+" before it over a layered background.
  std::string kind() const override { return (cfg_.layers ? "layers+" : "") + cfg_.family; }
  const ParametricConfig& config() const { return cfg_; }
  double eps(double progress) const;
  // Stars' degree gates, or the polygons' one gate, at `progress` (empty
  // for the other families).
  std::vector<double> gates(double progress) const;
  // Channel c's shapes start at the strongest local extrema of |map| (a map
  // of any grid of the field's dimension; non-finite values read as 0) from
  // now on, reset_parameters included; lattice cells fill in when there are
  // fewer than K (every one for an all-zero map). The placement is found
  // here, once: it does not depend on the seed, the lattice's shapes do.
  // support: the field's known support on the map's grid (cells < 1/2 are
  // outside), if any: the background's pull ends at its rim.
  void start_at_extrema(int channel, const fk::Tensor& map, const fk::Tensor& support = {});
  // How many of channel c's shapes start at the map's extrema.
  int placed_from_map(int channel) const;
  // Where reset_parameters starts channel c's shapes.
  ParametricStart start_shapes(int channel, uint64_t seed) const;
  // Every family trains on a CUDA device, over a layered background too.
  bool has_device_path() const override { return true; }
  void to(fk::Device d) override;
  // The edge width and the outline's gates, rewritten in place; true on a
  // device while no head reads progress, once the first forward there has
  // made the device row (false before: that step is eager), and never over
  // a layered background (its width and gates are numbers of each
  // forward: a step is captured only while progress stays put).
  bool retarget(double progress) override;

 private:
  std::vector<HeadPtr> heads_;
  ParametricConfig cfg_;
  int ndim_ = 0, n_out_ = 0, degree_ = 0;  // degree_: stars' L, else 0
  int vertices_ = 0;                       // polygons' V, else 0
  int layers_first_ = -1;                  // the background layers' jumps in params_
  std::vector<ParametricStart> placed_;    // per channel: the map's extrema
  fk::Dims coords_shape_;
  fk::Tensor coords_;  // on device_
  fk::Device device_ = fk::kCPU;
  // On a device: 1 / (2 eps) and the gates at progress (cuda::kShapeTunables
  // f64, parametric_device.h), rewritten in place as the fit anneals.
  fk::Tensor tunables_;
  std::vector<double> tunables_value_;  // what tunables_ holds
  LayeredRows layered_rows_;            // a layered background's rows on a device
  const fk::Tensor& tunables_on_device(double progress);
};

}  // namespace nefi
