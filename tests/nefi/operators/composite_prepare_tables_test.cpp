// Operator::prepare_tables through the operators built from others: each
// forwards the solve's device and dtype to every inner operator exactly
// once (the solver calls the hook on the outermost operator only). Checked
// on the host with recording fakes: the hook is a plain virtual call for any
// device, and the fakes upload nothing (a capture after a real operator's
// hook is tests/nefi/cuda/prepare_tables_device_test.cpp).
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fk/device.h"
#include "fk/dtype.h"
#include "nefi/operators/composite.h"
#include "nefi/operators/depth_compensated.h"
#include "nefi/operators/operator.h"
#include "nefi/operators/pointwise.h"

namespace {

using Log = std::vector<std::string>;

// The identity, logging "<name> <device> <dtype>" at every prepare_tables.
class RecordingTables : public nefi::Operator {
 public:
  RecordingTables(std::string name, std::shared_ptr<Log> log)
      : name_(std::move(name)), log_(std::move(log)) {}
  fk::Tensor apply(const fk::Tensor& x) const override { return x; }
  std::shared_ptr<nefi::Operator> at_resolution(const fk::Dims&) const override {
    return std::make_shared<RecordingTables>(name_, log_);
  }
  std::optional<double> homogeneity() const override { return 1.0; }
  std::string kind() const override { return "recording_tables"; }
  void prepare_tables(fk::Device device, fk::DType dtype) const override {
    log_->push_back(name_ + " " + device.str() + " " + fk::name(dtype));
  }

 private:
  std::string name_;
  std::shared_ptr<Log> log_;
};

const fk::Device kGpu = fk::cuda_device(0);

TEST(NefiCompositePrepareTables, SequentialAndSumReachEveryPartInOrder) {
  auto log = std::make_shared<Log>();
  auto a = std::make_shared<RecordingTables>("a", log);
  auto b = std::make_shared<RecordingTables>("b", log);
  nefi::SequentialOperator({a, b}).prepare_tables(kGpu, fk::DType::F32);
  nefi::SumOperator({b, a}).prepare_tables(kGpu, fk::DType::F64);
  const std::string gpu = kGpu.str();
  EXPECT_EQ(*log, Log({"a " + gpu + " f32", "b " + gpu + " f32", "b " + gpu + " f64",
                       "a " + gpu + " f64"}));
}

TEST(NefiCompositePrepareTables, NestedCompositesReachEveryLeafOnce) {
  auto log = std::make_shared<Log>();
  auto a = std::make_shared<RecordingTables>("a", log);
  auto b = std::make_shared<RecordingTables>("b", log);
  auto c = std::make_shared<RecordingTables>("c", log);
  // A part without tables (the default hook) sits between them harmlessly.
  auto none = std::make_shared<nefi::IdentityOperator>();
  auto sum = std::make_shared<nefi::SumOperator>(std::vector<nefi::OperatorPtr>{b, none, c});
  auto seq = std::make_shared<nefi::SequentialOperator>(std::vector<nefi::OperatorPtr>{a, sum});
  const nefi::NuisanceOperator op(seq, 2.0, 0.5);
  op.prepare_tables(kGpu, fk::DType::F32);
  const std::string gpu = kGpu.str();
  EXPECT_EQ(*log, Log({"a " + gpu + " f32", "b " + gpu + " f32", "c " + gpu + " f32"}));
}

TEST(NefiCompositePrepareTables, DepthCompensatedReachesItsInnerOperator) {
  auto log = std::make_shared<Log>();
  const fk::Dims shape{4, 3};
  const nefi::DepthCompensatedOperator op(std::make_shared<RecordingTables>("inner", log), shape,
                                          nefi::DepthCompensation{});
  log->clear();  // construction applies the inner operator only (its probes)
  // On the host: the compensation's own cell weights need no copy there.
  op.prepare_tables(fk::kCPU, fk::DType::F64);
  EXPECT_EQ(*log, Log({"inner " + fk::kCPU.str() + " f64"}));
}

}  // namespace
