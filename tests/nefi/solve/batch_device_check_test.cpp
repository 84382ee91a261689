// batch_device_reason / batch_invert's device refusals: each unsupported
// setting named in one fk::Error before any device work. The checks are pure
// functions of the problems and options, so a CUDA device value is refused
// the same way in a CPU-only build (a check that came after any device work
// would fail there with a different error).
#include <gtest/gtest.h>

#include "fk/cuda/runtime.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/test_util.h"
#include "nefi/field/grid_field.h"
#include "nefi/field/low_rank_field.h"
#include "nefi/instances/instance.h"
#include "nefi/losses/data_losses.h"
#include "nefi/operators/heat/heat_operator.h"
#include "nefi/solve/batch.h"

namespace {

struct Toy {
  std::vector<nefi::InverseProblem> problems;
  nefi::Curriculum curriculum;
};

Toy toy(int n) {
  nefi::Params p = nefi::find_instance("toy1d")->default_config();
  p.set("n", "32");
  p.set("hidden", "16");
  p.set("depth", "2");
  p.set_value("steps", std::vector<double>{3});
  Toy t;
  for (int s = 0; s < n; ++s) {
    auto su = nefi::find_instance("toy1d")->setup(p, "neural", static_cast<uint64_t>(s));
    t.problems.push_back(su->problem);
    t.curriculum = su->curriculum;
  }
  return t;
}

nefi::BatchOptions on_gpu() {
  nefi::BatchOptions o;
  o.device = fk::cuda_device(0);
  return o;
}

// batch_device_reason names `word`, and batch_invert throws it as its one error.
void expect_device_refused(const Toy& t, const nefi::BatchOptions& o, const std::string& word,
                           bool batchable = true) {
  const auto why = nefi::batch_device_reason(t.problems, t.curriculum, o);
  ASSERT_TRUE(why.has_value()) << word;
  EXPECT_NE(why->find(word), std::string::npos) << *why;
  EXPECT_NE(why->find("cuda:0"), std::string::npos) << *why;
  if (!batchable) return;  // batchable_reason refuses such problems first
  try {
    nefi::batch_invert(t.problems, t.curriculum, o);
    FAIL() << word;
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find(word), std::string::npos) << e.what();
  }
}

TEST(NefiBatchDeviceCheck, SupportedSettingsPassTheCheck) {
  const Toy t = toy(3);
  EXPECT_FALSE(nefi::batch_device_reason(t.problems, t.curriculum, on_gpu()).has_value());
  // Grid fields batch on a device too.
  Toy grid = toy(2);
  for (auto& q : grid.problems)
    q.field = std::make_shared<nefi::GridField>(
        q.domain.shape(), std::vector<nefi::HeadPtr>{nefi::softplus_head("x")});
  EXPECT_FALSE(nefi::batch_device_reason(grid.problems, grid.curriculum, on_gpu()).has_value());
  // Loss weights that differ per problem (from_forward's) weigh each row.
  Toy weights = toy(2);
  const std::string term = weights.problems[1].losses.terms().at(0).loss->name();
  weights.problems[1].losses = weights.problems[1].losses.with_weights({{term, 2.5}});
  EXPECT_FALSE(
      nefi::batch_device_reason(weights.problems, weights.curriculum, on_gpu()).has_value());
  // The CPU refuses nothing here, whatever the settings.
  grid.curriculum.optim.ema = 0.9;
  nefi::BatchOptions cpu;
  cpu.chunk_size = 1;
  cpu.loss_mode = "loop";
  EXPECT_FALSE(nefi::batch_device_reason(grid.problems, grid.curriculum, cpu).has_value());
}

TEST(NefiBatchDeviceCheck, UnsupportedSettingsAreRefusedByName) {
  Toy ema = toy(2);
  ema.curriculum.optim.ema = 0.9;
  expect_device_refused(ema, on_gpu(), "optim.ema");
  nefi::BatchOptions chunk = on_gpu();
  chunk.chunk_size = 1;
  expect_device_refused(toy(2), chunk, "chunk_size 1");
  nefi::BatchOptions loop = on_gpu();
  loop.loss_mode = "loop";
  expect_device_refused(toy(2), loop, "loss_mode loop");
  // Fields other than neural and grid do not batch (on the CPU either: the
  // CPU's check refuses them first).
  Toy low = toy(2);
  for (auto& q : low.problems)
    q.field = std::make_shared<nefi::LowRankField>(
        q.domain.shape(), std::vector<nefi::HeadPtr>{nefi::softplus_head("x")}, 2);
  expect_device_refused(low, on_gpu(), "'lowrank' field: only neural and grid fields", false);
  // Loss sets that differ (auto mode would loop over problems on the host):
  // a term one problem weighs 0 and the other does not.
  Toy zero = toy(2);
  const std::string term = zero.problems[1].losses.terms().at(0).loss->name();
  zero.problems[1].losses = zero.problems[1].losses.with_weights({{term, 0.0}});
  expect_device_refused(zero, on_gpu(), "do not match term by term");
}

// A host-only operator is refused through device_solve_refusal, as a
// single-problem device solve refuses it (heat with the cg solver is also not
// batchable, so only the device check itself is called).
TEST(NefiBatchDeviceCheck, HostOnlyOperatorIsRefusedWithItsReason) {
  Toy heat = toy(2);
  nefi::HeatConfig c;
  c.solver = "cg";
  for (auto& q : heat.problems) q.op = std::make_shared<nefi::HeatOperator>(c, fk::Dims{4, 4, 3});
  expect_device_refused(heat, on_gpu(), "solver cg", false);
  expect_device_refused(heat, on_gpu(), "problem 0's operator heat", false);
}

// Where no CUDA device is usable (a CPU-only build, or no GPU), supported
// settings reach the device loop, which refuses the device before touching
// any field.
TEST(NefiBatchDeviceCheck, AnUnusableDeviceIsRefusedBeforeAnyFieldMoves) {
  if (fk::cuda::device_count() > 0) GTEST_SKIP() << "a CUDA device is usable here";
  const Toy t = toy(2);
  const std::vector<float> before = t.problems[0].field->params().flat().to_vector<float>();
  try {
    nefi::batch_invert(t.problems, t.curriculum, on_gpu());
    FAIL();
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("usable CUDA device"), std::string::npos) << e.what();
  }
  EXPECT_EQ(t.problems[0].field->params().flat().to_vector<float>(), before);
  EXPECT_TRUE(t.problems[0].field->params().flat().device().is_cpu());
}

// Three toy problems fitted with Huber (a batched loss with no check of its
// own: an all-zero mask's row would be 0 / 0), each measurement masked,
// problem 1's mask observing nothing.
Toy huber_with_a_blind_problem() {
  Toy t = toy(3);
  for (size_t b = 0; b < t.problems.size(); ++b) {
    nefi::Measurement& m = t.problems[b].measurement;
    m.mask = b == 1 ? fk::zeros(m.data.shape(), {m.data.dtype()})
                    : fk::ones(m.data.shape(), {m.data.dtype()});
    t.problems[b].losses = nefi::LossSet();
    t.problems[b].losses.add(nefi::huber_loss(), 1.0);
  }
  return t;
}

const char* const kBlindProblem =
    "nefi::batch_invert: expected a mask with at least one observed cell, got an all-zero mask in "
    "problem 1";

// On the CPU the batch refuses it at setup, as the Solver does, instead of
// running problem 1 into its NaN guard.
TEST(NefiBatchDeviceCheck, AnAllZeroMaskIsRefusedOnTheCpuNamingTheProblem) {
  const Toy t = huber_with_a_blind_problem();
  for (const char* mode : {"auto", "loop"}) {
    nefi::BatchOptions o;
    o.loss_mode = mode;
    EXPECT_EQ(fk::test::error_of([&] { nefi::batch_invert(t.problems, t.curriculum, o); }),
              kBlindProblem)
        << mode;
  }
}

// A device batch makes the same check on the host before any device work
// (so it is refused alike in a CPU-only build), and the fields stay put.
TEST(NefiBatchDeviceCheck, AnAllZeroMaskIsRefusedBeforeAnyDeviceWork) {
  const Toy t = huber_with_a_blind_problem();
  const std::vector<float> before = t.problems[0].field->params().flat().to_vector<float>();
  EXPECT_EQ(fk::test::error_of([&] { nefi::batch_invert(t.problems, t.curriculum, on_gpu()); }),
            kBlindProblem);
  EXPECT_EQ(t.problems[0].field->params().flat().to_vector<float>(), before);
  EXPECT_TRUE(t.problems[0].field->params().flat().device().is_cpu());
}

}  // namespace
