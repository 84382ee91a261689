// wave_fwi: acoustic full-waveform inversion. The velocity c(x) ∈ [c_min,
// c_max] (km/s) of a square of side `extent` (km) from shot gathers
// d[s, r, j] = p_s(x_r, j dt_obs) of p_tt = c² Δp + Σ_s w(t) δ(x − x_s)
// (Ricker sources), with relative noise noise × rms(d). Pairs closer than
// min_offset are muted. Data: the same leapfrog on a supersample× finer grid
// in f64 with a 0.45 Courant number (tag wave-leapfrog-o4-2x-float64);
// inversion: WaveOperator (operators/wave/) at each stage's grid, gradient
// by the checkpointed discrete adjoint. Scenes: smooth_anomaly | layered |
// scatterers (wave_fwi_data.h). Curriculum: the n/2 stage fits the traces
// low-passed at f_low (fit_lo), the full stage the traces (fit), when
// multiscale_frequency. Methods: neural | grid. Metrics: psnr, ssim,
// relative_error, anomaly_error = ‖c − c_gt‖ / ‖c_gt − c_background‖.
#include <algorithm>
#include <cmath>

#include "fk/error.h"
#include "fk/factory.h"
#include "nefi/instances/datagen.h"
#include "nefi/instances/instance.h"
#include "nefi/instances/regularizer_keys.h"
#include "nefi/instances/run_method.h"
#include "nefi/instances/wave_fwi_data.h"
#include "nefi/losses/band_limited_mse.h"
#include "nefi/losses/data_losses.h"
#include "nefi/losses/regularizers.h"
#include "nefi/operators/wave/wave_operator.h"
#include "nefi/resample.h"
#include "nefi/solve/metrics.h"

namespace nefi {
namespace {

constexpr const char* kFwiDataTag = "wave-leapfrog-o4-2x-float64";

struct WaveFwiConfig {
  int64_t n = 0, supersample = 0, n_src = 0, n_rec = 0;
  fwi::MediumConfig medium;
  std::string scene, acquisition;
  double margin = 0, min_offset = 0, noise = 0, f_low = 0, tv_weight = 0;
  bool multiscale_frequency = true;
  WaveOperatorConfig op;  // at the inversion's precision (f32 runs)
  NeuralFieldConfig field;
  Curriculum neural_curriculum, grid_curriculum;
  TVOptions tv;

  static int64_t count(const Params& p, const char* key, int64_t lo, int64_t hi) {
    const int64_t v = p.i(key);
    FK_CHECK(v >= lo && v <= hi, std::string("config key '") + key + "'",
             "an integer in [" + fk::to_text(lo) + ", " + fk::to_text(hi) + "]", fk::to_text(v));
    return v;
  }
  static double positive(const Params& p, const char* key) {
    const double v = p.d(key);
    FK_CHECK(v > 0 && std::isfinite(v), std::string("config key '") + key + "'", "a value > 0",
             Params::render(v));
    return v;
  }

  static WaveFwiConfig from(const Params& p) {
    WaveFwiConfig c;
    c.n = count(p, "n", 8, 1024);
    c.supersample = count(p, "supersample", 1, 4);
    c.n_src = count(p, "n_sources", 1, 1024);
    c.n_rec = count(p, "n_receivers", 1, 4096);
    fwi::MediumConfig& m = c.medium;
    m.extent = positive(p, "extent");
    m.c_background = positive(p, "c_background");
    m.c_min = positive(p, "c_min");
    m.c_max = positive(p, "c_max");
    FK_CHECK(m.c_min < m.c_max && m.c_background >= m.c_min && m.c_background <= m.c_max,
             "config key 'c_background'", "c_min < c_max and c_background within them",
             Params::render(std::vector<double>{m.c_min, m.c_background, m.c_max}));
    m.anomaly = p.d("anomaly");
    // One anomaly's peak must be a velocity the head can take (c_max also
    // sets the time step); where two overlap, the sum is clipped to the range.
    FK_CHECK(std::isfinite(m.anomaly) && m.c_background + std::abs(m.anomaly) <= m.c_max &&
                 m.c_background - std::abs(m.anomaly) >= m.c_min,
             "config key 'anomaly'",
             "a contrast within [c_min, c_max] around c_background (|anomaly| <= " +
                 Params::render(std::min(m.c_max - m.c_background, m.c_background - m.c_min)) + ")",
             Params::render(m.anomaly));
    // A scene of no contrast is a constant truth: anomaly_error scored 0 (perfect).
    FK_CHECK(m.anomaly != 0, "config key 'anomaly'", "a non-zero contrast", "0");
    c.scene = p.choice("scene", {"smooth_anomaly", "layered", "scatterers"});
    c.acquisition = p.choice("acquisition", {"surround", "transmission", "reflection"});
    c.margin = p.d("margin");
    FK_CHECK(c.margin >= 0 && 2 * c.margin < m.extent, "config key 'margin'",
             "a distance in [0, extent/2)", Params::render(c.margin));
    c.min_offset = p.d("min_offset");
    FK_CHECK(c.min_offset >= 0, "config key 'min_offset'", ">= 0", Params::render(c.min_offset));
    c.noise = p.d("noise");
    FK_CHECK(c.noise >= 0, "config key 'noise'", ">= 0", Params::render(c.noise));
    c.f_low = positive(p, "f_low");
    c.multiscale_frequency = p.b("multiscale_frequency");
    c.op = operator_config(p, c);
    double widest = 0;  // the largest source-receiver offset
    for (const auto& src : c.op.sources)
      for (const auto& rec : c.op.receivers)
        widest = std::max(widest, std::hypot(src[0] - rec[0], src[1] - rec[1]));
    FK_CHECK(c.min_offset < widest, "config key 'min_offset'",
             "an offset below the widest source-receiver pair's (" + Params::render(widest) +
                 " km; the mute would leave no trace)",
             Params::render(c.min_offset));
    c.field = neural_field_config_from(p);
    c.neural_curriculum = curriculum_from(p, {c.n, c.n}, "lr");
    c.grid_curriculum = scaled_curriculum_from(p, {c.n, c.n}, "lr", "grid_lr_mult");
    if (c.multiscale_frequency) {
      for (Curriculum* cur : {&c.neural_curriculum, &c.grid_curriculum}) {
        for (size_t i = 0; i < cur->stages.size(); ++i) {
          const bool last = i + 1 == cur->stages.size();
          cur->stages[i].loss_weights = {{"fit", last ? 1.0 : 0.0}, {"fit_lo", last ? 0.0 : 1.0}};
        }
      }
    }
    c.tv.eps = tv_eps_key(p);
    c.tv_weight = weight_key(p, "tv");
    return c;
  }

  static WaveOperatorConfig operator_config(const Params& p, const WaveFwiConfig& c) {
    WaveOperatorConfig o;
    o.wave.extent = {c.medium.extent, c.medium.extent};
    o.wave.order = static_cast<int>(count(p, "order", 2, 4));
    o.wave.absorbing = wave::absorbing_from(p.s("absorbing"));
    o.wave.absorb_width = p.d("absorb_width");
    o.wave.absorb_R = p.d("absorb_R");
    o.wave.courant = p.d("courant");
    o.wave.c_max = c.medium.c_max;
    o.wave.dt_obs = positive(p, "dt_obs");
    const double t_max = positive(p, "t_max");
    o.wave.n_t = wave::recording_samples(t_max, o.wave.dt_obs);
    o.f0 = positive(p, "f0");
    // The slowest wave at the Ricker peak must be resolved on the grid the
    // wave equation runs on: at fewer than 2 cells per wavelength it aliases
    // (f0 100 Hz at 42 m cells fitted the data to -10 dB).
    const double h = c.medium.extent / static_cast<double>(c.n);
    const double cells_per_wavelength = c.medium.c_min / o.f0 / h;
    FK_CHECK(cells_per_wavelength >= 2, "config key 'f0'",
             "at least 2 cells per slowest wavelength at the peak frequency (f0 <= c_min / (2 "
             "extent / n) = " +
                 Params::render(c.medium.c_min / (2 * h)) + ")",
             Params::render(o.f0) + " (" + Params::render(cells_per_wavelength) + " cells)");
    const fwi::Acquisition acq =
        fwi::acquisition(c.acquisition, c.medium.extent, c.n_src, c.n_rec, c.margin);
    o.sources = acq.sources;
    o.receivers = acq.receivers;
    o.grad_mode = p.choice("grad_mode", {"checkpoint", "full"});
    o.checkpoint_every = p.i("checkpoint_every");
    o.wave.validate(2);
    return o;
  }
};

class WaveFwi : public Instance {
 public:
  std::string name() const override { return "wave_fwi"; }
  std::string data_tag(const Params&) const override { return wave_fwi_data_tag(); }
  std::string summary() const override {
    return "2-D acoustic full-waveform inversion of the velocity (leapfrog, checkpointed adjoint)";
  }
  std::vector<std::string> methods() const override { return {"neural", "grid"}; }
  std::vector<std::string> scenes() const override {
    return {"smooth_anomaly", "layered", "scatterers"};
  }

  DataLabels data_labels(const Params& p) const override {
    const double L = p.d("extent"), dt = p.d("dt_obs");
    const double n_t = static_cast<double>(std::llround(p.d("t_max") / dt) + 1);
    return {{"P-wave velocity", "c", "km/s"},
            {span_axis("depth z", "km", 0, L), span_axis("x", "km", 0, L)},
            {"pressure", "p", "a.u."},
            {counted_axis("shot", p.i("n_sources")), index_axis("receiver", p.i("n_receivers")),
             span_axis("time t", "s", -0.5 * dt, (n_t - 0.5) * dt)}};
  }

  Params default_config() const override {
    Params p;
    p.declare("n", int64_t{24}, "grid cells per axis");
    p.declare("extent", 1.0, "side of the square (km)");
    p.declare("c_background", 2.0, "background and initial velocity (km/s)");
    p.declare("c_min", 1.5, "lower velocity bound (km/s)");
    p.declare("c_max", 2.5, "upper velocity bound; sizes the time step (km/s)");
    p.declare("anomaly", 0.4,
              "anomaly contrast (km/s; c_background +- it within [c_min, c_max], overlapping "
              "anomalies clipped to them)");
    p.declare("scene", std::string("smooth_anomaly"), "smooth_anomaly | layered | scatterers");
    p.declare("acquisition", std::string("surround"), "surround | transmission | reflection");
    p.declare("n_sources", int64_t{6}, "shots");
    p.declare("n_receivers", int64_t{32}, "receivers");
    p.declare("margin", 0.08, "distance of sources and receivers from the edges (km)");
    p.declare("min_offset", 0.3, "mute source-receiver pairs closer than this (km)");
    p.declare("f0", 4.0, "Ricker peak frequency (Hz)");
    p.declare("t_max", 0.96, "recording length (s)");
    p.declare("dt_obs", 0.016, "trace sampling interval (s)");
    p.declare("order", int64_t{4}, "Laplacian order: 2 | 4");
    p.declare("absorbing", std::string("pml"), "pml | sponge | cerjan | none");
    p.declare("absorb_width", 0.25, "absorbing layer width (km)");
    p.declare("absorb_R", 1e-3, "design reflection of the layer");
    p.declare("courant", 0.9, "fraction of the CFL step");
    p.declare("grad_mode", std::string("checkpoint"), "checkpoint | full");
    p.declare("checkpoint_every", int64_t{0}, "steps between checkpoints (0: sqrt(N))");
    p.declare("noise", 0.005, "noise std relative to the rms of the traces");
    p.declare("supersample", int64_t{2}, "data grid refinement (f64)");
    p.declare("multiscale_frequency", true, "fit low-passed traces on the coarse stage");
    p.declare("f_low", 5.0, "low-pass cut-off of fit_lo (Hz)");
    p.declare("tv", 1e-3, "TV weight");
    p.declare("tv_eps", 1e-3, "TV smoothing");
    p.declare("hidden", int64_t{64}, "MLP width");
    p.declare("depth", int64_t{4}, "MLP hidden layers");
    p.declare("skip_at", int64_t{2}, "layer that sees the encoding again (0: none)");
    p.declare("activation", std::string("tanh"), "tanh | relu | gelu | silu | softplus | sine");
    p.declare("n_octaves", int64_t{3}, "Fourier feature octaves");
    p.declare("out_init_scale", 0.1, "output-layer weight scale");
    p.declare("autocast", std::string("none"), "MLP trunk precision: none | bf16 | fp16");
    declare_curriculum_keys(p, {150, 250}, 2e-2);
    p.declare("grid_lr_mult", 10.0, "grid baseline lr = lr x this");
    return p;
  }

  std::pair<Measurement, fk::Tensor> make_measurement(const Params& p,
                                                      uint64_t seed) const override {
    return measure(WaveFwiConfig::from(p), seed);
  }

  RunOutput run(const Params& p, const std::string& method, uint64_t seed,
                const SolverOptions& so) const override {
    return run_method(*this, p, method, seed, so);
  }

  std::optional<ProblemSetup> setup_from(const Params& p, const std::string& method, uint64_t seed,
                                         const Measurement* measured) const override {
    if (method != "neural" && method != "grid") return std::nullopt;
    const WaveFwiConfig c = WaveFwiConfig::from(p);
    auto [meas, gt] = measured_or(measure(c, seed), measured);
    const Domain domain({c.n, c.n}, {c.medium.extent, c.medium.extent});
    const fwi::MediumConfig& m = c.medium;
    ProblemSetup s{
        field_problem("wave_fwi", domain, std::make_shared<WaveOperator>(c.op, domain.shape()),
                      meas, {bounded_head("x", m.c_min, m.c_max, m.c_background)}, method, c.field,
                      seed),
        method == "neural" ? c.neural_curriculum : c.grid_curriculum, meas, gt};
    s.problem.losses.add(relative_mse_loss("fit"), 1.0);
    s.problem.losses.add(band_limited_mse_loss(c.op.wave.dt_obs, c.f_low, "fit_lo"),
                         c.multiscale_frequency ? 1.0 : 0.0);
    s.problem.losses.add(tv_loss("x", c.tv), c.tv_weight);
    return s;
  }

  std::map<std::string, double> evaluate(const Params& p, const RunOutput& out) const override {
    const double bg = p.d("c_background");
    const auto x = out.reconstruction.to_vector<double>(), g = out.gt.to_vector<double>();
    double num = 0, den = 0;
    for (size_t i = 0; i < x.size(); ++i)
      num += (x[i] - g[i]) * (x[i] - g[i]), den += (g[i] - bg) * (g[i] - bg);
    return {{"psnr", psnr(out.reconstruction, out.gt)},
            {"ssim", ssim(out.reconstruction, out.gt)},
            {"relative_error", relative_error(out.reconstruction, out.gt)},
            {"anomaly_error", den > 0 ? std::sqrt(num / den) : 0.0}};
  }

 private:
  // The scene on the finer grid -> its shots there in f64 with a smaller
  // step -> relative noise; the truth is the fine scene's cell averages.
  static std::pair<Measurement, fk::Tensor> measure(const WaveFwiConfig& c, uint64_t seed) {
    const int64_t n = c.n, nf = n * c.supersample;
    const auto fine = fwi::velocity_scene(c.scene, nf, c.medium, seed);
    WaveOperatorConfig gen = c.op;
    gen.wave.courant = 0.45;
    gen.tag = kFwiDataTag;
    const WaveOperator op(gen, {nf, nf});
    std::vector<double> y = op.apply(fk::from_vector(fine, {nf, nf})).to_vector<double>();
    const fwi::Acquisition acq{c.op.sources, c.op.receivers};
    const auto mask = fwi::offset_mask(acq, c.min_offset, c.op.wave.n_t);
    double ss = 0;
    for (double v : y) ss += v * v;
    Measurement m;
    m.noise_std = c.noise * std::sqrt(ss / static_cast<double>(y.size()));
    datagen::Rng rng(seed * 7919 + 83);
    for (double& v : y) v += m.noise_std * rng.normal();
    const fk::Dims shape{c.n_src, c.n_rec, c.op.wave.n_t};
    m.data = fk::from_vector(y, shape).to(fk::DType::F32);
    bool muted = false;
    for (double w : mask) muted = muted || w == 0.0;
    if (muted) m.mask = fk::from_vector(mask, shape).to(fk::DType::F32);
    return {m, fk::from_vector(area_resample(fine, {nf, nf}, {n, n}), {n, n})};
  }
};

}  // namespace

const char* wave_fwi_data_tag() {
  return kFwiDataTag;
}
InstancePtr make_wave_fwi() {
  return std::make_shared<WaveFwi>();
}

}  // namespace nefi
