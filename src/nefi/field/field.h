#pragma once
// Field: maps a stage's grid to named physical fields. Fields are evaluated on
// the whole grid of a Domain (coordinates are cached per shape), with
// `progress` in [0, 1] driving coarse-to-fine annealing.
//
// A device path: a field whose parameters can train on a CUDA device
// (every kind nefi makes: NeuralField, GridField, HashGridField,
// LowRankField, SpectralField, ParametricField, LayeredField, the baselines
// and refine_edges' refit fields) overrides has_device_path and to, and
// retarget where an annealing step can be rewritten in place (LayeredField
// keeps Field's false); the others keep the defaults (no path; to()
// refuses a device).
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fk/device.h"
#include "fk/error.h"
#include "fk/tensor.h"
#include "nefi/domain.h"
#include "nefi/field/flat_params.h"

namespace nefi {

using FieldMap = std::map<std::string, fk::Tensor>;

class Field {
 public:
  virtual ~Field() = default;
  // Named fields of shape domain.shape(), differentiable w.r.t. params().flat().
  virtual FieldMap forward(const Domain& domain, double progress) = 0;
  // Called by the solver at every stage start (grid fields resample here).
  virtual void on_stage_start(const Domain& domain) { (void)domain; }
  // Re-initialises every parameter from `seed` (restarts, reproducibility).
  virtual void reset_parameters(uint64_t seed) = 0;
  virtual std::string kind() const = 0;
  // Half-precision trunk, if any (the solver adds a GradScaler for f16).
  virtual std::optional<fk::DType> autocast() const { return std::nullopt; }

  virtual bool has_device_path() const { return false; }
  // Moves the parameters (and what forward caches) to `d`: the CPU always;
  // a CUDA device only with a device path (else fk::Error naming the kind).
  virtual void to(fk::Device d) {
    FK_CHECK(d.is_cpu(), "nefi::Field::to",
             "the cpu for a '" + kind() + "' field (it has no device path)", d.str());
  }
  // On a device: rewrites in place what the next forward at `progress`
  // reads that progress moves (an annealing gate), so that a captured graph
  // of the forward stays valid; false when that forward's work or buffers
  // differ (a new capture), or off a device. It speaks for steps within a
  // stage: a stage change always captures anew (a new grid, new buffers).
  virtual bool retarget(double progress) {
    (void)progress;
    return false;
  }

  FlatParams& params() { return params_; }
  const FlatParams& params() const { return params_; }
  int64_t n_parameters() const { return params_.numel(); }
  const std::string& primary() const { return primary_; }

 protected:
  FlatParams params_;
  std::string primary_;
};

}  // namespace nefi
