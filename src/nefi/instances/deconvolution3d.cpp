// deconvolution3d: a fluorescence z-stack, y = h * x + n, h a Gaussian PSF
// with sigma_z = axial_ratio * sigma_xy in um on anisotropic voxels (pixel
// in x and y, z_step in z; axis 2 is z), Gaussian noise of noise_std *
// max(h * x), or photon counts y ~ Poisson(peak_counts (h * x) +
// background_counts), inverted through a frozen Nuisance(gain peak_counts,
// offset background_counts) with the Poisson NLL. The PSF array spans
// psf_extent full (2n - 1 cells) or same (n). Data: analytic scenes
// point-sampled on a finer f64 grid, blurred by a separable direct
// convolution and area-averaged (deconvolution3d_data.h); the scene and the
// Gaussian noise come from NumPy's default_rng(seed) stream in the
// reference's order, so on the filaments class seed s is the reference's
// seed-s measurement. Inversion: FFTConvolution (3-D) at each stage's grid.
// Scenes: filaments | bezier_filaments | puncta | cells | uniform_filaments.
// Methods: neural | grid (+TV) | richardson_lucy | wiener3d (Wiener filter
// on the data mirrored about the faces, or periodic, SNR by the discrepancy
// principle at the known noise level) | deep_decoder
// (baselines/deep_decoder.h). Metrics: psnr, ssim (mean over z slices), mse,
// iou (of the masks above the truth's Otsu level, the reference's, or above
// iou_threshold * max(truth)); with `refine` on, the neural and grid fits
// are then sharpened by the refinement (solve/refine.h; phasefield by
// default) and refined_iou / refined_psnr score the field it keeps.
#include <algorithm>
#include <cmath>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "nefi/baselines/deep_decoder.h"
#include "nefi/baselines/wiener.h"
#include "nefi/field/grid_field.h"
#include "nefi/field/neural_field.h"
#include "nefi/instances/deconvolution3d_data.h"
#include "nefi/instances/instance.h"
#include "nefi/instances/numpy_rng.h"
#include "nefi/instances/refine_stage.h"
#include "nefi/instances/regularizer_keys.h"
#include "nefi/instances/run_method.h"
#include "nefi/losses/data_losses.h"
#include "nefi/losses/regularizers.h"
#include "nefi/operators/composite.h"
#include "nefi/operators/fft_convolution.h"
#include "nefi/resample.h"
#include "nefi/solve/metrics.h"

namespace nefi {
namespace {

constexpr const char* kDeconv3dDataTag = "blur3d-2x-float64-separable-direct";

// A Gaussian with its own physical std per axis over a box of physical size
// `box`, sampled at each resolution's spacing over the PSF extent of that
// resolution's grid (deconvolution3d_data.h).
PsfFunction anisotropic_gaussian_psf(std::vector<double> sigma, std::vector<double> box,
                                     deconv3d::PsfExtent extent) {
  return [sigma, box, extent](const std::vector<double>& h) {
    std::array<int64_t, 3> cells, shape;
    for (int a = 0; a < 3; ++a) cells[a] = std::llround(box[a] / h[a]);
    PsfSample s;
    s.values = deconv3d::gaussian_psf({sigma[0], sigma[1], sigma[2]}, {h[0], h[1], h[2]}, cells,
                                      extent, shape);
    s.shape = fk::Dims({shape[0], shape[1], shape[2]});
    return s;
  };
}

struct Deconvolution3dConfig {
  int64_t n = 0, n_z = 0, supersample = 0, rl_iterations = 0;
  double pixel = 0, z_step = 0, sigma_xy = 0, axial_ratio = 0, noise_std = 0, iou_threshold = 0;
  std::string scene;
  deconv3d::PsfExtent psf_extent = deconv3d::PsfExtent::kFull;
  bool poisson = false;  // else Gaussian noise of noise_std * max(clean)
  WienerBoundary wiener_boundary = WienerBoundary::kPadded;
  double peak_counts = 0, background_counts = 0;
  double init_value = 0;
  NeuralFieldConfig field;
  Curriculum neural_curriculum, grid_curriculum, dd_curriculum;
  TVOptions tv;
  double tv_weight = 0, l1 = 0;
  bool refine = false;
  double refine_tv = 0;  // the refit's TV weight (the smooth fit's is tv_weight)
  RefineOptions refine_options;

  fk::Dims shape() const { return {n, n, n_z}; }
  std::vector<double> extent() const { return {n * pixel, n * pixel, n_z * z_step}; }
  std::vector<double> sigma() const { return {sigma_xy, sigma_xy, axial_ratio * sigma_xy}; }
  PsfFunction psf() const { return anisotropic_gaussian_psf(sigma(), extent(), psf_extent); }

  static Deconvolution3dConfig from(const Params& p) {
    Deconvolution3dConfig c;
    c.n = p.i("n");
    FK_CHECK(c.n >= 8 && c.n <= 1024, "config key 'n'", "a grid size in [8, 1024]",
             fk::to_text(c.n));
    c.n_z = p.i("n_z");
    FK_CHECK(c.n_z >= 4 && c.n_z <= 1024, "config key 'n_z'", "a slice count in [4, 1024]",
             fk::to_text(c.n_z));
    c.supersample = p.i("supersample");
    FK_CHECK(c.supersample >= 1 && c.supersample <= 4, "config key 'supersample'",
             "a refinement in [1, 4]", fk::to_text(c.supersample));
    c.pixel = p.d("pixel");
    FK_CHECK(c.pixel > 0, "config key 'pixel'", "a size > 0 (um)", fk::to_text(c.pixel));
    c.z_step = p.d("z_step");
    FK_CHECK(c.z_step > 0, "config key 'z_step'", "a step > 0 (um)", fk::to_text(c.z_step));
    // A blur wider than the volume leaves it flat: nothing to invert.
    const double lateral = static_cast<double>(c.n) * c.pixel;
    const double axial = static_cast<double>(c.n_z) * c.z_step;
    FK_CHECK(std::isfinite(lateral) && std::isfinite(axial), "config keys 'pixel'/'z_step'",
             "finite extents n * pixel and n_z * z_step",
             fk::to_text(lateral) + ", " + fk::to_text(axial));
    c.sigma_xy = p.d("psf_sigma_xy");
    FK_CHECK(c.sigma_xy > 0 && c.sigma_xy <= lateral, "config key 'psf_sigma_xy'",
             "a width in (0, n * pixel = " + fk::to_text(lateral) + "] (um)",
             fk::to_text(c.sigma_xy));
    c.axial_ratio = p.d("axial_ratio");
    FK_CHECK(c.axial_ratio > 0 && c.axial_ratio * c.sigma_xy <= axial, "config key 'axial_ratio'",
             "a ratio > 0 whose axial width axial_ratio * psf_sigma_xy is at most n_z * z_step = " +
                 fk::to_text(axial) + " um",
             fk::to_text(c.axial_ratio));
    c.noise_std = noise_std_key(p);
    c.psf_extent = deconv3d::psf_extent_from(p.s("psf_extent"));
    c.poisson = p.choice("noise", {"gaussian", "poisson"}) == "poisson";
    {
      const std::string b = p.choice("wiener_boundary", {"padded", "reflect", "periodic"});
      c.wiener_boundary = b == "periodic" ? WienerBoundary::kPeriodic
                          : b == "padded" ? WienerBoundary::kPadded
                                          : WienerBoundary::kReflect;
    }
    c.peak_counts = p.d("peak_counts");
    FK_CHECK(c.peak_counts > 0, "config key 'peak_counts'", "counts > 0 at intensity 1",
             fk::to_text(c.peak_counts));
    c.background_counts = p.d("background_counts");
    FK_CHECK(c.background_counts >= 0, "config key 'background_counts'", "counts >= 0",
             fk::to_text(c.background_counts));
    c.iou_threshold = p.d("iou_threshold");
    FK_CHECK(c.iou_threshold >= 0 && c.iou_threshold < 1, "config key 'iou_threshold'",
             "0 (the truth's Otsu level) or a fraction in (0, 1)", fk::to_text(c.iou_threshold));
    c.rl_iterations = p.i("rl_iterations");
    FK_CHECK(c.rl_iterations >= 1 && c.rl_iterations <= 100000, "config key 'rl_iterations'",
             "an iteration count in [1, 100000]", fk::to_text(c.rl_iterations));
    c.scene = p.choice("scene",
                       {"filaments", "bezier_filaments", "puncta", "cells", "uniform_filaments"});
    c.init_value = p.d("init_value");
    FK_CHECK(c.init_value > 0, "config key 'init_value'", "> 0 (softplus head)",
             fk::to_text(c.init_value));
    c.field = neural_field_config_from(p);
    c.neural_curriculum = curriculum_from(p, c.shape(), "lr");
    c.grid_curriculum = curriculum_from(p, c.shape(), "grid_lr");
    c.dd_curriculum = curriculum_from(p, c.shape(), "dd_lr");
    check_deep_decoder_keys(p);
    c.tv = tv_options_from(p);
    c.tv_weight = weight_key(p, "tv");
    c.l1 = weight_key(p, "l1");
    c.refine = p.b("refine");
    c.refine_tv = weight_key(p, "refine_tv");
    c.refine_options = refine_options_from(p);
    return c;
  }
};

class Deconvolution3d : public Instance {
 public:
  std::string name() const override { return "deconvolution3d"; }
  std::string data_tag(const Params&) const override { return deconvolution3d_data_tag(); }
  std::string summary() const override {
    return "3-D fluorescence z-stack deconvolution (anisotropic Gaussian PSF)";
  }
  std::vector<std::string> methods() const override {
    return {"neural", "grid", "richardson_lucy", "wiener3d", "deep_decoder"};
  }
  std::vector<std::string> scenes() const override {
    return {"filaments", "bezier_filaments", "puncta", "cells", "uniform_filaments"};
  }

  DataLabels data_labels(const Params& p) const override {
    const double side = static_cast<double>(p.i("n")) * p.d("pixel");
    const std::vector<DataAxis> xyz{
        span_axis("x", "µm", 0, side), span_axis("y", "µm", 0, side),
        span_axis("z", "µm", 0, static_cast<double>(p.i("n_z")) * p.d("z_step"))};
    const Quantity measured = p.s("noise") == "poisson"
                                  ? Quantity{"photon counts", "N", "counts"}
                                  : Quantity{"blurred intensity", "h ∗ ρ", "a.u."};
    return {{"fluorophore density", "ρ", "a.u."}, xyz, measured, xyz};
  }

  Params default_config() const override {
    Params p;
    p.declare("n", int64_t{64}, "cells per lateral axis");
    p.declare("n_z", int64_t{32}, "z slices");
    p.declare("pixel", 0.1, "lateral pixel size (um)");
    p.declare("z_step", 0.2, "z step (um)");
    p.declare("psf_sigma_xy", 0.12, "lateral PSF std (um)");
    p.declare("axial_ratio", 3.0, "sigma_z / sigma_xy");
    p.declare("psf_extent", std::string("full"), "PSF array: full (2n - 1 cells) | same (n)");
    p.declare("noise", std::string("gaussian"), "gaussian | poisson (photon counts)");
    p.declare("noise_std", 0.01, "Gaussian noise std relative to the clean maximum");
    p.declare("peak_counts", 200.0, "Poisson: expected counts at intensity 1");
    p.declare("background_counts", 2.0, "Poisson: background counts");
    p.declare("supersample", int64_t{2}, "data grid refinement (f64)");
    p.declare("scene", std::string("filaments"),
              "filaments | bezier_filaments | puncta | cells | uniform_filaments");
    p.declare("iou_threshold", 0.0,
              "IoU masks: values above this fraction of max(truth); 0: above the truth's Otsu "
              "level (the reference's)");
    p.declare("init_value", 0.05, "softplus head initial value");
    p.declare("tv", 1e-4, "TV weight");
    p.declare("tv_eps", 1e-3, "TV smoothing");
    p.declare("l1", 0.0, "L1 weight");
    p.declare("hidden", int64_t{128}, "MLP width");
    p.declare("depth", int64_t{4}, "MLP hidden layers");
    p.declare("skip_at", int64_t{2}, "layer that sees the encoding again (0: none)");
    p.declare("activation", std::string("tanh"), "tanh | relu | gelu | silu | softplus | sine");
    p.declare("n_octaves", int64_t{6}, "Fourier feature octaves");
    p.declare("out_init_scale", 0.1, "output-layer weight scale");
    p.declare("autocast", std::string("none"), "MLP trunk precision: none | bf16 | fp16");
    declare_curriculum_keys(p, {600, 1200}, 1e-2);
    p.set("anneal_fraction", "0.3");
    p.declare("grid_lr", 5e-2, "learning rate of the grid baseline");
    declare_deep_decoder_keys(p, 64, 5, 5e-3);
    p.declare("rl_iterations", int64_t{30}, "Richardson-Lucy iterations");
    p.declare("wiener_boundary", std::string("padded"),
              "wiener3d: padded (the data bridged across a margin of the blur's length) | "
              "reflect (mirrored about the faces) | periodic (as they are)");
    // Levels 0: Otsu's phase count (at most 4), the count the phase field
    // was measured and chosen at (session 12, through the smoke preset's
    // refine_levels 0). The 2 left as the default under it was never
    // measured with it: the full preset, which takes the default, refined
    // its grid fit with 2 phases, accepted (chi 1.069 -> 1.047) but IoU
    // 0.711 -> 0.661; with Otsu's 3 phases 0.757, PSNR 31.12 -> 33.22 dB,
    // chi -> 1.014 (docs/performance.md, session 15).
    declare_refine_keys(p, true, 0, "phasefield");
    // Every mode's Adam step is in intensity units: this instance's level
    // gaps are ~0.09 (Otsu levels 0.01 / 0.10 / 0.24 / 0.42 on the filaments),
    // so the default 1e-2 (for fields of unit range) moves phi a whole final
    // interface width (eps_end x gap) a step; 3e-3 is 0.03 gap a step, as the
    // unit-range refinements run, over 400 steps. With refine_tv below, the
    // level set on gallery seeds 0-2: IoU 0.676 / 0.554 / 0.730 (1e-2 x 200:
    // 0.658 / 0.527 / 0.723).
    p.set_value("refine_lr", 3e-3);
    p.set_value("refine_steps", int64_t{400});
    // The voxels mode's perimeter weight is in loss units (data mean square
    // against interface area per volume, 1 / um): the data term here is chi
    // x 7.4e-6 (1.2e-5 at the gallery seed-0 start, perimeter 2.2 / um), so
    // the default 1e-3 outweighs it 150-230x (gallery seeds 0-2) and the
    // refit fits the data worse than its start (seed 0: chi 1.60 -> 3.50,
    // refused); at 1e-5 (with refine_tv below) chi falls to 0.96 / 1.06 /
    // 0.97. docs/performance.md, session 11.
    p.set_value("refine_boundary_weight", 1e-5);
    // The refit's own TV weight. The solve's (tv 1e-4) is twice its data term
    // at the end of the gallery-budget fits (seed 0: 2.6e-5 against 1.2e-5):
    // under it the staircase stops at chi 1.2-1.4, short of the noise level
    // (the truth's own chi is 1.0), its jumps taxed. The levels are the
    // refit's prior; at a tenth of the weight it fits to the noise (chi 0.99
    // / 1.02 / 1.04) and the gallery IoU is 0.676 / 0.554 / 0.730.
    p.declare("refine_tv", 1e-5, "refinement: TV weight of the refit (the solve's is tv)");
    // The default refinement is the phase field (refine.h): a phase per cell
    // read through the Otsu levels, under a double well of weight 1e-5, ~1.4x
    // the data term at the noise level (chi x 7.4e-6 here). The filaments are
    // Gaussian tubes, not phases: the truth's Otsu level the IoU reads (0.23
    // / 0.19 / 0.16 on gallery seeds 0-2) falls inside a level gap, where
    // the level set's staircase counts a whole phase, its jump placed where
    // the truth is near the two levels' midpoint (seed 0: levels 0.10 ->
    // 0.26, 296 false cells against 29 missed). The weak well leaves the
    // cells between two phases where the data put them. Gallery seeds 0-2:
    // IoU 0.643 / 0.448 / 0.694 -> 0.754 / 0.621 / 0.777 (level set 0.676 /
    // 0.554 / 0.730), PSNR 29.08 / 30.65 / 30.33 dB, chi -> 1.02 / 1.11 /
    // 1.04; well 3e-6 gives the same to 0.005. docs/performance.md, session 12.
    p.set_value("refine_well_weight", 1e-5);
    return p;
  }

  std::pair<Measurement, fk::Tensor> make_measurement(const Params& p,
                                                      uint64_t seed) const override {
    return measure(Deconvolution3dConfig::from(p), seed);
  }

  RunOutput run(const Params& p, const std::string& method, uint64_t seed,
                const SolverOptions& so) const override {
    MethodRunners runners;
    runners.direct["richardson_lucy"] = [&p](const Measurement& meas, RunOutput& out) {
      const Deconvolution3dConfig c = Deconvolution3dConfig::from(p);
      richardson_lucy(*blur_of(c), intensity_data(c, meas).first, c.rl_iterations, out);
      out.result.prediction = as_measured(c, out.result.prediction);
    };
    runners.direct["wiener3d"] = [&p](const Measurement& meas, RunOutput& out) {
      const Deconvolution3dConfig c = Deconvolution3dConfig::from(p);
      const auto [y, sd] = intensity_data(c, meas);
      FK_CHECK(sd > 0, "method wiener3d",
               "a noise level for its discrepancy principle (config key 'noise_std' > 0, or "
               "run.noise_std for measured data)",
               "noise level 0");
      const WienerResult w = wiener_deconvolve(y, c.psf(), Domain(c.shape(), c.extent()), sd, 1.0,
                                               0.0, c.wiener_boundary);
      fk::autograd::NoGradGuard ng;
      out.reconstruction = w.x;
      out.result.fields["x"] = w.x;
      out.result.prediction = as_measured(c, blur_of(c)->apply(w.x));
      out.metrics["wiener_snr"] = w.snr;
    };
    return run_method(*this, p, method, seed, so, runners);
  }

  void after_solve(const Params& p, const InverseProblem& solved, RunOutput& out) const override {
    const Deconvolution3dConfig c = Deconvolution3dConfig::from(p);
    if (!c.refine) return;
    InverseProblem refit = solved;
    refit.losses = solved.losses.with_weights({{"tv", c.refine_tv}});
    refine_solved_output(refit, c.refine_options, iou_of(c), out);
  }

  std::optional<ProblemSetup> setup_from(const Params& p, const std::string& method, uint64_t seed,
                                         const Measurement* measured) const override {
    if (method != "neural" && method != "grid" && method != "deep_decoder") return std::nullopt;
    const Deconvolution3dConfig c = Deconvolution3dConfig::from(p);
    auto [meas, gt] = measured_or(measure(c, seed), measured);
    // Poisson mode: counts through the frozen detector gain and background,
    // the NLL per count scaled by 1 / peak_counts so the TV weight means
    // what it does for Gaussian data.
    OperatorPtr op = blur_of(c);
    if (c.poisson) op = std::make_shared<NuisanceOperator>(op, c.peak_counts, c.background_counts);
    ProblemSetup s{field_problem("deconvolution3d", Domain(c.shape(), c.extent()), op, meas,
                                 {softplus_head("x", c.init_value)}, method, c.field, seed),
                   method == "neural" ? c.neural_curriculum
                   : method == "grid" ? c.grid_curriculum
                                      : c.dd_curriculum,
                   meas, gt};
    if (method == "deep_decoder")
      s.problem.field = deep_decoder_field(p, softplus_head("x", c.init_value), 3, seed);
    s.problem.losses.add(c.poisson ? poisson_nll_loss() : mse_loss(),
                         c.poisson ? 1.0 / c.peak_counts : 1.0);
    s.problem.losses.add(tv_loss("x", c.tv), c.tv_weight);
    s.problem.losses.add(l1_loss("x"), c.l1);
    return s;
  }

  // The metrics of the primary reconstruction (after_solve adds the refined stage's).
  std::map<std::string, double> evaluate(const Params& p, const RunOutput& out) const override {
    return {{"psnr", psnr(out.reconstruction, out.gt)},
            {"ssim", ssim(out.reconstruction, out.gt)},
            {"mse", mse(out.reconstruction, out.gt)},
            {"iou", iou_of(Deconvolution3dConfig::from(p))(out.reconstruction, out.gt)}};
  }

 private:
  static IouOf iou_of(const Deconvolution3dConfig& c) {
    return c.iou_threshold > 0 ? iou_at_fraction(c.iou_threshold) : iou_at_truth_otsu();
  }

  static std::shared_ptr<FFTConvolution> blur_of(const Deconvolution3dConfig& c) {
    return std::make_shared<FFTConvolution>(c.psf(), Domain(c.shape(), c.extent()));
  }

  // Counts as intensities, (counts - background) / peak, with the noise std
  // the measurement's rms count noise / peak; Gaussian data as they are.
  static std::pair<fk::Tensor, double> intensity_data(const Deconvolution3dConfig& c,
                                                      const Measurement& meas) {
    fk::Tensor y = meas.data.to(fk::DType::F64);
    if (!c.poisson) return {y, meas.noise_std};
    std::vector<double> v = y.to_vector<double>();
    for (double& x : v) x = (x - c.background_counts) / c.peak_counts;
    return {fk::from_vector(v, y.shape()), meas.noise_std / c.peak_counts};
  }

  // A blurred intensity in the measurement's units: counts peak h*x +
  // background in Poisson mode, as it is otherwise.
  static fk::Tensor as_measured(const Deconvolution3dConfig& c, const fk::Tensor& blurred) {
    if (!c.poisson) return blurred;
    std::vector<double> v = blurred.to_vector<double>();
    for (double& x : v) x = c.peak_counts * x + c.background_counts;
    return fk::from_vector(v, blurred.shape());
  }

  // x <- x A^T(y / A x) / A^T 1 from a flat start (data clamped at 0).
  static void richardson_lucy(const FFTConvolution& A, const fk::Tensor& data, int64_t iters,
                              RunOutput& out) {
    fk::autograd::NoGradGuard ng;
    std::vector<double> y = data.to_vector<double>();
    double mean = 0;
    for (double& v : y) mean += v = std::max(v, 0.0);
    mean /= static_cast<double>(y.size());
    const fk::Dims& s = data.shape();
    const fk::Tensor yt = fk::from_vector(y, s);
    fk::Tensor x = fk::full(s, std::max(mean, 1e-6), {fk::DType::F64});
    const fk::Tensor norm = A.vjp(x, fk::full(s, 1.0, {fk::DType::F64}));
    for (int64_t it = 0; it < iters; ++it) {
      const fk::Tensor ratio =
          fk::div(yt, fk::maximum(A.apply(x), fk::full(s, 1e-8, {fk::DType::F64})));
      x = fk::div(fk::mul(x, A.vjp(x, ratio)), norm);
    }
    out.reconstruction = x;
    out.result.fields["x"] = x;
    out.result.prediction = A.apply(x);
  }

  // Scene point-sampled on the finer grid -> separable direct blur -> area
  // average -> noise (Gaussian, or photon counts whose noise_std is the rms
  // count noise sqrt(mean(peak clean + background))); the truth is the fine
  // render area-averaged to n.
  static std::pair<Measurement, fk::Tensor> measure(const Deconvolution3dConfig& c, uint64_t seed) {
    const int64_t f = c.supersample;
    const std::array<int64_t, 3> fine{c.n * f, c.n * f, c.n_z * f};
    const auto e = c.extent();
    const deconv3d::Point box{e[0], e[1], e[2]};
    NumpyRng rng(seed);
    const deconv3d::Scene scene = deconv3d::draw_scene(c.scene, box, rng);
    const auto img = deconv3d::render(scene, fine, box);
    const deconv3d::Point h{c.pixel / f, c.pixel / f, c.z_step / f};
    const deconv3d::Point sg{c.sigma_xy, c.sigma_xy, c.axial_ratio * c.sigma_xy};
    const fk::Dims fd{fine[0], fine[1], fine[2]};
    const auto clean = area_resample(deconv3d::gaussian_blur(img, fine, h, sg), fd, c.shape());
    double mx = 0, mean = 0;
    for (double v : clean) mx = std::max(mx, v), mean += std::max(v, 0.0);
    mean /= static_cast<double>(clean.size());
    Measurement m;
    std::vector<double> y(clean);
    if (c.poisson) {
      y = deconv3d::poisson_counts(clean, c.peak_counts, c.background_counts, seed * 7919 + 59);
      m.noise_std = std::sqrt(c.peak_counts * mean + c.background_counts);
    } else {
      // One standard normal per voxel in C order from the stream the scene
      // was drawn from, as the reference's generator draws them.
      m.noise_std = c.noise_std * mx;
      for (double& v : y) v += m.noise_std * rng.standard_normal();
    }
    m.data = fk::from_vector(y, c.shape()).to(fk::DType::F32);
    return {m, fk::from_vector(area_resample(img, fd, c.shape()), c.shape())};
  }
};

}  // namespace

const char* deconvolution3d_data_tag() {
  return kDeconv3dDataTag;
}
InstancePtr make_deconvolution3d() {
  return std::make_shared<Deconvolution3d>();
}

}  // namespace nefi
