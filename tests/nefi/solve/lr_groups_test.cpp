// The reference's parameter groups: the names and errors of lr_segments, and
// a solve that freezes the output layer in one stage and trains it in the
// next (the optimizer's segment arithmetic: fused_optimizer_test.cpp).
#include "nefi/solve/lr_groups.h"

#include <gtest/gtest.h>

#include <cmath>

#include "fk/factory.h"
#include "fk/test_util.h"
#include "fk/thread_count.h"
#include "nefi/instances/instance.h"
#include "nefi/solve/batch.h"
#include "nefi/solve/solver.h"
#include "toy1d_smoke.h"

namespace {

TEST(NefiLrGroups, NamesPrefixesAndErrors) {
  const auto s =
      nefi::find_instance("toy1d")->setup(nefi::toy1d_test::toy1d_smoke_params(), "neural", 0);
  const nefi::Field& f = *s->problem.field;
  const auto names = nefi::parameter_names(f, *s->problem.op);
  ASSERT_GE(names.size(), 4u);
  EXPECT_EQ(names.front(), "field.layer0.weight");
  EXPECT_EQ(names.back(), "field.out.bias");
  nefi::OptimConfig o;
  nefi::Stage st;
  EXPECT_TRUE(nefi::lr_segments(f, *s->problem.op, o, st)[0].empty());  // all 1: the plain step
  o.lr_mult = {{"field.", 0.5}, {"field.out", 3.0}};
  st.freeze = {"field.layer0.bias"};
  const auto segs = nefi::lr_segments(f, *s->problem.op, o, st);
  ASSERT_EQ(segs[0].size(), names.size());
  EXPECT_EQ(segs[0][0].mult, 0.5);      // layer0.weight: "field." only
  EXPECT_EQ(segs[0][1].mult, 0.0);      // layer0.bias: frozen, whatever lr_mult says
  EXPECT_EQ(segs[0].back().mult, 3.0);  // out.bias: the longest prefix
  int64_t total = 0;
  for (const auto& r : segs[0]) total += r.length;
  EXPECT_EQ(total, f.n_parameters());
  o.lr_mult = {{"field.layr", 2.0}};
  const std::string e = fk::test::error_of([&] { nefi::lr_segments(f, *s->problem.op, o, st); });
  EXPECT_NE(e.find("'field.layr'"), std::string::npos) << e;
  EXPECT_NE(e.find("field.layer0.weight"), std::string::npos) << e;
  o.lr_mult.clear();
  // A prefix of another field kind or of operator parameters is not a typo:
  // one config serves several methods; here it trains nothing.
  st.freeze = {"operator.0", "field.values"};
  EXPECT_TRUE(nefi::lr_segments(f, *s->problem.op, o, st)[0].empty());
  st.freeze = {"field.otu"};
  EXPECT_NE(fk::test::error_of([&] { nefi::lr_segments(f, *s->problem.op, o, st); }).find("freeze"),
            std::string::npos);
}

TEST(NefiLrGroups, AStageFreezesTheOutputLayerAndTheNextTrainsIt) {
  const fk::test::ThreadCount one(1);
  auto s = nefi::find_instance("toy1d")->setup(nefi::toy1d_test::toy1d_smoke_params(), "neural", 0);
  nefi::Curriculum cur = s->curriculum;
  ASSERT_EQ(cur.stages.size(), 2u);
  cur.stages[0].steps = 30;
  cur.stages[1].steps = 30;
  cur.stages[0].freeze = {"field.out"};
  // A typo in the last stage's list stops the solve before its first step.
  nefi::Curriculum typo = cur;
  typo.stages[1].freeze = {"field.lyer0"};
  EXPECT_NE(fk::test::error_of([&] { nefi::Solver(s->problem, typo); }).find("'field.lyer0'"),
            std::string::npos);
  nefi::Field& field = *s->problem.field;
  const int out_w = field.params().size() - 2;
  std::vector<fk::Tensor> after_stage0;
  nefi::SolverOptions so;
  so.on_stage_start = [&](const nefi::StageView& v) {
    if (v.index == 1)
      after_stage0 = {field.params().raw(out_w).clone(), field.params().raw(0).clone()};
  };
  field.reset_parameters(0);
  const fk::Tensor out0 = field.params().raw(out_w).clone(), first0 = field.params().raw(0).clone();
  const nefi::Result r = nefi::Solver(s->problem, cur, so).run();
  ASSERT_EQ(after_stage0.size(), 2u);
  EXPECT_EQ(fk::test::max_abs_diff(after_stage0[0], out0), 0.0);            // frozen in stage 0
  EXPECT_GT(fk::test::max_abs_diff(after_stage0[1], first0), 0.0);          // the rest trained
  EXPECT_GT(fk::test::max_abs_diff(field.params().raw(out_w), out0), 0.0);  // stage 1 trains it
  EXPECT_TRUE(std::isfinite(r.stages.back().final_data_loss));
  // SGD and lr_mult run too; the device, L-BFGS and batch_invert refuse them.
  cur.optim.optimizer = "sgd";
  cur.optim.lr_mult = {{"field.layer0", 0.1}};
  EXPECT_NO_THROW(nefi::Solver(s->problem, cur).run());
  nefi::SolverOptions dev;
  dev.device = fk::cuda_device(0);
  EXPECT_NE(fk::test::error_of([&] {
              nefi::Solver(s->problem, cur, dev);
            }).find("SGD has no device step"),
            std::string::npos);
  cur.optim.optimizer = "adamw";
  EXPECT_NE(fk::test::error_of([&] { nefi::Solver(s->problem, cur, dev); }).find("CPU only"),
            std::string::npos);
  EXPECT_NE(nefi::batchable_reason({s->problem, s->problem}, cur).value_or("").find("lr_mult"),
            std::string::npos);
  cur.optim.optimizer = "lbfgs";
  EXPECT_NE(fk::test::error_of([&] { cur.validate(); }).find("lbfgs"), std::string::npos);
  cur.optim.optimizer = "adamw";
  cur.stages[1].freeze = {""};
  EXPECT_NE(fk::test::error_of([&] { cur.validate(); }).find("non-empty parameter-name prefixes"),
            std::string::npos);
}

}  // namespace
