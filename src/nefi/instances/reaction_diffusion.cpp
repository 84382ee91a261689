// reaction_diffusion: a Gray-Scott coefficient field from snapshots of u
// and v at the observation times (operators/reaction_diffusion/): the
// feed rate F(x) (the reference instance), or with `unknown` the kill rate
// k(x) or the diffusivity Du(x) (the reference operator's other unknowns),
// the other two then the scalars F_background, k, Du; Gaussian noise of
// noise_std * max(data). Data: the same scheme with 4x
// smaller substeps in f64 (tag gray-scott-substep4-float64; the inversion's
// is gray-scott-euler), on the native grid or a supersampled one
// (area-averaged). Scenes: blobs | stripes, the unknown = its background +
// amplitude * pattern clipped to [min, max] (F_*, k_* or Du_* keys, the
// background of k and Du being the keys k and Du). Methods: neural | grid
// (bounded head in [min, max], MSE + TV) | uniform (the best constant of a
// scan over [min, max] by data misfit). Metrics on the unknown: psnr, ssim,
// relative_error.
#include <algorithm>
#include <cmath>
#include <numbers>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "nefi/field/heads.h"
#include "nefi/instances/datagen.h"
#include "nefi/instances/instance.h"
#include "nefi/instances/numpy_rng.h"
#include "nefi/instances/regularizer_keys.h"
#include "nefi/instances/run_method.h"
#include "nefi/losses/data_losses.h"
#include "nefi/losses/regularizers.h"
#include "nefi/operators/reaction_diffusion/reaction_diffusion_operator.h"
#include "nefi/resample.h"
#include "nefi/solve/metrics.h"

namespace nefi {
namespace {

constexpr const char* kGrayScottDataTag = "gray-scott-substep4-float64";
constexpr int kUniformScan = 41;  // constant values the uniform baseline tries

// The unknown field's scene values and head bounds.
struct FieldRange {
  double background = 0, amplitude = 0, lo = 0, hi = 0;
};

struct ReactionDiffusionConfig {
  int64_t n = 0, supersample = 0;
  double extent = 0, noise_std = 0;
  FieldRange range;             // of the unknown
  ReactionDiffusionOptions op;  // the inversion operator's options
  std::string scene;
  NeuralFieldConfig field;
  Curriculum neural_curriculum, grid_curriculum;
  TVOptions tv;
  double tv_weight = 0;

  static ReactionDiffusionConfig from(const Params& p) {
    ReactionDiffusionConfig c;
    c.n = p.i("n");
    FK_CHECK(c.n >= 8 && c.n <= 1024, "config key 'n'", "a grid size in [8, 1024]",
             fk::to_text(c.n));
    c.extent = p.d("extent");
    FK_CHECK(c.extent > 0, "config key 'extent'", "a length > 0", fk::to_text(c.extent));
    c.supersample = p.i("supersample");
    FK_CHECK(c.supersample >= 1 && c.supersample <= 4, "config key 'supersample'",
             "a refinement in [1, 4]", fk::to_text(c.supersample));
    auto positive = [&](const char* key, bool allow_zero) {
      const double v = p.d(key);
      FK_CHECK(allow_zero ? v >= 0 : v > 0, std::string("config key '") + key + "'",
               allow_zero ? ">= 0" : "> 0", fk::to_text(v));
      return v;
    };
    const std::string unknown = p.choice("unknown", {"F", "k", "Du"});
    c.op.unknown = unknown == "F" ? RDUnknown::kF : unknown == "k" ? RDUnknown::kK : RDUnknown::kDu;
    c.op.F = positive("F_background", false);
    c.op.rates.k = positive("k", true);
    c.op.rates.Du = positive("Du", true);
    c.op.rates.Dv = positive("Dv", true);
    const std::string pre = unknown == "F" ? "F_" : unknown + "_";
    c.range.background = unknown == "F" ? c.op.F : unknown == "k" ? c.op.rates.k : c.op.rates.Du;
    c.range.amplitude = positive((pre + "amplitude").c_str(), true);
    c.range.lo = positive((pre + "min").c_str(), unknown != "Du");
    c.range.hi = positive((pre + "max").c_str(), false);
    FK_CHECK(c.range.lo < c.range.hi, "config key '" + pre + "max'",
             pre + "max > " + pre + "min = " + Params::render(c.range.lo),
             Params::render(c.range.hi));
    // The head starts at the background inside its bounds: outside them the
    // error came from the head, naming neither key.
    const std::string background = unknown == "F" ? "F_background" : unknown;
    FK_CHECK(c.range.lo < c.range.background && c.range.background < c.range.hi,
             "config key '" + background + "'",
             "a value inside (" + pre + "min, " + pre + "max) = (" + Params::render(c.range.lo) +
                 ", " + Params::render(c.range.hi) + ")",
             Params::render(c.range.background));
    c.op.dt = positive("dt", false);
    c.op.field_max = c.range.hi;
    c.op.obs_times = p.list("obs_times");
    FK_CHECK(!c.op.obs_times.empty(), "config key 'obs_times'", "at least one time", "[]");
    double last = 0;
    for (double t : c.op.obs_times) {
      const double steps = t / c.op.dt;
      FK_CHECK(t > last && steps <= 1e6 && std::abs(steps - std::round(steps)) < 1e-9 * steps,
               "config key 'obs_times'",
               "increasing positive multiples of dt = " + Params::render(c.op.dt),
               Params::render(c.op.obs_times));
      last = t;
    }
    const std::string obs = p.choice("observe", {"uv", "u", "v"});
    c.op.observe_u = obs != "v";
    c.op.observe_v = obs != "u";
    c.op.boundary = p.choice("boundary", {"neumann", "periodic"}) == "periodic"
                        ? gray_scott::Boundary::kPeriodic
                        : gray_scott::Boundary::kNeumann;
    const auto modes = p.list("ic_modes");
    // Sampled at cell centres, mode n/2 is 0 in every cell (cos(pi (j + 1/2)))
    // and one past it repeats a lower one.
    const auto mode_ok = [&](double k) {
      return k >= 0 && 2 * k < static_cast<double>(c.n) && k == std::floor(k);
    };
    FK_CHECK(modes.size() == 2 && mode_ok(modes[0]) && mode_ok(modes[1]), "config key 'ic_modes'",
             "two integers in [0, n/2) (n = " + fk::to_text(c.n) + ")", Params::render(modes));
    c.op.ic_modes = {static_cast<int64_t>(modes[0]), static_cast<int64_t>(modes[1])};
    c.op.grad_mode = p.choice("grad_mode", {"checkpoint", "autograd"}) == "autograd"
                         ? RDGradMode::kAutograd
                         : RDGradMode::kCheckpoint;
    c.op.checkpoint_every = p.i("checkpoint_every");
    FK_CHECK(c.op.checkpoint_every >= 0, "config key 'checkpoint_every'",
             "substeps >= 0 (0: sqrt of the total)", fk::to_text(c.op.checkpoint_every));
    c.op.device_fused_cells = p.i("device_fused_cells");
    FK_CHECK(c.op.device_fused_cells >= 0 && c.op.device_fused_cells <= kMaxDeviceFusedCells,
             "config key 'device_fused_cells'",
             "cells in [0, " + fk::to_text(kMaxDeviceFusedCells) + "] (0: one launch per substep)",
             fk::to_text(c.op.device_fused_cells));
    c.noise_std = positive("noise_std", true);
    c.scene = p.choice("scene", {"blobs", "stripes"});
    c.field = neural_field_config_from(p);
    c.neural_curriculum = curriculum_from(p, {c.n, c.n}, "lr");
    c.grid_curriculum = scaled_curriculum_from(p, {c.n, c.n}, "lr", "grid_lr_mult");
    c.tv.eps = tv_eps_key(p);
    c.tv.use_spacing = true;
    c.tv_weight = weight_key(p, "tv");
    return c;
  }
};

// The unknown point-sampled at the cell centres of an m x m grid: blobs are
// 2-4 Gaussians of either sign, stripes a plane wave of 2-4 periods at a
// random angle; the pattern is scaled to a peak of 1.
std::vector<double> coefficient_scene(const ReactionDiffusionConfig& c, int64_t m, uint64_t seed) {
  NumpyRng rng(seed);
  const double L = c.extent, two_pi = 2 * std::numbers::pi;
  std::vector<double> pattern(m * m, 0.0);
  auto at = [&](int64_t i) { return (i + 0.5) * L / m; };
  if (c.scene == "blobs") {
    for (int64_t k = rng.integers(2, 5); k > 0; --k) {
      const double c0 = rng.uniform(0.2, 0.8) * L, c1 = rng.uniform(0.2, 0.8) * L;
      const double s = rng.uniform(0.08, 0.16) * L, a = rng.uniform() < 0.5 ? -1.0 : 1.0;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < m; ++j) {
          const double d0 = at(i) - c0, d1 = at(j) - c1;
          pattern[i * m + j] += a * std::exp(-0.5 * (d0 * d0 + d1 * d1) / (s * s));
        }
    }
  } else {
    const double angle = rng.uniform(0, std::numbers::pi), periods = rng.uniform(2, 4);
    const double phase = rng.uniform(0, two_pi);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < m; ++j) {
        const double x = at(i) * std::cos(angle) + at(j) * std::sin(angle);
        pattern[i * m + j] = std::sin(two_pi * periods * x / L + phase);
      }
  }
  double peak = 0;
  for (double v : pattern) peak = std::max(peak, std::abs(v));
  const FieldRange& r = c.range;
  std::vector<double> x(m * m);
  for (int64_t i = 0; i < m * m; ++i)
    x[i] = std::clamp(r.background + r.amplitude * pattern[i] / std::max(peak, 1e-12), r.lo, r.hi);
  return x;
}

class ReactionDiffusion : public Instance {
 public:
  std::string name() const override { return "reaction_diffusion"; }
  std::string data_tag(const Params&) const override { return reaction_diffusion_data_tag(); }
  std::string summary() const override {
    return "Gray-Scott feed-rate (or kill-rate, diffusivity) field from u, v snapshots (explicit "
           "Euler, discrete adjoint)";
  }
  std::vector<std::string> methods() const override { return {"neural", "grid", "uniform"}; }
  std::vector<std::string> scenes() const override { return {"blobs", "stripes"}; }

  DataLabels data_labels(const Params& p) const override {
    const std::vector<DataAxis> yx = square_axes(static_cast<double>(p.i("n")), "px");
    const std::string obs = p.s("observe");
    DataAxis snaps{"snapshot", "", 0, 0};
    for (double t : p.list("obs_times"))
      for (char ch : obs) snaps.frames.push_back(std::string(1, ch) + " at t = " + short_number(t));
    snaps.hi = static_cast<double>(snaps.frames.size());
    return {{"feed rate", "F", "dimensionless"},
            yx,
            {"concentration", obs == "uv" ? "u, v" : obs, "dimensionless"},
            joined({snaps}, yx)};
  }

  Params default_config() const override {
    Params p;
    p.declare("n", int64_t{32}, "grid cells per axis");
    p.declare("extent", 0.64, "physical side length");
    p.declare("scene", std::string("blobs"), "blobs | stripes");
    p.declare("unknown", std::string("F"), "the field inverted for: F | k | Du");
    p.declare("F_background", 0.045, "feed rate (background of an F field)");
    p.declare("F_amplitude", 0.015, "feed-rate pattern amplitude");
    p.declare("F_min", 0.02, "smallest feed rate (scene clip and head bound)");
    p.declare("F_max", 0.07, "largest feed rate (scene clip, head bound, stability)");
    p.declare("k", 0.06, "kill rate (background of a k field)");
    p.declare("k_amplitude", 0.006, "kill-rate pattern amplitude (unknown k)");
    p.declare("k_min", 0.045, "smallest kill rate (unknown k)");
    p.declare("k_max", 0.075, "largest kill rate (unknown k; stability)");
    p.declare("Du", 2e-5, "diffusivity of u (background of a Du field)");
    p.declare("Du_amplitude", 1e-5, "Du pattern amplitude (unknown Du)");
    p.declare("Du_min", 5e-6, "smallest Du, > 0 (unknown Du)");
    p.declare("Du_max", 4e-5, "largest Du (unknown Du; stability)");
    p.declare("Dv", 1e-5, "diffusivity of v");
    p.declare("dt", 1.0, "time step (substeps derived from stability)");
    p.declare("obs_times", std::vector<double>{25, 50, 75, 100}, "snapshot times");
    p.declare("observe", std::string("uv"), "uv | u | v");
    p.declare("boundary", std::string("neumann"), "neumann | periodic");
    p.declare("ic_modes", std::vector<double>{2, 3}, "initial-condition modes per axis");
    p.declare("noise_std", 0.01, "noise std relative to max(data)");
    p.declare("supersample", int64_t{1}, "data grid refinement (f64)");
    p.declare("grad_mode", std::string("checkpoint"), "checkpoint | autograd");
    p.declare("checkpoint_every", int64_t{0}, "substeps per checkpoint (0: sqrt of the total)");
    p.declare("device_fused_cells", int64_t{1024},
              "on a CUDA device, grids up to this many cells run each rollout as one launch (0: "
              "one launch per substep; at most 65536)");
    p.declare("tv", 1e-4, "TV weight on F");
    p.declare("tv_eps", 1e-3, "TV smoothing");
    p.declare("hidden", int64_t{64}, "MLP width");
    p.declare("depth", int64_t{4}, "MLP hidden layers");
    p.declare("skip_at", int64_t{0}, "layer that sees the encoding again (0: none)");
    p.declare("activation", std::string("tanh"), "tanh | relu | gelu | silu | softplus | sine");
    p.declare("n_octaves", int64_t{6}, "Fourier feature octaves");
    p.declare("out_init_scale", 0.1, "output-layer weight scale");
    p.declare("autocast", std::string("none"), "MLP trunk precision: none | bf16 | fp16");
    declare_curriculum_keys(p, {100, 150}, 1e-2);
    p.declare("grid_lr_mult", 10.0, "grid baseline lr = lr x this");
    return p;
  }

  std::pair<Measurement, fk::Tensor> make_measurement(const Params& p,
                                                      uint64_t seed) const override {
    return measure(ReactionDiffusionConfig::from(p), seed);
  }

  RunOutput run(const Params& p, const std::string& method, uint64_t seed,
                const SolverOptions& so) const override {
    MethodRunners runners;
    runners.direct["uniform"] = [&p](const Measurement& meas, RunOutput& out) {
      const ReactionDiffusionConfig c = ReactionDiffusionConfig::from(p);
      best_uniform(c, ReactionDiffusionOperator(domain_of(c), c.op), meas, out);
    };
    return run_method(*this, p, method, seed, so, runners);
  }

  std::optional<ProblemSetup> setup_from(const Params& p, const std::string& method, uint64_t seed,
                                         const Measurement* measured) const override {
    if (method != "neural" && method != "grid") return std::nullopt;
    const ReactionDiffusionConfig c = ReactionDiffusionConfig::from(p);
    auto [meas, gt] = measured_or(measure(c, seed), measured);
    const Domain domain = domain_of(c);
    ProblemSetup s{field_problem("reaction_diffusion", domain,
                                 std::make_shared<ReactionDiffusionOperator>(domain, c.op), meas,
                                 {bounded_head("x", c.range.lo, c.range.hi, c.range.background)},
                                 method, c.field, seed),
                   method == "neural" ? c.neural_curriculum : c.grid_curriculum, meas, gt};
    s.problem.losses.add(mse_loss(), 1.0);
    s.problem.losses.add(tv_loss("x", c.tv), c.tv_weight);
    return s;
  }

  std::map<std::string, double> evaluate(const Params& p, const RunOutput& out) const override {
    (void)p;
    return {{"psnr", psnr(out.reconstruction, out.gt)},
            {"ssim", ssim(out.reconstruction, out.gt)},
            {"relative_error", relative_error(out.reconstruction, out.gt)}};
  }

 private:
  static Domain domain_of(const ReactionDiffusionConfig& c) {
    return Domain({c.n, c.n}, {c.extent, c.extent});
  }

  // The constant in [min, max] whose prediction fits the data best.
  static void best_uniform(const ReactionDiffusionConfig& c, const ReactionDiffusionOperator& op,
                           const Measurement& meas, RunOutput& out) {
    fk::autograd::NoGradGuard ng;
    const auto y = meas.data.to_vector<double>();
    const FieldRange& r = c.range;
    double best = r.background, best_misfit = INFINITY;
    for (int i = 0; i < kUniformScan; ++i) {
      const double x = r.lo + (r.hi - r.lo) * i / (kUniformScan - 1);
      const auto pred = op.apply(fk::full({c.n, c.n}, x, {fk::DType::F64})).to_vector<double>();
      double misfit = 0;
      for (size_t k = 0; k < y.size(); ++k) misfit += (pred[k] - y[k]) * (pred[k] - y[k]);
      if (misfit < best_misfit) best_misfit = misfit, best = x;
    }
    out.reconstruction = fk::full({c.n, c.n}, best, {fk::DType::F64});
    out.result.fields["x"] = out.reconstruction;
    out.result.prediction = op.apply(out.reconstruction);
  }

  // The unknown on the (supersampled) grid -> the 4x-substep f64 solve
  // there -> snapshots area-averaged onto the pixels -> noise; the truth is
  // the cell average of the fine field.
  static std::pair<Measurement, fk::Tensor> measure(const ReactionDiffusionConfig& c,
                                                    uint64_t seed) {
    const int64_t n = c.n, nf = n * c.supersample;
    const std::vector<double> fine = coefficient_scene(c, nf, seed);
    ReactionDiffusionOptions gen = c.op;
    gen.substep_factor = 4;
    fk::Tensor snaps;
    {
      fk::autograd::NoGradGuard ng;
      snaps = ReactionDiffusionOperator(Domain({nf, nf}, {c.extent, c.extent}), gen)
                  .apply(fk::from_vector(fine, {nf, nf}));
    }
    const int64_t frames = snaps.size(0);
    const auto all = snaps.to_vector<double>();
    std::vector<double> y;
    for (int64_t f = 0; f < frames; ++f) {
      const std::vector<double> frame(all.begin() + f * nf * nf, all.begin() + (f + 1) * nf * nf);
      const auto coarse = c.supersample > 1 ? area_resample(frame, {nf, nf}, {n, n}) : frame;
      y.insert(y.end(), coarse.begin(), coarse.end());
    }
    double mx = 0;
    for (double v : y) mx = std::max(mx, std::abs(v));
    Measurement m;
    m.noise_std = c.noise_std * mx;
    datagen::Rng rng(seed * 7919 + 97);
    for (double& v : y) v += m.noise_std * rng.normal();
    m.data = fk::from_vector(y, {frames, n, n}).to(fk::DType::F32);
    const auto gt = c.supersample > 1 ? area_resample(fine, {nf, nf}, {n, n}) : fine;
    return {m, fk::from_vector(gt, {n, n})};
  }
};

}  // namespace

const char* reaction_diffusion_data_tag() {
  return kGrayScottDataTag;
}
InstancePtr make_reaction_diffusion() {
  return std::make_shared<ReactionDiffusion>();
}

}  // namespace nefi
