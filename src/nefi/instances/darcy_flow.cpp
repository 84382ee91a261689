// darcy_flow: hydraulic tomography (nefi.md §4.8). The log-permeability
// Y = log k of [0, L]² from gauge pressures of −∇·(k∇p) = μ Σ_w Q_w δ(x − x_w)
// with no-flow boundaries, one injector/producer pair per configuration
// (darcy_model.h), pressures referenced to the kept gauges' mean, Gaussian
// noise of noise_std · max|data|. Data: the finite-volume solve on a
// supersample× finer grid in f64 to tol 1e-10 (tag elliptic-fv-2x-float64);
// inversion: EllipticOperator (σ = exp Y, IFT adjoint, warm starts) at each
// stage's grid, always predicting the native gauges. Scenes: smooth |
// channels. Methods: neural | grid (+TV) | uniform (Y = 0). Metrics: psnr,
// ssim, mse, relative_error, high_k_iou (Y > mean + 1 std).
#include <algorithm>
#include <cmath>

#include "fk/error.h"
#include "fk/factory.h"
#include "nefi/instances/darcy_model.h"
#include "nefi/instances/datagen.h"
#include "nefi/instances/elliptic_common.h"
#include "nefi/instances/instance.h"
#include "nefi/instances/regularizer_keys.h"
#include "nefi/instances/run_method.h"
#include "nefi/losses/data_losses.h"
#include "nefi/losses/regularizers.h"
#include "nefi/operators/elliptic/elliptic_operator.h"
#include "nefi/solve/metrics.h"

namespace nefi {
namespace {

constexpr const char* kDarcyDataTag = "elliptic-fv-2x-float64";

struct DarcyConfig {
  int64_t n = 0, supersample = 0;
  darcy::Layout layout;
  double log_k_min = 0, log_k_max = 0, noise_std = 0, width_lo = 0, width_hi = 0;
  std::string scene;
  EllipticOperatorOptions solver;
  NeuralFieldConfig field;
  Curriculum neural_curriculum, grid_curriculum;
  TVOptions tv;
  double tv_weight = 0;

  static DarcyConfig from(const Params& p) {
    DarcyConfig c;
    c.n = p.i("n");
    FK_CHECK(c.n >= 8 && c.n <= 1024, "config key 'n'", "a grid size in [8, 1024]",
             fk::to_text(c.n));
    c.supersample = p.i("supersample");
    FK_CHECK(c.supersample >= 1 && c.supersample <= 8, "config key 'supersample'",
             "a refinement in [1, 8]", fk::to_text(c.supersample));
    c.layout.extent = p.d("extent");
    FK_CHECK(c.layout.extent > 0, "config key 'extent'", "a length > 0",
             Params::render(c.layout.extent));
    c.layout.n_configs = p.i("n_configs");
    FK_CHECK(c.layout.n_configs >= 1 && c.layout.n_configs <= 256, "config key 'n_configs'",
             "a count in [1, 256]", fk::to_text(c.layout.n_configs));
    c.layout.n_sensors = p.i("n_sensors");
    FK_CHECK(c.layout.n_sensors >= 2 && c.layout.n_sensors <= 256, "config key 'n_sensors'",
             "a lattice size in [2, 256]", fk::to_text(c.layout.n_sensors));
    c.layout.well_angle = p.d("well_angle");
    c.layout.rate = p.d("rate");
    c.layout.viscosity = p.d("viscosity");
    FK_CHECK(c.layout.rate > 0 && c.layout.viscosity > 0, "config keys 'rate', 'viscosity'",
             "values > 0",
             Params::render(c.layout.rate) + ", " + Params::render(c.layout.viscosity));
    c.layout.native = c.n;
    c.log_k_min = p.d("log_k_min");
    c.log_k_max = p.d("log_k_max");
    FK_CHECK(c.log_k_min < 0 && 0 < c.log_k_max && c.log_k_max - c.log_k_min <= 40,
             "config keys 'log_k_min', 'log_k_max'", "log_k_min < 0 < log_k_max (span <= 40)",
             Params::render(c.log_k_min) + ", " + Params::render(c.log_k_max));
    c.noise_std = noise_std_key(p);
    const std::vector<double> w = p.list("channel_width");
    FK_CHECK(w.size() == 2 && w[0] > 0 && w[1] >= w[0] && w[1] < 1, "config key 'channel_width'",
             "a range [lo, hi] of fractions of L in (0, 1)", Params::render(w));
    c.width_lo = w[0], c.width_hi = w[1];
    c.scene = p.choice("scene", {"smooth", "channels"});
    c.solver = elliptic_options_from(p);
    c.solver.boundary = "neumann";
    c.solver.sigma_transform = "exp";
    c.field = neural_field_config_from(p);
    c.neural_curriculum = elliptic_curriculum(p, c.n, "lr");
    c.grid_curriculum = elliptic_curriculum(p, c.n, "grid_lr");
    c.tv.eps = tv_eps_key(p);
    c.tv.use_spacing = true;
    c.tv_weight = weight_key(p, "tv");
    return c;
  }
};

// Wells spread at any grid; the pressures always at the native gauges.
std::shared_ptr<EllipticOperator> darcy_operator(const DarcyConfig& c, int64_t n,
                                                 EllipticOperatorOptions o) {
  const darcy::Layout w = c.layout;
  auto rhs = [w](const Domain& d) {
    const int64_t m = d.shape()[0];
    return fk::from_vector(darcy::well_rhs(w, m), {w.n_configs, m, m});
  };
  auto observe = [w](const Domain& d) {
    const int64_t m = d.shape()[0];
    return fk::from_vector(darcy::gauge_matrix(w, m),
                           {w.n_configs, w.n_sensors * w.n_sensors, m * m});
  };
  const Domain domain({n, n}, {c.layout.extent, c.layout.extent});
  auto op = std::make_shared<EllipticOperator>(domain, rhs, observe, std::move(o));
  op->primary = "logk";
  return op;
}

// Cells where Y exceeds its mean by one standard deviation.
std::vector<bool> high_k(const fk::Tensor& y) {
  const auto v = y.to_vector<double>();
  double m = 0, s = 0;
  for (double x : v) m += x;
  m /= static_cast<double>(v.size());
  for (double x : v) s += (x - m) * (x - m);
  s = std::sqrt(s / static_cast<double>(v.size()));
  std::vector<bool> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = s > 0 && v[i] > m + s;
  return out;
}

class DarcyFlow : public Instance {
 public:
  std::string name() const override { return "darcy_flow"; }
  std::string data_tag(const Params&) const override { return darcy_flow_data_tag(); }
  std::string summary() const override {
    return "2-D hydraulic tomography: log-permeability from well-test gauge pressures (FV + IFT "
           "adjoint)";
  }
  std::vector<std::string> methods() const override { return {"neural", "grid", "uniform"}; }
  std::vector<std::string> scenes() const override { return {"smooth", "channels"}; }

  DataLabels data_labels(const Params& p) const override {
    const int64_t gauges = p.i("n_sensors") * p.i("n_sensors");
    return {{"permeability", "ln k", "dimensionless"},
            square_axes(static_cast<double>(p.i("n")), "px"),
            {"gauge pressure − mean", "p", "a.u."},
            {index_axis("well configuration", p.i("n_configs")), index_axis("gauge", gauges)}};
  }

  Params default_config() const override {
    Params p;
    p.declare("n", int64_t{64}, "grid cells per axis");
    p.declare("extent", 1.0, "side length L");
    p.declare("n_configs", int64_t{8}, "well configurations (injector/producer pairs)");
    p.declare("n_sensors", int64_t{12}, "gauge lattice size per axis");
    p.declare("well_angle", 0.0, "angle of configuration 0's injector (rad)");
    p.declare("rate", 1.0, "well rate Q");
    p.declare("viscosity", 1.0, "fluid viscosity mu");
    p.declare("log_k_min", -3.0, "head lower bound of Y = log k");
    p.declare("log_k_max", 4.0, "head upper bound of Y = log k");
    p.declare("scene", std::string("channels"), "smooth | channels");
    p.declare("channel_width", std::vector<double>{0.05, 0.08}, "channel width range / L");
    p.declare("noise_std", 2e-3, "noise std relative to max|pressure|");
    p.declare("supersample", int64_t{2}, "data grid refinement (f64, tol 1e-10)");
    declare_elliptic_solver_keys(p, 8);
    declare_elliptic_inversion_keys(p);
    return p;
  }

  std::pair<Measurement, fk::Tensor> make_measurement(const Params& p,
                                                      uint64_t seed) const override {
    return measure(DarcyConfig::from(p), seed);
  }

  std::optional<ProblemSetup> setup_from(const Params& p, const std::string& method, uint64_t seed,
                                         const Measurement* measured) const override {
    if (method != "neural" && method != "grid") return std::nullopt;
    const DarcyConfig c = DarcyConfig::from(p);
    auto [meas, gt] = measured_or(measure(c, seed), measured);
    const Domain domain({c.n, c.n}, {c.layout.extent, c.layout.extent});
    ProblemSetup s{
        field_problem("darcy_flow", domain, darcy_operator(c, c.n, c.solver), meas,
                      {bounded_head("logk", c.log_k_min, c.log_k_max, 0.0)}, method, c.field, seed),
        method == "neural" ? c.neural_curriculum : c.grid_curriculum, meas, gt};
    s.problem.losses.add(mse_loss(), 1.0);
    s.problem.losses.add(tv_loss("logk", c.tv), c.tv_weight);
    return s;
  }

  RunOutput run(const Params& p, const std::string& method, uint64_t seed,
                const SolverOptions& so) const override {
    MethodRunners runners;
    runners.direct["uniform"] = [&p](const Measurement&, RunOutput& out) {
      const DarcyConfig c = DarcyConfig::from(p);
      uniform_output(*darcy_operator(c, c.n, c.solver), "logk", 0.0, {c.n, c.n}, out);
    };
    return run_method(*this, p, method, seed, so, runners);
  }

  std::map<std::string, double> evaluate(const Params& p, const RunOutput& out) const override {
    (void)p;
    return {{"psnr", psnr(out.reconstruction, out.gt)},
            {"ssim", ssim(out.reconstruction, out.gt)},
            {"mse", mse(out.reconstruction, out.gt)},
            {"relative_error", relative_error(out.reconstruction, out.gt)},
            {"high_k_iou", mask_iou(high_k(out.reconstruction), high_k(out.gt))}};
  }

 private:
  // Y on the supersampled grid → f64 solves to 1e-10 there → pressures at
  // the native gauges → noise (dropped gauges masked); the truth is Y's cell
  // averages at n.
  static std::pair<Measurement, fk::Tensor> measure(const DarcyConfig& c, uint64_t seed) {
    const int64_t nf = c.n * c.supersample;
    const darcy::LogPermeability field(c.scene, c.layout.extent, c.width_lo, c.width_hi, seed);
    const double lo = c.log_k_min + 0.05, hi = c.log_k_max - 0.05;
    const auto fine = field.render(nf, std::max<int64_t>(1, 4 / c.supersample), lo, hi);
    const EllipticOperatorOptions o = elliptic_data_options(c.solver, kDarcyDataTag);
    std::vector<double> y =
        darcy_operator(c, nf, o)->apply(fk::from_vector(fine, {nf, nf})).to_vector<double>();
    const int64_t ng = c.layout.n_sensors * c.layout.n_sensors;
    const std::vector<double> mask = darcy::gauge_mask(c.layout);
    double mx = 0;
    for (size_t i = 0; i < y.size(); ++i) mx = std::max(mx, mask[i] * std::abs(y[i]));
    Measurement m;
    m.noise_std = c.noise_std * mx;
    datagen::Rng rng(seed * 7919 + 97);
    for (size_t i = 0; i < y.size(); ++i) y[i] = mask[i] * (y[i] + m.noise_std * rng.normal());
    m.data = fk::from_vector(y, {c.layout.n_configs, ng}).to(fk::DType::F32);
    m.mask = fk::from_vector(mask, {c.layout.n_configs, ng}).to(fk::DType::F32);
    const auto gt = field.render(c.n, 4 * c.supersample, lo, hi);
    return {m, fk::from_vector(gt, {c.n, c.n})};
  }
};

}  // namespace

const char* darcy_flow_data_tag() {
  return kDarcyDataTag;
}
InstancePtr make_darcy_flow() {
  return std::make_shared<DarcyFlow>();
}

}  // namespace nefi
