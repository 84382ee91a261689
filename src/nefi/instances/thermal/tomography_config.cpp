#include "nefi/instances/thermal/tomography_config.h"
#include "nefi/instances/regularizer_keys.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <string>

#include <fmt/format.h>

#include "fk/error.h"
#include "nefi/instances/instance.h"

namespace nefi::thermal {
namespace {

constexpr double kMaxSteps = 1e9;  // a step count an int holds

void declare_domain_and_operator_keys(Params& p) {
  p.declare("extent", std::vector<double>{10, 10, 1}, "physical slab size [Lx, Ly, H]");
  p.declare("grid", std::vector<double>{64, 64, 16}, "cells [nx, ny, nz]; z is depth");
  p.declare("dt", 0.05, "time between camera frames");
  p.declare("n_frames", int64_t{100}, "frames after the flash");
  p.declare("first_frame", int64_t{1}, "first observed frame (0 = the initial state)");
  p.declare("frame_stride", int64_t{1}, "observe every k-th frame");
  p.declare("solver", std::string("jacobi"), "inner solver: jacobi | chebyshev | cg");
  p.declare("jacobi_iters", int64_t{50}, "K sweeps per implicit step (jacobi, chebyshev)");
  p.declare("cg_tol", 1e-6, "cg relative residual tolerance");
  p.declare("cg_max_iter", int64_t{200}, "cg iteration cap");
  p.declare("implicit_substeps", int64_t{1}, "implicit steps per frame");
  p.declare("face_mode", std::string("harmonic"), "face diffusivity: harmonic | arithmetic");
  p.declare("grad_mode", std::string("adjoint"), "adjoint | checkpoint | autograd");
  p.declare("stencil_backend", std::string("auto"), "flat | roll | auto");
  p.declare("alpha_min", 0.003, "lower bound of the alpha head");
  p.declare("alpha_max", 0.25, "upper bound of the alpha head (and the PSNR range)");
  p.declare("bc_lateral", std::string("periodic"), "lateral boundaries: periodic | neumann");
  p.declare("bc_back", std::string("neumann"), "back face: neumann (adiabatic) | robin");
  p.declare("robin_h", 0.0, "robin heat-transfer coefficient");
  p.declare("initial", std::string("gaussian"),
            "gaussian (flash spot) | flash (uniform front-face flash)");
  p.declare("flash_amplitude", 100.0, "flash peak temperature");
  p.declare("flash_width_xy", 2.5, "flash lateral width (std, physical)");
  p.declare("flash_width_z", 0.2, "flash depth width (std, physical)");
  p.declare("flash_center", std::vector<double>{}, "flash centre [x, y]; [] = the middle");
}

void declare_scene_and_data_keys(Params& p) {
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
  p.declare("sim_face_mode", std::string("harmonic"), "simulator faces: harmonic | arithmetic");
  p.declare("sim_min_substeps", int64_t{10}, "simulator: fewest Euler substeps per frame");
  p.declare("sim_substep_safety", 2.0, "simulator: substeps = safety * dt / dt_stable");
  p.declare("sim_supersample", int64_t{1}, "simulator grid refinement");
  p.declare("noise_std", 0.0, "Gaussian noise std relative to the clean surface maximum");
}

void declare_field_and_optimisation_keys(Params& p) {
  p.declare("hidden", int64_t{512}, "MLP width");
  p.declare("depth", int64_t{10}, "MLP hidden layers");
  p.declare("skip_at", int64_t{4}, "layer that sees the encoding again (0: none)");
  p.declare("activation", std::string("relu"), "tanh | relu | gelu | silu | softplus | sine");
  p.declare("n_octaves", int64_t{12}, "Fourier feature octaves");
  p.declare("include_input", false, "raw coordinates in the encoding");
  p.declare("out_init_scale", 0.1, "output-layer weight scale");
  p.declare("autocast", std::string("none"), "MLP trunk precision: none | bf16 | fp16");
  p.declare("alpha_init", 0.15, "the bounded head's initial value");
  p.declare("steps", int64_t{10000}, "optimizer steps");
  p.declare("lr", 5e-5, "learning rate (nefty)");
  p.declare("lr_schedule", std::string("step"),
            "step | cosine | warmup_cosine (cosine after lr_warmup) | constant");
  p.declare("lr_warmup", int64_t{0}, "linear lr warm-up steps at the start of every stage");
  p.declare("lr_step_size", int64_t{1000}, "step schedule: steps per decay");
  p.declare("lr_gamma", 0.1, "step schedule: decay factor");
  p.declare("lr_min_ratio", 0.01, "cosine schedule: final lr / lr");
  p.declare("anneal_steps", int64_t{2500}, "Fourier band annealing length (0: off)");
  p.declare("optimizer", std::string("adam"), "adam | adamw | sgd (momentum 0.9) | lbfgs");
  p.declare("weight_decay", 0.0, "weight decay (decoupled for adamw, L2 for adam and sgd)");
  p.declare("grad_clip", 0.0, "global gradient-norm clip (<= 0: off)");
  declare_lbfgs_keys(p);
  p.declare("n_stages", int64_t{1}, "coarse-to-fine stages (grids halve per earlier stage)");
  p.declare("stage_steps", std::vector<double>{}, "steps per stage; [] = steps / n_stages each");
  p.declare("stage_lr_decay", 1.0, "lr factor per later stage");
  p.declare("tv_weight", 1e-3, "isotropic TV weight (mean convention)");
  p.declare("tv_eps", 1e-6, "TV smoothing");
}

void declare_evaluation_and_baseline_keys(Params& p) {
  p.declare("iou_tau", 0.03, "defect threshold of iou (alpha < tau)");
  p.declare("edge_threshold", 0.5, "edge_f1: fraction of the true gradient maximum");
  p.declare("edge_dilate", int64_t{1}, "edge_f1: match tolerance in cells");
  p.declare("projection_k", 2.0, "depth maps: deficit > k * MAD sigma");
  p.declare("grid_lr", 0.0, "grid learning rate (0: lr)");
  p.declare("grid_steps", int64_t{0}, "grid steps (0: steps)");
  p.declare("tsr_window", 0.35, "TSR: half-width in ln t of the local curvature fits");
  p.declare("ppt_c1", 1.82, "PPT: depth = c1 sqrt(alpha / (pi f_blind))");
  p.declare("ppt_min_contrast", 0.03, "PPT: phase-contrast detection floor (radians)");
  p.declare("pinn_hidden", int64_t{128}, "pinn_soft: temperature network width");
  p.declare("pinn_depth", int64_t{5}, "pinn_soft: temperature network tanh layers");
  p.declare("pinn_n_octaves", int64_t{0}, "pinn_soft: Fourier octaves of T(x, t) (0: raw)");
  p.declare("pinn_collocation", int64_t{24576}, "pinn_soft: residual points per step");
  p.declare("pinn_lambda_pde", 1.0, "pinn_soft: PDE residual weight");
  p.declare("pinn_lambda_ic", 1.0, "pinn_soft: initial-condition weight");
  p.declare("pinn_lr", 1e-3, "pinn_soft: Adam learning rate (constant)");
  p.declare("pinn_steps", int64_t{22000}, "pinn_soft: optimizer steps");
}

std::array<double, 2> pair_of(const Params& p, const std::string& key) {
  const std::vector<double> v = p.list(key);
  FK_CHECK(v.size() == 2, "config key '" + key + "'", "a pair [lo, hi]", Params::render(v));
  return {v[0], v[1]};
}

std::array<int64_t, 2> int_pair_of(const Params& p, const std::string& key) {
  const auto v = pair_of(p, key);
  const auto whole = [](double x) { return x == std::floor(x) && std::abs(x) <= 1e9; };
  FK_CHECK(whole(v[0]) && whole(v[1]), "config key '" + key + "'", "two integers within +-1e9",
           Params::render(p.list(key)));
  return {static_cast<int64_t>(v[0]), static_cast<int64_t>(v[1])};
}

fk::Dims grid_of(const Params& p) {
  const std::vector<double> g = p.list("grid");
  FK_CHECK(g.size() == 3, "config key 'grid'", "three cell counts [nx, ny, nz]", Params::render(g));
  fk::Dims d;
  for (double v : g) {
    FK_CHECK(v >= 3 && v <= 1024 && v == std::floor(v), "config key 'grid'",
             "integers in [3 (the heat stencil's smallest grid), 1024]", Params::render(g));
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

// The keys the inversion operator and the simulator share (the slab, the
// camera's frames, the back face and the flash) and the operator's own.
void read_slab_and_operator(const Params& p, TomographyConfig& c) {
  c.grid = grid_of(p);
  c.extent = p.list("extent");
  HeatConfig& h = c.heat;
  ExplicitHeatConfig& s = c.simulator;
  h.extent = s.extent = c.scene.extent = c.extent;
  h.dt = s.dt = p.d("dt");
  h.n_frames = s.n_frames = p.i("n_frames");
  h.first_frame = s.first_frame = p.i("first_frame");
  h.frame_stride = s.frame_stride = p.i("frame_stride");
  h.back_bc = s.back_bc = p.choice("bc_back", {"neumann", "robin"});
  h.robin_h = s.robin_h = p.d("robin_h");
  h.flash.amplitude = s.flash.amplitude = p.d("flash_amplitude");
  h.flash.width_xy = s.flash.width_xy = p.d("flash_width_xy");
  h.flash.width_z = s.flash.width_z = p.d("flash_width_z");
  h.flash.center = s.flash.center = flash_center(p);
  h.lateral_bc = s.lateral_bc = p.choice("bc_lateral", {"periodic", "neumann"});
  // Insulated sides see the flash inside the box only (no periodic images).
  h.flash.periodic = s.flash.periodic = h.lateral_bc == "periodic";
  h.flash.uniform = s.flash.uniform = p.choice("initial", {"gaussian", "flash"}) == "flash";
  h.implicit_substeps = p.i("implicit_substeps");
  h.stencil = p.choice("stencil_backend", {"flat", "roll", "auto"});
  h.solver = p.choice("solver", {"jacobi", "chebyshev", "cg"});
  h.jacobi_iters = p.i("jacobi_iters");
  FK_CHECK(h.jacobi_iters >= 1, "config key 'jacobi_iters'", "sweeps per implicit step >= 1",
           fk::to_text(h.jacobi_iters));
  h.cg_tol = p.d("cg_tol");
  h.cg_max_iter = p.i("cg_max_iter");
  h.grad_mode = p.choice("grad_mode", {"adjoint", "checkpoint", "autograd"});
  h.face_mode = p.choice("face_mode", {"harmonic", "arithmetic"});
  c.alpha_min = p.d("alpha_min");
  c.alpha_max = p.d("alpha_max");
  c.alpha_init = p.d("alpha_init");
  FK_CHECK(c.alpha_min > 0 && c.alpha_min < c.alpha_max, "config keys 'alpha_min'/'alpha_max'",
           "0 < alpha_min < alpha_max", fk::to_text(c.alpha_min) + ", " + fk::to_text(c.alpha_max));
  FK_CHECK(c.alpha_init > c.alpha_min && c.alpha_init < c.alpha_max, "config key 'alpha_init'",
           "alpha_min < alpha_init < alpha_max", fk::to_text(c.alpha_init));
}

void read_scene_and_data(const Params& p, TomographyConfig& c) {
  SceneConfig& sc = c.scene;
  sc.scene = p.s("scene");
  sc.alpha_base_range = pair_of(p, "alpha_base_range");
  sc.alpha_defect_range = pair_of(p, "alpha_defect_range");
  sc.n_defects = int_pair_of(p, "n_defects");
  sc.n_layers = int_pair_of(p, "n_layers");
  sc.defect_shapes = split_names(p.s("defect_shapes"));
  sc.defect_radius_range = pair_of(p, "defect_radius_range");
  sc.defect_half_thickness_range = pair_of(p, "defect_half_thickness_range");
  sc.defect_depth_range = pair_of(p, "defect_depth_range");
  sc.lateral_margin = p.d("lateral_margin");
  sc.min_layer_fraction = p.d("min_layer_fraction");
  sc.validate();
  // The truth within the alpha head's bounds, which are also the PSNR's range
  // (a bulk of 0.3-0.4 under alpha_max 0.25 was drawn, unreachable).
  for (const auto& [key, r] : {std::pair{"alpha_base_range", sc.alpha_base_range},
                               std::pair{"alpha_defect_range", sc.alpha_defect_range}})
    FK_CHECK(r[0] >= c.alpha_min && r[1] <= c.alpha_max, std::string("config key '") + key + "'",
             "a range within [alpha_min, alpha_max] = [" + fk::to_text(c.alpha_min) + ", " +
                 fk::to_text(c.alpha_max) + "]",
             "[" + fk::to_text(r[0]) + ", " + fk::to_text(r[1]) + "]");
  ExplicitHeatConfig& s = c.simulator;
  s.face_mode = p.s("sim_face_mode");
  s.min_substeps = p.i("sim_min_substeps");
  s.substep_safety = p.d("sim_substep_safety");
  s.validate();
  c.sim_supersample = p.i("sim_supersample");
  FK_CHECK(c.sim_supersample >= 1, "config key 'sim_supersample'", "an integer >= 1",
           fk::to_text(c.sim_supersample));
  c.noise_std = noise_std_key(p);
}

// The schedule keys both optimising methods share, read once.
struct ScheduleKeys {
  int64_t n_stages = 1;
  std::vector<double> stage_steps;
  double stage_lr_decay = 1;
  std::string lr_schedule;
  double lr_min_ratio = 0, lr_gamma = 0;
  int lr_step_size = 0, lr_warmup = 0;
  int64_t anneal_steps = 0;
  OptimConfig optim;
};

// One stage over `steps` at `grid`, or n_stages coarse-to-fine stages.
Curriculum thermal_curriculum(const ScheduleKeys& k, const fk::Dims& grid, int steps, double lr) {
  Curriculum c;
  if (k.n_stages == 1) {
    c = Curriculum::single(grid, steps, lr);
  } else {
    std::vector<int> per;
    for (double s : k.stage_steps) per.push_back(static_cast<int>(s));
    if (per.empty()) per.assign(k.n_stages, std::max(1, steps / static_cast<int>(k.n_stages)));
    FK_CHECK(static_cast<int64_t>(per.size()) == k.n_stages, "config key 'stage_steps'",
             "[] or one entry per stage", Params::render(k.stage_steps));
    c = Curriculum::multiscale(grid, per, lr, k.stage_lr_decay, 4);
  }
  for (Stage& s : c.stages) {
    s.lr_schedule = k.lr_schedule;
    s.lr_min_ratio = k.lr_min_ratio;
    s.lr_step_size = k.lr_step_size;
    s.lr_gamma = k.lr_gamma;
    FK_CHECK(k.lr_warmup < s.steps, "config key 'lr_warmup'",
             "a step count below every stage's steps (" + fk::to_text(s.steps) + ")",
             fk::to_text(k.lr_warmup));
    s.lr_warmup = k.lr_warmup;
    s.anneal = k.anneal_steps > 0;
    s.anneal_fraction = std::clamp(static_cast<double>(k.anneal_steps) / s.steps, 1e-9, 1.0);
  }
  c.optim = k.optim;
  c.validate();
  return c;
}

// A count of optimizer steps under `key`, in [lo, kMaxSteps].
int step_count(const Params& p, const std::string& key, int64_t lo) {
  const int64_t v = p.i(key);
  FK_CHECK(v >= lo && v <= static_cast<int64_t>(kMaxSteps), "config key '" + key + "'",
           "a step count in [" + fk::to_text(lo) + ", 1e9]", fk::to_text(v));
  return static_cast<int>(v);
}

// The field, the losses and the two methods' schedules (grid: its own lr and
// steps when set).
void read_field_and_optimisation(const Params& p, TomographyConfig& c) {
  c.field = neural_field_config_from(p);
  const int steps = step_count(p, "steps", 1);
  const int grid_steps = step_count(p, "grid_steps", 0);
  ScheduleKeys k;
  k.anneal_steps = step_count(p, "anneal_steps", 0);
  k.lr_step_size = step_count(p, "lr_step_size", 1);  // the step schedule divides by it
  k.n_stages = p.i("n_stages");
  FK_CHECK(k.n_stages >= 1 && k.n_stages <= 32, "config key 'n_stages'", "a stage count in [1, 32]",
           fk::to_text(k.n_stages));
  k.stage_steps = p.list("stage_steps");
  for (double s : k.stage_steps)
    FK_CHECK(s >= 1 && s <= kMaxSteps && s == std::floor(s), "config key 'stage_steps'",
             "positive integers", Params::render(k.stage_steps));
  // (one stage ran `steps` and dropped a list of other counts without a word)
  FK_CHECK(k.stage_steps.empty() || static_cast<int64_t>(k.stage_steps.size()) == k.n_stages,
           "config key 'stage_steps'",
           "[] or one entry per stage (n_stages " + fk::to_text(k.n_stages) + ")",
           Params::render(k.stage_steps));
  k.stage_lr_decay = p.d("stage_lr_decay");
  FK_CHECK(k.stage_lr_decay > 0, "config key 'stage_lr_decay'", "a factor > 0",
           Params::render(k.stage_lr_decay));
  k.lr_schedule = p.choice("lr_schedule", {"step", "cosine", "warmup_cosine", "constant"});
  k.lr_warmup = step_count(p, "lr_warmup", 0);
  k.lr_min_ratio = p.d("lr_min_ratio");
  k.lr_gamma = p.d("lr_gamma");
  k.optim.optimizer = p.choice("optimizer", {"adam", "adamw", "sgd", "lbfgs"});
  k.optim.weight_decay = p.d("weight_decay");
  k.optim.grad_clip = p.d("grad_clip");
  k.optim.lbfgs = lbfgs_options_from(p);
  const double lr = p.d("lr"), grid_lr = p.d("grid_lr");
  FK_CHECK(lr > 0 && std::isfinite(lr), "config key 'lr'", "a finite learning rate > 0",
           fk::to_text(lr));
  FK_CHECK(grid_lr >= 0, "config key 'grid_lr'", "a learning rate >= 0 (0: lr)",
           fk::to_text(grid_lr));
  c.tv_weight = p.d("tv_weight");
  c.tv.isotropic = true;
  c.tv.eps = p.d("tv_eps");
  if (p.s("bc_lateral") == "periodic") c.tv.periodic_axes = {0, 1};
  c.tv.use_spacing = true;
  FK_CHECK(c.tv_weight >= 0 && c.tv.eps > 0, "config keys 'tv_weight'/'tv_eps'",
           "tv_weight >= 0 and tv_eps > 0",
           fk::to_text(c.tv_weight) + ", " + fk::to_text(c.tv.eps));
  c.nefty_curriculum = thermal_curriculum(k, c.grid, steps, lr);
  c.grid_curriculum = thermal_curriculum(k, c.grid, grid_steps > 0 ? grid_steps : steps,
                                         grid_lr > 0 ? grid_lr : lr);
  // pinn_soft: one constant-lr stage, annealed over anneal_steps of the
  // nefty budget's share (the reference's anneal_steps / steps), plain Adam.
  Curriculum& pc = c.pinn_curriculum;
  pc = Curriculum::single(c.grid, step_count(p, "pinn_steps", 1), p.d("pinn_lr"));
  FK_CHECK(pc.stages[0].lr > 0 && std::isfinite(pc.stages[0].lr), "config key 'pinn_lr'",
           "a finite learning rate > 0", fk::to_text(pc.stages[0].lr));
  pc.stages[0].name = "pinn";
  pc.stages[0].lr_schedule = "constant";
  pc.stages[0].anneal = true;
  pc.stages[0].anneal_fraction = std::clamp(static_cast<double>(k.anneal_steps) / steps, 1e-6, 1.0);
  pc.optim.optimizer = "adam";
  pc.optim.weight_decay = 0;
  pc.optim.grad_clip = 0;
  pc.validate();
}

void read_pinn(const Params& p, TomographyConfig& c) {
  auto& q = c.pinn;
  const int64_t hidden = p.i("pinn_hidden"), depth = p.i("pinn_depth");
  FK_CHECK(hidden >= 1 && hidden <= 4096 && depth >= 1 && depth <= 64,
           "config keys 'pinn_hidden'/'pinn_depth'", "a width in [1, 4096] and depth in [1, 64]",
           fk::to_text(hidden) + ", " + fk::to_text(depth));
  q.hidden = static_cast<int>(hidden);
  q.depth = static_cast<int>(depth);
  const int64_t octaves = p.i("pinn_n_octaves");
  FK_CHECK(octaves >= 0 && octaves <= 16, "config key 'pinn_n_octaves'",
           "an octave count in [0, 16] (0: raw coordinates)", fk::to_text(octaves));
  q.n_octaves = static_cast<int>(octaves);
  q.collocation = p.i("pinn_collocation");
  FK_CHECK(q.collocation >= 1 && q.collocation <= (int64_t{1} << 24),
           "config key 'pinn_collocation'", "a point count in [1, 2^24]",
           fk::to_text(q.collocation));
  q.lambda_pde = p.d("pinn_lambda_pde");
  q.lambda_ic = p.d("pinn_lambda_ic");
  FK_CHECK(q.lambda_pde >= 0 && q.lambda_ic >= 0, "config keys 'pinn_lambda_pde'/'pinn_lambda_ic'",
           "weights >= 0", fk::to_text(q.lambda_pde) + ", " + fk::to_text(q.lambda_ic));
}

void read_evaluation_and_baselines(const Params& p, TomographyConfig& c) {
  const double thickness = c.extent[2];
  VolumeMetricOptions& m = c.metrics;
  m.alpha_min = c.alpha_min;
  m.alpha_max = c.alpha_max;
  // The metrics' own thresholds (unchecked, a NaN scored a perfect iou and
  // edge_f1 and -1 passed for a count).
  const double inf = std::numeric_limits<double>::infinity();
  auto in = [&](const char* key, double lo, bool lo_open, double hi) {
    const double v = p.d(key);
    FK_CHECK(
        (lo_open ? v > lo : v >= lo) && v <= hi, std::string("config key '") + key + "'",
        fmt::format("a value in {}{}, {}{}", lo_open ? "(" : "[", lo, hi, hi == inf ? ")" : "]"),
        Params::render(v));
    return v;
  };
  m.iou_tau = in("iou_tau", 0, true, inf);
  m.edge_threshold = in("edge_threshold", 0, true, 1);
  m.edge_dilate = static_cast<int>(in("edge_dilate", 0, false, 64));
  m.projection_k = in("projection_k", 0, true, inf);
  m.thickness = thickness;
  c.tsr.window = in("tsr_window", 0, true, inf);
  c.tsr.thickness = thickness;
  c.tsr.k = m.projection_k;
  const auto& ab = c.scene.alpha_base_range;
  c.ppt.alpha = 0.5 * (ab[0] + ab[1]);
  c.ppt.c1 = in("ppt_c1", 0, true, inf);
  c.ppt.min_contrast = in("ppt_min_contrast", 0, false, inf);
  c.ppt.k = m.projection_k;
  c.ppt.thickness = thickness;
  const HeatConfig& h = c.heat;
  c.frame_interval = h.dt * static_cast<double>(h.frame_stride);
  for (int64_t n = h.first_frame; n <= h.n_frames; n += h.frame_stride)
    c.frame_times.push_back(static_cast<double>(n) * h.dt);
  const auto& ad = c.scene.alpha_defect_range;
  const auto& ht = c.scene.defect_half_thickness_range;
  c.prior_defect_alpha = 0.5 * (ad[0] + ad[1]);
  c.prior_thickness = ht[0] + ht[1];
}

}  // namespace

Params tomography_params() {
  Params p;
  declare_domain_and_operator_keys(p);
  declare_scene_and_data_keys(p);
  declare_field_and_optimisation_keys(p);
  declare_evaluation_and_baseline_keys(p);
  return p;
}

TomographyConfig TomographyConfig::from(const Params& p) {
  TomographyConfig c;
  read_slab_and_operator(p, c);
  read_scene_and_data(p, c);
  c.heat.validate();  // after the simulator's checks, which name the keys they share
  read_field_and_optimisation(p, c);
  read_evaluation_and_baselines(p, c);
  read_pinn(p, c);
  return c;
}

}  // namespace nefi::thermal
