#pragma once
// Operators built from others:
//   Nuisance(inner, gain, offset): exp(log_gain) F(x) + offset, with the gain
//     and offset optionally trainable (0-dim f32 leaves shared by every
//     resolution); fixed values model a known detector gain / background.
//   Sequential(ops): ops applied in order; homogeneity is the product.
//   Sum(ops): the sum of the ops' outputs on the same field.
//   Stack(ops, shape): the ops' outputs on the same field, each flattened,
//     one after another: several views or detectors as one measurement.
// Each forwards to its parts what a solve asks of an operator as a whole:
// host-only reasons, device notes, tables, trainable parameters and their
// move to a device solve's device.
#include <memory>
#include <string>
#include <vector>

#include "nefi/operators/operator.h"

namespace nefi {

// The first of `inner` that is host-only, as "inner operator KIND: REASON"
// (empty: none is); a composite is host-only when one of its parts is.
std::string inner_host_only_reason(const std::vector<OperatorPtr>& inner);
// Why the first of `inner` that is not graph-capturable is not, as "inner
// operator KIND: REASON" (empty: every part is).
std::string inner_not_capturable_reason(const std::vector<OperatorPtr>& inner);
// The first of `inner`'s device notes, as "inner operator KIND: NOTE".
std::string inner_device_note(const std::vector<OperatorPtr>& inner);
// Whether the parts' trainable parameters follow a device solve: some part's
// do, and every part that has parameters is such a part (one part's leaves
// left on the CPU would meet the others' on the device inside a step).
bool inner_parameters_follow_device(const std::vector<OperatorPtr>& inner);
// parameters_to on every part (once per distinct part).
void inner_parameters_to(const std::vector<OperatorPtr>& inner, fk::Device device);

class NuisanceOperator : public Operator {
 public:
  NuisanceOperator(OperatorPtr inner, double gain = 1.0, double offset = 0.0,
                   bool train_gain = false, bool train_offset = false);
  fk::Tensor forward(const FieldMap& fields) const override;
  fk::Tensor apply(const fk::Tensor& x) const override;
  std::shared_ptr<Operator> at_resolution(const fk::Dims& shape) const override;
  fk::Dims output_shape(const fk::Dims& s) const override { return inner_->output_shape(s); }
  std::optional<double> homogeneity() const override;
  bool batchable() const override { return inner_->batchable() && parameters().empty(); }
  bool graph_capturable() const override { return inner_->graph_capturable(); }
  std::string not_capturable_reason() const override {
    return inner_not_capturable_reason({inner_});
  }
  std::string host_only_reason() const override;
  std::string device_note() const override { return inner_device_note({inner_}); }
  std::string fidelity_tag() const override { return inner_->fidelity_tag(); }
  std::string kind() const override { return "nuisance"; }
  void prepare_tables(fk::Device device, fk::DType dtype) const override {
    inner_->prepare_tables(device, dtype);
  }
  std::vector<fk::Tensor> parameters() const override;
  // A trained gain and offset follow a device solve (every resolution holds
  // the same leaves, so moving them moves them for all), as do the inner
  // operator's parameters where they can.
  bool parameters_follow_device() const override;
  void parameters_to(fk::Device device) override;
  double gain() const;    // a host read of the leaf
  double offset() const;  // a host read of the leaf

 private:
  // The gain's log and the offset, one pair for every resolution.
  struct Leaves {
    fk::Tensor log_gain, offset;
  };
  fk::Tensor finish(const fk::Tensor& y) const;
  OperatorPtr inner_;
  std::shared_ptr<Leaves> leaves_;
  bool train_gain_, train_offset_;
};

class SequentialOperator : public Operator {
 public:
  explicit SequentialOperator(std::vector<OperatorPtr> ops);
  fk::Tensor forward(const FieldMap& fields) const override;
  fk::Tensor apply(const fk::Tensor& x) const override;
  std::shared_ptr<Operator> at_resolution(const fk::Dims& shape) const override;
  fk::Dims output_shape(const fk::Dims& shape) const override;
  std::optional<double> homogeneity() const override;
  bool batchable() const override;
  bool graph_capturable() const override;
  std::string not_capturable_reason() const override { return inner_not_capturable_reason(ops_); }
  std::string host_only_reason() const override;
  std::string device_note() const override { return inner_device_note(ops_); }
  std::string fidelity_tag() const override;
  std::string kind() const override { return "sequential"; }
  void prepare_tables(fk::Device device, fk::DType dtype) const override;
  std::vector<fk::Tensor> parameters() const override;
  bool parameters_follow_device() const override { return inner_parameters_follow_device(ops_); }
  void parameters_to(fk::Device device) override { inner_parameters_to(ops_, device); }

 private:
  std::vector<OperatorPtr> ops_;
};

class SumOperator : public Operator {
 public:
  explicit SumOperator(std::vector<OperatorPtr> ops);
  fk::Tensor apply(const fk::Tensor& x) const override;
  std::shared_ptr<Operator> at_resolution(const fk::Dims& shape) const override;
  std::optional<double> homogeneity() const override;
  bool batchable() const override;
  bool graph_capturable() const override;
  std::string not_capturable_reason() const override { return inner_not_capturable_reason(ops_); }
  std::string host_only_reason() const override;
  std::string device_note() const override { return inner_device_note(ops_); }
  std::string kind() const override { return "sum"; }
  void prepare_tables(fk::Device device, fk::DType dtype) const override;
  std::vector<fk::Tensor> parameters() const override;
  bool parameters_follow_device() const override { return inner_parameters_follow_device(ops_); }
  void parameters_to(fk::Device device) override { inner_parameters_to(ops_, device); }

 protected:
  std::vector<OperatorPtr> ops_;
};

// Everything but the output as Sum: the same field, devices, tables and
// parameters. shape: the field's grid (an input's last dims; the leading
// ones are a batch). Output (..., sum of the ops' output sizes).
class StackOperator : public SumOperator {
 public:
  StackOperator(std::vector<OperatorPtr> ops, const fk::Dims& shape);
  fk::Tensor apply(const fk::Tensor& x) const override;
  std::shared_ptr<Operator> at_resolution(const fk::Dims& shape) const override;
  fk::Dims output_shape(const fk::Dims& shape) const override;
  std::string kind() const override { return "stack"; }

 private:
  fk::Dims shape_;
};

}  // namespace nefi
