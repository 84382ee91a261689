#pragma once
// batch_invert: N independent inverse problems that share a domain, a field
// architecture and a batchable operator, solved in ONE optimisation loop.
// Per step:
//   field    the N parameter rows (N, P) -> one batched MLP op (batched_mlp.h)
//            on the shared features (grid fields: the rows are the values)
//            -> heads on (N, *shape)
//   operator called once on (N, *shape)
//   losses   reduced per problem: when every problem's LossSet matches (same
//            terms, zero weights in the same places, each with a batched
//            form: MSE, TV, L1, Tikhonov, Laplacian, range, relative MSE,
//            Huber, Poisson NLL), one shared set evaluated on the whole
//            block, one op per term each way, each problem's own weights
//            weighing its row (from_forward's data and penalty weights
//            differ per problem); otherwise each problem's LossSet on its own row of the
//            fields and prediction (split_rows: one op each way, so a
//            problem's gradient never touches the others'); objective sum_b L_b
//   Adam(W)  per problem: its own moments, step count, lr multiplier and
//            clip factor (its own gradient norm), through the very update
//            loop FusedOptimizer runs, so a problem's first update is bitwise the
//            sequential one
// Per problem, as the sequential Solver does for one: the NaN guard (restore
// the problem's last good row, halve its lr multiplier, reset its moments;
// more than max_bad_steps in a row fails the problem), EMA, early stopping
// and the discrepancy stop. A stopped problem is frozen for the rest of the
// stage (no field evaluation, zero gradient, no update), a failed one for the
// rest of the run; the others go on. A time budget ends the whole batch.
// One Result per problem, finished like Solver::run (final fields at the last
// stage's grid and trained progress, postprocess, prediction); its timings
// are the batch's divided by N (the per-problem cost). Each problem's Field
// holds its solution afterwards.
//
// Requirements (batchable_reason names the first one broken): at least one
// problem, each with its own field object; the same domain; NeuralFields of one architecture (any
// activation; an f32 or bf16 autocast trunk) and heads, or GridFields of one shape and heads
// (their (N, P) blocks made anew at each stage start, P following the stage
// grid); heads that reduce over a field (zero_mean, support_masked) reduce
// each problem's row (Head::transform_rows); operators of one kind
// that are batchable (Operator::batchable(): FFT convolution, Poisson DST,
// Radon 2-D / 3-D, holography, NV relaxometry, magnetostatics, Born / Rytov,
// identity, pointwise, saturation, a nuisance without trainable parameters,
// sequential / sum of those; not heat or other time-stepping or
// implicit-solve operators) and have no trainable parameters; a measurement each; the optimizer
// adam or adamw; one run (restarts 1). Each problem's measurement passes
// LossSet::check_observations for every stage (a mask observing some cell,
// data each weighted loss can normalise), checked on the host before any
// work on either path and again at each stage's grid, as the Solver does:
// an fk::Error naming the problem, never a NaN row.
//
// device (BatchOptions::device, a CUDA device): the N fields' parameters as
// one (N, P) block, their Adam(W) moments, the stacked measurements, the
// operator and the losses live on the device; a step evaluates the N neural
// fields as one grouped MLP (grouped_mlp.h: one strided-batched GEMM per
// layer each way, on the shared features), or reads the N grid fields' rows
// as their values (resampled on the host at each stage start), then the
// heads on (N, *shape), calls the
// operator once and the shared LossSet's batched forms once per term, and
// runs one backward of sum_b L_b, then per problem the squared gradient
// norm and the gated device Adam(W) (the Solver's sync-free update: the clip
// factor from the norm on the device, no write for a non-finite or frozen
// problem), each problem's scalars coming and going through one
// BatchStepBlock. Its one host read comes after the step: per problem the
// loss total, the components, the squared gradient norm (and the
// discrepancy's masked MSE) in one copy; the host then keeps the books, or
// runs a problem's NaN guard (an in-place device restore of its last good
// parameters). The step enqueues no host work, so it is captured as one CUDA
// graph per stage and replayed (StepGraph; BatchOptions::cuda_graph or the
// knob NEFI_CUDA_GRAPH off, an operator that is not capturable or a failed
// capture: eager steps), each problem's StageResult::device_note saying
// which and why. Results come back on the host as on the CPU. batch_device_reason
// names what a device batch refuses, before any work: fields other than
// neural and grid, EMA, a
// host-only operator (device_solve_refusal), fp16 autocast, loss sets that
// do not match term by term at some stage (or loss_mode loop), chunk_size.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "fk/device.h"
#include "nefi/solve/curriculum.h"
#include "nefi/solve/problem.h"
#include "nefi/solve/result.h"

namespace nefi {

struct BatchStepInfo {
  int stage = 0, step = 0;
  int active = 0;      // problems that took this step
  double step_ms = 0;  // the whole batch's step
  int64_t step_ops = 0;
};

struct BatchOptions {
  std::vector<uint64_t> seeds;  // field initialisation per problem (empty: all 0)
  bool nan_guard = true;
  int checkpoint_every = 25;
  int max_bad_steps = 10;
  bool raise_on_error = true;  // throw at the end when a problem failed
  // Problems per fused step (0: all N, one operator call on (N, *shape)). A
  // step then runs ceil(N / chunk_size) fused sub-steps in turn, each with
  // its own field op, operator call and backward: the working set of a
  // sub-step stays in cache and memory is capped by the chunk, at the cost
  // of proportionally more ops. Results do not depend on it.
  int chunk_size = 0;
  // auto: one shared LossSet evaluated on the whole block when every
  // problem's matches (checked at each stage start), else each problem's own
  // on its rows; shared: require the former; loop: always the latter.
  std::string loss_mode = "auto";
  // Where the batch trains (see the header comment); CPU by default.
  fk::Device device = fk::kCPU;
  // A device batch's step captured as one CUDA graph per stage and replayed:
  // unset follows the knob NEFI_CUDA_GRAPH (as SolverOptions::cuda_graph).
  std::optional<bool> cuda_graph;
  // Profiling switches, as in SolverOptions.
  bool stopping_rules = true;
  std::optional<int> only_stage;
  std::function<bool(const BatchStepInfo&)> on_step;  // false ends the stage
};

// Why these problems cannot be solved together; nullopt when they can.
std::optional<std::string> batchable_reason(const std::vector<InverseProblem>& problems,
                                            const Curriculum& curriculum);

// Why these problems cannot be solved together on options.device (nullopt
// when they can; always nullopt for the CPU). A pure function of its
// arguments: checkable in a CPU-only build.
std::optional<std::string> batch_device_reason(const std::vector<InverseProblem>& problems,
                                               const Curriculum& curriculum,
                                               const BatchOptions& options);

// Throws fk::Error with batchable_reason's message when the problems cannot
// be batched (batch_device_reason's on a device), and (raise_on_error) "problem(s) [i, ...] failed"
// at the end.
std::vector<Result> batch_invert(std::vector<InverseProblem> problems, const Curriculum& curriculum,
                                 const BatchOptions& options = {});

}  // namespace nefi
