// gray_scott.cu's kernels run on the emulated device (emulated_device.h),
// each in both thread orders: one substep and its adjoint against the CPU
// solver's step and adjoint_step (gray_scott.cpp) to the bit, for the three
// unknowns, both boundaries and grids from the smallest the operator takes
// to ones of several blocks with a partial last; the range guard against a
// host scan; and the fused single-block rollouts (512 threads, a barrier
// after every substep) against ReactionDiffusionOperator's CPU apply and
// vector-Jacobian product and against the per-substep launches, on grids
// under and over one cell per thread.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "cuda_emu/emulated_device.h"
#include "cuda_emu/emulated_test_util.h"
#include "fk/factory.h"
#include "fk/random.h"
#include "nefi/cuda/gray_scott_kernels.h"
#include "nefi/cuda/gray_scott_rollout.h"
#include "nefi/operators/reaction_diffusion/gray_scott.h"
#include "nefi/operators/reaction_diffusion/gray_scott_test_cases.h"
#include "nefi/operators/reaction_diffusion/reaction_diffusion_operator.h"

// The emulated launchers this file runs: gray_scott_kernels.h's, in ::emu.
namespace nefi::cuda::emu {
void launch_gray_scott_step(const GrayScottCoefficients& k, const GrayScottFields& f,
                            const GrayScottStep& b, void* stream);
void launch_gray_scott_adjoint(const GrayScottCoefficients& k, const GrayScottFields& f,
                               const GrayScottAdjoint& b, void* stream);
void launch_gray_scott_fused_forward(const GrayScottCoefficients& k, const GrayScottFields& f,
                                     const GrayScottFusedRollout& r, const double* initial,
                                     double* state0, double* state1, double* checkpoints,
                                     double* out, const int* poison, void* stream);
void launch_gray_scott_fused_backward(const GrayScottCoefficients& k, const GrayScottFields& f,
                                      const GrayScottFusedRollout& r, const double* checkpoints,
                                      double* block, const double* g, double* cot0, double* cot1,
                                      const GrayScottAdjoint& proto, void* stream);
void launch_gray_scott_range_guard(const double* x, int n, double lo_exclusive, double hi,
                                   int* flag, void* stream);
}  // namespace nefi::cuda::emu

using fkemu_test::order_name;
using fkemu_test::OrderScope;

namespace {

namespace gs = nefi::gray_scott;
namespace nc = nefi::cuda;
using nefi::RDUnknown;
using nefi::gray_scott_test::name_of;
using nefi::gray_scott_test::StepCase;
using nefi::gray_scott_test::uniform;

constexpr fkemu::Order kOrders[] = {fkemu::Order::kAscending, fkemu::Order::kDescending};

// The grids of the one-substep tests: the smallest the operator takes, one
// block's worth, a thin one and one of two blocks of 256 with a partial last.
struct Shape {
  int64_t n0, n1;
};
constexpr Shape kShapes[] = {{3, 3}, {7, 5}, {3, 97}, {19, 23}};

TEST(EmulatedGrayScott, StepEqualsTheCpuStep) {
  for (fkemu::Order order : kOrders)
    for (gs::Boundary b : {gs::Boundary::kNeumann, gs::Boundary::kPeriodic})
      for (RDUnknown u : {RDUnknown::kF, RDUnknown::kK, RDUnknown::kDu})
        for (Shape s : kShapes) {
          const OrderScope scope(order);
          const StepCase sc(b, u, s.n0, s.n1, 11);
          SCOPED_TRACE(sc.name() + " " + order_name(order));
          const int64_t n = sc.grid.size();
          const std::vector<double> Fc = sc.F_cells();
          std::vector<double> cpu = sc.state;
          gs::Workspace w(n);
          gs::step(sc.grid, sc.rates, sc.cpu_fields(Fc), sc.tau, cpu.data(), cpu.data() + n, w);
          // Sentinels: every cell must be written.
          std::vector<double> out(2 * n, -7.0), ckpt(2 * n, -7.0), rec_u(n, -7.0), rec_v(n, -7.0);
          nc::GrayScottStep st;
          st.in = sc.state.data();
          st.out = out.data();
          st.checkpoint = ckpt.data();
          st.record_u = rec_u.data();
          st.record_v = rec_v.data();
          nc::emu::launch_gray_scott_step(sc.coefficients(), sc.cell_fields(), st, nullptr);
          EXPECT_EQ(out, cpu);
          EXPECT_EQ(ckpt, sc.state);
          EXPECT_EQ(rec_u, std::vector<double>(cpu.begin(), cpu.begin() + n));
          EXPECT_EQ(rec_v, std::vector<double>(cpu.begin() + n, cpu.end()));
          // Without checkpoint and records only `out` is written.
          std::vector<double> bare(2 * n, -7.0);
          nc::GrayScottStep plain;
          plain.in = sc.state.data();
          plain.out = bare.data();
          nc::emu::launch_gray_scott_step(sc.coefficients(), sc.cell_fields(), plain, nullptr);
          EXPECT_EQ(bare, cpu);
        }
}

// A set guard flag turns the records (only) into NaN; a clear one does not.
TEST(EmulatedGrayScott, PoisonedStepRecordsNaNButSteps) {
  const StepCase sc(gs::Boundary::kNeumann, RDUnknown::kF, 19, 23, 41);
  const int64_t n = sc.grid.size();
  std::vector<double> clean(2 * n);
  nc::GrayScottStep st;
  st.in = sc.state.data();
  st.out = clean.data();
  nc::emu::launch_gray_scott_step(sc.coefficients(), sc.cell_fields(), st, nullptr);
  for (int flag : {1, 0}) {
    std::vector<double> out(2 * n), rec_u(n, -7.0), rec_v(n, -7.0);
    st.out = out.data();
    st.record_u = rec_u.data();
    st.record_v = rec_v.data();
    st.poison = &flag;
    nc::emu::launch_gray_scott_step(sc.coefficients(), sc.cell_fields(), st, nullptr);
    EXPECT_EQ(out, clean);
    for (int64_t i = 0; i < n; ++i) {
      if (flag) {
        ASSERT_TRUE(std::isnan(rec_u[i]) && std::isnan(rec_v[i])) << i;
      } else {
        ASSERT_EQ(rec_u[i], clean[i]) << i;
        ASSERT_EQ(rec_v[i], clean[n + i]) << i;
      }
    }
  }
}

// The CPU adds the observed cotangents into its buffer before the adjoint
// step; the kernel reads the sums on the fly. The gradient starts nonzero
// (the sum of later steps').
TEST(EmulatedGrayScott, AdjointEqualsTheCpuAdjointStep) {
  for (fkemu::Order order : kOrders)
    for (gs::Boundary b : {gs::Boundary::kNeumann, gs::Boundary::kPeriodic})
      for (RDUnknown u : {RDUnknown::kF, RDUnknown::kK, RDUnknown::kDu})
        for (Shape s : kShapes)
          for (bool observed : {false, true}) {
            const OrderScope scope(order);
            const StepCase sc(b, u, s.n0, s.n1, 21);
            SCOPED_TRACE(sc.name() + (observed ? " observed " : " ") + order_name(order));
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
            std::vector<double> out(2 * n, -7.0), grad = grad0;
            nc::GrayScottAdjoint a;
            a.state = sc.state.data();
            a.cot_in = sc.cot.data();
            if (observed) {
              a.add_u = sc.add.data();
              a.add_v = sc.add.data() + n;
            }
            a.cot_out = out.data();
            (u == RDUnknown::kF   ? a.grad_F
             : u == RDUnknown::kK ? a.grad_k
                                  : a.grad_Du) = grad.data();
            nc::emu::launch_gray_scott_adjoint(sc.coefficients(), sc.cell_fields(), a, nullptr);
            EXPECT_EQ(out, cpu);
            EXPECT_EQ(grad, cpu_grad);
          }
}

// The guard's flag against a host scan of (lo, hi]: empty, one value, one
// block of 256 and over it, the offending value (just above hi, lo itself
// or NaN) first, last or inside (the loop's second stride for n > 256), and
// hi itself, which passes.
TEST(EmulatedGrayScott, RangeGuardFlagsAValueOutsideItsRange) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  struct Bounds {
    double lo, hi;
  };
  for (fkemu::Order order : kOrders)
    for (Bounds r : {Bounds{-inf, 0.07}, Bounds{0.0, 4e-3}})
      for (int n : {0, 1, 256, 257, 1000}) {
        const OrderScope scope(order);
        const std::vector<double> base = uniform(std::max(n, 1), r.lo < 0 ? -1.0 : 1e-4, r.hi, 7);
        const std::vector<double> bad_values = {std::nextafter(r.hi, inf), r.lo, nan};
        auto guard = [&](const std::vector<double>& x) {
          int flag = 7;
          nc::emu::launch_gray_scott_range_guard(x.data(), n, r.lo, r.hi, &flag, nullptr);
          return flag;
        };
        SCOPED_TRACE("n " + std::to_string(n) + " lo " + std::to_string(r.lo) + " " +
                     order_name(order));
        EXPECT_EQ(guard(base), 0);
        if (n == 0) continue;
        std::vector<double> edge = base;
        edge[n - 1] = r.hi;  // hi itself is inside
        EXPECT_EQ(guard(edge), 0);
        for (int at : {0, n / 2 + 1 < n ? n / 2 + 1 : 0, n - 1})
          for (double v : bad_values) {
            std::vector<double> x = base;
            x[at] = v;
            const bool want = !(v > r.lo && v <= r.hi);
            EXPECT_EQ(guard(x), want ? 1 : 0) << "value " << v << " at " << at;
          }
      }
}

// The schedule of op for field x (as gray_scott_device.cpp builds it), and
// the kernels' coefficients and fields.
struct Solve {
  nc::GrayScottRollout rollout;
  nc::GrayScottCoefficients k;
  nc::GrayScottFields f;
  std::vector<double> initial;
  Solve(const nefi::ReactionDiffusionOperator& op, const std::vector<double>& x) {
    const nefi::ReactionDiffusionOptions& o = op.options();
    const nefi::RDSchedule sc = op.schedule(*std::max_element(x.begin(), x.end()));
    const gs::Grid g = op.grid();
    rollout.n = g.size();
    rollout.total = sc.total;
    rollout.every = sc.every;
    rollout.obs = sc.obs;
    rollout.observe_u = o.observe_u;
    rollout.observe_v = o.observe_v;
    k.n0 = static_cast<int>(g.n0);
    k.n1 = static_cast<int>(g.n1);
    k.wrap = g.boundary == gs::Boundary::kPeriodic;
    k.s0 = 1.0 / (g.h0 * g.h0);
    k.s1 = 1.0 / (g.h1 * g.h1);
    k.tau = sc.tau;
    k.F = o.F;
    k.k = o.rates.k;
    k.Du = o.rates.Du;
    k.Dv = o.rates.Dv;
    (o.unknown == RDUnknown::kF ? f.F : o.unknown == RDUnknown::kK ? f.k : f.Du) = x.data();
    initial = op.initial_state_on(fk::kCPU).to_vector<double>();
  }
};

struct RolloutResult {
  std::vector<double> y, checkpoints, grad;
};

// gray_scott_rollout.h's launcher over the emulated per-substep kernels.
struct EmulatedLaunch {
  nc::GrayScottCoefficients k;
  nc::GrayScottFields f;
  void step(const nc::GrayScottStep& b) { nc::emu::launch_gray_scott_step(k, f, b, nullptr); }
  void adjoint(const nc::GrayScottAdjoint& b) {
    nc::emu::launch_gray_scott_adjoint(k, f, b, nullptr);
  }
};

// The forward and the backward of a solve, fused (one launch each way) or
// one launch per substep. Scratch starts as garbage (NaN) where the driver
// leaves it uninitialised, so a read before a write shows.
RolloutResult run_rollout(const Solve& s, const std::vector<double>& g, RDUnknown unknown,
                          bool fused, const int* poison = nullptr) {
  const nc::GrayScottRollout& r = s.rollout;
  const int64_t n = r.n;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> s0(2 * n, nan), s1(2 * n, nan);
  RolloutResult res;
  res.checkpoints.assign(r.blocks() * 2 * n, nan);
  res.y.assign(r.obs.size() * r.channels() * n, nan);
  EmulatedLaunch launch{s.k, s.f};
  if (fused) {
    nc::emu::launch_gray_scott_fused_forward(s.k, s.f, nc::fused_rollout(r), s.initial.data(),
                                             s0.data(), s1.data(), res.checkpoints.data(),
                                             res.y.data(), poison, nullptr);
  } else {
    double* const state[2] = {s0.data(), s1.data()};
    nc::gray_scott_forward(r, s.initial.data(), state, res.checkpoints.data(), res.y.data(), poison,
                           launch);
  }
  std::vector<double> block(r.every * 2 * n, nan), c0(2 * n, 0.0), c1(2 * n, nan);
  res.grad.assign(n, 0.0);
  nc::GrayScottAdjoint proto;
  (unknown == RDUnknown::kF   ? proto.grad_F
   : unknown == RDUnknown::kK ? proto.grad_k
                              : proto.grad_Du) = res.grad.data();
  if (fused) {
    nc::emu::launch_gray_scott_fused_backward(s.k, s.f, nc::fused_rollout(r),
                                              res.checkpoints.data(), block.data(), g.data(),
                                              c0.data(), c1.data(), proto, nullptr);
  } else {
    double* const cot[2] = {c0.data(), c1.data()};
    nc::gray_scott_backward(r, res.checkpoints.data(), block.data(), g.data(), cot, proto, launch);
  }
  return res;
}

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](double x, double y) {
           return std::memcmp(&x, &y, sizeof(double)) == 0;
         });
}

// Cells of h = 0.06: 4 to 6 substeps per observation step (20 to 30 in
// all), so that a fused rollout (512 fibers through every barrier) stays fast.
const nefi::Domain kSmall({9, 7}, {0.54, 0.42});
const nefi::Domain kLarge({23, 29}, {1.38, 1.74});

// The fused kernels against the CPU operator and the per-substep launches:
// a 63-cell grid (threads past the last cell idle at every barrier), every
// case's unknown, boundary, observed channels and checkpoint interval (one
// per substep, several substeps with a partial last block, all in one
// block), and a 667-cell one (threads 0..154 take a second cell), one case
// per unknown; in both thread orders.
TEST(EmulatedGrayScott, FusedRolloutsEqualTheCpuOperatorAndTheSubstepLaunches) {
  const std::vector<nefi::gray_scott_test::Case> all = nefi::gray_scott_test::cases(1000);
  for (const nefi::Domain* grid : {&kSmall, &kLarge})
    for (size_t i = 0; i < all.size(); ++i) {
      // The large grid: one case per unknown (either boundary, every kind of interval).
      if (grid == &kLarge && i != 0 && i != 3 && i != 4) continue;
      const nefi::Domain& dom = *grid;
      const nefi::gray_scott_test::Case& c = all[i];
      const nefi::ReactionDiffusionOptions o = nefi::gray_scott_test::options_for(c);
      const nefi::ReactionDiffusionOperator op(dom, o);
      const int64_t n = dom.shape().numel();
      const std::vector<double> x =
          uniform(n, nefi::gray_scott_test::field_floor(c.unknown), o.field_max, 31);
      fk::Generator gen(32);
      const fk::Tensor g = fk::randn(op.output_shape(dom.shape()), {fk::DType::F64}, &gen);
      const fk::Tensor xt = fk::from_vector(x, dom.shape());
      const std::vector<double> y = op.apply(xt).to_vector<double>();
      const std::vector<double> vjp = op.vjp(xt, g).to_vector<double>();
      const std::vector<double> gv = g.to_vector<double>();
      const Solve solve(op, x);
      SCOPED_TRACE(std::string(name_of(c.unknown)) + " every " +
                   std::to_string(solve.rollout.every) + " of " +
                   std::to_string(solve.rollout.total) + ", " + std::to_string(n) + " cells");
      const RolloutResult per_substep = run_rollout(solve, gv, c.unknown, false);
      EXPECT_TRUE(same_bits(per_substep.y, y));
      EXPECT_TRUE(same_bits(per_substep.grad, vjp));
      for (fkemu::Order order : kOrders) {
        const OrderScope scope(order);
        SCOPED_TRACE(order_name(order));
        const RolloutResult fused = run_rollout(solve, gv, c.unknown, true);
        EXPECT_TRUE(same_bits(fused.y, y));
        EXPECT_TRUE(same_bits(fused.checkpoints, per_substep.checkpoints));
        EXPECT_TRUE(same_bits(fused.grad, vjp));
      }
    }
}

// A set guard flag in the fused forward: the snapshots NaN, the
// checkpoints (the states) as without it.
TEST(EmulatedGrayScott, FusedForwardPoisonsOnlyTheSnapshots) {
  const nefi::Domain& dom = kSmall;
  const nefi::gray_scott_test::Case c = nefi::gray_scott_test::cases(1000)[2];
  const nefi::ReactionDiffusionOptions o = nefi::gray_scott_test::options_for(c);
  const nefi::ReactionDiffusionOperator op(dom, o);
  const std::vector<double> x =
      uniform(63, nefi::gray_scott_test::field_floor(c.unknown), o.field_max, 35);
  const Solve solve(op, x);
  const std::vector<double> g(op.output_shape(dom.shape()).numel(), 1.0);
  const RolloutResult clean = run_rollout(solve, g, c.unknown, true);
  const int flag = 1;
  const RolloutResult poisoned = run_rollout(solve, g, c.unknown, true, &flag);
  EXPECT_TRUE(same_bits(poisoned.checkpoints, clean.checkpoints));
  EXPECT_TRUE(
      std::all_of(poisoned.y.begin(), poisoned.y.end(), [](double v) { return std::isnan(v); }));
  EXPECT_TRUE(std::none_of(clean.y.begin(), clean.y.end(), [](double v) { return std::isnan(v); }));
}

}  // namespace
