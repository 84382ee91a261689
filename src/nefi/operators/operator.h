#pragma once
// Operator: the differentiable model of the instrument, fields -> prediction.
// Operators are pure functions of their inputs (caches keyed on shape are
// allowed) and know how to rebuild themselves for another grid of the same
// physical domain (at_resolution), sharing any trainable parameter.
//   homogeneity: p with F(c x) = c^p F(x) (1 for linear maps), if known
//   batchable: forward accepts leading batch dims (B, *shape) -> (B, *out)
//     with every batch row independent of the others (batch_invert relies
//     on it); off unless an operator declares it
//   graph_capturable: a step through it could be captured as one CUDA graph
//     (no host syncs, no data-dependent control flow)
//   not_capturable_reason: why not, where graph_capturable() is false (a
//     device solve's note carries it); default: the generic cause. An
//     operator built from others names its part
//   host_only_reason: why forward and its gradient cannot take a tensor on
//     a CUDA device (empty: they can, and answer on the input's device). An
//     operator that computes on host vectors says so here, and a device
//     solve refuses it before its first step (device_solve_refusal) instead
//     of failing on a mixed-device operand deep inside a loss
//   device_note: what forward does differently on a CUDA device than on the
//     host (a setting the device has no path for, replaced by one it has),
//     one line the solve appends to each stage's device_note; empty: nothing
//   fidelity_tag: the discretisation; the data generators carry a different
//     one (inverse-crime guard)
//   component_axes: axes of the field that index components (a flow's one
//     per spatial axis), not space; from_forward's tv and smooth priors take
//     no differences along them. Default: none
//   prepare_tables: makes the constant tables (uploaded matrices, spectra,
//     transfer functions, initial states, weight maps) forward and its
//     gradient use on a device, so that every table exists before a step is
//     captured as a CUDA graph: a captured step may not copy from the host,
//     so a table first made inside a capture fails it and the stage runs
//     eagerly. The solver calls it at every stage start, before the stage's
//     first step. Forward still makes a missing table itself (an eager
//     caller needs no hook); operators built from others forward it to their
//     parts. Default: nothing (no tables)
//   parameters_follow_device / parameters_to: trainable operator parameters
//     that a device solve moves to its device with the field (parameters_to
//     before the first stage, back to the CPU after the last) and trains
//     there; an operator whose parameters do not (the default) is refused by
//     a device solve (device_solve_refusal)
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fk/device.h"
#include "fk/dtype.h"
#include "fk/tensor.h"
#include "nefi/field/field.h"

namespace nefi {

class Operator {
 public:
  virtual ~Operator() = default;
  // Applies the operator to the primary field (override for several fields).
  virtual fk::Tensor forward(const FieldMap& fields) const;
  virtual fk::Tensor apply(const fk::Tensor& x) const = 0;
  virtual std::shared_ptr<Operator> at_resolution(const fk::Dims& shape) const = 0;
  virtual fk::Dims output_shape(const fk::Dims& shape) const { return shape; }
  virtual std::optional<double> homogeneity() const { return std::nullopt; }
  virtual bool linear() const { return homogeneity() && *homogeneity() == 1.0; }
  virtual bool batchable() const { return false; }
  virtual bool graph_capturable() const { return true; }
  virtual std::string not_capturable_reason() const;
  virtual std::string host_only_reason() const { return ""; }
  virtual std::string device_note() const { return ""; }
  virtual std::string fidelity_tag() const { return ""; }
  virtual std::vector<int> component_axes() const { return {}; }
  virtual std::string kind() const = 0;
  // The least value the operator takes in a cell and what it is (-inf: any;
  // an advection-diffusion's unknown diffusivity: 0), so a fit whose prior
  // lets the field below it is refused before its first step.
  virtual double input_lower_bound() const { return -std::numeric_limits<double>::infinity(); }
  virtual std::string input_name() const { return "field"; }
  // Makes the tables forward and its gradient use on `device` for inputs of
  // the real dtype `dtype` (nothing for a device that needs none, e.g. the CPU).
  virtual void prepare_tables(fk::Device /*device*/, fk::DType /*dtype*/) const {}
  // Trainable leaves (nuisance parameters), shared across resolutions.
  virtual std::vector<fk::Tensor> parameters() const { return {}; }
  virtual bool parameters_follow_device() const { return false; }
  // Moves parameters() to `device` (values kept, new leaves), for every
  // resolution sharing them. Only where parameters_follow_device().
  virtual void parameters_to(fk::Device /*device*/) {}
  // Vector-Jacobian product g^T dF/dx at x; through autograd unless an
  // operator supplies its own adjoint.
  virtual fk::Tensor vjp(const fk::Tensor& x, const fk::Tensor& g) const;

  std::string primary = "x";
};

using OperatorPtr = std::shared_ptr<Operator>;

// Why a solve on `device` cannot train through `op` (empty: it can): a
// host-only operator (host_only_reason), or trainable operator parameters
// that do not follow the device (a part's parameters that stay on the CPU
// with their optimizer state).
// Empty for the CPU. A pure function of the operator: checkable anywhere.
std::string device_solve_refusal(const Operator& op, fk::Device device);

}  // namespace nefi
