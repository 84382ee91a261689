#pragma once
// FunctionOperator: a forward model the caller brings as two host functions
// on f64 arrays, y = f(x_1, .., x_k) of k named fields on one grid and its
// vector-Jacobian product g -> ((df/dx_1)^T g, .., (df/dx_k)^T g) at those
// fields (for a linear f of one field, the adjoint applied to g). It is how
// a model written outside fieldkit (a Python function, a matrix, a
// simulator) enters a solve: forward and backward each call the functions
// once, on host copies of the fields and the cotangent, so the solve runs
// on the CPU (host_only_reason) and its steps are never captured as a graph.
//
// A model may carry trainable parameters of its own (a torch module's
// weights, an unknown blur width): f32 leaves that every resolution shares
// and the solve trains with the field (Operator::parameters). The model's
// functions receive their f64 values after the fields, and its vjp returns
// their gradients after the fields'.
//
// The model works on its own grid: at_resolution(shape) of a coarser grid
// is the model seen through a prolongation (prolonged.h), so a multiscale
// curriculum's coarse stages train a coarse field through the same model;
// a finer grid is refused. Outputs of the wrong
// size or dtype, or a missing field, are an fk::Error naming the function
// and what it got.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "nefi/operators/operator.h"

namespace nefi {

// Whether shapes a and b agree up to axes of length 1 (a (m, 1) column is an
// m-vector; a transposed array of the right size is not).
bool same_long_axes(const fk::Dims& a, const fk::Dims& b);

struct ForwardModel {
  // xs: one f64 tensor per input field (the operator's inputs() order) of
  // the field's shape, then one per parameter of its shape, contiguous, on
  // the CPU (copies the function may keep) -> y: real, of output_shape up
  // to axes of length 1, any floating dtype.
  std::function<fk::Tensor(const std::vector<fk::Tensor>& xs)> forward;
  // (xs, g): g an f64 cotangent of output_shape -> one real gradient per
  // input field, each of the field's shape, then one per parameter.
  std::function<std::vector<fk::Tensor>(const std::vector<fk::Tensor>& xs, const fk::Tensor& g)>
      vjp;
};

class FunctionOperator : public Operator, public std::enable_shared_from_this<FunctionOperator> {
 public:
  // homogeneity: p with f(c x) = c^p f(x) when the caller knows it (1:
  // linear); inputs: the field names it reads (the first is its primary);
  // parameters: the starting values of its trainable parameters (real).
  FunctionOperator(fk::Dims in_shape, fk::Dims out_shape, ForwardModel model,
                   std::optional<double> homogeneity = std::nullopt, std::string name = "function",
                   std::vector<std::string> inputs = {"x"},
                   const std::vector<fk::Tensor>& parameters = {});
  fk::Tensor forward(const FieldMap& fields) const override;
  fk::Tensor apply(const fk::Tensor& x) const override;                     // one input only
  fk::Tensor vjp(const fk::Tensor& x, const fk::Tensor& g) const override;  // one input only
  std::shared_ptr<Operator> at_resolution(const fk::Dims& shape) const override;
  fk::Dims output_shape(const fk::Dims& shape) const override;
  std::optional<double> homogeneity() const override { return homogeneity_; }
  bool graph_capturable() const override { return false; }
  std::string not_capturable_reason() const override;
  std::string host_only_reason() const override;
  std::string kind() const override { return "function"; }
  const fk::Dims& in_shape() const { return in_shape_; }
  const std::string& name() const { return name_; }
  const std::vector<std::string>& inputs() const { return inputs_; }
  std::vector<fk::Tensor> parameters() const override { return params_; }

  // The fields through the model, differentiable in each.
  fk::Tensor apply_fields(const std::vector<fk::Tensor>& xs) const;
  // The model's raw calls, f64 in and out, shapes checked: what
  // apply_fields and its backward run.
  fk::Tensor call_forward(const std::vector<fk::Tensor>& xs64) const;
  std::vector<fk::Tensor> call_vjp(const std::vector<fk::Tensor>& xs64,
                                   const fk::Tensor& g64) const;

 private:
  fk::Dims in_shape_, out_shape_;
  ForwardModel model_;
  std::optional<double> homogeneity_;
  std::string name_;
  std::vector<std::string> inputs_;
  std::vector<fk::Tensor> params_;  // f32 leaves
};

}  // namespace nefi
