// toy1d: a non-negative 1-D signal on [0, 1] seen through a Gaussian blur
// (sigma 0.02, physical) with 1 % noise relative to the clean maximum. Seed N
// gives the reference's seed-N data: the scene drawn on the 4x finer grid
// from NumPy's default_rng(N), blurred in f64 by the reference's kernel (the
// Gaussian sampled at 2n - 1 offsets, unit sum, zero-padded 'same'
// convolution; direct here, FFT there), area-averaged, and NumPy's normals
// from the same stream. The inversion uses FFTConvolution at each stage's
// grid. Scenes: bumps | spikes | mixed (toy1d_scene below). Methods: neural |
// grid (+TV).
#include <cmath>

#include "fk/error.h"
#include "fk/factory.h"
#include "nefi/field/grid_field.h"
#include "nefi/field/neural_field.h"
#include "nefi/instances/datagen.h"
#include "nefi/instances/instance.h"
#include "nefi/instances/numpy_rng.h"
#include "nefi/instances/regularizer_keys.h"
#include "nefi/instances/run_method.h"
#include "nefi/losses/data_losses.h"
#include "nefi/losses/regularizers.h"
#include "nefi/operators/fft_convolution.h"
#include "nefi/resample.h"
#include "nefi/solve/metrics.h"

namespace nefi {
namespace {

constexpr const char* kToy1DDataTag = "blur-4x-float64-direct";

// The reference's toy1d scene (nefi 0.1.2) point-sampled at `ns` cell centres
// of [0, 1] for a native grid of n cells, drawn from `rng` (NumPy's
// default_rng(seed)) in the reference's draw order:
//   bumps   k ~ integers(2, 4); per bump centre U(0.15, 0.85), width
//           U(0.03, 0.08), amplitude U(0.5, 1.5), a Gaussian a·exp(−½((x−c)/w)²)
//   spikes  width 0.5 / n (half a native cell); k ~ integers(3, 6); per spike
//           centre U(0.1, 0.9), amplitude U(0.5, 1.5)
//   mixed   bumps, then spikes, from the same stream
// Coordinates are f32 cell centres and values are rounded to f32, as the
// reference's float32 grids and `.float()` have them.
std::vector<double> toy1d_scene(const std::string& scene, int64_t n, int64_t ns, NumpyRng& rng) {
  FK_CHECK(scene == "bumps" || scene == "spikes" || scene == "mixed", "config key 'scene'",
           "bumps, spikes or mixed", scene);
  std::vector<double> x(ns), v(ns, 0.0);
  const auto h = static_cast<float>(1.0 / static_cast<double>(ns));
  for (int64_t i = 0; i < ns; ++i) x[i] = (static_cast<float>(i) + 0.5f) * h;
  auto add = [&](double c, double w, double a) {
    for (int64_t i = 0; i < ns; ++i) v[i] += a * std::exp(-0.5 * std::pow((x[i] - c) / w, 2));
  };
  if (scene != "spikes")
    for (int64_t k = rng.integers(2, 4); k > 0; --k) {
      const double c = rng.uniform(0.15, 0.85), w = rng.uniform(0.03, 0.08);
      add(c, w, rng.uniform(0.5, 1.5));
    }
  if (scene != "bumps") {
    const double w = 0.5 / static_cast<double>(n);
    for (int64_t k = rng.integers(3, 6); k > 0; --k) {
      const double c = rng.uniform(0.1, 0.9);
      add(c, w, rng.uniform(0.5, 1.5));
    }
  }
  for (double& e : v) e = static_cast<float>(e);
  return v;
}

// The instance's keys, read once and checked.
struct Toy1DConfig {
  int64_t n = 0, supersample = 0;  // grid cells; data grid refinement
  double sigma = 0, noise_std = 0;
  std::string scene;
  double init_value = 0;
  NeuralFieldConfig field;
  Curriculum neural_curriculum, grid_curriculum;
  double tv = 0, l1 = 0;

  static Toy1DConfig from(const Params& p) {
    Toy1DConfig c;
    c.n = p.i("n");
    c.supersample = p.i("supersample");
    FK_CHECK(c.n >= 8, "config key 'n'", "a grid size >= 8", fk::to_text(c.n));
    FK_CHECK(c.supersample >= 1 && c.supersample <= 64, "config key 'supersample'",
             "a refinement in [1, 64]", fk::to_text(c.supersample));
    c.sigma = p.d("sigma");
    FK_CHECK(c.sigma > 0 && c.sigma <= 1, "config key 'sigma'",
             "a PSF width in (0, 1] (the domain's length)", Params::render(c.sigma));
    c.noise_std = noise_std_key(p);
    c.scene = p.choice("scene", {"bumps", "spikes", "mixed"});
    c.init_value = p.d("init_value");
    c.field = neural_field_config_from(p);
    c.neural_curriculum = curriculum_from(p, {c.n}, "lr");
    c.grid_curriculum = curriculum_from(p, {c.n}, "grid_lr");
    c.tv = weight_key(p, "tv");
    c.l1 = weight_key(p, "l1");
    return c;
  }
};

class Toy1D : public Instance {
 public:
  std::string name() const override { return "toy1d"; }
  // The tag of the data as drawn: the blur on a grid `supersample` times
  // finer (the default's is the *_data_tag() constant).
  std::string data_tag(const Params& p) const override {
    return direct_blur_data_tag(p.i("supersample"));
  }
  std::string summary() const override {
    return "1-D Gaussian deblurring of a non-negative signal (tutorial / CI)";
  }
  std::vector<std::string> methods() const override { return {"neural", "grid"}; }
  std::vector<std::string> scenes() const override { return {"bumps", "spikes", "mixed"}; }

  DataLabels data_labels(const Params& p) const override {
    const DataAxis x = span_axis("x", "px", 0, static_cast<double>(p.i("n")));
    return {{"signal", "f", "a.u."}, {x}, {"blurred signal", "k ∗ f", "a.u."}, {x}};
  }

  Params default_config() const override {
    Params p;
    p.declare("n", int64_t{128}, "grid cells");
    p.declare("sigma", 0.02, "Gaussian PSF width (physical, domain [0, 1])");
    p.declare("noise_std", 0.01, "noise std relative to the clean maximum");
    p.declare("scene", std::string("bumps"), "bumps | spikes | mixed");
    p.declare("supersample", int64_t{4}, "data grid refinement (f64)");
    p.declare("hidden", int64_t{64}, "MLP width");
    p.declare("depth", int64_t{4}, "MLP hidden layers");
    p.declare("skip_at", int64_t{2}, "layer that sees the encoding again (0: none)");
    p.declare("activation", std::string("tanh"), "tanh | relu | gelu | silu | softplus | sine");
    p.declare("n_octaves", int64_t{6}, "Fourier feature octaves");
    p.declare("out_init_scale", 0.1, "output-layer weight scale");
    p.declare("autocast", std::string("none"), "MLP trunk precision: none | bf16 | fp16");
    p.declare("init_value", 0.1, "softplus head initial value");
    declare_curriculum_keys(p, {300, 600}, 1e-2);
    p.declare("tv", 1e-4, "TV weight");
    p.declare("l1", 0.0, "L1 weight");
    p.declare("grid_lr", 0.1, "learning rate of the grid baseline");
    return p;
  }

  std::pair<Measurement, fk::Tensor> make_measurement(const Params& p,
                                                      uint64_t seed) const override {
    return measure(Toy1DConfig::from(p), seed);
  }

  std::optional<ProblemSetup> setup_from(const Params& p, const std::string& method, uint64_t seed,
                                         const Measurement* measured) const override {
    FK_CHECK(method == "neural" || method == "grid", "toy1d", "method neural or grid", method);
    const Toy1DConfig c = Toy1DConfig::from(p);
    auto [meas, gt] = measured_or(measure(c, seed), measured);
    ProblemSetup s;
    InverseProblem& prob = s.problem;
    prob.name = "toy1d";
    prob.domain = Domain({c.n}, {1.0});
    prob.op = std::make_shared<FFTConvolution>(gaussian_psf(c.sigma), prob.domain);
    prob.measurement = meas;
    std::vector<HeadPtr> heads{softplus_head("x", c.init_value)};
    if (method == "neural") {
      prob.field = std::make_shared<NeuralField>(1, heads, c.field, seed);
    } else {
      prob.field = std::make_shared<GridField>(prob.domain.shape(), heads);
    }
    prob.losses.add(mse_loss(), 1.0);
    // The reference's toy1d TV: anisotropic, differences per unit length (the
    // weight means the same at every stage's grid).
    TVOptions tv;
    tv.isotropic = false;
    tv.use_spacing = true;
    prob.losses.add(tv_loss("x", tv), c.tv);
    prob.losses.add(l1_loss("x"), c.l1);
    s.curriculum = method == "neural" ? c.neural_curriculum : c.grid_curriculum;
    s.measurement = meas;
    s.gt = gt;
    return s;
  }

  RunOutput run(const Params& p, const std::string& method, uint64_t seed,
                const SolverOptions& so) const override {
    return run_method(*this, p, method, seed, so);
  }

  std::map<std::string, double> evaluate(const Params&, const RunOutput& out) const override {
    return {{"psnr", psnr(out.reconstruction, out.gt)},
            {"mse", mse(out.reconstruction, out.gt)},
            {"relative_error", relative_error(out.reconstruction, out.gt)}};
  }

 private:
  // The reference's data generation (Instance.make_measurement): the scene
  // on the 4x finer grid, the f64 blur, the area average, then noise from the
  // scene's stream; the ground truth is the scene at the native cell centres
  // from a fresh stream of the same seed.
  static std::pair<Measurement, fk::Tensor> measure(const Toy1DConfig& c, uint64_t seed) {
    const int64_t nf = c.n * c.supersample;
    const fk::Dims fine{nf}, coarse{c.n};
    NumpyRng rng(seed);
    const std::vector<double> scene = toy1d_scene(c.scene, c.n, nf, rng);
    // gaussian_kernel_fn at kernel_extent "full": 2 nf - 1 point samples.
    std::vector<double> k(2 * nf - 1);
    double ksum = 0;
    for (int64_t i = 0; i < 2 * nf - 1; ++i) {
      const double r = static_cast<double>(i - (nf - 1)) / static_cast<double>(nf) / c.sigma;
      ksum += k[i] = std::exp(-0.5 * r * r);
    }
    for (double& v : k) v /= ksum;
    const std::vector<double> clean =
        area_resample(datagen::direct_convolve(scene, fine, k, fk::Dims{2 * nf - 1}), fine, coarse);
    NumpyRng gt_rng(seed);
    const std::vector<double> gt = toy1d_scene(c.scene, c.n, c.n, gt_rng);
    double mx = 0;
    for (double v : clean) mx = std::max(mx, std::abs(v));
    const double sd = c.noise_std * mx;
    std::vector<double> y(clean);
    if (sd > 0)
      for (double& v : y) v += sd * rng.standard_normal();
    Measurement m;
    m.data = fk::from_vector(y, coarse).to(fk::DType::F32);
    m.noise_std = sd;
    return {m, fk::from_vector(gt, coarse)};
  }
};

}  // namespace

const char* toy1d_data_tag() {
  return kToy1DDataTag;
}
InstancePtr make_toy1d() {
  return std::make_shared<Toy1D>();
}

}  // namespace nefi
