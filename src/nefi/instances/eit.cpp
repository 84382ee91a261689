// eit: electrical impedance tomography (nefi.md §4.7). The conductivity σ of
// [−1, 1]² from the boundary voltages of −∇·(σ∇u_p) = 0 under trigonometric
// Neumann current patterns, injected face-averaged along the whole boundary
// or through Somersalo's gap electrodes (config key electrodes; eit_model.h),
// the voltages read by the reference's extrapolated trace or the flux trace
// (config key trace), with Gaussian noise of noise_std · max|data|. Data: the finite-volume
// solve on a supersample× finer grid in f64 to tol 1e-10 (tag
// elliptic-fv-2x-float64) with the same current model; inversion:
// EllipticOperator at each stage's grid (pure Neumann, zero-mean gauge, IFT
// adjoint), solved by the banded Cholesky (linear_solver banded, the
// default here: exact and 5x cheaper than the reference's PCG at 24²; cg
// gives the reference's Jacobi-PCG with warm starts, and runs on a CUDA
// device: --device cuda --set linear_solver=cg). Scenes: single | multi
// | contrast. Methods: neural | grid (+TV of σ, or of σ mirrored at σ_bg;
// its own steps under grid_steps) | uniform (σ_bg everywhere). Metrics:
// psnr, ssim, mse, relative_error, inclusion_iou (sign-aware half-max
// supports of log σ/σ_bg).
#include <algorithm>
#include <cmath>
#include <limits>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/unary.h"
#include "nefi/instances/datagen.h"
#include "nefi/instances/eit_flux_term.h"
#include "nefi/instances/eit_model.h"
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

constexpr const char* kEitDataTag = "elliptic-fv-2x-float64";

struct EitConfig {
  int64_t n = 0, n_patterns = 0, supersample = 0;
  double amplitude = 0, sigma_bg = 0, sigma_min = 0, sigma_max = 0, noise_std = 0;
  double contrast_lo = 0, contrast_hi = 0;
  std::string scene;
  eit::Electrodes electrodes;
  bool flux_trace = false;
  EllipticOperatorOptions solver;
  NeuralFieldConfig field;
  Curriculum neural_curriculum, grid_curriculum;
  TVOptions tv;
  double tv_weight = 0;
  bool tv_mirrored = false;

  static EitConfig from(const Params& p) {
    EitConfig c;
    c.n = p.i("n");
    FK_CHECK(c.n >= 8 && c.n <= 1024, "config key 'n'", "a grid size in [8, 1024]",
             fk::to_text(c.n));
    c.n_patterns = p.i("n_patterns");
    FK_CHECK(c.n_patterns >= 1 && c.n_patterns <= 2 * c.n, "config key 'n_patterns'",
             "a pattern count in [1, 2 n]", fk::to_text(c.n_patterns));
    c.supersample = p.i("supersample");
    FK_CHECK(c.supersample >= 1 && c.supersample <= 8, "config key 'supersample'",
             "a refinement in [1, 8]", fk::to_text(c.supersample));
    c.amplitude = p.d("amplitude");
    FK_CHECK(c.amplitude > 0, "config key 'amplitude'", "> 0", Params::render(c.amplitude));
    c.sigma_bg = p.d("sigma_bg");
    c.sigma_min = p.d("sigma_min");
    c.sigma_max = p.d("sigma_max");
    FK_CHECK(c.sigma_min > 0 && c.sigma_min < c.sigma_bg && c.sigma_bg < c.sigma_max,
             "config keys 'sigma_min', 'sigma_bg', 'sigma_max'",
             "0 < sigma_min < sigma_bg < sigma_max",
             Params::render(c.sigma_min) + ", " + Params::render(c.sigma_bg) + ", " +
                 Params::render(c.sigma_max));
    const std::vector<double> con = p.list("contrast");
    FK_CHECK(con.size() == 2 && con[0] >= 1 && con[1] >= con[0], "config key 'contrast'",
             "a range [lo, hi] with 1 <= lo <= hi", Params::render(con));
    c.contrast_lo = con[0], c.contrast_hi = con[1];
    c.noise_std = noise_std_key(p);
    c.scene = p.choice("scene", {"single", "multi", "contrast"});
    c.electrodes = {p.i("electrodes"), p.d("electrode_coverage")};
    eit::check_electrodes(c.electrodes, c.n_patterns);
    c.flux_trace = p.choice("trace", {"extrapolated", "flux"}) == "flux";
    c.solver = elliptic_options_from(p);
    c.solver.boundary = "neumann";
    c.field = neural_field_config_from(p);
    c.neural_curriculum = elliptic_curriculum(p, c.n, "lr");
    // The grid's own steps: a pixel grid keeps fitting long after the
    // neural field's data misfit is at its floor (configs/eit_full.yaml).
    const std::vector<double> grid_steps = p.list("grid_steps"), steps = p.list("steps");
    FK_CHECK(
        grid_steps.empty() || grid_steps.size() == steps.size(), "config key 'grid_steps'",
        "[] (the grid takes 'steps') or one count per stage of 'steps' " + Params::render(steps),
        Params::render(grid_steps));
    c.grid_curriculum =
        elliptic_curriculum(p, c.n, "grid_lr", grid_steps.empty() ? "steps" : "grid_steps");
    const double floor = p.d("lr_min_ratio");
    FK_CHECK(floor >= 0 && floor < 1, "config key 'lr_min_ratio'", "a fraction in [0, 1)",
             Params::render(floor));
    for (Curriculum* cur : {&c.neural_curriculum, &c.grid_curriculum})
      for (Stage& s : cur->stages) s.lr_min_ratio = floor;
    c.tv.eps = tv_eps_key(p);
    c.tv.use_spacing = true;
    c.tv_weight = weight_key(p, "tv");
    c.tv_mirrored = p.choice("tv_of", {"sigma", "mirrored"}) == "mirrored";
    return c;
  }
};

// Total variation of σ mirrored at σ_bg (tv_of mirrored): σ itself up to
// σ_bg, 2σ_bg − σ_bg²/σ above it. TV of σ charges a conductive inclusion
// (σ_bg → σ_bg·c) c times what it charges the mirror resistive one (σ_bg →
// σ_bg/c); the mirrored map charges both σ_bg (1 − 1/c), as the 2-D duality
// σ ↔ σ_bg²/σ (which swaps the two) suggests, and keeps TV of σ's cheap
// deepening of an inclusion (TV of log σ or of the contrast factor (σ −
// σ_bg)/(σ + σ_bg) make that dear, and blur the resistive scenes).
struct MirroredSigmaTV : Loss {
  TVOptions opt;
  double sigma_bg;
  MirroredSigmaTV(TVOptions o, double bg) : Loss("tv"), opt(std::move(o)), sigma_bg(bg) {}
  fk::Tensor forward(const LossContext& c) const override {
    const fk::Tensor& sigma = c.field("sigma");
    const double bg = sigma_bg, inf = std::numeric_limits<double>::infinity();
    const fk::Tensor above = fk::mul(fk::reciprocal(fk::clamp(sigma, bg, inf)), bg * bg);
    const fk::Tensor x = fk::add(fk::sub(fk::clamp(sigma, -inf, bg), above), bg);
    return total_variation(x, c.domain->spacing(sigma.shape()), opt);
  }
};

Domain eit_domain(int64_t n) {
  return Domain({n, n}, {2.0, 2.0});
}

// The elliptic solve's voltages, plus with the flux trace the boundary
// cells' half-cell flux term C (1/σ) (eit_flux_term.h), rebuilt per grid.
// Both run on a CUDA device with their tables moved once per (device,
// dtype), so the operator is as device-ready as its solve (cg, precond
// jacobi, grad_mode ift or none).
class EitOperator : public Operator {
 public:
  EitOperator(std::shared_ptr<EllipticOperator> solve, GridFunction flux)
      : solve_(std::move(solve)), flux_fn_(std::move(flux)) {
    primary = "sigma";
    if (flux_fn_)
      flux_ =
          std::make_shared<eit::FluxTerm>(flux_fn_(solve_->domain()), solve_->domain().shape()[0]);
  }
  fk::Tensor apply(const fk::Tensor& x) const override {
    const fk::Tensor y = solve_->apply(x);
    if (!flux_) return y;
    return fk::add(y, flux_->apply(x).reshape(y.shape()));
  }
  std::shared_ptr<Operator> at_resolution(const fk::Dims& shape) const override {
    return std::make_shared<EitOperator>(
        std::static_pointer_cast<EllipticOperator>(solve_->at_resolution(shape)), flux_fn_);
  }
  fk::Dims output_shape(const fk::Dims& shape) const override {
    return solve_->output_shape(shape);
  }
  bool graph_capturable() const override { return solve_->graph_capturable(); }
  std::string not_capturable_reason() const override { return solve_->not_capturable_reason(); }
  std::string fidelity_tag() const override { return solve_->fidelity_tag(); }
  std::string kind() const override { return solve_->kind(); }
  std::string host_only_reason() const override { return solve_->host_only_reason(); }
  std::string device_note() const override { return solve_->device_note(); }
  void prepare_tables(fk::Device device, fk::DType dtype) const override {
    solve_->prepare_tables(device, dtype);
    if (flux_ && device.is_cuda() && (dtype == fk::DType::F32 || dtype == fk::DType::F64))
      flux_->ring_columns_on(device, dtype);
  }

 private:
  std::shared_ptr<EllipticOperator> solve_;
  GridFunction flux_fn_;
  std::shared_ptr<const eit::FluxTerm> flux_;  // null with the extrapolated trace
};

// The patterns at any grid, the voltages always on the native boundary.
std::shared_ptr<Operator> eit_operator(const EitConfig& c, int64_t n, EllipticOperatorOptions o) {
  const int64_t patterns = c.n_patterns;
  const double amp = c.amplitude;
  const eit::Electrodes el = c.electrodes;
  const std::vector<eit::Segment> segments = eit::observed_segments(c.n, el);
  const auto count = static_cast<int64_t>(segments.size());
  const bool flux = c.flux_trace;
  auto rhs = [patterns, amp, el](const Domain& d) {
    const int64_t m = d.shape()[0];
    return fk::from_vector(eit::current_patterns(m, patterns, amp, el), {patterns, m, m});
  };
  auto observe = [segments, count, flux](const Domain& d) {
    const int64_t m = d.shape()[0];
    return fk::from_vector(eit::trace_matrix(m, segments, !flux), {count, m * m});
  };
  GridFunction flux_term;
  if (flux)
    flux_term = [segments, count, patterns, amp, el](const Domain& d) {
      const int64_t m = d.shape()[0];
      return fk::from_vector(eit::flux_trace_matrix(m, segments, patterns, amp, el),
                             {patterns * count, m * m});
    };
  auto solve = std::make_shared<EllipticOperator>(eit_domain(n), rhs, observe, std::move(o));
  solve->primary = "sigma";
  return std::make_shared<EitOperator>(std::move(solve), std::move(flux_term));
}

class Eit : public Instance {
 public:
  std::string name() const override { return "eit"; }
  std::string data_tag(const Params&) const override { return eit_data_tag(); }
  std::string summary() const override {
    return "2-D electrical impedance tomography: conductivity from boundary voltages (FV + IFT "
           "adjoint)";
  }
  std::vector<std::string> methods() const override { return {"neural", "grid", "uniform"}; }
  std::vector<std::string> scenes() const override { return {"single", "multi", "contrast"}; }

  // Lengths in m on [−1, 1]², σ in S/m and currents in A give voltages in V;
  // s walks the boundary counter-clockwise from (−1, −1) (eit_model.h).
  DataLabels data_labels(const Params& p) const override {
    const int64_t electrodes = p.i("electrodes");
    return {{"conductivity", "σ", "S/m"},
            {span_axis("x", "m", -1, 1), span_axis("y", "m", -1, 1)},
            {"boundary voltage", "U", "V"},
            {index_axis("current pattern", p.i("n_patterns")),
             electrodes > 0 ? index_axis("electrode", electrodes)
                            : span_axis("boundary arc length s", "m", 0, 8)}};
  }

  Params default_config() const override {
    Params p;
    p.declare("n", int64_t{64}, "grid cells per axis on [-1, 1]^2");
    p.declare("n_patterns", int64_t{16}, "trigonometric current patterns");
    p.declare("amplitude", 1.0, "current amplitude A");
    p.declare("sigma_bg", 1.0, "background conductivity");
    p.declare("sigma_min", 0.05, "head lower bound");
    p.declare("sigma_max", 20.0, "head upper bound");
    p.declare("contrast", std::vector<double>{3, 6}, "inclusion contrast range [lo, hi]");
    p.declare("scene", std::string("single"), "single | multi | contrast");
    p.declare("electrodes", int64_t{0},
              "electrode count of the gap model (0: current and voltage along the whole "
              "boundary)");
    p.declare("trace", std::string("extrapolated"),
              "boundary voltage: extrapolated (1.5 u_cell - 0.5 u_inner) | flux (u_cell + h/2 "
              "j / sigma_cell)");
    p.declare("electrode_coverage", 0.5, "boundary fraction under the electrodes, in (0, 1]");
    p.declare("noise_std", 1e-3, "noise std relative to max|voltage|");
    p.declare("supersample", int64_t{2}, "data grid refinement (f64, tol 1e-10)");
    declare_elliptic_solver_keys(p, 8);
    declare_elliptic_inversion_keys(p);
    p.set_value("weight_decay", 0.0);
    p.set_value("linear_solver", std::string("banded"));
    p.declare("tv_of", std::string("sigma"),
              "what TV acts on: sigma | mirrored (sigma up to sigma_bg, 2 sigma_bg - "
              "sigma_bg^2 / sigma above)");
    p.declare("lr_min_ratio", 0.05, "cosine lr floor per stage, as a fraction of its lr");
    p.declare("grid_steps", std::vector<double>{},
              "grid baseline steps per stage; [] = the neural field's steps");
    return p;
  }

  std::pair<Measurement, fk::Tensor> make_measurement(const Params& p,
                                                      uint64_t seed) const override {
    return measure(EitConfig::from(p), seed);
  }

  std::optional<ProblemSetup> setup_from(const Params& p, const std::string& method, uint64_t seed,
                                         const Measurement* measured) const override {
    if (method != "neural" && method != "grid") return std::nullopt;
    const EitConfig c = EitConfig::from(p);
    auto [meas, gt] = measured_or(measure(c, seed), measured);
    ProblemSetup s{field_problem("eit", eit_domain(c.n), eit_operator(c, c.n, c.solver), meas,
                                 {log_bounded_head("sigma", c.sigma_min, c.sigma_max, c.sigma_bg)},
                                 method, c.field, seed),
                   method == "neural" ? c.neural_curriculum : c.grid_curriculum, meas, gt};
    s.problem.losses.add(mse_loss(), 1.0);
    s.problem.losses.add(c.tv_mirrored ? std::make_shared<MirroredSigmaTV>(c.tv, c.sigma_bg)
                                       : tv_loss("sigma", c.tv),
                         c.tv_weight);
    return s;
  }

  RunOutput run(const Params& p, const std::string& method, uint64_t seed,
                const SolverOptions& so) const override {
    MethodRunners runners;
    runners.direct["uniform"] = [&p](const Measurement&, RunOutput& out) {
      const EitConfig c = EitConfig::from(p);
      uniform_output(*eit_operator(c, c.n, c.solver), "sigma", c.sigma_bg, {c.n, c.n}, out);
    };
    return run_method(*this, p, method, seed, so, runners);
  }

  std::map<std::string, double> evaluate(const Params& p, const RunOutput& out) const override {
    const double bg = p.d("sigma_bg");
    return {{"psnr", psnr(out.reconstruction, out.gt)},
            {"ssim", ssim(out.reconstruction, out.gt)},
            {"mse", mse(out.reconstruction, out.gt)},
            {"relative_error", relative_error(out.reconstruction, out.gt)},
            {"inclusion_iou", eit::inclusion_iou(out.reconstruction.to_vector<double>(),
                                                 out.gt.to_vector<double>(), bg)}};
  }

 private:
  // σ on the supersampled grid → f64 solves to 1e-10 there → voltages on
  // the native boundary → noise; the truth is σ's cell averages at n.
  static std::pair<Measurement, fk::Tensor> measure(const EitConfig& c, uint64_t seed) {
    const int64_t nf = c.n * c.supersample;
    const auto inc = eit::draw_inclusions(c.scene, c.contrast_lo, c.contrast_hi, c.sigma_bg, seed);
    const auto fine = eit::render_sigma(inc, c.sigma_bg, nf, 4, c.sigma_min, c.sigma_max);
    const EllipticOperatorOptions o = elliptic_data_options(c.solver, kEitDataTag);
    auto op = eit_operator(c, nf, o);
    std::vector<double> y = op->apply(fk::from_vector(fine, {nf, nf})).to_vector<double>();
    double mx = 0;
    for (double v : y) mx = std::max(mx, std::abs(v));
    Measurement m;
    m.noise_std = c.noise_std * mx;
    datagen::Rng rng(seed * 7919 + 89);
    for (double& v : y) v += m.noise_std * rng.normal();
    const auto segments = static_cast<int64_t>(y.size()) / c.n_patterns;
    m.data = fk::from_vector(y, {c.n_patterns, segments}).to(fk::DType::F32);
    const auto gt = eit::render_sigma(inc, c.sigma_bg, c.n, 4, c.sigma_min, c.sigma_max);
    return {m, fk::from_vector(gt, {c.n, c.n})};
  }
};

}  // namespace

const char* eit_data_tag() {
  return kEitDataTag;
}
InstancePtr make_eit() {
  return std::make_shared<Eit>();
}

}  // namespace nefi
