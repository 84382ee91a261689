#pragma once
// pinn_soft: thermal_tomography's soft-constrained PINN baseline (NeFTY
// Eq. 4, as the reference runs it). A tanh network T_φ(x, y, z, t) stands in
// for the heat solver: the "operator" reads it at the front-face cell
// centres and the observed frame times, and two penalties tie it to the
// physics:
//   pde  mean r² over random collocation points (x uniform in the slab, t in
//        [10⁻³, 1] · t_end, fresh each evaluation), r = ∂_t T − α ΔT − ∇α·∇T,
//        divided by (scale / t_end)²
//   ic   mean (T(x, 0) − T⁰)² over the cell centres, divided by scale²
// with the surface MSE (over scale²) as the data term. The prediction does
// not depend on α, so the surface data reach α only through the residual:
// the decoupling this baseline exists to show.
// α enters the residual as the trilinear interpolant of the field's cell
// values (lateral axes wrap when periodic; beyond the outer cell centres it
// is constant), ∇α as that interpolant's gradient: the field is evaluated on
// its grid like every other method's, where the reference differentiates its
// network at each point.
// T_φ's derivatives come from forward-mode jets through the MLP (the value,
// its four first derivatives and three spatial second derivatives) built of
// fk ops, so autograd carries the residual back to φ. Inputs are normalised
// to [−1, 1] (space: the slab, time: [0, t_end]); the output is scale (the
// flash amplitude) times the network's, so the network works with O(1)
// values. Xavier-uniform weights, zero biases.
// On a CUDA device (a `--device cuda` solve) the network's weights are
// operator parameters that move there with the field (parameters_to) and
// every step is fk ops there. The points are host-made: the surface and the
// cell centres are encoded once per (grid, device, dtype) and kept; the
// residual's fresh collocation points are drawn on the host (the CPU's
// stream, so both devices see the same points), encoded and stencilled there
// and uploaded (host-to-device copies, no host read). That upload is why a
// step is not graph-capturable: a replay would reuse the captured points.
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "fk/tensor.h"
#include "nefi/instances/thermal/explicit_simulator.h"
#include "nefi/losses/loss.h"
#include "nefi/operators/operator.h"
#include "nefi/operators/table_cache.h"

namespace nefi::thermal {

// With n_octaves > 0 the network sees Fourier features of its inputs, the
// FourierFeatures layout without annealing: [u, sin(2^k π u_d), cos(2^k π
// u_d)] (k < n_octaves, d = x, y, z, t; the four sines of octave k, then its
// four cosines). They and their first and second derivatives in u are
// closed-form, so the jets carry through the encoding exactly. dtype: the
// parameters' (F32 for runs; F64 for gradchecks).
class TemperatureNet {
 public:
  TemperatureNet(int hidden, int depth, double scale, uint64_t seed, int n_octaves = 0,
                 fk::DType dtype = fk::DType::F32);
  // The first layer's input (N, in) and, with the encoding and
  // with_derivatives, its derivatives in u_k (k < 4) and second derivatives
  // in u_k (k < 3), for the normalised (x, y, z, t) rows of xt (N, 4) on the
  // host; made there, in the parameters' dtype, and moved to `device`.
  struct Encoded {
    fk::Tensor value, d1[4], d2[3];
  };
  Encoded encode(const fk::Tensor& xt, bool with_derivatives, fk::Device device) const;
  // T at the encoded points: (N).
  fk::Tensor value(const Encoded& e) const;
  // T and its derivatives w.r.t. the normalised inputs: d1[k] = ∂T/∂u_k
  // (k = x, y, z, t), d2[k] = ∂²T/∂u_k² (k = x, y, z). `e` with derivatives.
  struct Jet {
    fk::Tensor value, d1[4], d2[3];
  };
  Jet jet(const Encoded& e) const;
  // The same at host rows xt (N, 4), encoded onto the parameters' device.
  fk::Tensor value(const fk::Tensor& xt) const { return value(encode(xt, false, device())); }
  Jet jet(const fk::Tensor& xt) const { return jet(encode(xt, true, device())); }
  const std::vector<fk::Tensor>& parameters() const { return params_; }
  // Moves the parameters to d (values kept, new leaves).
  void to(fk::Device d);
  fk::Device device() const { return params_.front().device(); }
  fk::DType dtype() const { return params_.front().dtype(); }
  double scale() const { return scale_; }

 private:
  std::vector<fk::Tensor> params_;  // W0, b0, W1, b1, ..., W_out, b_out (leaves)
  double scale_;
  int n_octaves_;
};

struct PinnGeometry {
  std::vector<double> extent;       // the slab (Lx, Ly, H)
  std::vector<double> frame_times;  // the observed frames
  double t_end = 0;                 // time normalisation: n_frames · dt
  bool periodic = true;             // lateral axes wrap
  // Normalised (x, y, z, t) rows of physical points (N, 3) and times (N).
  fk::Tensor normalise(const std::vector<double>& xyz, const std::vector<double>& t) const;
};

// T_φ at the front-face cell centres of a grid and the frame times:
// (n_obs, nx, ny), on the network's device. The α it is applied to only
// sets the grid. The network's weights are its parameters; they follow a
// device solve to its device.
class SoftPinnSurface : public Operator {
 public:
  // `grid`: the resolution at_resolution made it for (empty: none), whose
  // surface points prepare_tables encodes ahead of the first step.
  SoftPinnSurface(std::shared_ptr<TemperatureNet> net, PinnGeometry geometry, fk::Dims grid = {});
  fk::Tensor apply(const fk::Tensor& alpha) const override;
  std::shared_ptr<Operator> at_resolution(const fk::Dims& shape) const override;
  fk::Dims output_shape(const fk::Dims& shape) const override;
  std::string kind() const override { return "soft_pinn_surface"; }
  std::string fidelity_tag() const override { return "pinn-surrogate"; }
  // PdeResidualLoss uploads fresh points at every step (see the file comment).
  bool graph_capturable() const override { return false; }
  std::string not_capturable_reason() const override;
  void prepare_tables(fk::Device device, fk::DType dtype) const override;
  std::vector<fk::Tensor> parameters() const override { return net_->parameters(); }
  bool parameters_follow_device() const override { return true; }
  void parameters_to(fk::Device device) override { net_->to(device); }
  const TemperatureNet& net() const { return *net_; }
  const PinnGeometry& geometry() const { return geo_; }
  // The encoded surface points of `grid` on `device` (made once, kept).
  TemperatureNet::Encoded surface_points(const fk::Dims& grid, fk::Device device) const;
  // How many (grid, device) encodings exist (tests).
  size_t surface_tables() const { return surface_->size(); }

 private:
  std::shared_ptr<TemperatureNet> net_;
  PinnGeometry geo_;
  fk::Dims grid_;
  // Shared by the copies at_resolution makes.
  std::shared_ptr<TableCache<TemperatureNet::Encoded>> surface_;
};

// r = ∂_t T − α ΔT − ∇α·∇T at physical points (N, 3) and times (N), in
// physical units, α the trilinear interpolant of `alpha`'s cell values
// (on the network's device).
fk::Tensor pde_residual(const SoftPinnSurface& op, const fk::Tensor& alpha,
                        const std::vector<double>& xyz, const std::vector<double>& t);

// The residual penalty; needs a SoftPinnSurface operator in the context.
class PdeResidualLoss : public Loss {
 public:
  PdeResidualLoss(int64_t n_points, uint64_t seed, std::string field = "alpha");
  fk::Tensor forward(const LossContext& ctx) const override;

 private:
  int64_t n_points_;
  std::string field_;
  mutable std::mt19937_64 rng_;
};

// The initial-condition penalty against the flash's cell averages, on the
// network's device.
class InitialConditionLoss : public Loss {
 public:
  explicit InitialConditionLoss(FlashSpec flash);
  fk::Tensor forward(const LossContext& ctx) const override;
  // How many (grid, device) tables exist (tests).
  size_t tables() const { return tables_.size(); }

 private:
  // The flash's cell averages (f32) and the encoded cell centres at t = 0.
  struct Tables {
    fk::Tensor t0;
    TemperatureNet::Encoded points;
  };
  FlashSpec flash_;
  mutable TableCache<Tables> tables_;
};

// The trilinear interpolant of cell values v on `shape` over `extent` at
// physical points (N, 3): value and gradient (∂/∂x, ∂/∂y, ∂/∂z), each (N),
// differentiable w.r.t. v, on v's device (the corner indices and weights
// are made on the host and uploaded).
struct Interpolated {
  fk::Tensor value, grad[3];
};
Interpolated trilinear(const fk::Tensor& v, const std::vector<double>& extent, bool periodic,
                       const std::vector<double>& xyz);

}  // namespace nefi::thermal
