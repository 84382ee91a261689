// StageRun's order of calls into the operator: at every stage start the
// stage's operator prepares its tables (Operator::prepare_tables) for the
// solve's device and the field's dtype, before the stage's first step applies
// it -- on a device, before anything can be captured. Checked with a
// recording operator on the host (the hook is called for every device; a
// capture after it is tests/nefi/cuda/prepare_tables_device_test.cpp).
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fk/factory.h"
#include "fk/test_util.h"
#include "nefi/field/grid_field.h"
#include "nefi/losses/data_losses.h"
#include "nefi/solve/solver.h"

namespace {

using Log = std::vector<std::string>;

// The identity at one resolution, logging "prepare <shape> <device> <dtype>"
// and "apply <shape>".
class RecordingIdentity : public nefi::Operator {
 public:
  RecordingIdentity(fk::Dims shape, std::shared_ptr<Log> log)
      : shape_(std::move(shape)), log_(std::move(log)) {}
  fk::Tensor apply(const fk::Tensor& x) const override {
    log_->push_back("apply " + shape_.str());
    return x;
  }
  std::shared_ptr<nefi::Operator> at_resolution(const fk::Dims& shape) const override {
    return std::make_shared<RecordingIdentity>(shape, log_);
  }
  std::optional<double> homogeneity() const override { return 1.0; }
  std::string kind() const override { return "recording_identity"; }
  void prepare_tables(fk::Device device, fk::DType dtype) const override {
    log_->push_back("prepare " + shape_.str() + " " + device.str() + " " + fk::name(dtype));
  }

 private:
  fk::Dims shape_;
  std::shared_ptr<Log> log_;
};

// A grid field on [8] seen through a RecordingIdentity, with one loss.
nefi::InverseProblem recorded_problem(const std::shared_ptr<Log>& log, nefi::LossPtr loss) {
  nefi::InverseProblem p;
  p.domain = nefi::Domain({8});
  p.field = std::make_shared<nefi::GridField>(p.domain.shape(),
                                              std::vector<nefi::HeadPtr>{nefi::identity_head("x")});
  p.op = std::make_shared<RecordingIdentity>(p.domain.shape(), log);
  p.losses.add(std::move(loss), 1.0);
  return p;
}

TEST(NefiStageRun, EveryStagePreparesItsOperatorBeforeItsFirstStep) {
  auto log = std::make_shared<Log>();
  nefi::InverseProblem p = recorded_problem(log, nefi::mse_loss());
  p.measurement.data =
      fk::from_vector(std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8}).to(fk::DType::F32);
  // Two stages: 2 steps at [4], then 3 at [8].
  const nefi::Curriculum c = nefi::Curriculum::multiscale({8}, {2, 3}, 0.1, 0.5, 4);
  ASSERT_EQ(c.stages[0].shape, fk::Dims({4}));
  nefi::Solver(p, c).run();

  const std::string f32 = fk::name(fk::DType::F32);
  const Log want_prefix{"prepare [4] cpu " + f32,
                        "apply [4]",
                        "apply [4]",
                        "prepare [8] cpu " + f32,
                        "apply [8]",
                        "apply [8]",
                        "apply [8]"};
  ASSERT_GE(log->size(), want_prefix.size());
  EXPECT_EQ(Log(log->begin(), log->begin() + want_prefix.size()), want_prefix);
  // Whatever runs after the stages (the final fields) prepares nothing more.
  int prepares = 0;
  for (const std::string& e : *log) prepares += e.rfind("prepare", 0) == 0;
  EXPECT_EQ(prepares, 2);
}

// A stage's observations are checked at its setup, before the operator is
// prepared or applied, on every device (a device loss would give a NaN loss
// instead: LossSet::check_observations). Huber has no check of its own, so
// without this an all-zero mask gives NaN on the CPU too.
TEST(NefiStageRun, ObservationsALossRefusesAreRefusedBeforeTheFirstStep) {
  auto log = std::make_shared<Log>();
  nefi::InverseProblem p = recorded_problem(log, nefi::huber_loss());
  p.measurement.data = fk::ones({8}, {fk::DType::F32});
  p.measurement.mask = fk::zeros({8}, {fk::DType::F32});
  const nefi::Curriculum c = nefi::Curriculum::multiscale({8}, {2}, 0.1, 0.5, 4);
  EXPECT_EQ(fk::test::error_of([&] { nefi::Solver(p, c).run(); }),
            "nefi::Solver: expected a mask with at least one observed cell, got an all-zero mask");
  // Observed everywhere but without energy: relative MSE's own refusal.
  p.measurement.data = fk::zeros({8}, {fk::DType::F32});
  p.measurement.mask = fk::Tensor();
  p.losses = nefi::LossSet();
  p.losses.add(nefi::relative_mse_loss(), 1.0);
  EXPECT_EQ(fk::test::error_of([&] { nefi::Solver(p, c).run(); }),
            "nefi::RelativeMSE: expected observations with non-zero energy, got all zeros");
  EXPECT_TRUE(log->empty()) << log->front();
}

}  // namespace
