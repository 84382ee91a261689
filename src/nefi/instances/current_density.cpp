// current_density: the stream function g (mA) of a thin current sheet, K =
// curl(g z^) so div K = 0 exactly, from the field component an NV layer reads
// at standoff z0 (um, mA, uT; mu0 = 400 pi), with Gaussian noise of
// noise_std * max|B|. Data: g point-sampled on a supersampled f64 grid, its
// curl by differences there and the field by the direct Biot-Savart sum at
// the pixel centres (operators/biot_savart.h; tag
// biot-savart-direct-float64); inversion: the zero-padded FFT transfer
// function (operators/magnetostatics.h). Scenes: wires | loops | branching
// (current_density_data.h). Methods: neural | grid (identity head, relative
// MSE + isotropic TV of g, weight grid_tv) | fourier (regularised k-space division under a
// Hann window to k_c z0 = fourier_cutoff). Metrics on the current K (central
// differences of g at the pixel grid): j_psnr, j_relative_error; on the
// field against the noiseless data: bz_psnr, bz_relative_error; on g: psnr.
#include <algorithm>
#include <cmath>
#include <complex>
#include <numbers>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "nefi/field/heads.h"
#include "nefi/instances/current_density_data.h"
#include "nefi/instances/datagen.h"
#include "nefi/instances/instance.h"
#include "nefi/instances/regularizer_keys.h"
#include "nefi/instances/run_method.h"
#include "nefi/losses/data_losses.h"
#include "nefi/losses/regularizers.h"
#include "nefi/operators/biot_savart.h"
#include "nefi/operators/fft_convolution.h"
#include "nefi/operators/magnetostatics.h"
#include "nefi/resample.h"
#include "nefi/solve/metrics.h"

namespace nefi {
namespace {

constexpr const char* kCurrentDataTag = "biot-savart-direct-float64";

struct CurrentDensityConfig {
  int64_t n = 0, supersample = 0;
  double pixel = 0, noise_std = 0, fourier_reg = 0, fourier_cutoff = 0;
  std::vector<double> width_px;
  MagnetostaticsOptions mag;
  std::string scene;
  NeuralFieldConfig field;
  Curriculum neural_curriculum, grid_curriculum;
  TVOptions tv;
  double tv_weight = 0, grid_tv_weight = 0;

  double extent() const { return n * pixel; }

  static CurrentDensityConfig from(const Params& p) {
    CurrentDensityConfig c;
    c.n = p.i("n");
    FK_CHECK(c.n >= 8 && c.n <= 2048, "config key 'n'", "a grid size in [8, 2048]",
             fk::to_text(c.n));
    c.pixel = p.d("pixel");
    FK_CHECK(c.pixel > 0, "config key 'pixel'", "a size > 0 (um)", fk::to_text(c.pixel));
    c.mag.standoff = p.d("z0");
    FK_CHECK(c.mag.standoff > 0, "config key 'z0'", "a standoff > 0 (um)",
             fk::to_text(c.mag.standoff));
    c.mag.component =
        field_component_from(p.choice("component", {"z", "x", "y", "nv"}), "component");
    const auto axis = p.list("nv_axis");
    FK_CHECK(axis.size() == 3 && std::hypot(axis[0], axis[1], axis[2]) > 0, "config key 'nv_axis'",
             "a non-zero 3-vector", Params::render(axis));
    c.mag.nv_axis = {axis[0], axis[1], axis[2]};
    c.mag.layer_thickness = p.d("nv_layer_thickness");
    FK_CHECK(c.mag.layer_thickness >= 0, "config key 'nv_layer_thickness'", ">= 0 (um)",
             fk::to_text(c.mag.layer_thickness));
    c.mag.pad_factor = p.i("pad_factor");
    FK_CHECK(c.mag.pad_factor >= 1 && c.mag.pad_factor <= 8, "config key 'pad_factor'",
             "an integer in [1, 8]", fk::to_text(c.mag.pad_factor));
    c.supersample = p.i("supersample");
    FK_CHECK(c.supersample >= 1 && c.supersample <= 4, "config key 'supersample'",
             "a refinement in [1, 4]", fk::to_text(c.supersample));
    c.width_px = p.list("width_px");
    FK_CHECK(c.width_px.size() == 2 && c.width_px[0] > 0 && c.width_px[1] >= c.width_px[0],
             "config key 'width_px'", "a range [lo, hi] with 0 < lo <= hi (pixels)",
             Params::render(c.width_px));
    c.noise_std = noise_std_key(p);
    c.fourier_reg = p.d("fourier_reg");
    FK_CHECK(c.fourier_reg > 0, "config key 'fourier_reg'", "> 0", fk::to_text(c.fourier_reg));
    c.fourier_cutoff = p.d("fourier_cutoff");
    FK_CHECK(c.fourier_cutoff > 0, "config key 'fourier_cutoff'", "> 0 (k_c z0)",
             fk::to_text(c.fourier_cutoff));
    c.scene = p.choice("scene", {"wires", "loops", "branching"});
    c.field = neural_field_config_from(p);
    c.neural_curriculum = curriculum_from(p, {c.n, c.n}, "lr");
    c.grid_curriculum = curriculum_from(p, {c.n, c.n}, "grid_lr");
    c.tv = tv_options_from(p);
    c.tv_weight = weight_key(p, "tv");
    c.grid_tv_weight = weight_key(p, "grid_tv");
    return c;
  }
};

struct CurrentData {
  Measurement measurement;
  fk::Tensor gt;     // g at the pixels (cell averages of the fine g), f64
  fk::Tensor clean;  // the noiseless field, f64
};

// K = curl(g z^) at the pixel grid as (2, n, n), by the same differences for
// the truth and every reconstruction.
fk::Tensor current_of(const fk::Tensor& g, const Domain& domain) {
  const SheetCurrent k =
      curl_of_stream(g.to(fk::DType::F64).contiguous().to_vector<double>(), domain);
  std::vector<double> both(k.k0);
  both.insert(both.end(), k.k1.begin(), k.k1.end());
  return fk::from_vector(both, {2, domain.shape()[0], domain.shape()[1]});
}

class CurrentDensity : public Instance {
 public:
  std::string name() const override { return "current_density"; }
  std::string data_tag(const Params&) const override { return current_density_data_tag(); }
  std::string summary() const override {
    return "NV current imaging: sheet current (stream function) from one field component";
  }
  std::vector<std::string> methods() const override { return {"neural", "grid", "fourier"}; }
  std::vector<std::string> scenes() const override { return {"wires", "loops", "branching"}; }

  DataLabels data_labels(const Params& p) const override {
    const std::vector<DataAxis> yx =
        square_axes(static_cast<double>(p.i("n")) * p.d("pixel"), "µm");
    const std::string& comp = p.s("component");
    return {{"stream function", "g", "mA"}, yx, {"magnetic field", "B_" + comp, "µT"}, yx};
  }

  Params default_config() const override {
    Params p;
    p.declare("n", int64_t{32}, "grid cells per axis");
    p.declare("pixel", 0.25, "pixel size (um)");
    p.declare("z0", 1.0, "sensor standoff (um)");
    p.declare("component", std::string("z"), "field component read: z | x | y | nv");
    p.declare("nv_axis", std::vector<double>{0, 0, 1}, "NV axis (axis 0, axis 1, z) for nv");
    p.declare("nv_layer_thickness", 0.0, "sensor layer averaged over [z0, z0 + t] (um)");
    p.declare("scene", std::string("wires"), "wires | loops | branching");
    p.declare("width_px", std::vector<double>{1, 1.5}, "path width range (pixels)");
    p.declare("noise_std", 0.01, "noise std relative to max|B|");
    p.declare("supersample", int64_t{2}, "data grid refinement (f64)");
    p.declare("pad_factor", int64_t{4}, "FFT zero-padding factor");
    p.declare("tv", 1e-3, "isotropic TV weight on g");
    p.declare("tv_eps", 1e-3, "TV smoothing");
    p.declare("hidden", int64_t{64}, "MLP width");
    p.declare("depth", int64_t{3}, "MLP hidden layers");
    p.declare("skip_at", int64_t{0}, "layer that sees the encoding again (0: none)");
    p.declare("activation", std::string("tanh"), "tanh | relu | gelu | silu | softplus | sine");
    p.declare("n_octaves", int64_t{4}, "Fourier feature octaves");
    p.declare("out_init_scale", 0.1, "output-layer weight scale");
    p.declare("autocast", std::string("none"), "MLP trunk precision: none | bf16 | fp16");
    declare_curriculum_keys(p, {200, 400}, 1e-2);
    p.declare("grid_lr", 5e-2, "learning rate of the grid baseline");
    p.declare("grid_tv", 1e-3, "isotropic TV weight on g of the grid baseline");
    p.declare("fourier_reg", 1e-3, "fourier: Tikhonov weight relative to max|H|^2");
    p.declare("fourier_cutoff", 3.0, "fourier: Hann window cutoff k_c z0");
    return p;
  }

  std::pair<Measurement, fk::Tensor> make_measurement(const Params& p,
                                                      uint64_t seed) const override {
    CurrentData d = measure(CurrentDensityConfig::from(p), seed);
    return {d.measurement, d.gt};
  }

  RunOutput run(const Params& p, const std::string& method, uint64_t seed,
                const SolverOptions& so) const override {
    MethodRunners runners;
    runners.direct["fourier"] = [&p](const Measurement& meas, RunOutput& out) {
      const CurrentDensityConfig c = CurrentDensityConfig::from(p);
      out.reconstruction = fourier_inversion(c, meas.data);
      out.result.fields["x"] = out.reconstruction;
      out.result.prediction = MagnetostaticsOperator(domain_of(c), c.mag).apply(out.reconstruction);
    };
    return run_method(*this, p, method, seed, so, runners);
  }

  std::optional<ProblemSetup> setup_from(const Params& p, const std::string& method, uint64_t seed,
                                         const Measurement* measured) const override {
    if (method != "neural" && method != "grid") return std::nullopt;
    const CurrentDensityConfig c = CurrentDensityConfig::from(p);
    const CurrentData d = measure(c, seed);
    const auto [meas, gt] = measured_or({d.measurement, d.gt}, measured);
    const Domain domain = domain_of(c);
    ProblemSetup s{field_problem("current_density", domain,
                                 std::make_shared<MagnetostaticsOperator>(domain, c.mag), meas,
                                 {identity_head("x")}, method, c.field, seed),
                   method == "neural" ? c.neural_curriculum : c.grid_curriculum, meas, gt};
    s.problem.losses.add(relative_mse_loss(), 1.0);
    // A free grid has no spectral bias: it takes the TV weight of its own.
    s.problem.losses.add(tv_loss("x", c.tv), method == "neural" ? c.tv_weight : c.grid_tv_weight);
    return s;
  }

  // The scores on g, on its current K and on its field against the
  // noiseless data (redrawn from out.seed).
  std::map<std::string, double> evaluate(const Params& p, const RunOutput& out) const override {
    const CurrentDensityConfig c = CurrentDensityConfig::from(p);
    const fk::Tensor clean = measure(c, out.seed).clean;
    const Domain domain = domain_of(c);
    const fk::Tensor j = current_of(out.reconstruction, domain), jt = current_of(out.gt, domain);
    fk::autograd::NoGradGuard ng;
    const fk::Tensor b = MagnetostaticsOperator(domain, c.mag).apply(out.reconstruction);
    return {{"j_psnr", psnr(j, jt)},
            {"j_relative_error", relative_error(j, jt)},
            {"bz_psnr", psnr(b, clean)},
            {"bz_relative_error", relative_error(b, clean)},
            {"psnr", psnr(out.reconstruction, out.gt)}};
  }

 private:
  static Domain domain_of(const CurrentDensityConfig& c) {
    return Domain({c.n, c.n}, {c.extent(), c.extent()});
  }

  // g^ = W conj(H) B^ / (|H|^2 + reg max|H|^2) on the padded grid, W a Hann
  // window to k_c = cutoff / z0.
  static fk::Tensor fourier_inversion(const CurrentDensityConfig& c, const fk::Tensor& data) {
    const int64_t m = c.n * c.mag.pad_factor, mh = m / 2 + 1;
    const std::vector<double> h{c.pixel, c.pixel};
    const auto H = magnetostatic_transfer(m, m, h, c.mag).to_vector<std::complex<double>>();
    double peak = 0;
    for (const auto& v : H) peak = std::max(peak, std::norm(v));
    const double kc = c.fourier_cutoff / c.mag.standoff;
    std::vector<std::complex<double>> R(H.size());
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < mh; ++j) {
        const double f0 = static_cast<double>(i <= (m - 1) / 2 ? i : i - m), f1 = j;
        const double k = 2 * std::numbers::pi * std::hypot(f0, f1) / (m * c.pixel);
        const double w = k < kc ? 0.5 * (1 + std::cos(std::numbers::pi * k / kc)) : 0.0;
        const auto at = i * mh + j;
        // A standoff of thousands of pixels underflows the whole transfer to
        // 0: no information at that frequency, so nothing is restored (0 / 0
        // made the image NaN).
        const double den = std::norm(H[at]) + c.fourier_reg * peak;
        R[at] = den > 0 ? w * std::conj(H[at]) / den : std::complex<double>(0);
      }
    fk::autograd::NoGradGuard ng;
    const std::vector<int64_t> L{m, m}, zeros{0, 0};
    return spectral_filter(data.to(fk::DType::F64).contiguous(), fk::from_vector(R, {m, mh}), L,
                           zeros, zeros, false)
        .contiguous();
  }

  // g on the finer grid -> its curl there -> the direct Biot-Savart sum at
  // the pixel centres -> noise; the truth is the cell average of the fine g.
  static CurrentData measure(const CurrentDensityConfig& c, uint64_t seed) {
    const int64_t n = c.n, nf = n * c.supersample;
    const current_density::SceneSpec spec{c.scene, n, c.extent(), c.width_px[0], c.width_px[1]};
    const std::vector<double> fine = current_density::stream_scene(spec, nf, seed);
    const Domain fine_grid({nf, nf}, {c.extent(), c.extent()}), grid = domain_of(c);
    const MagneticField B =
        biot_savart_sheet(curl_of_stream(fine, fine_grid), fine_grid, grid, c.mag.standoff,
                          c.mag.mu0, c.mag.layer_thickness, c.mag.layer_thickness > 0 ? 8 : 1);
    const std::vector<double> clean = c.mag.component == FieldComponent::kZ   ? B.bz
                                      : c.mag.component == FieldComponent::kX ? B.b0
                                      : c.mag.component == FieldComponent::kY
                                          ? B.b1
                                          : B.along(c.mag.nv_axis);
    double mx = 0;
    for (double v : clean) mx = std::max(mx, std::abs(v));
    CurrentData d;
    d.measurement.noise_std = c.noise_std * mx;
    datagen::Rng rng(seed * 7919 + 83);
    std::vector<double> y(clean);
    for (double& v : y) v += d.measurement.noise_std * rng.normal();
    d.measurement.data = fk::from_vector(y, {n, n}).to(fk::DType::F32);
    d.clean = fk::from_vector(clean, {n, n});
    d.gt = fk::from_vector(area_resample(fine, {nf, nf}, {n, n}), {n, n});
    return d;
  }
};

}  // namespace

const char* current_density_data_tag() {
  return kCurrentDataTag;
}
InstancePtr make_current_density() {
  return std::make_shared<CurrentDensity>();
}

}  // namespace nefi
