// The reference's parameter groups and SGD: FusedAdam's per-segment learning
// rates (a frozen run untouched and out of the clipping norm, a scaled run
// equal to a plain step at the scaled lr), heavy-ball SGD against its
// formula, the names and errors of lr_segments, and a solve that freezes
// the output layer in one stage and trains it in the next.
#include "nefi/solve/lr_groups.h"

#include <gtest/gtest.h>

#include <cmath>

#include "fk/factory.h"
#include "fk/test_util.h"
#include "fk/thread_count.h"
#include "nefi/instances/instance.h"
#include "nefi/solve/adam.h"
#include "nefi/solve/batch.h"
#include "nefi/solve/solver.h"
#include "toy1d_smoke.h"

namespace {

fk::Tensor leaf(const std::vector<double>& v) {
  fk::Tensor t = fk::from_vector(v, {static_cast<int64_t>(v.size())});
  t.set_requires_grad(true);
  return t;
}

TEST(NefiLrGroups, SegmentsScaleFreezeAndLeaveTheNormOfFrozenRuns) {
  const std::vector<double> x0{1, -2, 3, 0.5, -0.25, 4}, g{0.3, -0.1, 0.2, 5, -7, 0.4};
  nefi::AdamOptions o;
  o.weight_decay = 0.1;
  o.grad_clip = 1.0;
  fk::Tensor a = leaf(x0);
  nefi::FusedAdam seg({a}, o);
  seg.set_lr_segments(0, {{0, 3, 2.0}, {3, 3, 0.0}});
  a.set_grad(fk::from_vector(g, {6}));
  const double norm = seg.step(0.01);
  // The norm counts the trained run only.
  EXPECT_NEAR(norm, std::sqrt(0.09 + 0.01 + 0.04), 1e-12);
  // The trained run equals a plain step of those 3 elements at lr x 2 with
  // that norm; the frozen run is untouched.
  fk::Tensor b = leaf({1, -2, 3});
  nefi::FusedAdam plain({b}, o);
  b.set_grad(fk::from_vector(std::vector<double>{0.3, -0.1, 0.2}, {3}));
  plain.step(0.02);
  const auto av = a.to_vector<double>(), bv = b.to_vector<double>();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(av[i], bv[i]) << i;
  for (int i = 3; i < 6; ++i) EXPECT_EQ(av[i], x0[i]) << i;
  auto err = [&](std::vector<nefi::LrSegment> s) {
    return fk::test::error_of([&] { seg.set_lr_segments(0, s); });
  };
  EXPECT_NE(err({{0, 3, 1.0}}).find("covering all 6"), std::string::npos);
  EXPECT_NE(err({{0, 3, 1.0}, {2, 4, 1.0}}).find("consecutive"), std::string::npos);
  EXPECT_NE(err({{0, 6, -1.0}}).find(">= 0"), std::string::npos);
}

TEST(NefiLrGroups, SgdIsHeavyBallMomentum) {
  nefi::AdamOptions o;
  o.sgd = true;
  o.momentum = 0.9;
  o.weight_decay = 0.01;
  fk::Tensor x = leaf({1.0, -2.0});
  nefi::FusedAdam sgd({x}, o);
  const std::vector<std::vector<double>> grads{{0.5, 0.25}, {-1.0, 2.0}};
  std::vector<double> ref{1.0, -2.0}, buf{0, 0};
  for (int t = 0; t < 2; ++t) {
    x.set_grad(fk::from_vector(grads[t], {2}));
    sgd.step(0.1);
    for (int i = 0; i < 2; ++i) {
      const double gi = grads[t][i] + 0.01 * ref[i];
      buf[i] = t == 0 ? gi : 0.9 * buf[i] + gi;  // torch: the first buffer is the gradient
      ref[i] -= 0.1 * buf[i];
    }
  }
  const auto v = x.to_vector<double>();
  EXPECT_NEAR(v[0], ref[0], 1e-15);
  EXPECT_NEAR(v[1], ref[1], 1e-15);
}

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
  st.freeze = {"operator.0"};  // toy1d's blur has no trainable parameter
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
  EXPECT_NE(fk::test::error_of([&] { nefi::Solver(s->problem, cur, dev); }).find("adam or adamw"),
            std::string::npos);
  cur.optim.optimizer = "adamw";
  EXPECT_NE(fk::test::error_of([&] { nefi::Solver(s->problem, cur, dev); }).find("CPU only"),
            std::string::npos);
  EXPECT_NE(nefi::batchable_reason({s->problem, s->problem}, cur).value_or("").find("lr_mult"),
            std::string::npos);
  cur.optim.optimizer = "lbfgs";
  EXPECT_NE(fk::test::error_of([&] { cur.validate(); }).find("lbfgs"), std::string::npos);
}

}  // namespace
