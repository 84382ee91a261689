// deconvolution: 2-D deblurring, y = k * x + n (Gaussian noise with std
// noise_std * max(k * x)) or y ~ Poisson(peak (k * x) + background). The PSF
// (Gaussian, linear motion or disk) is a function of the grid spacing, so
// every stage sees the same physical blur. Data come from a 2x finer f64 grid
// with a direct convolution (datagen.h). Scenes: phantom | smooth |
// sparse_dots. Methods: neural | grid (+TV) | wiener (SNR by discrepancy).
#include <cmath>
#include <numbers>

#include "fk/error.h"
#include "fk/factory.h"
#include "nefi/baselines/wiener.h"
#include "nefi/field/grid_field.h"
#include "nefi/field/neural_field.h"
#include "nefi/instances/datagen.h"
#include "nefi/instances/instance.h"
#include "nefi/losses/data_losses.h"
#include "nefi/losses/regularizers.h"
#include "nefi/operators/composite.h"
#include "nefi/operators/fft_convolution.h"
#include "nefi/resample.h"
#include "nefi/solve/metrics.h"

namespace nefi {
namespace {

constexpr const char* kDeconvDataTag = "blur-2x-float64-direct";

// Scenes on an nf x nf grid over [0, 1]^2 (row = y, column = x).
std::vector<double> deconv_scene(const std::string& scene, int64_t nf, int64_t n, double dot_cells,
                                 uint64_t seed) {
  datagen::Rng rng(seed);
  std::vector<double> v(nf * nf, 0.0);
  auto each = [&](auto&& f) {
    for (int64_t i = 0; i < nf; ++i)
      for (int64_t j = 0; j < nf; ++j) f(v[i * nf + j], (j + 0.5) / nf, (i + 0.5) / nf);
  };
  if (scene == "phantom") {
    // Modified Shepp-Logan: (value, x0, y0, a, b, angle) on [-1, 1]^2.
    const double e[10][6] = {
        {1.0, 0, 0, 0.69, 0.92, 0},        {-0.8, 0, -0.0184, 0.6624, 0.874, 0},
        {-0.2, 0.22, 0, 0.11, 0.31, -18},  {-0.2, -0.22, 0, 0.16, 0.41, 18},
        {0.1, 0, 0.35, 0.21, 0.25, 0},     {0.1, 0, 0.1, 0.046, 0.046, 0},
        {0.1, 0, -0.1, 0.046, 0.046, 0},   {0.1, -0.08, -0.605, 0.046, 0.023, 0},
        {0.1, 0, -0.605, 0.023, 0.023, 0}, {0.1, 0.06, -0.605, 0.023, 0.046, 0}};
    each([&](double& out, double x, double y) {
      const double u = 2 * x - 1, w = 1 - 2 * y;
      for (const auto& el : e) {
        const double th = el[5] * std::numbers::pi / 180.0;
        const double dx = u - el[1], dy = w - el[2];
        const double xr = dx * std::cos(th) + dy * std::sin(th);
        const double yr = -dx * std::sin(th) + dy * std::cos(th);
        if (xr * xr / (el[3] * el[3]) + yr * yr / (el[4] * el[4]) <= 1.0) out += el[0];
      }
    });
  } else if (scene == "smooth") {
    const int64_t k = rng.integer(4, 8);
    for (int64_t b = 0; b < k; ++b) {
      const double cx = rng.uniform(0.2, 0.8), cy = rng.uniform(0.2, 0.8);
      const double s = rng.uniform(0.05, 0.15), a = rng.uniform(0.3, 1.0);
      each([&](double& out, double x, double y) {
        out += a * std::exp(-0.5 * ((x - cx) * (x - cx) + (y - cy) * (y - cy)) / (s * s));
      });
    }
  } else if (scene == "sparse_dots") {
    const int64_t k = rng.integer(8, 16);
    const double r = dot_cells / static_cast<double>(n);
    for (int64_t b = 0; b < k; ++b) {
      const double cx = rng.uniform(0.1, 0.9), cy = rng.uniform(0.1, 0.9),
                   a = rng.uniform(0.5, 1.0);
      each([&](double& out, double x, double y) {
        if ((x - cx) * (x - cx) + (y - cy) * (y - cy) <= r * r) out += a;
      });
    }
  } else {
    FK_CHECK(false, "config key 'scene'", "phantom, smooth or sparse_dots", scene);
  }
  return v;
}

PsfFunction inversion_psf(const Params& p) {
  const std::string& k = p.s("psf");
  if (k == "gaussian") return gaussian_psf(p.d("psf_sigma"));
  if (k == "motion") return motion_psf(p.d("motion_length"), p.d("motion_angle"));
  if (k == "disk") return disk_psf(p.d("disk_radius"));
  throw fk::Error("config key 'psf'", "gaussian, motion or disk", k);
}

class Deconvolution : public Instance {
 public:
  std::string name() const override { return "deconvolution"; }
  std::string summary() const override { return "2-D deblurring (Gaussian / motion / disk PSF)"; }
  std::vector<std::string> methods() const override { return {"neural", "grid", "wiener"}; }
  std::vector<std::string> scenes() const override { return {"phantom", "smooth", "sparse_dots"}; }

  Params default_config() const override {
    Params p;
    p.declare("n", int64_t{64}, "grid cells per axis");
    p.declare("extent", 1.0, "physical side length");
    p.declare("psf", std::string("gaussian"), "gaussian | motion | disk");
    p.declare("psf_sigma", 0.02, "Gaussian PSF width (physical)");
    p.declare("motion_length", 0.1, "motion PSF length");
    p.declare("motion_angle", 30.0, "motion PSF angle (degrees)");
    p.declare("disk_radius", 0.04, "disk PSF radius");
    p.declare("noise", std::string("gaussian"), "gaussian | poisson");
    p.declare("noise_std", 0.01, "Gaussian noise std relative to the clean maximum");
    p.declare("peak_counts", 200.0, "Poisson: expected counts at intensity 1");
    p.declare("background", 1.0, "Poisson: background counts");
    p.declare("supersample", int64_t{2}, "data grid refinement (f64)");
    p.declare("scene", std::string("phantom"), "phantom | smooth | sparse_dots");
    p.declare("dot_cells", 0.7, "sparse_dots radius in cells");
    p.declare("init_value", 0.05, "softplus head initial value");
    p.declare("data_loss", std::string("auto"), "auto | mse | poisson_nll");
    p.declare("tv", 1e-4, "TV weight");
    p.declare("tv_eps", 1e-3, "TV smoothing");
    p.declare("l1", 0.0, "L1 weight");
    p.declare("hidden", int64_t{128}, "MLP width");
    p.declare("depth", int64_t{4}, "MLP hidden layers");
    p.declare("skip_at", int64_t{2}, "layer that sees the encoding again (0: none)");
    p.declare("activation", std::string("tanh"), "tanh | relu | gelu | silu | softplus | sine");
    p.declare("n_octaves", int64_t{7}, "Fourier feature octaves");
    p.declare("out_init_scale", 0.1, "output-layer weight scale");
    p.declare("autocast", std::string("none"), "MLP trunk precision: none | bf16 | fp16");
    declare_curriculum_keys(p, {400, 800}, 2e-2);
    p.declare("grid_lr", 5e-2, "learning rate of the grid baseline");
    p.declare("wiener_snr", 0.0, "Wiener SNR (0: discrepancy principle)");
    p.declare("wiener_tau", 1.0, "discrepancy factor tau");
    return p;
  }

  std::pair<Measurement, fk::Tensor> make_measurement(const Params& p,
                                                      uint64_t seed) const override {
    const int64_t n = p.i("n"), ss = p.i("supersample");
    FK_CHECK(n >= 8 && ss >= 1, "deconvolution", "n >= 8 and supersample >= 1",
             std::to_string(n) + ", " + std::to_string(ss));
    const int64_t nf = n * ss;
    const fk::Dims fine{nf, nf}, coarse{n, n};
    const double hf = p.d("extent") / nf;
    const std::vector<double> scene = deconv_scene(p.s("scene"), nf, n, p.d("dot_cells"), seed);
    fk::Dims ks;
    const auto k = datagen::sample_psf(p.s("psf"), {hf, hf}, p.d("psf_sigma"), p.d("motion_length"),
                                       p.d("motion_angle"), p.d("disk_radius"), &ks);
    const auto clean = area_resample(datagen::direct_convolve(scene, fine, k, ks), fine, coarse);
    const auto gt = area_resample(scene, fine, coarse);
    datagen::Rng rng(seed * 7919 + 23);
    std::vector<double> y(clean);
    Measurement m;
    if (p.s("noise") == "gaussian") {
      double mx = 0;
      for (double c : clean) mx = std::max(mx, c);
      m.noise_std = p.d("noise_std") * mx;
      for (double& v : y) v += m.noise_std * rng.normal();
    } else if (p.s("noise") == "poisson") {
      for (double& v : y)
        v = static_cast<double>(
            rng.poisson(p.d("peak_counts") * std::max(v, 0.0) + p.d("background")));
    } else {
      FK_CHECK(false, "config key 'noise'", "gaussian or poisson", p.s("noise"));
    }
    m.data = fk::from_vector(y, coarse).to(fk::DType::F32);
    return {m, fk::from_vector(gt, coarse)};
  }

  RunOutput run(const Params& p, const std::string& method, uint64_t seed,
                const SolverOptions& so) const override {
    auto [meas, gt] = make_measurement(p, seed);
    const int64_t n = p.i("n");
    const bool poisson = p.s("noise") == "poisson";
    InverseProblem prob;
    prob.name = "deconvolution";
    prob.domain = Domain({n, n}, {p.d("extent"), p.d("extent")});
    const PsfFunction psf = inversion_psf(p);
    RunOutput out;
    out.method = method;
    out.gt = gt;
    out.measurement = meas;
    if (method == "wiener") {
      fk::Tensor y = meas.data.to(fk::DType::F64);
      double sd = meas.noise_std;
      if (poisson) {  // counts -> intensity; sigma from the mean count level
        const double peak = p.d("peak_counts"), bg = p.d("background");
        std::vector<double> v = y.to_vector<double>();
        double mean = 0;
        for (double& c : v) {
          mean += c;
          c = (c - bg) / peak;
        }
        sd = std::sqrt(std::max(mean / v.size(), 1.0)) / peak;
        y = fk::from_vector(v, y.shape());
      }
      const WienerResult w =
          wiener_deconvolve(y, psf, prob.domain, sd, p.d("wiener_tau"), p.d("wiener_snr"));
      out.reconstruction = w.x;
      out.result.fields["x"] = w.x;
      out.result.prediction = FFTConvolution(psf, prob.domain).apply(w.x);
      out.metrics["wiener_snr"] = w.snr;
    } else {
      OperatorPtr blur = std::make_shared<FFTConvolution>(psf, prob.domain);
      prob.op =
          poisson ? std::make_shared<NuisanceOperator>(blur, p.d("peak_counts"), p.d("background"))
                  : blur;
      prob.measurement = meas;
      std::vector<HeadPtr> heads{softplus_head("x", p.d("init_value"))};
      double lr = p.d("lr");
      if (method == "neural") {
        NeuralFieldConfig fc;
        fc.hidden = static_cast<int>(p.i("hidden"));
        fc.depth = static_cast<int>(p.i("depth"));
        fc.skip_at = static_cast<int>(p.i("skip_at"));
        fc.activation = p.s("activation");
        fc.n_octaves = static_cast<int>(p.i("n_octaves"));
        fc.out_init_scale = p.d("out_init_scale");
        fc.autocast = autocast_from(p);
        prob.field = std::make_shared<NeuralField>(2, heads, fc, seed);
      } else if (method == "grid") {
        prob.field = std::make_shared<GridField>(prob.domain.shape(), heads);
        lr = p.d("grid_lr");
      } else {
        FK_CHECK(false, "deconvolution", "method neural, grid or wiener", method);
      }
      std::string dl = p.s("data_loss");
      if (dl == "auto") dl = poisson ? "poisson_nll" : "mse";
      FK_CHECK(dl == "mse" || dl == "poisson_nll", "config key 'data_loss'",
               "auto, mse or poisson_nll", dl);
      prob.losses.add(dl == "mse" ? mse_loss() : poisson_nll_loss(), 1.0);
      TVOptions tv;
      tv.eps = p.d("tv_eps");
      prob.losses.add(tv_loss("x", tv), p.d("tv"));
      prob.losses.add(l1_loss("x"), p.d("l1"));
      out.curriculum = curriculum_from(p, prob.domain.shape(), lr);
      SolverOptions opts = so;
      opts.seed = seed;
      Solver solver(prob, out.curriculum, opts);
      out.result = solver.run();
      out.reconstruction = out.result.fields.at("x").to(fk::DType::F64);
    }
    out.metrics["psnr"] = psnr(out.reconstruction, gt);
    out.metrics["ssim"] = ssim(out.reconstruction, gt);
    out.metrics["mse"] = mse(out.reconstruction, gt);
    if (!poisson) out.metrics["blurred_psnr"] = psnr(meas.data.to(fk::DType::F64), gt);
    return out;
  }
};

}  // namespace

const char* deconvolution_data_tag() {
  return kDeconvDataTag;
}
InstancePtr make_deconvolution() {
  return std::make_shared<Deconvolution>();
}

}  // namespace nefi
