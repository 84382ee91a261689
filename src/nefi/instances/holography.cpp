// holography: the phase phi of a thin object t = exp(i phi - absorption)
// from inline holograms I_d = |P_{z_d} t|^2 at several distances (plane-wave
// illumination, angular-spectrum propagation), with Gaussian noise of
// noise_std * max(I). The global phase is invisible: phantoms are zero-mean,
// the head is ZeroMean(Bounded(-bound, bound)) and the metrics compare
// mean-subtracted phases. Data: the phase point-sampled on a finer f64 grid,
// propagated there and the intensities area-averaged onto the pixels (the
// same propagation code at another discretisation; tag
// angular-spectrum-2x-float64). Scenes: smooth_phase | cells. Methods:
// neural | grid | gerchberg_saxton (multi-plane).
#include <algorithm>
#include <cmath>
#include <numbers>

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
#include "nefi/operators/angular_spectrum.h"
#include "nefi/resample.h"
#include "nefi/solve/metrics.h"

namespace nefi {
namespace {

constexpr const char* kHoloDataTag = "angular-spectrum-2x-float64";

struct HolographyConfig {
  int64_t n = 0, supersample = 0, gs_iterations = 0;
  bool gs_sequential = true;  // else the planes' estimates averaged
  double pixel = 0, phase_amplitude = 0, noise_std = 0, phase_bound = 0;
  std::vector<double> distances;
  PropagationOptions prop;
  double absorption = 0;
  std::string scene;
  NeuralFieldConfig field;
  Curriculum neural_curriculum, grid_curriculum;
  TVOptions tv;
  double tv_weight = 0;

  static HolographyConfig from(const Params& p) {
    HolographyConfig c;
    c.n = p.i("n");
    FK_CHECK(c.n >= 8 && c.n <= 4096, "config key 'n'", "a grid size in [8, 4096]",
             fk::to_text(c.n));
    c.supersample = p.i("supersample");
    FK_CHECK(c.supersample >= 1 && c.supersample <= 4, "config key 'supersample'",
             "a refinement in [1, 4]", fk::to_text(c.supersample));
    c.pixel = p.d("pixel");
    FK_CHECK(c.pixel > 0 && std::isfinite(c.pixel), "config key 'pixel'", "a finite size > 0 (um)",
             fk::to_text(c.pixel));
    c.prop.wavelength = p.d("wavelength");
    FK_CHECK(c.prop.wavelength > 0 && std::isfinite(c.prop.wavelength), "config key 'wavelength'",
             "a finite wavelength > 0 (um)", fk::to_text(c.prop.wavelength));
    c.distances = p.list("distances");
    FK_CHECK(!c.distances.empty(), "config key 'distances'", "at least one distance", "[]");
    for (double z : c.distances)
      FK_CHECK(z > 0 && std::isfinite(z), "config key 'distances'", "finite distances > 0 (um)",
               Params::render(c.distances));
    c.prop.pad_factor = p.i("pad_factor");
    FK_CHECK(c.prop.pad_factor >= 1 && c.prop.pad_factor <= 8, "config key 'pad_factor'",
             "an integer in [1, 8]", fk::to_text(c.prop.pad_factor));
    c.prop.edge_pad = p.choice("pad_mode", {"edge", "zero"}) == "edge";
    c.prop.band_limit = p.b("band_limit");
    c.absorption = p.d("absorption");
    FK_CHECK(c.absorption >= 0, "config key 'absorption'", ">= 0", fk::to_text(c.absorption));
    c.phase_amplitude = p.d("phase_amplitude");
    FK_CHECK(c.phase_amplitude > 0, "config key 'phase_amplitude'", "> 0 (rad)",
             fk::to_text(c.phase_amplitude));
    c.phase_bound = p.d("phase_bound");
    FK_CHECK(c.phase_bound > 0, "config key 'phase_bound'", "> 0 (rad)",
             fk::to_text(c.phase_bound));
    // A phantom past the head's bound cannot be reconstructed (4 rad under pi was taken).
    FK_CHECK(c.phase_amplitude < c.phase_bound, "config key 'phase_amplitude'",
             "a peak below phase_bound (" + fk::to_text(c.phase_bound) + " rad)",
             fk::to_text(c.phase_amplitude));
    c.noise_std = noise_std_key(p);
    c.gs_iterations = p.i("gs_iterations");
    c.gs_sequential = p.choice("gs_variant", {"sequential", "averaged"}) == "sequential";
    FK_CHECK(c.gs_iterations >= 1 && c.gs_iterations <= 100000, "config key 'gs_iterations'",
             "an iteration count in [1, 100000]", fk::to_text(c.gs_iterations));
    c.scene = p.choice("scene", {"smooth_phase", "cells"});
    c.field = neural_field_config_from(p);
    c.neural_curriculum = curriculum_from(p, {c.n, c.n}, "lr");
    c.grid_curriculum = scaled_curriculum_from(p, {c.n, c.n}, "lr", "grid_lr_mult");
    c.tv = tv_options_from(p);
    c.tv_weight = weight_key(p, "tv");
    return c;
  }
};

// A phase scene point-sampled at the cell centres of an m x m grid of side L.
std::vector<double> phase_scene(const HolographyConfig& c, int64_t m, uint64_t seed) {
  NumpyRng rng(seed);
  const double L = c.n * c.pixel;
  struct Part {
    double amp, c0, c1, r;
  };
  std::vector<Part> parts;
  const bool cells = c.scene == "cells";
  for (int64_t k = cells ? rng.integers(3, 7) : rng.integers(3, 6); k > 0; --k) {
    const double c0 = rng.uniform(0.2, 0.8) * L, c1 = rng.uniform(0.2, 0.8) * L;
    const double r = cells ? rng.uniform(0.06, 0.14) * L : rng.uniform(0.1, 0.25) * L;
    const double amp = cells ? rng.uniform(0.3, 1.0) : rng.uniform(-1.0, 1.0);
    parts.push_back({amp, c0, c1, r});
  }
  std::vector<double> v(m * m, 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < m; ++j) {
      const double x0 = (i + 0.5) * L / m, x1 = (j + 0.5) * L / m;
      for (const Part& q : parts) {
        const double d = std::hypot(x0 - q.c0, x1 - q.c1);
        // Cells: flat disks with a soft edge one pixel wide; smooth: Gaussians.
        v[i * m + j] += q.amp * (cells ? 0.5 * (1 - std::tanh((d - q.r) / c.pixel))
                                       : std::exp(-0.5 * d * d / (q.r * q.r)));
      }
    }
  double mx = 0;
  for (double x : v) mx = std::max(mx, std::abs(x));
  for (double& x : v) x *= c.phase_amplitude / std::max(mx, 1e-12);
  return v;
}

void subtract_mean(std::vector<double>& v) {
  double m = 0;
  for (double x : v) m += x;
  m /= static_cast<double>(v.size());
  for (double& x : v) x -= m;
}

fk::Tensor centred(const fk::Tensor& x) {
  auto v = x.to_vector<double>();
  subtract_mean(v);
  return fk::from_vector(v, x.shape());
}

class Holography : public Instance {
 public:
  std::string name() const override { return "holography"; }
  std::string data_tag(const Params&) const override { return holography_data_tag(); }
  std::string summary() const override {
    return "multi-distance inline holography: phase retrieval (angular spectrum)";
  }
  std::vector<std::string> methods() const override {
    return {"neural", "grid", "gerchberg_saxton"};
  }
  std::vector<std::string> scenes() const override { return {"smooth_phase", "cells"}; }

  DataLabels data_labels(const Params& p) const override {
    const std::vector<DataAxis> yx =
        square_axes(static_cast<double>(p.i("n")) * p.d("pixel"), "µm");
    return {{"phase", "φ", "rad"},
            yx,
            {"intensity", "I/I₀", "dimensionless"},
            joined({frames_axis("propagation distance", "z = ", p.list("distances"), "µm")}, yx)};
  }

  Params default_config() const override {
    Params p;
    p.declare("n", int64_t{32}, "grid cells per axis");
    p.declare("pixel", 1.0, "pixel size (um)");
    p.declare("wavelength", 0.5, "wavelength (um)");
    p.declare("distances", std::vector<double>{10, 25, 50}, "propagation distances (um)");
    p.declare("scene", std::string("smooth_phase"), "smooth_phase | cells");
    p.declare("phase_amplitude", 1.0, "peak |phase| of the phantom (rad)");
    p.declare("absorption", 0.0, "uniform absorption a in exp(i phi - a)");
    p.declare("noise_std", 0.01, "noise std relative to the intensity maximum");
    p.declare("supersample", int64_t{2}, "data grid refinement (f64)");
    p.declare("pad_factor", int64_t{2}, "propagation padding factor");
    p.declare("pad_mode", std::string("edge"), "edge | zero");
    p.declare("band_limit", true, "Matsushima-Shimobaba band limit");
    p.declare("phase_bound", std::numbers::pi, "head bound |phi| <= bound");
    p.declare("tv", 1e-4, "TV weight");
    p.declare("tv_eps", 1e-3, "TV smoothing");
    p.declare("hidden", int64_t{64}, "MLP width");
    p.declare("depth", int64_t{4}, "MLP hidden layers");
    p.declare("skip_at", int64_t{2}, "layer that sees the encoding again (0: none)");
    p.declare("activation", std::string("tanh"), "tanh | relu | gelu | silu | softplus | sine");
    p.declare("n_octaves", int64_t{6}, "Fourier feature octaves");
    p.declare("out_init_scale", 0.1, "output-layer weight scale");
    p.declare("autocast", std::string("none"), "MLP trunk precision: none | bf16 | fp16");
    declare_curriculum_keys(p, {150, 250}, 1e-2);
    p.declare("grid_lr_mult", 10.0, "grid baseline lr = lr x this");
    p.declare("gs_iterations", int64_t{100}, "Gerchberg-Saxton iterations");
    p.declare("gs_variant", std::string("sequential"),
              "Gerchberg-Saxton over the planes: sequential (the object constraint after each "
              "plane) | averaged (after each sweep, of the planes' estimates)");
    return p;
  }

  std::pair<Measurement, fk::Tensor> make_measurement(const Params& p,
                                                      uint64_t seed) const override {
    return measure(HolographyConfig::from(p), seed);
  }

  RunOutput run(const Params& p, const std::string& method, uint64_t seed,
                const SolverOptions& so) const override {
    MethodRunners runners;
    runners.direct["gerchberg_saxton"] = [&p](const Measurement& meas, RunOutput& out) {
      const HolographyConfig c = HolographyConfig::from(p);
      gerchberg_saxton(c, *operator_of(c), meas, out);
    };
    return run_method(*this, p, method, seed, so, runners);
  }

  std::optional<ProblemSetup> setup_from(const Params& p, const std::string& method, uint64_t seed,
                                         const Measurement* measured) const override {
    if (method != "neural" && method != "grid") return std::nullopt;
    const HolographyConfig c = HolographyConfig::from(p);
    auto [meas, gt] = measured_or(measure(c, seed), measured);
    std::shared_ptr<HolographyOperator> op = operator_of(c);
    const Domain domain = op->domain();
    ProblemSetup s{
        field_problem("holography", domain, std::move(op), meas,
                      {zero_mean_head(bounded_head("x", -c.phase_bound, c.phase_bound, 0.0))},
                      method, c.field, seed),
        method == "neural" ? c.neural_curriculum : c.grid_curriculum, meas, gt};
    s.problem.losses.add(mse_loss(), 1.0);
    s.problem.losses.add(tv_loss("x", c.tv), c.tv_weight);
    return s;
  }

  // The phase is known up to a constant: both sides are compared centred.
  std::map<std::string, double> evaluate(const Params& p, const RunOutput& out) const override {
    (void)p;
    const fk::Tensor x = centred(out.reconstruction), g = centred(out.gt);
    return {{"psnr", psnr(x, g)}, {"ssim", ssim(x, g)}, {"rmse", std::sqrt(mse(x, g))}};
  }

 private:
  static std::shared_ptr<HolographyOperator> operator_of(const HolographyConfig& c) {
    const Domain domain({c.n, c.n}, {c.n * c.pixel, c.n * c.pixel});
    return std::make_shared<HolographyOperator>(domain, c.distances, c.prop, c.absorption);
  }

  // Multi-plane Gerchberg-Saxton: at each plane keep the phase, impose the
  // measured amplitude, propagate back, and keep the object's modulus
  // exp(-absorption): after each plane (sequential, the classic multi-plane
  // form), or once per sweep on the planes' estimates averaged. Outside the
  // window the estimate is free: held to the operator's padding of the
  // window it scored better on the smoke (cells seed 0: 29.5 against 25.9
  // dB) but worse on the full preset (seed 0: 19.3 against 24.7).
  static void gerchberg_saxton(const HolographyConfig& c, const HolographyOperator& op,
                               const Measurement& meas, RunOutput& out) {
    const int64_t n = c.n, m = n * n, nd = static_cast<int64_t>(c.distances.size());
    const auto I = meas.data.to_vector<double>();
    const auto h = op.domain().spacing();
    const double mod = std::exp(-c.absorption);
    // The estimate lives on the operator's padded grid, propagated there
    // without padding (periodic on it, the operator's transfer function):
    // a round trip is then the identity, where padding and cropping at
    // every propagation drifted (more iterations scored worse). The
    // measured amplitude is imposed in the window only.
    const int64_t big = n * c.prop.pad_factor, off = (big - n) / 2;
    PropagationOptions periodic = c.prop;
    periodic.pad_factor = 1;
    auto window = [&](int64_t k) {  // the padded grid's index of window cell k
      return (k / n + off) * big + (k % n + off);
    };
    Field2 t(big * big, mod);
    Field2 acc;
    for (int64_t it = 0; it < c.gs_iterations; ++it) {
      if (!c.gs_sequential) acc.assign(big * big, 0.0);
      for (int64_t d = 0; d < nd; ++d) {
        Field2 u = propagate(t, 1, big, big, h, c.distances[d], periodic);
        for (int64_t k = 0; k < m; ++k) {
          std::complex<double>& v = u[window(k)];
          v = std::polar(std::sqrt(std::max(I[d * m + k], 0.0)), std::arg(v));
        }
        const Field2 back = propagate(u, 1, big, big, h, -c.distances[d], periodic);
        if (c.gs_sequential) {
          for (size_t k = 0; k < t.size(); ++k) t[k] = std::polar(mod, std::arg(back[k]));
        } else {
          for (size_t k = 0; k < t.size(); ++k) acc[k] += back[k];
        }
      }
      if (!c.gs_sequential)
        for (size_t k = 0; k < t.size(); ++k) t[k] = std::polar(mod, std::arg(acc[k]));
    }
    std::vector<double> phi(m);
    for (int64_t k = 0; k < m; ++k) phi[k] = std::arg(t[window(k)]);
    subtract_mean(phi);
    out.reconstruction = fk::from_vector(phi, {n, n});
    out.result.fields["x"] = out.reconstruction;
    out.result.prediction = op.apply(out.reconstruction);
  }

  // The phase on the finer grid -> propagation there -> intensities
  // area-averaged onto the pixels -> noise; the truth is the zero-mean
  // cell average of the fine phase.
  static std::pair<Measurement, fk::Tensor> measure(const HolographyConfig& c, uint64_t seed) {
    const int64_t n = c.n, nf = n * c.supersample, nd = static_cast<int64_t>(c.distances.size());
    std::vector<double> fine = phase_scene(c, nf, seed);
    subtract_mean(fine);
    Field2 t(nf * nf);
    for (int64_t k = 0; k < nf * nf; ++k) t[k] = std::polar(std::exp(-c.absorption), fine[k]);
    const std::vector<double> hf{c.pixel / c.supersample, c.pixel / c.supersample};
    std::vector<double> y;
    for (int64_t d = 0; d < nd; ++d) {
      const Field2 u = propagate(t, 1, nf, nf, hf, c.distances[d], c.prop);
      std::vector<double> I(u.size());
      for (size_t k = 0; k < u.size(); ++k) I[k] = std::norm(u[k]);
      const auto coarse = area_resample(I, {nf, nf}, {n, n});
      y.insert(y.end(), coarse.begin(), coarse.end());
    }
    double mx = 0;
    for (double v : y) mx = std::max(mx, v);
    Measurement m;
    m.noise_std = c.noise_std * mx;
    datagen::Rng rng(seed * 7919 + 61);
    for (double& v : y) v += m.noise_std * rng.normal();
    m.data = fk::from_vector(y, {nd, n, n}).to(fk::DType::F32);
    auto gt = area_resample(fine, {nf, nf}, {n, n});
    subtract_mean(gt);
    return {m, fk::from_vector(gt, {n, n})};
  }
};

}  // namespace

const char* holography_data_tag() {
  return kHoloDataTag;
}
InstancePtr make_holography() {
  return std::make_shared<Holography>();
}

}  // namespace nefi
