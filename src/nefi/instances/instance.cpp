#include "nefi/instances/instance.h"

#include <algorithm>
#include <cmath>

#include "fk/error.h"
#include "nefi/field/grid_field.h"

namespace nefi {
namespace {

// Bounds that keep a mistyped width or depth from asking for terabytes.
constexpr int64_t kMaxHidden = 65536, kMaxDepth = 1024;
constexpr double kMaxSteps = 1e9;  // a step count an int holds

}  // namespace

const std::vector<InstancePtr>& all_instances() {
  static const std::vector<InstancePtr> list{
      make_toy1d(),
      make_deconvolution(),
      make_thermal_tomography(),
      make_poisson_source(),
      make_sparse_view_ct(),
      make_deconvolution3d(),
      make_holography(),
      make_nv_relaxometry(),
      make_current_density(),
      make_reaction_diffusion(),
      make_eit(),
      make_darcy_flow(),
      make_ct3d(),
      make_diffraction_tomography(),
      make_wave_fwi(),
      make_photoacoustic3d(),
      make_dot3d(),
  };
  return list;
}

InstancePtr find_instance(const std::string& name) {
  std::string names;
  for (const auto& i : all_instances()) {
    if (i->name() == name) return i;
    names += (names.empty() ? "" : ", ") + i->name();
  }
  throw fk::Error("target", "an instance (" + names + ") or a config file", "'" + name + "'");
}

std::string direct_blur_data_tag(int64_t supersample) {
  return "blur-" + std::to_string(supersample) + "x-float64-direct";
}

std::string default_method(const Instance& inst) {
  const auto m = inst.methods();
  return std::find(m.begin(), m.end(), "neural") != m.end() ? "neural" : m.front();
}

std::string canonical_method(const Instance& inst, const std::string& name,
                             const std::string& where) {
  const auto m = inst.methods();
  if (std::find(m.begin(), m.end(), name) != m.end()) return name;
  static const char* const kOwnSolver[] = {"neural", "nefi", "default", "ours", "netmy", "nefty"};
  for (const char* alias : kOwnSolver)
    if (name == alias) return default_method(inst);
  std::string valid;
  for (const auto& v : m) valid += (valid.empty() ? "" : ", ") + v;
  throw fk::Error(where,
                  "a method of " + inst.name() + " (" + valid +
                      "; neural, nefi, default, ours, netmy and nefty name " +
                      default_method(inst) + ")",
                  "'" + name + "'");
}

std::pair<Measurement, fk::Tensor> measured_or(std::pair<Measurement, fk::Tensor> synthetic,
                                               const Measurement* measured) {
  if (!measured) return synthetic;
  const Measurement& own = synthetic.first;
  const fk::Dims& want = own.data.shape();
  FK_CHECK(measured->data.shape() == want, "run.data",
           "a " + want.str() +
               " array (the shape this instance measures with this config, as its "
               "measurement.npy)",
           measured->data.shape().str());
  FK_CHECK(!fk::is_complex(measured->data.dtype()) && measured->data.dtype() != fk::DType::Bool,
           "run.data", "real values", fk::name(measured->data.dtype()));
  Measurement m;
  m.data = measured->data.to(own.data.dtype());
  for (const double v : m.data.to_vector<double>())
    FK_CHECK(std::isfinite(v), "run.data", "finite values", "a NaN or an infinity");
  if (measured->mask.defined()) {
    FK_CHECK(measured->mask.shape() == want, "run.mask", "a " + want.str() + " array of weights",
             measured->mask.shape().str());
    FK_CHECK(!fk::is_complex(measured->mask.dtype()), "run.mask", "real weights",
             fk::name(measured->mask.dtype()));
    m.mask = measured->mask.to(own.data.dtype());
    check_mask(m, "run.mask");
  } else {
    m.mask = own.mask;
  }
  m.noise_std = measured->noise_std;
  return {m, fk::Tensor()};
}

RunOutput start_run_output(const std::string& method, const Measurement& measurement,
                           const fk::Tensor& gt) {
  RunOutput out;
  out.method = method;
  out.gt = gt;
  out.measurement = measurement;
  return out;
}

InverseProblem field_problem(std::string name, const Domain& domain, OperatorPtr op,
                             Measurement measurement, std::vector<HeadPtr> heads,
                             const std::string& method, const NeuralFieldConfig& field,
                             uint64_t seed) {
  InverseProblem prob;
  prob.name = std::move(name);
  prob.domain = domain;
  prob.op = std::move(op);
  prob.measurement = std::move(measurement);
  const int ndim = static_cast<int>(domain.shape().size());
  if (method == "neural") {
    prob.field = std::make_shared<NeuralField>(ndim, std::move(heads), field, seed);
  } else {
    prob.field = std::make_shared<GridField>(domain.shape(), std::move(heads));
  }
  return prob;
}

void solve_and_record(InverseProblem problem, const Curriculum& curriculum, uint64_t seed,
                      const SolverOptions& so, RunOutput& out) {
  const std::string primary = problem.field->primary();
  out.curriculum = run_curriculum(curriculum, so.curriculum, so.max_total_steps);
  out.step_cap = so.max_total_steps;
  SolverOptions opts = so;
  opts.seed = seed;
  Solver solver(std::move(problem), out.curriculum, opts);
  out.result = solver.run();
  out.reconstruction = out.result.fields.at(primary).to(fk::DType::F64);
}

void declare_curriculum_keys(Params& p, std::vector<double> steps, double lr) {
  p.declare("steps", steps, "steps per stage; stage i runs at n / coarse_factor^(stages-1-i)");
  p.declare("lr", lr, "learning rate of the first stage");
  p.declare("lr_decay", 0.5, "lr factor per later stage");
  p.declare("lr_schedule", std::string("cosine"),
            "cosine | warmup_cosine (cosine after lr_warmup) | step | constant");
  p.declare("lr_warmup", int64_t{0}, "linear lr warm-up steps at the start of every stage");
  p.declare("anneal_fraction", 1.0, "fraction of each stage over which bands open");
  p.declare("anneal_reset", true,
            "bands close again at every stage start (the beta reset; false: later stages keep "
            "every band open)");
  p.declare("coarse_factor", int64_t{2}, "grid ratio between consecutive stages (2 to 16)");
  p.declare("optimizer", std::string("adamw"), "adam | adamw | sgd (momentum 0.9) | lbfgs");
  p.declare("weight_decay", 1e-4, "weight decay (decoupled for adamw, L2 for adam and sgd)");
  p.declare("grad_clip", 1.0, "global gradient-norm clip (<= 0: off)");
  p.declare("min_coarse", int64_t{8}, "smallest stage grid size");
  declare_lbfgs_keys(p);
}

void declare_lbfgs_keys(Params& p) {
  const LbfgsOptions d;
  p.declare("lbfgs_history", int64_t{d.history}, "lbfgs: curvature pairs kept");
  p.declare("lbfgs_max_iter", int64_t{d.max_iter}, "lbfgs: iterations per solver step");
  p.declare("lbfgs_max_eval", int64_t{d.max_eval},
            "lbfgs: objective evaluations per solver step (0: max_iter * 5 / 4)");
  p.declare("lbfgs_tolerance_grad", d.tolerance_grad, "lbfgs: stop a step when max|g| <= this");
  p.declare("lbfgs_tolerance_change", d.tolerance_change,
            "lbfgs: stop a step when the loss or the step changes less");
  p.declare("lbfgs_line_search", d.line_search, "lbfgs: strong_wolfe | none (fixed step lr)");
}

LbfgsOptions lbfgs_options_from(const Params& p) {
  LbfgsOptions o;
  auto count = [&](const char* key, int64_t lo) {
    const int64_t v = p.i(key);
    FK_CHECK(v >= lo && v <= 1000000, std::string("config key '") + key + "'",
             "an integer in [" + fk::to_text(lo) + ", 1000000]", fk::to_text(v));
    return static_cast<int>(v);
  };
  o.history = count("lbfgs_history", 1);
  o.max_iter = count("lbfgs_max_iter", 1);
  o.max_eval = count("lbfgs_max_eval", 0);
  auto tolerance = [&](const char* key) {
    const double v = p.d(key);
    FK_CHECK(v >= 0, std::string("config key '") + key + "'", "a tolerance >= 0",
             Params::render(v));
    return v;
  };
  o.tolerance_grad = tolerance("lbfgs_tolerance_grad");
  o.tolerance_change = tolerance("lbfgs_tolerance_change");
  o.line_search = p.choice("lbfgs_line_search", {"strong_wolfe", "none"});
  return o;
}

std::optional<fk::DType> autocast_from(const Params& p) {
  const std::string& a = p.choice("autocast", {"none", "bf16", "fp16"});
  if (a == "none") return std::nullopt;
  return a == "bf16" ? fk::DType::BF16 : fk::DType::F16;
}

NeuralFieldConfig neural_field_config_from(const Params& p) {
  NeuralFieldConfig fc;
  const int64_t hidden = p.i("hidden"), depth = p.i("depth"), octaves = p.i("n_octaves");
  FK_CHECK(hidden >= 1 && hidden <= kMaxHidden, "config key 'hidden'",
           "a width in [1, " + fk::to_text(kMaxHidden) + "]", fk::to_text(hidden));
  FK_CHECK(depth >= 1 && depth <= kMaxDepth, "config key 'depth'",
           "a layer count in [1, " + fk::to_text(kMaxDepth) + "]", fk::to_text(depth));
  FK_CHECK(octaves >= 0 && octaves <= 60, "config key 'n_octaves'", "an octave count in [0, 60]",
           fk::to_text(octaves));
  fc.hidden = static_cast<int>(hidden);
  fc.depth = static_cast<int>(depth);
  // A layer, or none: 0 or from depth on (a preset's default outlives a
  // shallower --set depth); a negative value was taken as none without a word.
  const int64_t skip = p.i("skip_at");
  FK_CHECK(skip >= 0, "config key 'skip_at'", "0 or a layer >= 1 (0 or >= depth: none)",
           fk::to_text(skip));
  fc.skip_at = static_cast<int>(std::min(skip, depth));
  fc.activation = p.choice("activation", {"tanh", "relu", "gelu", "silu", "softplus", "sine"});
  fc.n_octaves = static_cast<int>(octaves);
  fc.out_init_scale = p.d("out_init_scale");
  // (a scale <= 0 was refused by the weights' uniform draw, by its name)
  FK_CHECK(fc.out_init_scale > 0, "config key 'out_init_scale'", "a weight scale > 0",
           Params::render(fc.out_init_scale));
  if (p.has("autocast")) fc.autocast = autocast_from(p);
  if (p.has("include_input")) fc.include_input = p.b("include_input");
  return fc;
}

Curriculum curriculum_from(const Params& p, const fk::Dims& shape, const std::string& lr_key,
                           const std::string& steps_key) {
  const double lr = p.d(lr_key);
  FK_CHECK(lr > 0 && std::isfinite(lr), "config key '" + lr_key + "'", "a finite learning rate > 0",
           fk::to_text(lr));
  std::vector<int> steps;
  const std::vector<double> listed = p.list(steps_key);
  for (double s : listed) {
    FK_CHECK(s >= 1 && s <= kMaxSteps && s == static_cast<int>(s), "config key '" + steps_key + "'",
             "positive integers", Params::render(listed));
    steps.push_back(static_cast<int>(s));
  }
  const double anneal = p.d("anneal_fraction");
  FK_CHECK(anneal > 0 && anneal <= 1, "config key 'anneal_fraction'", "a fraction in (0, 1]",
           fk::to_text(anneal));
  const int64_t warmup = p.i("lr_warmup");
  const int64_t shortest = steps.empty() ? 1 : *std::min_element(steps.begin(), steps.end());
  FK_CHECK(warmup >= 0 && warmup < shortest, "config key 'lr_warmup'",
           "a step count in [0, " + fk::to_text(shortest) + ") (below every stage's steps)",
           fk::to_text(warmup));
  const int64_t factor = p.i("coarse_factor");
  FK_CHECK(factor >= 2 && factor <= 16, "config key 'coarse_factor'", "an integer in [2, 16]",
           fk::to_text(factor));
  // (checked here, by key: the stages refused a decay's lr, the domain a coarse grid of 0)
  const double decay = p.d("lr_decay");
  FK_CHECK(decay > 0, "config key 'lr_decay'", "a factor > 0", Params::render(decay));
  const int64_t min_coarse = p.i("min_coarse");
  FK_CHECK(min_coarse >= 1, "config key 'min_coarse'", "a cell count >= 1",
           fk::to_text(min_coarse));
  Curriculum c = Curriculum::multiscale(shape, steps, lr, decay, min_coarse, factor);
  const bool reset = p.b("anneal_reset");
  for (Stage& s : c.stages) {
    s.anneal_fraction = anneal;
    // Without the reset a later stage starts with every band open.
    s.anneal = reset || &s == &c.stages.front();
    s.lr_schedule = p.choice("lr_schedule", {"cosine", "warmup_cosine", "step", "constant"});
    s.lr_warmup = static_cast<int>(warmup);
  }
  c.optim.optimizer = p.choice("optimizer", {"adam", "adamw", "sgd", "lbfgs"});
  c.optim.weight_decay = p.d("weight_decay");
  c.optim.grad_clip = p.d("grad_clip");
  c.optim.lbfgs = lbfgs_options_from(p);
  c.validate();
  return c;
}

Curriculum scaled_curriculum_from(const Params& p, const fk::Dims& shape, const std::string& lr_key,
                                  const std::string& mult_key) {
  const double mult = p.d(mult_key);
  FK_CHECK(mult > 0 && std::isfinite(mult), "config key '" + mult_key + "'", "a value > 0",
           Params::render(mult));
  Curriculum c = curriculum_from(p, shape, lr_key);
  for (Stage& s : c.stages) s.lr *= mult;
  return c;
}

}  // namespace nefi
