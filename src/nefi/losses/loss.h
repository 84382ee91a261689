#pragma once
// Losses read a Context (fields, prediction, observation at the stage grid,
// domain, operator, stage, step, progress) and return a 0-dim tensor.
// Reductions are means over (observed) cells so that weights do not depend on
// the resolution. Data terms (is_data) drive stopping rules; regularisers
// read a named field. A LossSet holds weighted terms and can be re-weighted
// per curriculum stage.
// On a CUDA device a loss reads nothing back to the host: its value stays a
// 0-dim device tensor and what it derives from the observations alone is
// made on its first call for them (observation_constants.h), so every step
// after a solver's eager warm-up step can be captured as one CUDA graph
// (solve/step_graph.h). Every loss here keeps to that (data_losses.h,
// regularizers.h, nv_losses.h, band_limited_mse.h); one that does not makes
// the capture fail, and the stage's steps then run eagerly, its note saying why.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "fk/tensor.h"
#include "nefi/domain.h"
#include "nefi/field/field.h"
#include "nefi/measurement.h"
#include "nefi/operators/operator.h"

namespace nefi {

struct LossContext {
  const FieldMap* fields = nullptr;
  fk::Tensor pred;
  const Measurement* obs = nullptr;
  const Domain* domain = nullptr;
  const Operator* op = nullptr;
  int stage = 0;
  int step = 0;
  double progress = 1.0;
  const fk::Tensor& field(const std::string& name) const;
};

// N problems' terms at once (batch_invert): fields and prediction (N, ...),
// the N observations stacked, and each problem's noise level.
struct BatchLossContext {
  const FieldMap* fields = nullptr;
  fk::Tensor pred, obs, mask;  // mask undefined: every cell observed
  std::vector<double> noise_std;
  const Domain* domain = nullptr;
  const fk::Tensor& field(const std::string& name) const;
};

class Loss {
 public:
  explicit Loss(std::string name) : name_(std::move(name)) {}
  virtual ~Loss() = default;
  const std::string& name() const { return name_; }
  virtual bool is_data() const { return false; }
  virtual fk::Tensor forward(const LossContext& ctx) const = 0;
  // The term of every problem, (N), as N forward() calls would give it, in
  // one op each way; undefined when the loss has no batched form.
  virtual fk::Tensor forward_rows(const BatchLossContext& ctx) const {
    (void)ctx;
    return {};
  }
  // Equal for two losses that compute the same function (empty: unknown);
  // batch_invert evaluates one shared loss set when every problem's matches.
  virtual std::string signature() const { return ""; }
  // Throws the fk::Error forward throws on the CPU for observations this
  // loss cannot use (no energy, a zero mean, ...), reading them on the host.
  // On a device forward reads nothing back, so there such observations give
  // a non-finite value instead; the solvers call this once per stage through
  // LossSet::check_observations, so a device run refuses what a CPU run
  // refuses. Default: nothing to check.
  virtual void check_observations(const Measurement& obs) const { (void)obs; }
  // Whether forward reads ctx.progress (a weight that ramps as the stage
  // anneals): a device step then captures anew when progress moves, since a
  // replayed graph keeps the progress of its capture. Default: no.
  virtual bool reads_progress() const { return false; }

 private:
  std::string name_;
};

using LossPtr = std::shared_ptr<Loss>;

class LossSet {
 public:
  struct Term {
    LossPtr loss;
    double weight;
  };
  LossSet() = default;
  void add(LossPtr loss, double weight);
  // A copy with some weights replaced (by loss name; unknown names are an error).
  LossSet with_weights(const std::map<std::string, double>& overrides) const;
  struct Value {
    fk::Tensor total;                    // differentiable
    std::vector<fk::Tensor> components;  // unweighted, one per term
  };
  // Terms with weight 0 are skipped (their component is undefined).
  Value forward(const LossContext& ctx) const;
  const std::vector<Term>& terms() const { return terms_; }
  // Sum of the data components of a forward result.
  double data_loss(const std::vector<double>& components) const;
  // What every solver checks on a stage's measurement before the stage's
  // first step, on the host: check_mask, then check_observations of every
  // term with a non-zero weight. `whose` (e.g. "problem 3") is appended to
  // what an error says was given.
  void check_observations(const Measurement& obs, const std::string& where,
                          const std::string& whose = "") const;
  // Whether a term with a non-zero weight reads progress (Loss::reads_progress).
  bool reads_progress() const;

 private:
  std::vector<Term> terms_;
};

}  // namespace nefi
