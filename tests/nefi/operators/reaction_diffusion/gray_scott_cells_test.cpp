// The Gray-Scott kernels' arithmetic (nefi/cuda/gray_scott_cells.h) and the
// order of their substeps (nefi/cuda/gray_scott_rollout.h), run on the host:
// every cell of a substep computed as a device thread computes it equals the
// CPU step and adjoint step (gray_scott.cpp) to the bit, for the three
// unknowns (F, k, Du fields) and both boundary kinds, with and without an
// observed cotangent added on the fly; the whole device schedule (fused
// checkpoint and snapshot writes, block recomputation, ping-pong cotangents)
// run through the cells, with the host's schedule and with the one the fused
// kernels take by value, equals ReactionDiffusionOperator's CPU apply and
// vector-Jacobian product to the bit, f64 and f32 fields, u and/or v
// observed, several checkpoint intervals; and the range guard's test and the
// NaN poisoning of a captured solve's snapshots.
#include "nefi/cuda/gray_scott_cells.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "fk/factory.h"
#include "fk/random.h"
#include "nefi/cuda/gray_scott_rollout.h"
#include "nefi/operators/reaction_diffusion/gray_scott.h"
#include "nefi/operators/reaction_diffusion/gray_scott_test_cases.h"
#include "nefi/operators/reaction_diffusion/reaction_diffusion_operator.h"

namespace {

namespace gs = nefi::gray_scott;
using nefi::RDUnknown;
using nefi::cuda::GrayScottAdjoint;
using nefi::cuda::GrayScottCoefficients;
using nefi::cuda::GrayScottFields;
using nefi::cuda::GrayScottStep;
using nefi::gray_scott_test::coefficients_of;
using nefi::gray_scott_test::name_of;
using nefi::gray_scott_test::StepCase;
using nefi::gray_scott_test::uniform;

// Each launch as a loop over its threads, first to last or (reversed) last
// to first: a GPU runs them in no set order, so both must give the same bits
// (no thread reads what another writes in the same launch).
struct HostLaunch {
  HostLaunch(const GrayScottCoefficients& kc, const GrayScottFields& fc) : k(kc), f(fc) {}
  GrayScottCoefficients k;
  GrayScottFields f;
  bool reversed = false;
  int64_t launches = 0;
  int cell(int i) const { return reversed ? k.n0 * k.n1 - 1 - i : i; }
  void step(const GrayScottStep& b) {
    for (int i = 0; i < k.n0 * k.n1; ++i) nefi::cuda::step_cell(k, f, b, cell(i));
    ++launches;
  }
  void adjoint(const GrayScottAdjoint& b) {
    for (int i = 0; i < k.n0 * k.n1; ++i) nefi::cuda::adjoint_cell(k, f, b, cell(i));
    ++launches;
  }
};

TEST(NefiGrayScottCells, StepCellsEqualTheCpuStep) {
  for (gs::Boundary b : {gs::Boundary::kNeumann, gs::Boundary::kPeriodic})
    for (RDUnknown u : {RDUnknown::kF, RDUnknown::kK, RDUnknown::kDu}) {
      SCOPED_TRACE(std::string(name_of(u)) + (b == gs::Boundary::kPeriodic ? " periodic" : ""));
      const StepCase sc(b, u, 7, 5, 11);
      const int64_t n = sc.grid.size();
      const std::vector<double> Fc = sc.F_cells();
      std::vector<double> cpu = sc.state;
      gs::Workspace w(n);
      gs::step(sc.grid, sc.rates, sc.cpu_fields(Fc), sc.tau, cpu.data(), cpu.data() + n, w);
      std::vector<double> out(2 * n), ckpt(2 * n), rec_u(n), rec_v(n);
      GrayScottStep st;
      st.in = sc.state.data();
      st.out = out.data();
      st.checkpoint = ckpt.data();
      st.record_u = rec_u.data();
      st.record_v = rec_v.data();
      HostLaunch launch(sc.coefficients(), sc.cell_fields());
      launch.step(st);
      EXPECT_EQ(out, cpu);
      EXPECT_EQ(ckpt, sc.state);
      EXPECT_EQ(rec_u, std::vector<double>(cpu.begin(), cpu.begin() + n));
      EXPECT_EQ(rec_v, std::vector<double>(cpu.begin() + n, cpu.end()));
    }
}

// The CPU adds the observed cotangents into (ub, vb) before its adjoint
// step; the cells read the sums on the fly. The gradient accumulators start
// from nonzero values (earlier steps' sums).
TEST(NefiGrayScottCells, AdjointCellsEqualTheCpuAdjointStep) {
  for (gs::Boundary b : {gs::Boundary::kNeumann, gs::Boundary::kPeriodic})
    for (RDUnknown u : {RDUnknown::kF, RDUnknown::kK, RDUnknown::kDu})
      for (bool observed : {false, true}) {
        SCOPED_TRACE(std::string(name_of(u)) + (b == gs::Boundary::kPeriodic ? " periodic" : "") +
                     (observed ? " observed" : ""));
        const StepCase sc(b, u, 6, 8, 21);
        const int64_t n = sc.grid.size();
        const std::vector<double> Fc = sc.F_cells(), grad0 = uniform(n, -1, 1, 99);
        std::vector<double> cpu = sc.cot, cpu_grad = grad0;
        if (observed)
          for (int64_t i = 0; i < 2 * n; ++i) cpu[i] += sc.add[i];
        gs::FieldGrads fg;
        (u == RDUnknown::kF ? fg.F : u == RDUnknown::kK ? fg.k : fg.Du) = cpu_grad.data();
        gs::Workspace w(n);
        gs::adjoint_step(sc.grid, sc.rates, sc.cpu_fields(Fc), sc.tau, sc.state.data(),
                         sc.state.data() + n, cpu.data(), cpu.data() + n, fg, w);
        std::vector<double> out(2 * n), grad = grad0;
        GrayScottAdjoint a;
        a.state = sc.state.data();
        a.cot_in = sc.cot.data();
        if (observed) {
          a.add_u = sc.add.data();
          a.add_v = sc.add.data() + n;
        }
        a.cot_out = out.data();
        (u == RDUnknown::kF ? a.grad_F : u == RDUnknown::kK ? a.grad_k : a.grad_Du) = grad.data();
        HostLaunch launch(sc.coefficients(), sc.cell_fields());
        launch.adjoint(a);
        EXPECT_EQ(out, cpu);
        EXPECT_EQ(grad, cpu_grad);
      }
}

// The device's whole forward and adjoint schedule, its launches run
// through the cells on the host, against the CPU operator.
struct RolloutResult {
  std::vector<double> y, grad;
  int64_t launches = 0;
};

// fused: the schedule as the fused kernels take it (GrayScottFusedRollout).
RolloutResult rollout_through_cells(const nefi::ReactionDiffusionOperator& op,
                                    const std::vector<double>& x, const std::vector<double>& g,
                                    bool fused, bool reversed = false) {
  const nefi::ReactionDiffusionOptions& o = op.options();
  double lo = x[0], hi = x[0];
  for (double v : x) lo = std::min(lo, v), hi = std::max(hi, v);
  op.check_field(lo);
  const nefi::RDSchedule sc = op.schedule(hi);
  const gs::Grid grid = op.grid();
  nefi::cuda::GrayScottRollout r;
  r.n = grid.size();
  r.total = sc.total;
  r.every = sc.every;
  r.obs = sc.obs;
  r.observe_u = o.observe_u;
  r.observe_v = o.observe_v;
  const std::vector<double> initial = op.initial_state_on(fk::kCPU).to_vector<double>();
  const int64_t n = r.n;
  std::vector<double> s0(2 * n), s1(2 * n), ckpt(r.blocks() * 2 * n);
  RolloutResult res;
  res.y.assign(r.obs.size() * r.channels() * n, -1.0);
  HostLaunch launch(coefficients_of(grid, o.rates, o.F, sc.tau), GrayScottFields{});
  launch.reversed = reversed;
  (o.unknown == RDUnknown::kF   ? launch.f.F
   : o.unknown == RDUnknown::kK ? launch.f.k
                                : launch.f.Du) = x.data();
  double* const state[2] = {s0.data(), s1.data()};
  const nefi::cuda::GrayScottFusedRollout packed = nefi::cuda::fused_rollout(r);
  if (fused)
    nefi::cuda::gray_scott_forward(packed, initial.data(), state, ckpt.data(), res.y.data(),
                                   nullptr, launch);
  else
    nefi::cuda::gray_scott_forward(r, initial.data(), state, ckpt.data(), res.y.data(), nullptr,
                                   launch);
  std::vector<double> block(r.every * 2 * n), c0(2 * n, 0.0), c1(2 * n, -1.0);
  res.grad.assign(n, 0.0);
  GrayScottAdjoint proto;
  (o.unknown == RDUnknown::kF   ? proto.grad_F
   : o.unknown == RDUnknown::kK ? proto.grad_k
                                : proto.grad_Du) = res.grad.data();
  double* const cot[2] = {c0.data(), c1.data()};
  if (fused)
    nefi::cuda::gray_scott_backward(packed, ckpt.data(), block.data(), g.data(), cot, proto,
                                    launch);
  else
    nefi::cuda::gray_scott_backward(r, ckpt.data(), block.data(), g.data(), cot, proto, launch);
  res.launches = launch.launches;
  return res;
}

TEST(NefiGrayScottCells, RolloutThroughTheCellsEqualsTheCpuOperator) {
  const std::vector<nefi::gray_scott_test::Case> cases = nefi::gray_scott_test::cases(1000);
  const nefi::Domain dom({9, 7}, {0.18, 0.14});
  for (const nefi::gray_scott_test::Case& c : cases)
    for (fk::DType dt : {fk::DType::F64, fk::DType::F32}) {
      SCOPED_TRACE(std::string(name_of(c.unknown)) + " every " + std::to_string(c.every) + " " +
                   fk::name(dt));
      const nefi::ReactionDiffusionOptions o = nefi::gray_scott_test::options_for(c);
      const nefi::ReactionDiffusionOperator op(dom, o);
      const double lo = nefi::gray_scott_test::field_floor(c.unknown);
      const fk::Tensor x = fk::from_vector(uniform(63, lo, o.field_max, 31), {9, 7}).to(dt);
      fk::Generator gen(32);
      const fk::Tensor g = fk::randn(op.output_shape(dom.shape()), {fk::DType::F64}, &gen).to(dt);
      const std::vector<double> xv = x.to_vector<double>(), gv = g.to_vector<double>();
      const nefi::RDSchedule sc = op.schedule(0);
      // The device returns its f64 results in the field's dtype, as the CPU does.
      const auto in_dtype = [&](const std::vector<double>& v, const fk::Dims& shape) {
        return fk::from_vector(v, shape).to(dt).to_vector<double>();
      };
      const std::vector<double> y = op.apply(x).to_vector<double>(),
                                vjp = op.vjp(x, g).to_vector<double>();
      for (bool fused : {false, true}) {
        SCOPED_TRACE(fused ? "fused schedule" : "host schedule");
        const RolloutResult cells = rollout_through_cells(op, xv, gv, fused);
        // One step per substep, each block's recomputation (all but its
        // checkpointed first state), one adjoint per substep.
        EXPECT_EQ(cells.launches, 3 * sc.total - (sc.total + sc.every - 1) / sc.every);
        EXPECT_EQ(in_dtype(cells.y, op.output_shape(dom.shape())), y);
        EXPECT_EQ(in_dtype(cells.grad, dom.shape()), vjp);
      }
    }
}

// The same with every launch's threads run last to first (f64, the host's schedule).
TEST(NefiGrayScottCells, ThreadOrderDoesNotChangeTheBits) {
  const nefi::Domain dom({9, 7}, {0.18, 0.14});
  for (const nefi::gray_scott_test::Case& c : nefi::gray_scott_test::cases(1000)) {
    SCOPED_TRACE(std::string(name_of(c.unknown)) + " every " + std::to_string(c.every));
    const nefi::ReactionDiffusionOptions o = nefi::gray_scott_test::options_for(c);
    const nefi::ReactionDiffusionOperator op(dom, o);
    const double lo = nefi::gray_scott_test::field_floor(c.unknown);
    const std::vector<double> x = uniform(63, lo, o.field_max, 33);
    fk::Generator gen(34);
    const fk::Tensor g = fk::randn(op.output_shape(dom.shape()), {fk::DType::F64}, &gen);
    const fk::Tensor xt = fk::from_vector(x, {9, 7});
    const RolloutResult cells = rollout_through_cells(op, x, g.to_vector<double>(), false, true);
    EXPECT_EQ(cells.y, op.apply(xt).to_vector<double>());
    EXPECT_EQ(cells.grad, op.vjp(xt, g).to_vector<double>());
  }
}

// The fused kernels' schedule by value: every field and observation copied.
TEST(NefiGrayScottCells, FusedScheduleCopiesTheHostOne) {
  nefi::cuda::GrayScottRollout r;
  r.n = 63;
  r.total = 40;
  r.every = 7;
  r.obs = {4, 9, 40};
  r.observe_u = false;
  const nefi::cuda::GrayScottFusedRollout f = nefi::cuda::fused_rollout(r);
  EXPECT_EQ(f.n, 63);
  EXPECT_EQ(f.total, 40);
  EXPECT_EQ(f.every, 7);
  EXPECT_FALSE(f.observe_u);
  EXPECT_TRUE(f.observe_v);
  ASSERT_EQ(nefi::cuda::obs_count(f), 3);
  EXPECT_EQ(std::vector<int64_t>(f.obs, f.obs + 3), r.obs);
}

// A captured solve's guard flag turns the snapshots (only) into NaN.
TEST(NefiGrayScottCells, PoisonedStepRecordsNaNButSteps) {
  const StepCase sc(gs::Boundary::kNeumann, RDUnknown::kF, 5, 4, 41);
  const int64_t n = sc.grid.size();
  std::vector<double> out(2 * n), clean(2 * n), rec_u(n), rec_v(n);
  const int flag = 1;
  GrayScottStep st;
  st.in = sc.state.data();
  st.out = clean.data();
  HostLaunch launch(sc.coefficients(), sc.cell_fields());
  launch.step(st);
  st.out = out.data();
  st.record_u = rec_u.data();
  st.record_v = rec_v.data();
  st.poison = &flag;
  launch.step(st);
  EXPECT_EQ(out, clean);
  for (int64_t i = 0; i < n; ++i) EXPECT_TRUE(std::isnan(rec_u[i]) && std::isnan(rec_v[i])) << i;
  const int ok = 0;
  st.poison = &ok;
  launch.step(st);
  EXPECT_EQ(rec_u, std::vector<double>(clean.begin(), clean.begin() + n));
}

// The guard's range is (lo, hi]: hi itself passes, lo and NaN do not.
TEST(NefiGrayScottCells, RangeGuardTest) {
  using nefi::cuda::out_of_range;
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_FALSE(out_of_range(0.07, -inf, 0.07));
  EXPECT_TRUE(out_of_range(std::nextafter(0.07, 1.0), -inf, 0.07));
  EXPECT_FALSE(out_of_range(-5.0, -inf, 0.07));
  EXPECT_TRUE(out_of_range(0.0, 0.0, 4e-5));
  EXPECT_FALSE(out_of_range(1e-300, 0.0, 4e-5));
  EXPECT_TRUE(out_of_range(std::nan(""), -inf, 0.07));
}

}  // namespace
