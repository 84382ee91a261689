// toy1d: a non-negative 1-D signal on [0, 1] seen through a Gaussian blur
// (sigma 0.02, physical) with 1 % noise relative to the clean maximum. Data
// are simulated on a 4x finer f64 grid by direct convolution and area-averaged
// (datagen.h); the inversion uses FFTConvolution at each stage's grid.
// Scenes: bumps | spikes | mixed. Methods: neural | grid (+TV).
#include <cmath>

#include "fk/error.h"
#include "fk/factory.h"
#include "nefi/field/grid_field.h"
#include "nefi/field/neural_field.h"
#include "nefi/instances/datagen.h"
#include "nefi/instances/instance.h"
#include "nefi/losses/data_losses.h"
#include "nefi/losses/regularizers.h"
#include "nefi/operators/fft_convolution.h"
#include "nefi/resample.h"
#include "nefi/solve/metrics.h"

namespace nefi {
namespace {

constexpr const char* kToy1DDataTag = "blur-4x-float64-direct";

std::vector<double> toy1d_scene(const std::string& scene, int64_t nf, uint64_t seed) {
  datagen::Rng rng(seed);
  std::vector<double> v(nf, 0.0);
  auto at = [nf](int64_t i) { return (i + 0.5) / static_cast<double>(nf); };
  auto bump = [&](double c, double w, double a) {
    for (int64_t i = 0; i < nf; ++i) v[i] += a * std::exp(-0.5 * std::pow((at(i) - c) / w, 2));
  };
  auto box = [&](double c, double w, double a) {
    for (int64_t i = 0; i < nf; ++i)
      if (std::abs(at(i) - c) <= 0.5 * w) v[i] += a;
  };
  if (scene == "bumps") {
    const int64_t k = rng.integer(3, 5);
    for (int64_t j = 0; j < k; ++j)
      bump(rng.uniform(0.15, 0.85), rng.uniform(0.02, 0.06), rng.uniform(0.4, 1.0));
  } else if (scene == "spikes") {
    const int64_t k = rng.integer(3, 6);
    for (int64_t j = 0; j < k; ++j)
      box(rng.uniform(0.1, 0.9), rng.uniform(0.01, 0.03), rng.uniform(0.3, 1.0));
  } else if (scene == "mixed") {
    for (int j = 0; j < 2; ++j)
      bump(rng.uniform(0.15, 0.85), rng.uniform(0.02, 0.06), rng.uniform(0.4, 0.8));
    box(rng.uniform(0.3, 0.7), rng.uniform(0.15, 0.25), rng.uniform(0.3, 0.5));
    box(rng.uniform(0.1, 0.9), 0.015, rng.uniform(0.5, 1.0));
  } else {
    FK_CHECK(false, "config key 'scene'", "bumps, spikes or mixed", scene);
  }
  return v;
}

class Toy1D : public Instance {
 public:
  std::string name() const override { return "toy1d"; }
  std::string summary() const override {
    return "1-D Gaussian deblurring of a non-negative signal (tutorial / CI)";
  }
  std::vector<std::string> methods() const override { return {"neural", "grid"}; }
  std::vector<std::string> scenes() const override { return {"bumps", "spikes", "mixed"}; }

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
    declare_curriculum_keys(p, {300, 600}, 3e-3);
    p.declare("tv", 1e-4, "TV weight");
    p.declare("l1", 0.0, "L1 weight");
    p.declare("grid_lr", 0.1, "learning rate of the grid baseline");
    return p;
  }

  std::pair<Measurement, fk::Tensor> make_measurement(const Params& p,
                                                      uint64_t seed) const override {
    const int64_t n = p.i("n"), ss = p.i("supersample");
    FK_CHECK(n >= 8 && ss >= 1, "toy1d", "n >= 8 and supersample >= 1",
             std::to_string(n) + ", " + std::to_string(ss));
    const int64_t nf = n * ss;
    const fk::Dims fine{nf}, coarse{n};
    const std::vector<double> scene = toy1d_scene(p.s("scene"), nf, seed);
    fk::Dims ks;
    const auto k = datagen::sample_psf("gaussian", {1.0 / nf}, p.d("sigma"), 0, 0, 0, &ks);
    const std::vector<double> clean =
        area_resample(datagen::direct_convolve(scene, fine, k, ks), fine, coarse);
    const std::vector<double> gt = area_resample(scene, fine, coarse);
    double mx = 0;
    for (double c : clean) mx = std::max(mx, c);
    const double sd = p.d("noise_std") * mx;
    datagen::Rng rng(seed * 7919 + 17);
    std::vector<double> y(clean);
    for (double& v : y) v += sd * rng.normal();
    Measurement m;
    m.data = fk::from_vector(y, coarse).to(fk::DType::F32);
    m.noise_std = sd;
    return {m, fk::from_vector(gt, coarse)};
  }

  RunOutput run(const Params& p, const std::string& method, uint64_t seed,
                const SolverOptions& so) const override {
    auto [meas, gt] = make_measurement(p, seed);
    const int64_t n = p.i("n");
    InverseProblem prob;
    prob.name = "toy1d";
    prob.domain = Domain({n}, {1.0});
    prob.op = std::make_shared<FFTConvolution>(gaussian_psf(p.d("sigma")), prob.domain);
    prob.measurement = meas;
    std::vector<HeadPtr> heads{softplus_head("x", p.d("init_value"))};
    double lr = p.d("lr");
    if (method == "neural") {
      prob.field = std::make_shared<NeuralField>(1, heads, neural_field_config_from(p), seed);
    } else if (method == "grid") {
      prob.field = std::make_shared<GridField>(prob.domain.shape(), heads);
      lr = p.d("grid_lr");
    } else {
      FK_CHECK(false, "toy1d", "method neural or grid", method);
    }
    prob.losses.add(mse_loss(), 1.0);
    // The reference's toy1d TV: anisotropic, differences per unit length (the
    // weight means the same at every stage's grid).
    TVOptions tv;
    tv.isotropic = false;
    tv.use_spacing = true;
    prob.losses.add(tv_loss("x", tv), p.d("tv"));
    prob.losses.add(l1_loss("x"), p.d("l1"));
    RunOutput out;
    out.method = method;
    out.curriculum = curriculum_from(p, prob.domain.shape(), lr);
    out.gt = gt;
    out.measurement = meas;
    SolverOptions opts = so;
    opts.seed = seed;
    Solver solver(prob, out.curriculum, opts);
    out.result = solver.run();
    out.reconstruction = out.result.fields.at("x").to(fk::DType::F64);
    out.metrics["psnr"] = psnr(out.reconstruction, gt);
    out.metrics["mse"] = mse(out.reconstruction, gt);
    out.metrics["relative_error"] = relative_error(out.reconstruction, gt);
    return out;
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
