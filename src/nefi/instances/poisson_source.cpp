// poisson_source: the source f >= 0 of -kappa Laplace(u) = f on [0, L]^2
// with u = 0 on the boundary, from u observed on a random fraction of the
// cells, on a boundary strip, or everywhere, with Gaussian noise of
// noise_std * max|u|. Data: a 5-point FD solve on a finer f64 grid by CG
// (poisson_source_data.h); inversion: the DST spectral solve
// (operators/poisson_dst.h) at each stage's grid. Scenes: blobs | points |
// smooth. Methods: neural | grid (+TV) | deep_decoder
// (baselines/deep_decoder.h). Metrics: psnr, mse,
// relative_error, and sources_found (sources whose centre cell reaches half
// its true value) of n_sources.
#include <algorithm>
#include <cmath>

#include "fk/error.h"
#include "fk/factory.h"
#include "nefi/baselines/deep_decoder.h"
#include "nefi/field/grid_field.h"
#include "nefi/field/neural_field.h"
#include "nefi/instances/datagen.h"
#include "nefi/instances/instance.h"
#include "nefi/instances/poisson_source_data.h"
#include "nefi/instances/regularizer_keys.h"
#include "nefi/instances/run_method.h"
#include "nefi/losses/data_losses.h"
#include "nefi/losses/regularizers.h"
#include "nefi/operators/poisson_dst.h"
#include "nefi/resample.h"
#include "nefi/solve/metrics.h"

namespace nefi {
namespace {

constexpr const char* kPoissonDataTag = "poisson-fd-2x-float64-cg";

struct PoissonSourceConfig {
  int64_t n = 0, supersample = 0, boundary_width = 0;
  double extent = 0, kappa = 0, obs_fraction = 0, noise_std = 0, point_cells = 0;
  std::string scene, obs;
  PoissonSpectrum spectrum = PoissonSpectrum::kContinuous;
  double init_value = 0;
  bool relative_loss = true;
  NeuralFieldConfig field;
  Curriculum neural_curriculum, grid_curriculum, dd_curriculum;
  TVOptions tv;
  double tv_weight = 0, l1 = 0;

  static PoissonSourceConfig from(const Params& p) {
    PoissonSourceConfig c;
    c.n = p.i("n");
    FK_CHECK(c.n >= 8, "config key 'n'", "a grid size >= 8", fk::to_text(c.n));
    c.supersample = p.i("supersample");
    FK_CHECK(c.supersample >= 1 && c.supersample <= 16, "config key 'supersample'",
             "a refinement in [1, 16]", fk::to_text(c.supersample));
    c.extent = p.d("extent");
    FK_CHECK(c.extent > 0, "config key 'extent'", "a length > 0", fk::to_text(c.extent));
    c.kappa = p.d("kappa");
    FK_CHECK(c.kappa > 0, "config key 'kappa'", "a conductivity > 0", fk::to_text(c.kappa));
    c.spectrum = p.choice("spectrum", {"continuous", "fd"}) == "fd"
                     ? PoissonSpectrum::kFiniteDifference
                     : PoissonSpectrum::kContinuous;
    c.obs = p.choice("obs", {"random", "boundary", "full"});
    c.obs_fraction = p.d("obs_fraction");
    FK_CHECK(c.obs_fraction > 0 && c.obs_fraction <= 1, "config key 'obs_fraction'",
             "a fraction in (0, 1]", fk::to_text(c.obs_fraction));
    c.boundary_width = p.i("boundary_width");
    FK_CHECK(c.boundary_width >= 1 && 2 * c.boundary_width <= c.n, "config key 'boundary_width'",
             "cells in [1, n/2]", fk::to_text(c.boundary_width));
    c.noise_std = noise_std_key(p);
    c.scene = p.choice("scene", {"blobs", "points", "smooth"});
    c.point_cells = p.d("point_cells");
    FK_CHECK(c.point_cells > 0, "config key 'point_cells'", "> 0", fk::to_text(c.point_cells));
    c.init_value = p.d("init_value");
    FK_CHECK(c.init_value > 0, "config key 'init_value'", "> 0 (softplus head)",
             fk::to_text(c.init_value));
    c.relative_loss = p.choice("data_loss", {"relative_mse", "mse"}) == "relative_mse";
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

class PoissonSource : public Instance {
 public:
  std::string name() const override { return "poisson_source"; }
  std::string data_tag(const Params&) const override { return poisson_source_data_tag(); }
  std::string summary() const override {
    return "2-D Poisson source recovery from sparse potential samples (DST spectral solve)";
  }
  std::vector<std::string> methods() const override { return {"neural", "grid", "deep_decoder"}; }
  std::vector<std::string> scenes() const override { return {"blobs", "points", "smooth"}; }

  DataLabels data_labels(const Params& p) const override {
    const std::vector<DataAxis> yx = square_axes(static_cast<double>(p.i("n")), "px");
    return {{"source", "f", "a.u."}, yx, {"potential", "u", "a.u."}, yx};
  }

  Params default_config() const override {
    Params p;
    p.declare("n", int64_t{64}, "grid cells per axis");
    p.declare("extent", 1.0, "physical side length L");
    p.declare("kappa", 1.0, "conductivity");
    p.declare("spectrum", std::string("continuous"), "continuous | fd (inversion eigenvalues)");
    p.declare("obs", std::string("random"), "random | boundary | full");
    p.declare("obs_fraction", 0.1, "observed fraction of cells (obs random)");
    p.declare("boundary_width", int64_t{3}, "strip width in cells (obs boundary)");
    p.declare("noise_std", 0.01, "noise std relative to max|u|");
    p.declare("supersample", int64_t{2}, "data grid refinement (f64)");
    p.declare("scene", std::string("blobs"), "blobs | points | smooth");
    p.declare("point_cells", 0.7, "point-source std in native cells");
    p.declare("init_value", 0.05, "softplus head initial value");
    p.declare("data_loss", std::string("relative_mse"), "relative_mse | mse");
    p.declare("tv", 1e-4, "TV weight");
    p.declare("tv_eps", 1e-3, "TV smoothing");
    p.declare("l1", 1e-3, "L1 weight");
    p.declare("hidden", int64_t{128}, "MLP width");
    p.declare("depth", int64_t{4}, "MLP hidden layers");
    p.declare("skip_at", int64_t{2}, "layer that sees the encoding again (0: none)");
    p.declare("activation", std::string("tanh"), "tanh | relu | gelu | silu | softplus | sine");
    p.declare("n_octaves", int64_t{6}, "Fourier feature octaves");
    p.declare("out_init_scale", 0.1, "output-layer weight scale");
    p.declare("autocast", std::string("none"), "MLP trunk precision: none | bf16 | fp16");
    declare_curriculum_keys(p, {1000, 2000}, 1e-2);
    p.declare("grid_lr", 5e-2, "learning rate of the grid baseline");
    declare_deep_decoder_keys(p, 64, 5, 5e-3);
    return p;
  }

  std::pair<Measurement, fk::Tensor> make_measurement(const Params& p,
                                                      uint64_t seed) const override {
    return measure(PoissonSourceConfig::from(p), seed);
  }

  std::optional<ProblemSetup> setup_from(const Params& p, const std::string& method, uint64_t seed,
                                         const Measurement* measured) const override {
    if (method != "neural" && method != "grid" && method != "deep_decoder") return std::nullopt;
    const PoissonSourceConfig c = PoissonSourceConfig::from(p);
    auto [meas, gt] = measured_or(measure(c, seed), measured);
    const Domain domain({c.n, c.n}, {c.extent, c.extent});
    ProblemSetup s{field_problem("poisson_source", domain,
                                 std::make_shared<PoissonOperator>(domain, c.spectrum, c.kappa),
                                 meas, {softplus_head("x", c.init_value)}, method, c.field, seed),
                   method == "neural" ? c.neural_curriculum
                   : method == "grid" ? c.grid_curriculum
                                      : c.dd_curriculum,
                   meas, gt};
    if (method == "deep_decoder")
      s.problem.field = deep_decoder_field(p, softplus_head("x", c.init_value), 2, seed);
    s.problem.losses.add(c.relative_loss ? relative_mse_loss() : mse_loss(), 1.0);
    s.problem.losses.add(tv_loss("x", c.tv), c.tv_weight);
    s.problem.losses.add(l1_loss("x"), c.l1);
    return s;
  }

  RunOutput run(const Params& p, const std::string& method, uint64_t seed,
                const SolverOptions& so) const override {
    return run_method(*this, p, method, seed, so);
  }

  // The field metrics and, for point scenes, the sources found (the scene
  // redrawn from out.seed).
  std::map<std::string, double> evaluate(const Params& p, const RunOutput& out) const override {
    std::map<std::string, double> m{{"psnr", psnr(out.reconstruction, out.gt)},
                                    {"mse", mse(out.reconstruction, out.gt)},
                                    {"relative_error", relative_error(out.reconstruction, out.gt)}};
    count_sources(PoissonSourceConfig::from(p), out, m);
    return m;
  }

 private:
  // A source counts as found when the reconstruction at its centre cell
  // reaches half of the truth there.
  static void count_sources(const PoissonSourceConfig& c, const RunOutput& out,
                            std::map<std::string, double>& m) {
    if (c.scene == "smooth") return;
    const auto src = poisson::draw_sources(c.scene, c.n, c.extent, c.point_cells, out.seed);
    const auto x = out.reconstruction.to_vector<double>(), g = out.gt.to_vector<double>();
    int found = 0;
    for (const poisson::Source& s : src) {
      const auto cell = [&](double v) {
        return std::clamp<int64_t>(static_cast<int64_t>(v / c.extent * c.n), 0, c.n - 1);
      };
      const int64_t at = cell(s.cx) * c.n + cell(s.cy);
      found += x[at] >= 0.5 * g[at];
    }
    m["sources_found"] = found;
    m["n_sources"] = static_cast<double>(src.size());
  }

  // Sources on the finer f64 grid -> FD solve by CG -> area average ->
  // mask and noise; the truth is the sources' cell averages at n.
  static std::pair<Measurement, fk::Tensor> measure(const PoissonSourceConfig& c, uint64_t seed) {
    const int64_t n = c.n, nf = n * c.supersample;
    const double L = c.extent;
    const auto src = poisson::draw_sources(c.scene, n, L, c.point_cells, seed);
    const int64_t sub = std::max<int64_t>(1, 4 / c.supersample);  // >= 4 samples per native cell
    const auto f_fine = poisson::render_sources(src, nf, sub, L);
    const auto u_fine = poisson::solve_dirichlet_fd(f_fine, nf, L / nf, c.kappa);
    const fk::Dims coarse{n, n};
    const auto clean = area_resample(u_fine, {nf, nf}, coarse);
    double mx = 0;
    for (double v : clean) mx = std::max(mx, std::abs(v));
    datagen::Rng rng(seed * 7919 + 31);
    std::vector<double> mask(n * n, 1.0), y(clean);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) {
        const int64_t edge = std::min({i, j, n - 1 - i, n - 1 - j});
        if (c.obs == "random") mask[i * n + j] = rng.uniform() < c.obs_fraction ? 1.0 : 0.0;
        if (c.obs == "boundary") mask[i * n + j] = edge < c.boundary_width ? 1.0 : 0.0;
      }
    // A fraction too small for the grid draws no observed cell: named here,
    // not as the solver's all-zero mask.
    FK_CHECK(c.obs != "random" || std::find(mask.begin(), mask.end(), 1.0) != mask.end(),
             "config key 'obs_fraction'",
             "a fraction that observes some of the " + fk::to_text(n * n) + " cells (seed " +
                 fk::to_text(seed) + " drew none)",
             Params::render(c.obs_fraction));
    Measurement m;
    m.noise_std = c.noise_std * mx;
    for (double& v : y) v += m.noise_std * rng.normal();
    m.data = fk::from_vector(y, coarse).to(fk::DType::F32);
    if (c.obs != "full") m.mask = fk::from_vector(mask, coarse).to(fk::DType::F32);
    const auto gt = poisson::render_sources(src, n, 4, L);
    return {m, fk::from_vector(gt, coarse)};
  }
};

}  // namespace

const char* poisson_source_data_tag() {
  return kPoissonDataTag;
}
InstancePtr make_poisson_source() {
  return std::make_shared<PoissonSource>();
}

}  // namespace nefi
