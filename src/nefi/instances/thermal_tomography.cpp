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
#include <sstream>

#include "fk/error.h"
#include "fk/factory.h"
#include "nefi/field/grid_field.h"
#include "nefi/field/neural_field.h"
#include "nefi/instances/datagen.h"
#include "nefi/instances/instance.h"
#include "nefi/instances/thermal/depth_volume.h"
#include "nefi/instances/thermal/explicit_simulator.h"
#include "nefi/instances/thermal/metrics.h"
#include "nefi/instances/thermal/ppt.h"
#include "nefi/instances/thermal/scenes.h"
#include "nefi/instances/thermal/tsr.h"
#include "nefi/losses/data_losses.h"
#include "nefi/losses/regularizers.h"
#include "nefi/operators/heat/heat_operator.h"
#include "nefi/solve/metrics.h"

namespace nefi {
namespace {

std::array<double, 2> pair_of(const Params& p, const std::string& key) {
  const std::vector<double> v = p.list(key);
  FK_CHECK(v.size() == 2, "config key '" + key + "'", "a pair [lo, hi]", Params::render(v));
  return {v[0], v[1]};
}

std::array<int64_t, 2> int_pair_of(const Params& p, const std::string& key) {
  const auto v = pair_of(p, key);
  FK_CHECK(v[0] == std::floor(v[0]) && v[1] == std::floor(v[1]), "config key '" + key + "'",
           "two integers", Params::render(p.list(key)));
  return {static_cast<int64_t>(v[0]), static_cast<int64_t>(v[1])};
}

fk::Dims grid_of(const Params& p) {
  const std::vector<double> g = p.list("grid");
  FK_CHECK(g.size() == 3, "config key 'grid'", "three cell counts [nx, ny, nz]", Params::render(g));
  fk::Dims d;
  for (double v : g) {
    FK_CHECK(v >= 3 && v == std::floor(v), "config key 'grid'",
             "integers >= 3 (the heat stencil's smallest grid)", Params::render(g));
    d.push_back(static_cast<int64_t>(v));
  }
  return d;
}

std::vector<std::string> split_names(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

std::optional<std::array<double, 2>> flash_center(const Params& p) {
  const std::vector<double> c = p.list("flash_center");
  if (c.empty()) return std::nullopt;
  FK_CHECK(c.size() == 2, "config key 'flash_center'", "[] (the middle) or a physical [x, y]",
           Params::render(c));
  return std::array<double, 2>{c[0], c[1]};
}

HeatConfig heat_config(const Params& p) {
  HeatConfig h;
  h.extent = p.list("extent");
  h.dt = p.d("dt");
  h.n_frames = p.i("n_frames");
  h.implicit_substeps = p.i("implicit_substeps");
  h.first_frame = p.i("first_frame");
  h.frame_stride = p.i("frame_stride");
  h.stencil = p.s("stencil_backend");
  h.solver = p.s("solver");
  h.jacobi_iters = p.i("jacobi_iters");
  h.cg_tol = p.d("cg_tol");
  h.cg_max_iter = p.i("cg_max_iter");
  h.grad_mode = p.s("grad_mode");
  h.back_bc = p.s("bc_back");
  h.robin_h = p.d("robin_h");
  h.flash.amplitude = p.d("flash_amplitude");
  h.flash.width_xy = p.d("flash_width_xy");
  h.flash.width_z = p.d("flash_width_z");
  h.flash.center = flash_center(p);
  h.flash.periodic = true;
  return h;
}

thermal::ExplicitHeatConfig simulator_config(const Params& p) {
  thermal::ExplicitHeatConfig s;
  s.extent = p.list("extent");
  s.dt = p.d("dt");
  s.n_frames = p.i("n_frames");
  s.first_frame = p.i("first_frame");
  s.frame_stride = p.i("frame_stride");
  s.face_mode = p.s("sim_face_mode");
  s.back_bc = p.s("bc_back");
  s.robin_h = p.d("robin_h");
  s.min_substeps = p.i("sim_min_substeps");
  s.substep_safety = p.d("sim_substep_safety");
  s.flash.amplitude = p.d("flash_amplitude");
  s.flash.width_xy = p.d("flash_width_xy");
  s.flash.width_z = p.d("flash_width_z");
  s.flash.center = flash_center(p);
  s.flash.periodic = true;
  return s;
}

thermal::SceneConfig scene_config(const Params& p) {
  thermal::SceneConfig c;
  c.extent = p.list("extent");
  c.scene = p.s("scene");
  c.alpha_base_range = pair_of(p, "alpha_base_range");
  c.alpha_defect_range = pair_of(p, "alpha_defect_range");
  c.n_defects = int_pair_of(p, "n_defects");
  c.n_layers = int_pair_of(p, "n_layers");
  c.defect_shapes = split_names(p.s("defect_shapes"));
  c.defect_radius_range = pair_of(p, "defect_radius_range");
  c.defect_half_thickness_range = pair_of(p, "defect_half_thickness_range");
  c.defect_depth_range = pair_of(p, "defect_depth_range");
  c.lateral_margin = p.d("lateral_margin");
  c.min_layer_fraction = p.d("min_layer_fraction");
  return c;
}

// Every check that does not need a solve, so a bad config fails before the
// data are simulated.
void validate(const Params& p) {
  grid_of(p);
  const double lo = p.d("alpha_min"), hi = p.d("alpha_max"), a0 = p.d("alpha_init");
  FK_CHECK(lo > 0 && lo < hi, "config keys 'alpha_min'/'alpha_max'", "0 < alpha_min < alpha_max",
           std::to_string(lo) + ", " + std::to_string(hi));
  FK_CHECK(a0 > lo && a0 < hi, "config key 'alpha_init'", "alpha_min < alpha_init < alpha_max",
           std::to_string(a0));
  FK_CHECK(p.s("face_mode") == "harmonic", "config key 'face_mode'",
           "harmonic (the operator's face rule)", p.s("face_mode"));
  FK_CHECK(p.s("bc_lateral") == "periodic", "config key 'bc_lateral'", "periodic",
           p.s("bc_lateral"));
  FK_CHECK(p.s("initial") == "gaussian", "config key 'initial'", "gaussian", p.s("initial"));
  FK_CHECK(p.i("sim_supersample") >= 1, "config key 'sim_supersample'", "an integer >= 1",
           std::to_string(p.i("sim_supersample")));
  FK_CHECK(p.d("noise_std") >= 0, "config key 'noise_std'", "noise_std >= 0",
           std::to_string(p.d("noise_std")));
  FK_CHECK(p.i("steps") >= 1, "config key 'steps'", "steps >= 1", std::to_string(p.i("steps")));
  FK_CHECK(p.i("anneal_steps") >= 0, "config key 'anneal_steps'", "anneal_steps >= 0",
           std::to_string(p.i("anneal_steps")));
  FK_CHECK(p.i("n_stages") >= 1, "config key 'n_stages'", "n_stages >= 1",
           std::to_string(p.i("n_stages")));
  FK_CHECK(p.d("tv_weight") >= 0 && p.d("tv_eps") > 0, "config keys 'tv_weight'/'tv_eps'",
           "tv_weight >= 0 and tv_eps > 0",
           std::to_string(p.d("tv_weight")) + ", " + std::to_string(p.d("tv_eps")));
  heat_config(p).validate();
  simulator_config(p).validate();
  scene_config(p).validate();
}

Curriculum thermal_curriculum(const Params& p, const fk::Dims& grid, int steps, double lr) {
  const int64_t n_stages = p.i("n_stages");
  Curriculum c;
  if (n_stages == 1) {
    c = Curriculum::single(grid, steps, lr);
  } else {
    std::vector<int> per;
    for (double s : p.list("stage_steps")) per.push_back(static_cast<int>(s));
    if (per.empty()) per.assign(n_stages, std::max(1, steps / static_cast<int>(n_stages)));
    FK_CHECK(static_cast<int64_t>(per.size()) == n_stages, "config key 'stage_steps'",
             "[] or one entry per stage", Params::render(p.list("stage_steps")));
    c = Curriculum::multiscale(grid, per, lr, p.d("stage_lr_decay"), 4);
  }
  for (Stage& s : c.stages) {
    s.lr_schedule = p.s("lr_schedule");
    s.lr_min_ratio = p.d("lr_min_ratio");
    s.lr_step_size = static_cast<int>(p.i("lr_step_size"));
    s.lr_gamma = p.d("lr_gamma");
    const int64_t anneal = p.i("anneal_steps");
    s.anneal = anneal > 0;
    s.anneal_fraction = std::clamp(static_cast<double>(anneal) / s.steps, 1e-9, 1.0);
  }
  c.optim.optimizer = p.s("optimizer");
  c.optim.weight_decay = p.d("weight_decay");
  c.optim.grad_clip = p.d("grad_clip");
  c.validate();
  return c;
}

class ThermalTomography : public Instance {
 public:
  std::string name() const override { return "thermal_tomography"; }
  std::string summary() const override {
    return "3-D diffusivity from front-surface flash thermography (NeFTY)";
  }
  std::vector<std::string> methods() const override { return {"nefty", "grid", "tsr", "ppt"}; }
  std::vector<std::string> scenes() const override { return {"homogeneous", "layered"}; }

  Params default_config() const override {
    Params p;
    // Domain and time.
    p.declare("extent", std::vector<double>{10, 10, 1}, "physical slab size [Lx, Ly, H]");
    p.declare("grid", std::vector<double>{64, 64, 16}, "cells [nx, ny, nz]; z is depth");
    p.declare("dt", 0.05, "time between camera frames");
    p.declare("n_frames", int64_t{100}, "frames after the flash");
    p.declare("first_frame", int64_t{1}, "first observed frame (0 = the initial state)");
    p.declare("frame_stride", int64_t{1}, "observe every k-th frame");
    // Inversion operator.
    p.declare("solver", std::string("jacobi"), "inner solver: jacobi | chebyshev | cg");
    p.declare("jacobi_iters", int64_t{50}, "K sweeps per implicit step (jacobi, chebyshev)");
    p.declare("cg_tol", 1e-6, "cg relative residual tolerance");
    p.declare("cg_max_iter", int64_t{200}, "cg iteration cap");
    p.declare("implicit_substeps", int64_t{1}, "implicit steps per frame");
    p.declare("face_mode", std::string("harmonic"), "face diffusivity rule (harmonic)");
    p.declare("grad_mode", std::string("adjoint"), "adjoint | checkpoint | autograd");
    p.declare("stencil_backend", std::string("auto"), "flat | roll | auto");
    // Bounds and boundaries.
    p.declare("alpha_min", 0.003, "lower bound of the alpha head");
    p.declare("alpha_max", 0.25, "upper bound of the alpha head (and the PSNR range)");
    p.declare("bc_lateral", std::string("periodic"), "lateral boundaries (periodic)");
    p.declare("bc_back", std::string("neumann"), "back face: neumann (adiabatic) | robin");
    p.declare("robin_h", 0.0, "robin heat-transfer coefficient");
    // Flash.
    p.declare("initial", std::string("gaussian"), "initial condition (gaussian flash)");
    p.declare("flash_amplitude", 100.0, "flash peak temperature");
    p.declare("flash_width_xy", 2.5, "flash lateral width (std, physical)");
    p.declare("flash_width_z", 0.2, "flash depth width (std, physical)");
    p.declare("flash_center", std::vector<double>{}, "flash centre [x, y]; [] = the middle");
    // Scenes.
    p.declare("scene", std::string("homogeneous"), "homogeneous | layered");
    p.declare("alpha_base_range", std::vector<double>{0.1, 0.2}, "bulk alpha ~ U(range)");
    p.declare("alpha_defect_range", std::vector<double>{0.005, 0.015}, "defect alpha ~ U(range)");
    p.declare("n_defects", std::vector<double>{1, 4}, "defect count range (inclusive)");
    p.declare("n_layers", std::vector<double>{3, 4}, "layered: strata count range");
    p.declare("defect_shapes", std::string("ellipsoid,cylinder,box"), "comma-separated shapes");
    p.declare("defect_radius_range", std::vector<double>{0.6, 1.6},
              "range of each lateral semi-axis");
    p.declare("defect_half_thickness_range", std::vector<double>{0.08, 0.2},
              "half-thickness (depth) range");
    p.declare("defect_depth_range", std::vector<double>{0.25, 0.75},
              "centre depth / H range (clipped so the defect stays inside)");
    p.declare("lateral_margin", 1.0, "defect centres keep this far from the lateral edges");
    p.declare("min_layer_fraction", 0.15, "layered: thinnest stratum / H");
    // Data.
    p.declare("sim_face_mode", std::string("harmonic"), "simulator faces: harmonic | arithmetic");
    p.declare("sim_min_substeps", int64_t{10}, "simulator: fewest Euler substeps per frame");
    p.declare("sim_substep_safety", 2.0, "simulator: substeps = safety * dt / dt_stable");
    p.declare("sim_supersample", int64_t{1}, "simulator grid refinement");
    p.declare("noise_std", 0.0, "Gaussian noise std relative to the clean surface maximum");
    // Field.
    p.declare("hidden", int64_t{512}, "MLP width");
    p.declare("depth", int64_t{10}, "MLP hidden layers");
    p.declare("skip_at", int64_t{4}, "layer that sees the encoding again (0: none)");
    p.declare("activation", std::string("relu"), "tanh | relu | gelu | silu | softplus | sine");
    p.declare("n_octaves", int64_t{12}, "Fourier feature octaves");
    p.declare("include_input", false, "raw coordinates in the encoding");
    p.declare("out_init_scale", 0.1, "output-layer weight scale");
    p.declare("alpha_init", 0.15, "the bounded head's initial value");
    // Optimisation.
    p.declare("steps", int64_t{10000}, "optimizer steps");
    p.declare("lr", 5e-5, "learning rate (nefty)");
    p.declare("lr_schedule", std::string("step"), "step | cosine | constant");
    p.declare("lr_step_size", int64_t{1000}, "step schedule: steps per decay");
    p.declare("lr_gamma", 0.1, "step schedule: decay factor");
    p.declare("lr_min_ratio", 0.01, "cosine schedule: final lr / lr");
    p.declare("anneal_steps", int64_t{2500}, "Fourier band annealing length (0: off)");
    p.declare("optimizer", std::string("adam"), "adam | adamw | lbfgs");
    p.declare("weight_decay", 0.0, "AdamW decoupled weight decay");
    p.declare("grad_clip", 0.0, "global gradient-norm clip (<= 0: off)");
    p.declare("n_stages", int64_t{1}, "coarse-to-fine stages (grids halve per earlier stage)");
    p.declare("stage_steps", std::vector<double>{}, "steps per stage; [] = steps / n_stages each");
    p.declare("stage_lr_decay", 1.0, "lr factor per later stage");
    // Regularisation.
    p.declare("tv_weight", 1e-3, "isotropic TV weight (mean convention)");
    p.declare("tv_eps", 1e-6, "TV smoothing");
    // Evaluation.
    p.declare("iou_tau", 0.03, "defect threshold of iou (alpha < tau)");
    p.declare("edge_threshold", 0.5, "edge_f1: fraction of the true gradient maximum");
    p.declare("edge_dilate", int64_t{1}, "edge_f1: match tolerance in cells");
    p.declare("projection_k", 2.0, "depth maps: deficit > k * MAD sigma");
    // Grid baseline.
    p.declare("grid_lr", 0.0, "grid learning rate (0: lr)");
    p.declare("grid_steps", int64_t{0}, "grid steps (0: steps)");
    // TSR baseline.
    p.declare("tsr_window", 0.35, "TSR: half-width in ln t of the local curvature fits");
    p.declare("ppt_c1", 1.82, "PPT: depth = c1 sqrt(alpha / (pi f_blind))");
    p.declare("ppt_min_contrast", 0.03, "PPT: phase-contrast detection floor (radians)");
    return p;
  }

  std::pair<Measurement, fk::Tensor> make_measurement(const Params& p,
                                                      uint64_t seed) const override {
    validate(p);
    const fk::Dims grid = grid_of(p);
    const int64_t ss = p.i("sim_supersample");
    const std::vector<double> extent = p.list("extent");
    const thermal::Scene scene = thermal::draw_scene(scene_config(p), seed);
    const fk::Dims fine{grid[0] * ss, grid[1] * ss, grid[2] * ss};
    const thermal::ExplicitHeatSimulator sim(simulator_config(p));
    std::vector<double> y = sim.surface_frames(thermal::rasterise(scene, fine, extent), grid, ss);
    Measurement m;
    double mx = 0;
    for (double v : y) mx = std::max(mx, std::abs(v));
    m.noise_std = p.d("noise_std") * mx;
    if (m.noise_std > 0) {
      datagen::Rng rng(seed * 7919 + 29);
      for (double& v : y) v += m.noise_std * rng.normal();
    }
    const int64_t n_obs = static_cast<int64_t>(sim.observed_frames().size());
    m.data = fk::from_vector(y, fk::Dims{n_obs, grid[0], grid[1]}).to(fk::DType::F32);
    return {m, fk::from_vector(thermal::rasterise(scene, grid, extent), grid)};
  }

  RunOutput run(const Params& p, const std::string& method, uint64_t seed,
                const SolverOptions& so) const override {
    FK_CHECK(method == "nefty" || method == "grid" || method == "tsr" || method == "ppt",
             "thermal_tomography", "method nefty, grid, tsr or ppt", method);
    auto [meas, gt] = make_measurement(p, seed);
    const fk::Dims grid = grid_of(p);
    InverseProblem prob;
    prob.name = "thermal_tomography";
    prob.domain = Domain(grid, p.list("extent"));
    auto op = std::make_shared<HeatOperator>(heat_config(p), grid);
    op->primary = "alpha";
    prob.op = op;
    prob.measurement = meas;
    RunOutput out;
    out.method = method;
    out.gt = gt;
    out.measurement = meas;
    if (method == "tsr" || method == "ppt") {
      out.reconstruction = method == "tsr" ? run_tsr(p, meas, grid) : run_ppt(p, meas, grid);
      out.result.fields["alpha"] = out.reconstruction;
      out.result.prediction = op->apply(out.reconstruction.to(fk::DType::F32));
    } else {
      solve(p, method, seed, so, prob, out);
    }
    add_metrics(p, *op, gt, meas, out);
    return out;
  }

 private:
  // Depth map -> α volume with the scene prior where the heuristics are
  // blind: the defect α (mid alpha_defect_range) over the prior thickness
  // (twice the mid half-thickness); PPT also takes the mid bulk α.
  static fk::Tensor prior_volume(const Params& p, const std::vector<bool>& defect,
                                 const std::vector<double>& depth, const fk::Dims& grid,
                                 double alpha_bulk) {
    const auto ad = pair_of(p, "alpha_defect_range"),
               ht = pair_of(p, "defect_half_thickness_range");
    return fk::from_vector(
        thermal::depth_map_alpha_volume(defect, depth, grid, p.list("extent")[2], alpha_bulk,
                                        0.5 * (ad[0] + ad[1]), ht[0] + ht[1]),
        grid);
  }

  // The observed frames after t = 0 and their times.
  static std::pair<std::vector<double>, std::vector<double>> timed_frames(const Params& p,
                                                                          const Measurement& m) {
    const fk::Dims fs = m.data.shape();
    std::vector<double> frames = m.data.to_vector<double>(), times;
    for (int64_t n = p.i("first_frame"); n <= p.i("n_frames"); n += p.i("frame_stride"))
      times.push_back(static_cast<double>(n) * p.d("dt"));
    int64_t skip = 0;  // frame 0 (t = 0) has no log time and precedes the cooling
    while (skip < static_cast<int64_t>(times.size()) && times[skip] <= 0) ++skip;
    times.erase(times.begin(), times.begin() + skip);
    frames.erase(frames.begin(), frames.begin() + skip * fs[1] * fs[2]);
    return {frames, times};
  }

  static fk::Tensor run_tsr(const Params& p, const Measurement& meas, const fk::Dims& grid) {
    const auto [frames, times] = timed_frames(p, meas);
    thermal::TsrOptions o;
    o.window = p.d("tsr_window");
    o.thickness = p.list("extent")[2];
    o.k = p.d("projection_k");
    const fk::Dims fs{static_cast<int64_t>(times.size()), grid[0], grid[1]};
    const thermal::TsrResult r = thermal::tsr(frames, times, fs, o);
    return prior_volume(p, r.defect, r.depth, grid,
                        std::clamp(r.alpha_bulk, p.d("alpha_min"), p.d("alpha_max")));
  }

  static fk::Tensor run_ppt(const Params& p, const Measurement& meas, const fk::Dims& grid) {
    const auto [frames, times] = timed_frames(p, meas);
    const auto ab = pair_of(p, "alpha_base_range");
    thermal::PptOptions o;
    o.alpha = 0.5 * (ab[0] + ab[1]);
    o.c1 = p.d("ppt_c1");
    o.min_contrast = p.d("ppt_min_contrast");
    o.k = p.d("projection_k");
    o.thickness = p.list("extent")[2];
    const fk::Dims fs{static_cast<int64_t>(times.size()), grid[0], grid[1]};
    const thermal::PptResult r = thermal::ppt(frames, p.d("dt") * p.i("frame_stride"), fs, o);
    return prior_volume(p, r.defect, r.depth, grid, o.alpha);
  }

  static void solve(const Params& p, const std::string& method, uint64_t seed,
                    const SolverOptions& so, InverseProblem& prob, RunOutput& out) {
    const fk::Dims grid = grid_of(p);
    const double amin = p.d("alpha_min"), amax = p.d("alpha_max"), a0 = p.d("alpha_init");
    std::vector<HeadPtr> heads{bounded_head("alpha", amin, amax, a0)};
    int steps = static_cast<int>(p.i("steps"));
    double lr = p.d("lr");
    if (method == "nefty") {
      prob.field = std::make_shared<NeuralField>(3, heads, neural_field_config_from(p), seed);
    } else {
      prob.field = std::make_shared<GridField>(grid, heads);
      if (p.d("grid_lr") > 0) lr = p.d("grid_lr");
      if (p.i("grid_steps") > 0) steps = static_cast<int>(p.i("grid_steps"));
    }
    prob.losses.add(mse_loss(), 1.0);
    TVOptions tv;
    tv.isotropic = true;
    tv.eps = p.d("tv_eps");
    tv.periodic_axes = {0, 1};
    tv.use_spacing = true;
    prob.losses.add(tv_loss("alpha", tv), p.d("tv_weight"));
    out.curriculum = thermal_curriculum(p, grid, steps, lr);
    SolverOptions opts = so;
    opts.seed = seed;
    Solver solver(prob, out.curriculum, opts);
    out.result = solver.run();
    out.reconstruction = out.result.fields.at("alpha").to(fk::DType::F64);
  }

  static void add_metrics(const Params& p, const HeatOperator& op, const fk::Tensor& gt,
                          const Measurement& meas, RunOutput& out) {
    const fk::Dims grid = grid_of(p);
    thermal::VolumeMetricOptions mo;
    mo.alpha_min = p.d("alpha_min");
    mo.alpha_max = p.d("alpha_max");
    mo.iou_tau = p.d("iou_tau");
    mo.edge_threshold = p.d("edge_threshold");
    mo.edge_dilate = static_cast<int>(p.i("edge_dilate"));
    mo.projection_k = p.d("projection_k");
    mo.thickness = p.list("extent")[2];
    out.metrics = thermal::volume_metrics(out.reconstruction.to_vector<double>(),
                                          gt.to_vector<double>(), grid, mo);
    // Surface fit: PSNR over the observed frames' range, as nefi::psnr does.
    out.metrics["surface_mse"] = mse(out.result.prediction, meas.data);
    out.metrics["surface_psnr"] = psnr(out.result.prediction, meas.data);
    const fk::Tensor start = op.apply(fk::full(grid, p.d("alpha_init"), {fk::DType::F32}));
    out.metrics["surface_psnr_init"] = psnr(start, meas.data);
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
