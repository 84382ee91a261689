#pragma once
// Field: maps a stage's grid to named physical fields. Fields are evaluated on
// the whole grid of a Domain (coordinates are cached per shape), with
// `progress` in [0, 1] driving coarse-to-fine annealing.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

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

  FlatParams& params() { return params_; }
  const FlatParams& params() const { return params_; }
  int64_t n_parameters() const { return params_.numel(); }
  const std::string& primary() const { return primary_; }

 protected:
  FlatParams params_;
  std::string primary_;
};

}  // namespace nefi
