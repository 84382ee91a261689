#pragma once
// DepthCompensatedOperator: depth compensation for diffuse imaging (nefi.md
// §2.9's sensitivity map put to use), a training-time preconditioner. The
// forward value is the inner operator's; the gradient a loss sends back
// into the field through apply() is scaled per layer along `axis` by
//   w_k = C s_k^(-gamma/2),  s_k = mean over layer k of diag(J^T J) at x0,
// J the inner operator's Jacobian at the uniform field x0 with the rows of
// `mask` kept (Hutchinson, `probes` Rademacher probes of J^T), and C such
// that sum_k s_k w_k^2 = sum_k s_k: the deep cells, which the data barely
// see, get a larger share of a step without changing the step's overall
// scale. gamma = 0 is the inner operator exactly; gamma = 1 equalises the
// layers' column norms. Used by the update only: vjp() is the inner
// operator's true J^T, so diagnostics see the physics, and the weights are
// recomputed at every resolution.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <memory>

#include "nefi/operators/composite.h"
#include "nefi/operators/operator.h"
#include "nefi/operators/table_cache.h"

namespace nefi {

struct DepthCompensation {
  double gamma = 0.5;
  double x0 = 0;      // the uniform field the sensitivity is taken at
  int axis = -1;      // the depth axis (negative: from the end)
  int probes = 16;    // Hutchinson probes per resolution
  uint64_t seed = 0;  // the probes' stream
  fk::Tensor mask;    // the output's observed entries (undefined: all)
};

class DepthCompensatedOperator : public Operator {
 public:
  // Throws fk::Error on gamma < 0, probes < 1, an axis outside the inner
  // operator's grid or a mask whose shape is not the output's.
  DepthCompensatedOperator(OperatorPtr inner, const fk::Dims& shape, DepthCompensation options);
  fk::Tensor apply(const fk::Tensor& x) const override;
  fk::Tensor vjp(const fk::Tensor& x, const fk::Tensor& g) const override;
  std::shared_ptr<Operator> at_resolution(const fk::Dims& shape) const override;
  fk::Dims output_shape(const fk::Dims& s) const override { return inner_->output_shape(s); }
  bool graph_capturable() const override { return inner_->graph_capturable(); }
  std::string not_capturable_reason() const override {
    return inner_not_capturable_reason({inner_});
  }
  std::string host_only_reason() const override { return inner_host_only_reason({inner_}); }
  std::string device_note() const override { return inner_device_note({inner_}); }
  std::string fidelity_tag() const override { return inner_->fidelity_tag(); }
  std::string kind() const override { return "depth_compensated"; }
  void prepare_tables(fk::Device device, fk::DType dtype) const override;
  std::vector<fk::Tensor> parameters() const override { return inner_->parameters(); }
  bool parameters_follow_device() const override { return inner_->parameters_follow_device(); }
  void parameters_to(fk::Device device) override { inner_->parameters_to(device); }
  // w_k per layer along the axis, and s_k (as measured).
  const std::vector<double>& layer_weights() const { return weights_; }
  const std::vector<double>& layer_sensitivity() const { return sensitivity_; }

 private:
  OperatorPtr inner_;
  fk::Dims shape_;
  DepthCompensation options_;
  std::vector<double> sensitivity_, weights_;
  fk::Tensor cell_weights64_;  // (shape) f64
  // Its copies in the dtypes and on the devices applied to (new per resolution).
  std::shared_ptr<DeviceCopies> weights_on_ = std::make_shared<DeviceCopies>();
  fk::Tensor cell_weights_on(fk::DType dtype, fk::Device device) const;
};

}  // namespace nefi
