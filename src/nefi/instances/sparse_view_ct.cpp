// sparse_view_ct: a 2-D attenuation image mu in [0, 1] from few parallel-beam
// projections over angle_range (180 degrees: full; less: limited-angle CT),
// with Gaussian noise of noise_std * max(sinogram). Data: exact line
// integrals of analytic ellipse / Gaussian scenes averaged across each
// detector bin (sparse_view_ct_data.h); inversion: RadonOperator
// (operators/radon.h) at each stage's grid. Scenes: shepp | blobs |
// piecewise. Methods: neural | grid (+TV) | fbp (Kak-Slaney ramp) |
// deep_decoder (baselines/deep_decoder.h).
#include <algorithm>
#include <cmath>

#include "fk/error.h"
#include "fk/factory.h"
#include "nefi/baselines/deep_decoder.h"
#include "nefi/baselines/fbp.h"
#include "nefi/field/grid_field.h"
#include "nefi/field/neural_field.h"
#include "nefi/instances/datagen.h"
#include "nefi/instances/instance.h"
#include "nefi/instances/radon_keys.h"
#include "nefi/instances/regularizer_keys.h"
#include "nefi/instances/run_method.h"
#include "nefi/instances/sparse_view_ct_data.h"
#include "nefi/losses/data_losses.h"
#include "nefi/losses/regularizers.h"
#include "nefi/operators/radon.h"
#include "nefi/solve/metrics.h"

namespace nefi {
namespace {

constexpr const char* kCtDataTag = "radon-analytic-rays-float64";

struct SparseViewCtConfig {
  int64_t n = 0, rays_per_bin = 0;
  double extent = 0, noise_std = 0;
  RadonGeometry geometry;
  std::string scene;
  double init_value = 0;
  bool fbp_clip = true;
  NeuralFieldConfig field;
  Curriculum neural_curriculum, grid_curriculum, dd_curriculum;
  TVOptions tv;
  double tv_weight = 0, l1 = 0;

  static SparseViewCtConfig from(const Params& p) {
    SparseViewCtConfig c;
    c.n = p.i("n");
    FK_CHECK(c.n >= 8, "config key 'n'", "a grid size >= 8", fk::to_text(c.n));
    c.extent = p.d("extent");
    FK_CHECK(c.extent > 0 && std::isfinite(c.extent), "config key 'extent'", "a finite length > 0",
             fk::to_text(c.extent));
    c.geometry = radon_geometry_from(p);
    const int64_t ss = p.i("supersample"), dd = p.i("data_det_per_pixel");
    FK_CHECK(ss >= 1 && ss <= 16, "config key 'supersample'", "a refinement in [1, 16]",
             fk::to_text(ss));
    FK_CHECK(dd >= 1 && dd <= 16, "config key 'data_det_per_pixel'", "an integer in [1, 16]",
             fk::to_text(dd));
    c.rays_per_bin = ss * dd;
    c.noise_std = noise_std_key(p);
    c.scene = p.choice("scene", {"shepp", "blobs", "piecewise"});
    c.init_value = p.d("init_value");
    FK_CHECK(c.init_value > 0 && c.init_value < 1, "config key 'init_value'",
             "a value in (0, 1) (bounded head)", fk::to_text(c.init_value));
    c.fbp_clip = p.b("fbp_clip");
    c.field = neural_field_config_from(p);
    c.neural_curriculum = curriculum_from(p, {c.n, c.n}, "lr");
    c.grid_curriculum = curriculum_from(p, {c.n, c.n}, "grid_lr");
    c.dd_curriculum = curriculum_from(p, {c.n, c.n}, "dd_lr");
    check_deep_decoder_keys(p);
    c.tv = tv_options_from(p);
    c.tv_weight = weight_key(p, "tv");
    c.l1 = weight_key(p, "l1");
    return c;
  }
};

class SparseViewCt : public Instance {
 public:
  std::string name() const override { return "sparse_view_ct"; }
  std::string data_tag(const Params&) const override { return sparse_view_ct_data_tag(); }
  std::string summary() const override {
    return "2-D sparse-view parallel-beam CT (Radon by bilinear rotation; FBP baseline)";
  }
  std::vector<std::string> methods() const override {
    return {"neural", "grid", "fbp", "deep_decoder"};
  }
  std::vector<std::string> scenes() const override { return {"shepp", "blobs", "piecewise"}; }

  DataLabels data_labels(const Params& p) const override {
    return {{"attenuation", "μ", "a.u."},
            square_axes(static_cast<double>(p.i("n")), "px"),
            {"line integral", "∫μ dl", "a.u."},
            radon_sinogram_axes(p, p.i("n"), false)};
  }

  Params default_config() const override {
    Params p;
    p.declare("n", int64_t{64}, "grid cells per axis");
    p.declare("extent", 1.0, "physical side length L");
    declare_radon_keys(p, 20);
    p.declare("noise_std", 0.01, "noise std relative to the sinogram maximum");
    p.declare("supersample", int64_t{2}, "data: exact rays per bin = supersample x data_det");
    p.declare("data_det_per_pixel", int64_t{2}, "data: detector sub-bins per pixel");
    p.declare("scene", std::string("shepp"), "shepp | blobs | piecewise");
    p.declare("init_value", 0.1, "bounded(0, 1) head initial value");
    p.declare("tv", 1e-5, "TV weight");
    p.declare("tv_eps", 1e-3, "TV smoothing");
    p.declare("l1", 0.0, "L1 weight");
    p.declare("hidden", int64_t{128}, "MLP width");
    p.declare("depth", int64_t{4}, "MLP hidden layers");
    p.declare("skip_at", int64_t{2}, "layer that sees the encoding again (0: none)");
    p.declare("activation", std::string("tanh"), "tanh | relu | gelu | silu | softplus | sine");
    p.declare("n_octaves", int64_t{7}, "Fourier feature octaves");
    p.declare("out_init_scale", 0.1, "output-layer weight scale");
    p.declare("autocast", std::string("none"), "MLP trunk precision: none | bf16 | fp16");
    declare_curriculum_keys(p, {400, 800}, 1e-2);
    p.declare("grid_lr", 5e-2, "learning rate of the grid baseline");
    declare_deep_decoder_keys(p, 64, 5, 5e-3);
    p.declare("fbp_clip", true, "clip the FBP image to [0, 1]");
    return p;
  }

  std::pair<Measurement, fk::Tensor> make_measurement(const Params& p,
                                                      uint64_t seed) const override {
    return measure(SparseViewCtConfig::from(p), seed);
  }

  RunOutput run(const Params& p, const std::string& method, uint64_t seed,
                const SolverOptions& so) const override {
    MethodRunners runners;
    runners.direct["fbp"] = [&p](const Measurement& meas, RunOutput& out) {
      const SparseViewCtConfig c = SparseViewCtConfig::from(p);
      run_fbp(c, RadonOperator(domain_of(c), c.geometry), meas, out);
    };
    return run_method(*this, p, method, seed, so, runners);
  }

  std::optional<ProblemSetup> setup_from(const Params& p, const std::string& method, uint64_t seed,
                                         const Measurement* measured) const override {
    if (method == "fbp") return std::nullopt;
    const SparseViewCtConfig c = SparseViewCtConfig::from(p);
    auto [meas, gt] = measured_or(measure(c, seed), measured);
    const Domain domain = domain_of(c);
    ProblemSetup s{
        field_problem("sparse_view_ct", domain, std::make_shared<RadonOperator>(domain, c.geometry),
                      meas, {bounded_head("x", 0.0, 1.0, c.init_value)}, method, c.field, seed),
        method == "neural" ? c.neural_curriculum
        : method == "grid" ? c.grid_curriculum
                           : c.dd_curriculum,
        meas, gt};
    if (method == "deep_decoder")
      s.problem.field = deep_decoder_field(p, bounded_head("x", 0.0, 1.0, c.init_value), 2, seed);
    s.problem.losses.add(mse_loss(), 1.0);
    s.problem.losses.add(tv_loss("x", c.tv), c.tv_weight);
    s.problem.losses.add(l1_loss("x"), c.l1);
    return s;
  }

  std::map<std::string, double> evaluate(const Params& p, const RunOutput& out) const override {
    (void)p;
    return {{"psnr", psnr(out.reconstruction, out.gt)},
            {"ssim", ssim(out.reconstruction, out.gt)},
            {"mse", mse(out.reconstruction, out.gt)}};
  }

 private:
  static Domain domain_of(const SparseViewCtConfig& c) {
    return Domain({c.n, c.n}, {c.extent, c.extent});
  }

  static void run_fbp(const SparseViewCtConfig& c, const RadonOperator& radon,
                      const Measurement& meas, RunOutput& out) {
    std::vector<double> x =
        filtered_back_projection(meas.data.to_vector<double>(), c.geometry.n_views, radon.n_det(),
                                 c.geometry.angle_range, c.n, c.extent);
    if (c.fbp_clip)
      for (double& v : x) v = std::clamp(v, 0.0, 1.0);
    out.reconstruction = fk::from_vector(x, {c.n, c.n});
    out.result.fields["x"] = out.reconstruction;
    out.result.prediction = radon.apply(out.reconstruction);
  }

  // Exact line integrals averaged over each detector bin -> noise; the truth
  // is the scene's cell averages at n.
  static std::pair<Measurement, fk::Tensor> measure(const SparseViewCtConfig& c, uint64_t seed) {
    const ct::Scene sc = ct::draw_scene(c.scene, c.extent, seed);
    const int64_t nd = c.n * c.geometry.det_per_pixel;
    std::vector<double> y =
        ct::sinogram(sc, c.geometry.n_views, c.geometry.angle_range, nd, c.rays_per_bin, c.extent);
    double mx = 0;
    for (double v : y) mx = std::max(mx, std::abs(v));
    Measurement m;
    m.noise_std = c.noise_std * mx;
    datagen::Rng rng(seed * 7919 + 41);
    for (double& v : y) v += m.noise_std * rng.normal();
    m.data = fk::from_vector(y, {c.geometry.n_views, nd}).to(fk::DType::F32);
    return {m, fk::from_vector(ct::render(sc, c.n, 4, c.extent), {c.n, c.n})};
  }
};

}  // namespace

const char* sparse_view_ct_data_tag() {
  return kCtDataTag;
}
InstancePtr make_sparse_view_ct() {
  return std::make_shared<SparseViewCt>();
}

}  // namespace nefi
