// nv_relaxometry (NeTMY): the spin density rho >= 0 and Larmor field
// omega_L of single-pixel spin sources from widefield NV noise spectra
// S(omega, r), 2-D. Data: the F3 direct source-side sum in f64 (each
// source's own omega_L) plus Gaussian noise of noise_std times each
// sample's dynamic range; inversion: F2 (or F1) by FFT convolution
// (operators/nv_relaxometry.h) with omega_L at the readout pixel.
// Field: rho = GatedSoftplus, omega_L = SupportMasked(Bounded(band), rho,
// tau), filled with the band centre off the support. Losses: log_mse
// (max-normalised, summed over frequency), noise_map, direct_density,
// sparsity, l1, anisotropic tv; stage 2 re-weights {log_mse, noise_map}.
// Post: EnergyScaleCorrection(rho), then (neural methods, larmor_profile)
// omega_L refitted per pixel to the log spectra with rho held
// (nv_larmor_profile.h: the reference's stage 2 leaves omega_L unfitted).
// Methods: neural | f1 (neural under F1) | grid | grid_f1 (Tikhonov + TV
// on pixels). Metrics: hungarian_f1 (peaks vs true sources),
// match_distance (px, of the matched pairs; none without one), mse, gmsd, swd (sliced
// Wasserstein-2, in units of the side), masked_ssim (near the sources and
// the peaks, score_mask below), larmor_mae (on the true source pixels).
// Counts are left out: the bench tables rank every metric, and a count has
// no better direction.
#include <algorithm>
#include <cmath>
#include <limits>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/reduce.h"
#include "fk/ops/unary.h"
#include "nefi/instances/datagen.h"
#include "nefi/instances/instance.h"
#include "nefi/instances/nv_larmor_profile.h"
#include "nefi/instances/nv_relaxometry_scene.h"
#include "nefi/instances/run_method.h"
#include "nefi/losses/data_losses.h"
#include "nefi/losses/nv_losses.h"
#include "nefi/losses/regularizers.h"
#include "nefi/operators/nv_relaxometry.h"
#include "nefi/solve/localization.h"
#include "nefi/solve/metrics.h"

namespace nefi {
namespace {

struct NVConfig {
  int64_t n = 0;
  double spacing = 0;
  NVPhysics phys;
  std::vector<double> band;
  nv::SceneSpec scene;
  std::string data_operator;
  double noise_std = 0;
  NVMode mode = NVMode::kF2;
  NeuralFieldConfig field;
  double tau = 0, larmor_fill = 0;
  double source_width = 0;  // px; 0: single-pixel sources
  Curriculum curriculum, grid_curriculum;
  std::map<std::string, double> weights, stage2_weights;
  double log_eps = 0, log_eps_noise_mult = 0;
  double grid_init = 0, grid_l2 = 0, grid_tv = 0;
  bool scale_correction = true, larmor_profile = true;
  bool gate = true;  // the neural field's rho head gated (GatedSoftplus) or plain softplus
  double match_radius = 0, peak_threshold = 0, gmsd_c = 0;
  int swd_projections = 0;

  static NVConfig from(const Params& p);
  Domain domain() const { return Domain({n, n}, {n * spacing, n * spacing}); }
};

// A [lo, hi] pair with lo <= hi (strictly when `strict`), checked under `key`.
std::vector<double> range_key(const Params& p, const char* key, double min_lo, bool strict) {
  const std::vector<double> r = p.list(key);
  FK_CHECK(r.size() == 2 && r[0] >= min_lo && (strict ? r[0] < r[1] : r[0] <= r[1]),
           std::string("config key '") + key + "'",
           "[lo, hi] with " + Params::render(min_lo) + " <= lo " + (strict ? "<" : "<=") + " hi",
           Params::render(r));
  return r;
}

// A [lo, hi] pair of source counts: whole numbers, 1 <= lo <= hi.
std::vector<double> count_key(const Params& p, const char* key) {
  const std::vector<double> r = range_key(p, key, 1, false);
  FK_CHECK(r[0] == std::floor(r[0]) && r[1] == std::floor(r[1]) && r[1] <= 1e6,
           std::string("config key '") + key + "'", "whole source counts [lo, hi] up to 1e6",
           Params::render(r));
  return r;
}

double positive_key(const Params& p, const char* key, bool allow_zero = false) {
  const double v = p.d(key);
  FK_CHECK((allow_zero ? v >= 0 : v > 0) && std::isfinite(v),
           std::string("config key '") + key + "'", allow_zero ? "a value >= 0" : "a value > 0",
           Params::render(v));
  return v;
}

NVConfig NVConfig::from(const Params& p) {
  NVConfig c;
  c.n = p.i("n");
  FK_CHECK(c.n >= 8 && c.n <= 1024, "config key 'n'", "a grid size in [8, 1024]", fk::to_text(c.n));
  c.spacing = positive_key(p, "spacing");
  c.phys.z0 = positive_key(p, "z0");
  c.phys.gamma = positive_key(p, "gamma");
  c.phys.length_scale = positive_key(p, "length_scale");
  c.phys.physical_units = p.choice("units", {"normalized", "physical"}) == "physical";
  c.band = range_key(p, "larmor_band", 0.0, true);
  c.phys.larmor_default = 0.5 * (c.band[0] + c.band[1]);
  const std::vector<double> fr = range_key(p, "freq_range", 0.0, true);
  const int64_t nf = p.i("n_freq");
  FK_CHECK(nf >= 2 && nf <= 4096, "config key 'n_freq'", "a count in [2, 4096]", fk::to_text(nf));
  for (int64_t f = 0; f < nf; ++f) c.phys.freqs.push_back(fr[0] + (fr[1] - fr[0]) * f / (nf - 1));
  const std::vector<double> axis = p.list("nv_axis");
  FK_CHECK(axis.size() == 3, "config key 'nv_axis'", "a 3-vector (axis 0, axis 1, z)",
           Params::render(axis));
  c.phys.nv_axis = {axis[0], axis[1], axis[2]};
  c.phys.validate();  // names the key of a zero or non-finite axis
  const std::string& scene = p.s("scene");
  const size_t slash = scene.find('/');
  c.scene.count = scene.substr(0, slash);
  c.scene.separation = slash == std::string::npos ? "" : scene.substr(slash + 1);
  c.scene.count_few = count_key(p, "count_few");
  c.scene.count_medium = count_key(p, "count_medium");
  c.scene.count_many = count_key(p, "count_many");
  c.scene.sep_close = range_key(p, "sep_close", 0.0, true);
  c.scene.sep_medium = range_key(p, "sep_medium", 0.0, true);
  c.scene.sep_far = positive_key(p, "sep_far");
  c.scene.margin_z0 = positive_key(p, "margin_z0", true);
  c.scene.min_sep_px = positive_key(p, "min_sep_px", true);
  c.scene.amp_range = range_key(p, "amp_range", 1e-12, false);
  c.source_width = positive_key(p, "source_width", true);
  c.scene.larmor_band = c.band;
  c.data_operator = p.choice("data_operator", {"F3", "F2", "F1"});
  c.noise_std = positive_key(p, "noise_std", true);
  c.mode = p.choice("mode", {"F2", "F1"}) == "F1" ? NVMode::kF1 : NVMode::kF2;
  c.field = neural_field_config_from(p);
  c.tau = p.d("tau");
  FK_CHECK(c.tau >= 0 && c.tau < 1, "config key 'tau'", "a fraction in [0, 1)",
           Params::render(c.tau));
  const double fill = p.d("larmor_fill");
  c.larmor_fill = fill < 0 ? c.phys.larmor_default : fill;
  c.curriculum = curriculum_from(p, {c.n, c.n}, "lr");
  const int64_t restarts = p.i("restarts");
  FK_CHECK(restarts >= 1 && restarts <= 100, "config key 'restarts'", "a count in [1, 100]",
           fk::to_text(restarts));
  c.curriculum.restarts = static_cast<int>(restarts);
  for (const char* w :
       {"w_log_mse", "w_noise_map", "w_direct_density", "w_sparsity", "w_l1", "w_tv", "w_spectrum"})
    c.weights[std::string(w).substr(2)] = positive_key(p, w, true);
  c.stage2_weights["log_mse"] = positive_key(p, "stage2_w_log_mse", true);
  c.stage2_weights["noise_map"] = positive_key(p, "stage2_w_noise_map", true);
  c.log_eps = p.d("log_eps");
  // log(relu(y) / s + eps) on data <= 0 is log(eps): an eps float32 rounds
  // to 0 makes every step's loss infinite.
  FK_CHECK(
      c.log_eps < 0 || (std::isfinite(c.log_eps) && c.log_eps >= std::numeric_limits<float>::min()),
      "config key 'log_eps'",
      "a floor float32 holds (>= " + fk::to_text(std::numeric_limits<float>::min()) +
          "), or < 0 (the noise floor)",
      Params::render(c.log_eps));
  c.log_eps_noise_mult = positive_key(p, "log_eps_noise_mult");
  c.scale_correction = p.b("scale_correction");
  c.larmor_profile = p.b("larmor_profile");
  c.match_radius = positive_key(p, "match_radius");
  c.peak_threshold = p.d("peak_threshold");
  FK_CHECK(c.peak_threshold >= 0 && c.peak_threshold < 1, "config key 'peak_threshold'",
           "a fraction in [0, 1)", Params::render(c.peak_threshold));
  c.gmsd_c = positive_key(p, "gmsd_c");
  const int64_t proj = p.i("swd_projections");
  FK_CHECK(proj >= 1 && proj <= 100000, "config key 'swd_projections'", "a count in [1, 100000]",
           fk::to_text(proj));
  c.swd_projections = static_cast<int>(proj);
  const int64_t gsteps = p.i("grid_steps");
  FK_CHECK(gsteps >= 1 && gsteps <= 1000000000, "config key 'grid_steps'", "a step count >= 1",
           fk::to_text(gsteps));
  c.grid_curriculum =
      Curriculum::single({c.n, c.n}, static_cast<int>(gsteps), positive_key(p, "grid_lr"));
  c.grid_curriculum.stages[0].anneal = false;
  c.grid_curriculum.optim.weight_decay = positive_key(p, "grid_weight_decay", true);
  c.grid_curriculum.optim.grad_clip = c.curriculum.optim.grad_clip;
  c.grid_init = positive_key(p, "grid_init");
  c.gate = p.b("gate");
  c.grid_l2 = positive_key(p, "grid_l2", true);
  c.grid_tv = positive_key(p, "grid_tv", true);
  return c;
}

void declare_keys(Params& p) {
  p.declare("n", int64_t{64}, "grid cells per axis");
  p.declare("spacing", 20.0, "pixel size (nm)");
  p.declare("z0", 20.0, "NV standoff (nm)");
  p.declare("gamma", 0.5, "Lorentzian half width (GHz)");
  p.declare("larmor_band", std::vector<double>{1.5, 2.5}, "Larmor band [lo, hi] (GHz)");
  p.declare("freq_range", std::vector<double>{1.0, 3.0}, "readout band [lo, hi] (GHz)");
  p.declare("n_freq", int64_t{50}, "readout frequencies");
  p.declare("units", std::string("normalized"), "normalized (P(0) = 1) | physical (SI)");
  p.declare("length_scale", 1e-9, "metres per length unit (physical units)");
  p.declare("nv_axis", std::vector<double>{0, 0, 1},
            "NV axis (axis 0, axis 1, z): the sensor reads the field along it");
  p.declare("scene", std::string("medium/medium"),
            "<few|medium|many>/<close|medium|far> (source count / separation)");
  p.declare("count_few", std::vector<double>{1, 3}, "sources of class few [lo, hi]");
  p.declare("count_medium", std::vector<double>{4, 8}, "sources of class medium [lo, hi]");
  p.declare("count_many", std::vector<double>{9, 15}, "sources of class many [lo, hi]");
  p.declare("sep_close", std::vector<double>{2, 3}, "close: nearest-neighbour [lo, hi) in z0");
  p.declare("sep_medium", std::vector<double>{3, 5}, "medium: nearest-neighbour [lo, hi) in z0");
  p.declare("sep_far", 5.0, "far: nearest-neighbour distance >= this (z0)");
  p.declare("margin_z0", 3.0, "source margin from the edges (z0)");
  p.declare("min_sep_px", 2.0, "minimum source separation (px)");
  p.declare("amp_range", std::vector<double>{0.5, 1.0}, "source amplitudes [lo, hi]");
  p.declare("source_width", 0.0,
            "source Gaussian standard deviation (px; 0: single-pixel sources, the paper's)");
  p.declare("data_operator", std::string("F3"), "data generator: F3 (direct) | F2 | F1");
  p.declare("noise_std", 0.01, "noise std relative to each sample's dynamic range");
  p.declare("mode", std::string("F2"), "inversion model: F2 (incoherent) | F1 (coherent)");
  p.declare("hidden", int64_t{320}, "MLP width");
  p.declare("depth", int64_t{5}, "MLP hidden layers");
  p.declare("skip_at", int64_t{3}, "layer that sees the encoding again (0: none)");
  p.declare("activation", std::string("tanh"), "tanh | relu | gelu | silu | softplus | sine");
  p.declare("n_octaves", int64_t{12}, "Fourier feature octaves");
  p.declare("out_init_scale", 0.1, "output-layer weight scale");
  p.declare("tau", 0.3, "omega_L support: rho > tau max rho");
  p.declare("larmor_fill", -1.0, "omega_L off the support (< 0: the band centre)");
  declare_curriculum_keys(p, {3000, 7000}, 1e-3);
  p.declare("restarts", int64_t{1}, "full runs from seeds seed, seed+1, ...; best data loss wins");
  p.declare("w_log_mse", 2.0, "log-spectrum MSE weight (summed over frequency)");
  p.declare("w_noise_map", 0.5, "normalised noise-map MSE weight");
  p.declare("w_direct_density", 0.1, "R_ds weight (rho toward the data's noise map)");
  p.declare("w_sparsity", 1e-2, "scale-free L1 (mean rho / max rho) weight");
  p.declare("w_l1", 1e-3, "L1 weight");
  p.declare("w_tv", 1e-3, "anisotropic TV weight (unit steps)");
  p.declare("w_spectrum", 0.0,
            "direct spectrum fit weight: the relative MSE of the spectra, data scaled by their "
            "max (off in the paper)");
  p.declare("stage2_w_log_mse", 0.0, "log_mse weight in stage 2");
  p.declare("stage2_w_noise_map", 2.0, "noise_map weight in stage 2");
  p.declare("log_eps", -1.0, "log_mse floor (< 0: the noise floor, 1e-10 noiseless)");
  p.declare("log_eps_noise_mult", 1.0, "log_eps = this x noise std / max data");
  p.declare("scale_correction", true, "EnergyScaleCorrection of rho after the solve");
  p.declare("larmor_profile", true,
            "neural methods: refit omega_L per pixel to the log spectra after the solve");
  p.declare("match_radius", 2.0, "Hungarian F1 match radius (px)");
  p.declare("peak_threshold", 0.05, "peaks above this fraction of max rho");
  p.declare("gmsd_c", 0.0026, "GMSD stability constant");
  p.declare("swd_projections", int64_t{128}, "sliced Wasserstein projections");
  p.declare("grid_steps", int64_t{5000}, "grid baseline steps");
  p.declare("grid_lr", 5e-3, "grid baseline learning rate (AdamW)");
  p.declare("grid_weight_decay", 1e-5, "grid baseline weight decay");
  p.declare("grid_l2", 1e-3, "grid baseline Tikhonov weight");
  p.declare("grid_tv", 1e-3, "grid baseline TV weight");
  p.declare("grid_init", 0.35, "grid baseline initial rho");
  p.declare("init_seed", int64_t{-1},
            "the field's initialisation seed (-1: the run's seed; the reference's paper config "
            "fixes 0)");
  p.declare("gate", true,
            "neural rho head: softplus(h) * sigmoid(g), the gated head (false: softplus(h) "
            "alone, the ablation no_gate)");
}

// masked_ssim's mask: the pixels within match_radius of a true source or of
// a peak of the reconstruction (the peaks hungarian_f1 matches). On these
// sparse scenes a zero background reconstructed as zero scores SSIM 1, so
// the unmasked mean mostly measures the empty area; the match radius is the
// distance at which the instance already counts a peak as at a source. The
// sources alone would score only what was found near them; with the peaks'
// neighbourhoods a spurious peak costs as well, so the mask is symmetric in
// reconstruction and truth as HF1 is.
std::vector<double> score_mask(const std::vector<std::pair<int64_t, int64_t>>& sites, int64_t n,
                               double radius) {
  std::vector<double> mask(n * n, 0.0);
  const auto reach = static_cast<int64_t>(std::floor(radius));
  for (const auto& [si, sj] : sites)
    for (int64_t i = std::max<int64_t>(0, si - reach); i <= std::min(n - 1, si + reach); ++i)
      for (int64_t j = std::max<int64_t>(0, sj - reach); j <= std::min(n - 1, sj + reach); ++j)
        if (std::hypot(static_cast<double>(i - si), static_cast<double>(j - sj)) <= radius)
          mask[i * n + j] = 1.0;
  return mask;
}

// Whether `mask` has weight where an SSIM window is centred (at least
// win/2 cells from every edge); a scene whose sources and peaks all hug the
// edges has none, and gets no masked_ssim.
bool weighs_window_centres(const std::vector<double>& mask, int64_t n) {
  const int64_t h = ssim_window({n, n}) / 2;
  for (int64_t i = h; i < n - h; ++i)
    for (int64_t j = h; j < n - h; ++j)
      if (mask[i * n + j] > 0) return true;
  return false;
}

struct Truth {
  std::vector<nv::Source> sources;
  fk::Tensor rho, omega_l;  // f64 (n, n)
};

Truth draw_truth(const NVConfig& c, uint64_t seed) {
  Truth t;
  t.sources = nv::draw_scene(c.scene, c.n, c.phys.z0 / c.spacing, seed);
  t.rho = fk::from_vector(nv::render_density(t.sources, c.n, c.source_width), {c.n, c.n});
  t.omega_l = fk::from_vector(
      nv::render_larmor(t.sources, c.n, c.phys.larmor_default, c.source_width), {c.n, c.n});
  return t;
}

// The clean spectra of `t` by the chosen generator, plus noise drawn here.
Measurement measure(const NVConfig& c, const Truth& t, uint64_t seed) {
  std::vector<double> clean;
  if (c.data_operator == "F3") {
    clean = nv_direct_spectra(c.domain(), c.phys, t.rho.to_vector<double>(),
                              t.omega_l.to_vector<double>());
  } else {  // the inversion operators in f64: an inverse crime, for studies only
    NVOperator op(c.domain(), c.phys, c.data_operator == "F1" ? NVMode::kF1 : NVMode::kF2);
    clean = op.forward({{"rho", t.rho}, {"omega_L", t.omega_l}}).to_vector<double>();
  }
  const auto [lo, hi] = std::minmax_element(clean.begin(), clean.end());
  Measurement m;
  m.noise_std = c.noise_std * (*hi - *lo);
  datagen::Rng rng(seed * 7919 + 17);
  for (double& v : clean) v += m.noise_std * rng.normal();
  const int64_t nf = static_cast<int64_t>(c.phys.freqs.size());
  m.data = fk::from_vector(clean, {nf, c.n, c.n}).to(fk::DType::F32);
  return m;
}

class NVRelaxometry : public Instance {
 public:
  std::string name() const override { return "nv_relaxometry"; }
  // data_operator F2 or F1 draws the data with the inversion's own operator.
  std::string data_tag(const Params& p) const override {
    const std::string op = p.s("data_operator");
    return op == "F3" ? nv_direct_tag() : nv_operator_tag(op == "F2" ? NVMode::kF2 : NVMode::kF1);
  }
  std::string summary() const override {
    return "NeTMY: spin density and Larmor field from NV noise spectra (dipolar F2/F1 by FFT)";
  }
  std::vector<std::string> methods() const override { return {"neural", "f1", "grid", "grid_f1"}; }
  // Defined only on a source matched (match_distance), a mask with weight
  // at a window centre (masked_ssim), a map with mass (swd), a fitted
  // Larmor field (larmor_mae): metrics() below.
  std::vector<std::string> occasional_metrics() const override {
    return {"larmor_mae", "masked_ssim", "match_distance", "swd"};
  }
  std::vector<std::string> scenes() const override {
    std::vector<std::string> s;
    for (const char* a : {"few", "medium", "many"})
      for (const char* b : {"close", "medium", "far"}) s.push_back(std::string(a) + "/" + b);
    return s;
  }
  // Normalized units (a.u.) divide the kernel by its peak, P(0) = 1; physical
  // ones are SI: G is in T/(A·m²), so ρ weights P as a squared moment per
  // source pixel and S is in T².
  DataLabels data_labels(const Params& p) const override {
    const NVConfig c = NVConfig::from(p);
    const bool si = c.phys.physical_units;
    const std::vector<DataAxis> yx = square_axes(static_cast<double>(c.n) * c.spacing, "nm");
    return {{"spin density", "ρ", si ? "(A·m²)² per pixel" : "a.u."},
            yx,
            {"magnetic noise", "S(ω)", si ? "T²" : "a.u."},
            joined({frames_axis("readout frequency", "ω/2π = ", c.phys.freqs, "GHz")}, yx)};
  }

  Params default_config() const override {
    Params p;
    declare_keys(p);
    return p;
  }

  std::pair<Measurement, fk::Tensor> make_measurement(const Params& p,
                                                      uint64_t seed) const override {
    const NVConfig c = NVConfig::from(p);
    const Truth t = draw_truth(c, seed);
    return {measure(c, t, seed), t.rho};
  }

  std::optional<ProblemSetup> setup_from(const Params& p, const std::string& method, uint64_t seed,
                                         const Measurement* measured) const override {
    const NVConfig c = NVConfig::from(p);
    check_method(method);
    const Truth t = draw_truth(c, seed);
    auto [meas, gt] = measured_or({measure(c, t, seed), t.rho}, measured);
    return build(c, method, std::move(meas), gt, seed);
  }

  RunOutput run(const Params& p, const std::string& method, uint64_t seed,
                const SolverOptions& so) const override {
    // The reference's init_seed key: the field starts from that seed whatever
    // the data's (a run's own run.init_seed still wins).
    const int64_t init = p.i("init_seed");
    FK_CHECK(init >= -1, "config key 'init_seed'", "a seed >= 0, or -1 (the run's seed)",
             fk::to_text(init));
    if (init < 0 || so.init_seed) return run_method(*this, p, method, seed, so);
    SolverOptions with_init = so;
    with_init.init_seed = static_cast<uint64_t>(init);
    return run_method(*this, p, method, seed, with_init);
  }

  // The scores against the truth redrawn from out.seed (its sources' sites
  // and Larmor frequencies).
  std::map<std::string, double> evaluate(const Params& p, const RunOutput& out) const override {
    const NVConfig c = NVConfig::from(p);
    return metrics(c, draw_truth(c, out.seed), out);
  }

 private:
  static void check_method(const std::string& method) {
    FK_CHECK(method == "neural" || method == "f1" || method == "grid" || method == "grid_f1",
             "nv_relaxometry", "method neural, f1, grid or grid_f1", method);
  }

  static ProblemSetup build(const NVConfig& c, const std::string& method, Measurement meas,
                            const fk::Tensor& gt, uint64_t seed) {
    const bool neural = method == "neural" || method == "f1";
    const NVMode mode = method == "f1" || method == "grid_f1" ? NVMode::kF1 : c.mode;
    const Domain domain = c.domain();
    auto op = std::make_shared<NVOperator>(domain, c.phys, mode);
    const double centre = c.phys.larmor_default;
    HeadPtr larmor = support_masked_head(bounded_head("omega_L", c.band[0], c.band[1], centre),
                                         "rho", c.tau, c.larmor_fill);
    HeadPtr rho = !neural  ? softplus_head("rho", c.grid_init)
                  : c.gate ? gated_softplus_head("rho")
                           : softplus_head("rho");
    InverseProblem prob = field_problem("nv_relaxometry", domain, op, meas, {rho, larmor},
                                        neural ? "neural" : "grid", c.field, seed);
    const double ymax = fk::amax(fk::abs(meas.data)).item();
    const double eps = c.log_eps >= 0       ? c.log_eps
                       : meas.noise_std > 0 ? c.log_eps_noise_mult * meas.noise_std / ymax
                                            : 1e-10;
    TVOptions aniso;
    aniso.isotropic = false;
    aniso.use_spacing = false;
    ProblemSetup s;
    if (neural) {
      // "Summed over frequency": the mean over (f, r) times n_freq.
      const double nf = static_cast<double>(c.phys.freqs.size());
      prob.losses.add(log_mse_loss("max", eps), c.weights.at("log_mse") * nf);
      prob.losses.add(noise_map_loss(), c.weights.at("noise_map"));
      prob.losses.add(direct_density_loss("rho"), c.weights.at("direct_density"));
      prob.losses.add(normalized_l1_loss("rho"), c.weights.at("sparsity"));
      prob.losses.add(l1_loss("rho"), c.weights.at("l1"));
      prob.losses.add(tv_loss("rho", aniso), c.weights.at("tv"));
      // The reference's optional direct fit (w_spectrum; this project's reading:
      // the spectra's scaled relative MSE), added only when on.
      if (c.weights.at("spectrum") > 0)
        prob.losses.add(scaled_relative_mse_loss("spectrum"), c.weights.at("spectrum"));
      s.curriculum = c.curriculum;
      if (s.curriculum.stages.size() >= 2)
        for (size_t i = 1; i < s.curriculum.stages.size(); ++i)
          s.curriculum.stages[i].loss_weights = {{"log_mse", c.stage2_weights.at("log_mse") * nf},
                                                 {"noise_map", c.stage2_weights.at("noise_map")}};
    } else {
      prob.losses.add(scaled_relative_mse_loss(), 1.0);
      prob.losses.add(tikhonov_loss("rho"), c.grid_l2);
      prob.losses.add(tv_loss("rho", aniso), c.grid_tv);
      s.curriculum = c.grid_curriculum;
    }
    if (c.scale_correction)
      prob.postprocess.push_back(energy_scale_correction("rho", *op->homogeneity()));
    if (neural && c.larmor_profile)
      prob.postprocess.push_back(larmor_profile(op, {c.band[0], c.band[1], c.tau, eps}));
    s.measurement = prob.measurement;
    s.problem = std::move(prob);
    s.gt = gt;
    return s;
  }

  static std::map<std::string, double> metrics(const NVConfig& c, const Truth& t,
                                               const RunOutput& out) {
    std::map<std::string, double> m;
    const fk::Dims shape{c.n, c.n};
    const auto rho = out.reconstruction.to_vector<double>();
    std::vector<std::pair<int64_t, int64_t>> truth;
    for (const nv::Source& s : t.sources) truth.push_back({s.i, s.j});
    const auto peaks = peak_positions(rho, shape, c.peak_threshold);
    const PeakMatch pm = hungarian_f1(peaks, truth, c.match_radius);
    m["hungarian_f1"] = pm.f1;
    if (pm.true_positives > 0) m["match_distance"] = pm.mean_distance;
    m["mse"] = mse(out.reconstruction, out.gt);
    const auto gt = out.gt.to_vector<double>();
    m["gmsd"] = gmsd(rho, gt, shape, c.gmsd_c);
    std::vector<std::pair<int64_t, int64_t>> sites = truth;
    sites.insert(sites.end(), peaks.begin(), peaks.end());
    const std::vector<double> mask = score_mask(sites, c.n, c.match_radius);
    if (weighs_window_centres(mask, c.n)) m["masked_ssim"] = masked_ssim(rho, gt, mask, shape);
    double mass = 0;
    for (double v : rho) mass += std::max(v, 0.0);
    if (mass > 0 && !t.sources.empty())
      m["swd"] = sliced_wasserstein(rho, gt, shape, c.swd_projections);
    auto wl = out.result.fields.find("omega_L");
    if (wl != out.result.fields.end() && !t.sources.empty()) {
      const auto w = wl->second.to(fk::DType::F64).to_vector<double>();
      double mae = 0;
      for (const nv::Source& s : t.sources) mae += std::abs(w[s.i * c.n + s.j] - s.larmor);
      m["larmor_mae"] = mae / static_cast<double>(t.sources.size());
    }
    return m;
  }
};

}  // namespace

const char* nv_relaxometry_data_tag() {
  return nv_direct_tag();
}
InstancePtr make_nv_relaxometry() {
  return std::make_shared<NVRelaxometry>();
}

}  // namespace nefi
