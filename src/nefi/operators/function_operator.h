#pragma once
// FunctionOperator: a forward model the caller brings as two host functions
// on f64 arrays, y = f(x) and its vector-Jacobian product g -> (df/dx)^T g at
// x (for a linear f, the adjoint applied to g). It is how a model written
// outside fieldkit (a Python function, a matrix, a simulator) enters a
// solve: forward and backward each call the functions once, on host copies
// of the field and the cotangent, so the solve runs on the CPU
// (host_only_reason) and its steps are never captured as a graph.
//
// The model works on its own grid only: at_resolution(shape) refuses any
// other grid (a multiscale curriculum needs a model that can rebuild itself
// on coarser grids, which a bare function cannot). Outputs of the wrong
// size or dtype are an fk::Error naming the function and what it returned.
#include <functional>
#include <optional>
#include <string>

#include "nefi/operators/operator.h"

namespace nefi {

struct ForwardModel {
  // x: f64 of the field's shape, contiguous, on the CPU (a copy the function
  // may keep) -> y: real, output_shape cells (any dtype fk reads, any layout).
  std::function<fk::Tensor(const fk::Tensor& x)> forward;
  // (x, g): g an f64 cotangent of output_shape -> real, x's shape.
  std::function<fk::Tensor(const fk::Tensor& x, const fk::Tensor& g)> vjp;
};

class FunctionOperator : public Operator, public std::enable_shared_from_this<FunctionOperator> {
 public:
  // homogeneity: p with f(c x) = c^p f(x) when the caller knows it (1: linear).
  FunctionOperator(fk::Dims in_shape, fk::Dims out_shape, ForwardModel model,
                   std::optional<double> homogeneity = std::nullopt, std::string name = "function");
  fk::Tensor apply(const fk::Tensor& x) const override;
  fk::Tensor vjp(const fk::Tensor& x, const fk::Tensor& g) const override;
  std::shared_ptr<Operator> at_resolution(const fk::Dims& shape) const override;
  fk::Dims output_shape(const fk::Dims& shape) const override;
  std::optional<double> homogeneity() const override { return homogeneity_; }
  bool graph_capturable() const override { return false; }
  std::string not_capturable_reason() const override;
  std::string host_only_reason() const override;
  std::string kind() const override { return "function"; }
  const fk::Dims& in_shape() const { return in_shape_; }
  const std::string& name() const { return name_; }

  // The model's raw calls, f64 in and out, checked (shape, finiteness is
  // the caller's business): what apply and its backward run.
  fk::Tensor call_forward(const fk::Tensor& x64) const;
  fk::Tensor call_vjp(const fk::Tensor& x64, const fk::Tensor& g64) const;

 private:
  fk::Dims in_shape_, out_shape_;
  ForwardModel model_;
  std::optional<double> homogeneity_;
  std::string name_;
};

}  // namespace nefi
