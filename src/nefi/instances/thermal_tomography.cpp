// thermal_tomography (NeFTY): recover a 3-D diffusivity α(x, y, z) ∈
// [α_min, α_max] of a slab from its front-surface temperatures after a
// flash. Data: the explicit substepped f64 simulator
// (thermal/explicit_simulator.h), which shares no code with the inversion's
// HeatOperator (implicit Euler, operators/heat/). Scenes: homogeneous or
// layered bulk with 1–4 low-diffusivity defects (thermal/scenes.h).
// Methods:
//   nefty  a neural field: Fourier features without the raw input, a relu
//          MLP with a skip, a bounded α head
//   grid   Grid Opt.: free voxels, same head, losses, adjoint and schedule
//   pinn_soft  the soft-constrained PINN (thermal/pinn_soft.h): the nefty
//          field plus a tanh temperature surrogate instead of the solver,
//          tied to the data, the PDE residual and the flash by fixed weights
//   tsr    thermographic signal reconstruction (thermal/tsr.h)
//   ppt    pulsed phase thermography (thermal/ppt.h)
// tsr and ppt are per-pixel heuristics without optimisation; their α volumes
// borrow the scene prior where they are blind (depth_volume.h).
// Losses: MSE on the surface frames + isotropic TV (lateral axes periodic,
// physical spacing, mean convention). Metrics: thermal/metrics.h plus the
// surface fit (surface_mse, surface_psnr, and surface_psnr_init of the
// uniform start α_init: the data-fit paradox).
// Defaults are the reference's paper config (configs/thermal_tomography_paper.yaml).
#include <algorithm>
#include <cmath>

#include "fk/error.h"
#include "fk/factory.h"
#include "nefi/field/grid_field.h"
#include "nefi/field/neural_field.h"
#include "nefi/instances/datagen.h"
#include "nefi/instances/instance.h"
#include "nefi/instances/run_method.h"
#include "nefi/instances/thermal/depth_volume.h"
#include "nefi/instances/thermal/explicit_simulator.h"
#include "nefi/instances/thermal/metrics.h"
#include "nefi/instances/thermal/pinn_soft.h"
#include "nefi/instances/thermal/ppt.h"
#include "nefi/instances/thermal/scenes.h"
#include "nefi/instances/thermal/tomography_config.h"
#include "nefi/instances/thermal/tsr.h"
#include "nefi/losses/data_losses.h"
#include "nefi/losses/regularizers.h"
#include "nefi/operators/heat/heat_operator.h"
#include "nefi/solve/metrics.h"

namespace nefi {
namespace {

using thermal::TomographyConfig;

class ThermalTomography : public Instance {
 public:
  std::string name() const override { return "thermal_tomography"; }
  std::string data_tag(const Params&) const override { return thermal_tomography_data_tag(); }
  std::string summary() const override {
    return "3-D diffusivity from front-surface flash thermography (NeFTY)";
  }
  std::vector<std::string> methods() const override {
    return {"nefty", "grid", "pinn_soft", "tsr", "ppt"};
  }
  std::vector<std::string> scenes() const override { return {"homogeneous", "layered"}; }
  DataLabels data_labels(const Params& p) const override {
    const TomographyConfig c = TomographyConfig::from(p);
    const DataAxis x = span_axis("x", "mm", 0, c.extent[0]),
                   y = span_axis("y", "mm", 0, c.extent[1]);
    return {{"thermal diffusivity", "α", "mm²/s"},
            {x, y, span_axis("depth z", "mm", 0, c.extent[2])},
            {"surface temperature rise", "ΔT", "K"},
            {frames_axis("time", "t = ", c.frame_times, "s"), x, y}};
  }
  Params default_config() const override { return thermal::tomography_params(); }

  std::pair<Measurement, fk::Tensor> make_measurement(const Params& p,
                                                      uint64_t seed) const override {
    return measure(TomographyConfig::from(p), seed);
  }

  std::optional<ProblemSetup> setup_from(const Params& p, const std::string& method, uint64_t seed,
                                         const Measurement* measured) const override {
    if (method != "nefty" && method != "grid" && method != "pinn_soft") return std::nullopt;
    const TomographyConfig c = TomographyConfig::from(p);
    if (method == "pinn_soft") return pinn_setup(c, seed);
    auto [meas, gt] = measured_or(measure(c, seed), measured);
    ProblemSetup s{InverseProblem{}, method == "nefty" ? c.nefty_curriculum : c.grid_curriculum,
                   meas, gt};
    InverseProblem& prob = s.problem;
    prob.name = "thermal_tomography";
    prob.domain = Domain(c.grid, c.extent);
    prob.op = heat_operator(c);
    prob.measurement = meas;
    std::vector<HeadPtr> heads{bounded_head("alpha", c.alpha_min, c.alpha_max, c.alpha_init)};
    if (method == "nefty") {
      prob.field = std::make_shared<NeuralField>(3, heads, c.field, seed);
    } else {
      prob.field = std::make_shared<GridField>(c.grid, heads);
    }
    prob.losses.add(mse_loss(), 1.0);
    prob.losses.add(tv_loss("alpha", c.tv), c.tv_weight);
    return s;
  }

  RunOutput run(const Params& p, const std::string& method, uint64_t seed,
                const SolverOptions& so) const override {
    MethodRunners runners;
    for (const char* direct : {"tsr", "ppt"})
      runners.direct[direct] = [&p, direct](const Measurement& meas, RunOutput& out) {
        const TomographyConfig c = TomographyConfig::from(p);
        out.reconstruction = std::string(direct) == "tsr" ? run_tsr(c, meas) : run_ppt(c, meas);
        out.result.fields["alpha"] = out.reconstruction;
        out.result.prediction = heat_operator(c)->apply(out.reconstruction.to(fk::DType::F32));
      };
    return run_method(*this, p, method, seed, so, runners);
  }

  std::vector<std::string> occasional_metrics() const override {
    return {"depth_abs_rel", "depth_delta1", "depth_rmse"};  // where a defect was found
  }

  // The volume scores and the surface fit; pinn_soft predicts with its
  // surrogate, the surface score of the start comes from the heat operator.
  std::map<std::string, double> evaluate(const Params& p, const RunOutput& out) const override {
    const TomographyConfig c = TomographyConfig::from(p);
    std::map<std::string, double> m = thermal::volume_metrics(
        out.reconstruction.to_vector<double>(), out.gt.to_vector<double>(), c.grid, c.metrics);
    // Surface fit: PSNR over the observed frames' range, as nefi::psnr does.
    const fk::Tensor& data = out.measurement.data;
    m["surface_mse"] = mse(out.result.prediction, data);
    m["surface_psnr"] = psnr(out.result.prediction, data);
    const fk::Tensor start =
        heat_operator(c)->apply(fk::full(c.grid, c.alpha_init, {fk::DType::F32}));
    m["surface_psnr_init"] = psnr(start, data);
    return m;
  }

 private:
  // The nefty field with the surrogate as its operator; the prediction is
  // T_φ's surface, so the data loss reaches α only through the residual.
  static ProblemSetup pinn_setup(const TomographyConfig& c, uint64_t seed) {
    auto [meas, gt] = measure(c, seed);
    ProblemSetup s{InverseProblem{}, c.pinn_curriculum, meas, gt};
    InverseProblem& prob = s.problem;
    prob.name = "thermal_tomography-pinn_soft";
    prob.domain = Domain(c.grid, c.extent);
    const double amplitude = c.simulator.flash.amplitude;
    thermal::PinnGeometry g{c.extent, c.frame_times,
                            static_cast<double>(c.heat.n_frames) * c.heat.dt,
                            c.heat.lateral_bc == "periodic"};
    prob.op = std::make_shared<thermal::SoftPinnSurface>(
        std::make_shared<thermal::TemperatureNet>(c.pinn.hidden, c.pinn.depth, amplitude, seed + 1,
                                                  c.pinn.n_octaves),
        g);
    prob.measurement = meas;
    prob.field = std::make_shared<NeuralField>(
        3, std::vector<HeadPtr>{bounded_head("alpha", c.alpha_min, c.alpha_max, c.alpha_init)},
        c.field, seed);
    prob.losses.add(mse_loss(), 1.0 / (amplitude * amplitude));
    prob.losses.add(std::make_shared<thermal::PdeResidualLoss>(c.pinn.collocation, seed + 2),
                    c.pinn.lambda_pde);
    prob.losses.add(std::make_shared<thermal::InitialConditionLoss>(c.simulator.flash),
                    c.pinn.lambda_ic);
    return s;
  }

  static std::shared_ptr<HeatOperator> heat_operator(const TomographyConfig& c) {
    auto op = std::make_shared<HeatOperator>(c.heat, c.grid);
    op->primary = "alpha";
    return op;
  }

  // The scene -> the explicit simulator's surface frames (+ noise), and the
  // ground truth at the inversion grid.
  static std::pair<Measurement, fk::Tensor> measure(const TomographyConfig& c, uint64_t seed) {
    const fk::Dims& grid = c.grid;
    const int64_t ss = c.sim_supersample;
    const thermal::Scene scene = thermal::draw_scene(c.scene, seed);
    const fk::Dims fine{grid[0] * ss, grid[1] * ss, grid[2] * ss};
    const thermal::ExplicitHeatSimulator sim(c.simulator);
    std::vector<double> y = sim.surface_frames(thermal::rasterise(scene, fine, c.extent), grid, ss);
    Measurement m;
    double mx = 0;
    for (double v : y) mx = std::max(mx, std::abs(v));
    m.noise_std = c.noise_std * mx;
    if (m.noise_std > 0) {
      datagen::Rng rng(seed * 7919 + 29);
      for (double& v : y) v += m.noise_std * rng.normal();
    }
    const int64_t n_obs = static_cast<int64_t>(sim.observed_frames().size());
    m.data = fk::from_vector(y, fk::Dims{n_obs, grid[0], grid[1]}).to(fk::DType::F32);
    return {m, fk::from_vector(thermal::rasterise(scene, grid, c.extent), grid)};
  }

  // Depth map -> α volume with the scene prior where the heuristics are blind.
  static fk::Tensor prior_volume(const TomographyConfig& c, const std::vector<bool>& defect,
                                 const std::vector<double>& depth, double alpha_bulk) {
    return fk::from_vector(
        thermal::depth_map_alpha_volume(defect, depth, c.grid, c.extent[2], alpha_bulk,
                                        c.prior_defect_alpha, c.prior_thickness),
        c.grid);
  }

  // The observed frames after t = 0 and their times.
  static std::pair<std::vector<double>, std::vector<double>> timed_frames(const TomographyConfig& c,
                                                                          const Measurement& m) {
    const fk::Dims fs = m.data.shape();
    std::vector<double> frames = m.data.to_vector<double>(), times = c.frame_times;
    int64_t skip = 0;  // frame 0 (t = 0) has no log time and precedes the cooling
    while (skip < static_cast<int64_t>(times.size()) && times[skip] <= 0) ++skip;
    times.erase(times.begin(), times.begin() + skip);
    frames.erase(frames.begin(), frames.begin() + skip * fs[1] * fs[2]);
    return {frames, times};
  }

  static fk::Tensor run_tsr(const TomographyConfig& c, const Measurement& meas) {
    const auto [frames, times] = timed_frames(c, meas);
    const fk::Dims fs{static_cast<int64_t>(times.size()), c.grid[0], c.grid[1]};
    const thermal::TsrResult r = thermal::tsr(frames, times, fs, c.tsr);
    return prior_volume(c, r.defect, r.depth, std::clamp(r.alpha_bulk, c.alpha_min, c.alpha_max));
  }

  static fk::Tensor run_ppt(const TomographyConfig& c, const Measurement& meas) {
    const auto [frames, times] = timed_frames(c, meas);
    const fk::Dims fs{static_cast<int64_t>(times.size()), c.grid[0], c.grid[1]};
    const thermal::PptResult r = thermal::ppt(frames, c.frame_interval, fs, c.ppt);
    return prior_volume(c, r.defect, r.depth, c.ppt.alpha);
  }
};

}  // namespace

const char* thermal_tomography_data_tag() {
  return thermal::kExplicitHeatTag;
}
InstancePtr make_thermal_tomography() {
  return std::make_shared<ThermalTomography>();
}

}  // namespace nefi
