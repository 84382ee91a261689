#pragma once
// Instance: a registered inverse problem end to end — a typed config, an
// independent data generator (scene -> measurement on a finer f64 grid), the
// inversion problem for each method (neural, grid, ...), and its metrics.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nefi/data_labels.h"
#include "nefi/field/neural_field.h"
#include "nefi/measurement.h"
#include "nefi/params.h"
#include "nefi/solve/curriculum.h"
#include "nefi/solve/result.h"
#include "nefi/solve/solver.h"

namespace nefi {

struct RunOutput {
  std::string method;
  Result result;
  fk::Tensor gt;              // ground truth at the inversion grid, f64
  Measurement measurement;    // what the method saw
  fk::Tensor reconstruction;  // the primary field, f64
  std::map<std::string, double> metrics;
  Curriculum curriculum;
  uint64_t seed = 0;  // the data seed: what evaluate() redraws the scene from
  // The run's cap on total steps (--smoke-steps, run.max_total_steps; 0:
  // none): after_solve's refinement keeps to it too.
  int step_cap = 0;
};

// What a gradient method solves: the inverse problem with its curriculum,
// the measurement it sees and the ground truth (batch_invert and the
// batched benchmark build problems through it).
struct ProblemSetup {
  InverseProblem problem;
  Curriculum curriculum;
  Measurement measurement;
  fk::Tensor gt;
};

class Instance {
 public:
  virtual ~Instance() = default;
  virtual std::string name() const = 0;
  virtual std::string summary() const = 0;
  virtual Params default_config() const = 0;
  virtual std::vector<std::string> methods() const = 0;
  virtual std::vector<std::string> scenes() const = 0;
  // The fidelity tag of the data generator that `cfg` selects (the
  // instances' <instance>_data_tag() below, unless a config key picks
  // another generator): a benchmark compares it with each method's operator
  // tag (Operator::fidelity_tag), equal tags being an inverse crime. "": not
  // known (the guard then labels the regime unknown).
  virtual std::string data_tag(const Params& cfg) const {
    (void)cfg;
    return "";
  }
  // What the primary field and the measurement at `cfg` are, with their
  // units and axes (the figures' colour bars, axis labels and ticks).
  virtual DataLabels data_labels(const Params& cfg) const = 0;
  // The measurement and ground truth for `seed` (no inversion code involved).
  virtual std::pair<Measurement, fk::Tensor> make_measurement(const Params& cfg,
                                                              uint64_t seed) const = 0;
  virtual RunOutput run(const Params& cfg, const std::string& method, uint64_t seed,
                        const SolverOptions& solver) const = 0;
  // The problem `method` solves for `seed`, for the methods that run the
  // solver loop on one InverseProblem; nullopt for the others (direct
  // baselines) and for instances that do not offer it.
  std::optional<ProblemSetup> setup(const Params& cfg, const std::string& method,
                                    uint64_t seed) const {
    return setup_from(cfg, method, seed, nullptr);
  }
  // The same built on `measured` when it is not null: a measured dataset
  // (run.data) in place of the synthetic measurement of `seed`, through
  // measured_or, so whatever the problem derives from its data (Poisson
  // intensities, a log-loss floor, depth compensation) comes from it; no
  // ground truth then.
  virtual std::optional<ProblemSetup> setup_from(const Params& cfg, const std::string& method,
                                                 uint64_t seed, const Measurement* measured) const {
    (void)cfg, (void)method, (void)seed, (void)measured;
    return std::nullopt;
  }
  // A stage run on a solved output before it is scored (the 3-D instances'
  // edge refinement), from `solved`, the problem as set up: it records its
  // own metrics and fields in `out`. run() and batched runs both call it
  // (finish_solved_output in run_method.h).
  virtual void after_solve(const Params& cfg, const InverseProblem& solved, RunOutput& out) const {
    (void)cfg, (void)solved, (void)out;
  }
  // Every metric run() reports that after_solve does not, for an output
  // solved here or elsewhere (batched); out.seed is the run's data seed.
  virtual std::map<std::string, double> evaluate(const Params& cfg, const RunOutput& out) const {
    (void)cfg, (void)out;
    return {};
  }
  // Metrics a run reports only where they are defined (a depth error where a
  // defect was found, a match distance where a source was matched): a bench
  // may ask for them by name (--metrics) though a short run lacks them.
  virtual std::vector<std::string> occasional_metrics() const { return {}; }
};

using InstancePtr = std::shared_ptr<Instance>;

const std::vector<InstancePtr>& all_instances();
// Throws fk::Error listing the registered names when `name` is unknown.
InstancePtr find_instance(const std::string& name);

InstancePtr make_toy1d();
InstancePtr make_deconvolution();
InstancePtr make_thermal_tomography();
InstancePtr make_poisson_source();
InstancePtr make_sparse_view_ct();
InstancePtr make_deconvolution3d();
InstancePtr make_holography();
InstancePtr make_nv_relaxometry();
InstancePtr make_current_density();
InstancePtr make_reaction_diffusion();
InstancePtr make_eit();
InstancePtr make_darcy_flow();
InstancePtr make_ct3d();
InstancePtr make_diffraction_tomography();
InstancePtr make_wave_fwi();
InstancePtr make_photoacoustic3d();
InstancePtr make_dot3d();
// Fidelity tags of the data generators (the inversion operators carry others).
// The data tag of a blur drawn directly (f64, in space) on a grid
// `supersample` times finer than the inversion grid: "blur-4x-float64-direct".
std::string direct_blur_data_tag(int64_t supersample);
const char* toy1d_data_tag();
const char* deconvolution_data_tag();
const char* thermal_tomography_data_tag();
const char* poisson_source_data_tag();
const char* sparse_view_ct_data_tag();
const char* deconvolution3d_data_tag();
const char* holography_data_tag();
const char* nv_relaxometry_data_tag();
const char* current_density_data_tag();
const char* reaction_diffusion_data_tag();
const char* eit_data_tag();
const char* darcy_flow_data_tag();
const char* ct3d_data_tag();
const char* diffraction_tomography_data_tag();
const char* wave_fwi_data_tag();
const char* photoacoustic3d_data_tag();
const char* dot3d_data_tag();

// The instance's own solver among its methods: neural where it has one, else
// its first (thermal_tomography's nefty).
std::string default_method(const Instance& inst);
// What `name` means on `inst`: one of inst.methods() as given, or one of the
// reference's names for the instance's own solver (neural, nefi, default,
// ours, netmy, nefty), each meaning default_method. Anything else is an
// fk::Error at `where` (the option or key) listing both.
std::string canonical_method(const Instance& inst, const std::string& name,
                             const std::string& where);
// What a problem is built from: the synthetic (measurement, truth) of a
// seed, or, when `measured` is not null (run.data), that dataset in the
// measurement's place with no truth: fk::Error at run.data / run.mask unless
// it has the synthetic measurement's shape, real finite values and a valid
// mask; converted to its dtype. Without a mask of its own it keeps the
// synthetic one (the instrument's: sensor positions, excluded pairs).
std::pair<Measurement, fk::Tensor> measured_or(std::pair<Measurement, fk::Tensor> synthetic,
                                               const Measurement* measured);
// A method's output before it runs: the method, the data it sees and the truth.
RunOutput start_run_output(const std::string& method, const Measurement& measurement,
                           const fk::Tensor& gt);
// The tail every optimising method shares: solves `problem` on `curriculum`
// with the run's seed (and the caller's solver switches) and records the
// curriculum (the options' overrides applied, then their cap), the result and
// the problem's primary field (f64) in `out`.
void solve_and_record(InverseProblem problem, const Curriculum& curriculum, uint64_t seed,
                      const SolverOptions& so, RunOutput& out);

// The imaging instances' problem before its losses: `heads` on a neural field
// (seeded, coordinates of the domain's dimension) when `method` is "neural",
// else on a grid of the domain's shape.
InverseProblem field_problem(std::string name, const Domain& domain, OperatorPtr op,
                             Measurement measurement, std::vector<HeadPtr> heads,
                             const std::string& method, const NeuralFieldConfig& field,
                             uint64_t seed);

// Curriculum keys shared by the instances: steps (list), lr, lr_decay,
// lr_schedule, lr_warmup, anneal_fraction, anneal_reset, coarse_factor,
// weight_decay, grad_clip, min_coarse and the lbfgs_* keys.
void declare_curriculum_keys(Params& p, std::vector<double> steps, double lr);
// The curriculum those keys describe at `shape`, starting at the learning
// rate under `lr_key`, with the stage steps under `steps_key` (a grid
// baseline's own steps); checked (an error names the key).
Curriculum curriculum_from(const Params& p, const fk::Dims& shape, const std::string& lr_key,
                           const std::string& steps_key = "steps");
// The curriculum at `lr_key` with every stage's learning rate times the
// finite value > 0 under `mult_key` (a grid baseline's lr as a multiple of
// the neural field's).
Curriculum scaled_curriculum_from(const Params& p, const fk::Dims& shape, const std::string& lr_key,
                                  const std::string& mult_key);
// The `autocast` key: none | bf16 | fp16 (the MLP trunk only; the output
// projection, heads, operator and losses stay f32).
std::optional<fk::DType> autocast_from(const Params& p);
// The L-BFGS keys (lbfgs_history, lbfgs_max_iter, lbfgs_max_eval,
// lbfgs_tolerance_grad, lbfgs_tolerance_change, lbfgs_line_search) and their read.
void declare_lbfgs_keys(Params& p);
LbfgsOptions lbfgs_options_from(const Params& p);
// The neural field's keys shared by the instances: hidden, depth, skip_at,
// activation, n_octaves, out_init_scale, autocast (if declared) and
// include_input (if declared); checked (an error names the key).
NeuralFieldConfig neural_field_config_from(const Params& p);

}  // namespace nefi
