// The Gray-Scott operator on a CUDA device against its CPU path: snapshots
// and field gradients of the checkpointed solve for the three unknowns (F,
// k, Du), both boundary kinds, u and/or v observed, several checkpoint
// intervals, f64 and f32 fields, one launch per substep or the whole
// rollout in one single-block launch, equal to the CPU's to the bit (the kernels
// repeat the CPU loops' operations, unfused); the linearised dot test
// <J dx, y> = <dx, J^T y> with both sides on the device (J dx by central
// differences of device solves, J^T y the device adjoint); the unrolled
// reference (fk ops) on the device against the CPU's; the initial state's
// one upload per device; the Du check; and a neural reaction_diffusion stage
// captured as one CUDA graph replaying its eager solve bitwise. Without a
// usable device the tests skip (scripts/gpu-check runs them on one).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/random.h"
#include "nefi/cuda/device_test_util.h"
#include "nefi/cuda/operator_parity.h"
#include "nefi/cuda/stage_graph_replay.h"
#include "nefi/operators/reaction_diffusion/gray_scott_test_cases.h"
#include "nefi/operators/reaction_diffusion/reaction_diffusion_operator.h"

namespace {

namespace gs = nefi::gray_scott;
using nefi::RDUnknown;
using nefi::cuda_test::expect_captured_stage_replays_eager;
using nefi::cuda_test::expect_close;
using nefi::cuda_test::expect_device_matches_cpu;
using nefi::cuda_test::expect_same_values;
using nefi::cuda_test::host;
using nefi::cuda_test::kGpu;

using nefi::gray_scott_test::Case;
using nefi::gray_scott_test::name_of;

const std::vector<Case> kCases = nefi::gray_scott_test::cases(0);

const nefi::Domain kDomain({12, 9}, {0.24, 0.18});

nefi::ReactionDiffusionOptions options_for(const Case& c, nefi::RDGradMode mode) {
  nefi::ReactionDiffusionOptions o = nefi::gray_scott_test::options_for(c);
  o.grad_mode = mode;
  return o;
}

// A field inside [lo, 0.85 field_max] of the case's unknown (f64, CPU).
fk::Tensor field_for(const Case& c, const nefi::ReactionDiffusionOptions& o, uint64_t seed) {
  const double lo = nefi::gray_scott_test::field_floor(c.unknown);
  fk::Generator gen(seed);
  const fk::Tensor r = fk::rand(kDomain.shape(), {fk::DType::F64}, &gen);
  return r * (0.85 * o.field_max - lo) + lo;
}

// Both launch plans: one single-block launch each way (this grid's 108
// cells are under the default device_fused_cells) and one per substep (0).
TEST(NefiGrayScottDevice, SnapshotsAndGradientEqualTheCpu) {
  NEFI_SKIP_WITHOUT_GPU();
  for (const Case& c : kCases)
    for (int64_t fused_cells : {int64_t{4096}, int64_t{0}}) {
      auto o = options_for(c, nefi::RDGradMode::kCheckpoint);
      o.device_fused_cells = fused_cells;
      const nefi::ReactionDiffusionOperator op(kDomain, o);
      const fk::Tensor x = field_for(c, op.options(), 5);
      fk::Generator gen(6);
      const fk::Tensor g = fk::randn(op.output_shape(kDomain.shape()), {fk::DType::F64}, &gen);
      for (fk::DType dt : {fk::DType::F64, fk::DType::F32}) {
        SCOPED_TRACE(std::string(name_of(c.unknown)) + " every " + std::to_string(c.every) + " " +
                     fk::name(dt) + " fused cells " + std::to_string(fused_cells));
        expect_device_matches_cpu(op, x, g, dt, expect_same_values);
      }
    }
}

// The operator is nonlinear: the dot test is of its Jacobian at x,
// <J dx, y> = <dx, J^T y>, J dx by a central difference of two device solves
// (f64; the step 1e-6 of the field keeps both inside field_max, so the
// substep count is the same) and J^T y by the device adjoint.
TEST(NefiGrayScottDevice, LinearisedDotTestOnTheDevice) {
  NEFI_SKIP_WITHOUT_GPU();
  for (const Case& c : kCases) {
    SCOPED_TRACE(name_of(c.unknown));
    const nefi::ReactionDiffusionOperator op(kDomain,
                                             options_for(c, nefi::RDGradMode::kCheckpoint));
    const fk::Tensor x = field_for(c, op.options(), 7).to(kGpu);
    fk::Generator gen(8);
    const fk::Tensor dx = (fk::rand(kDomain.shape(), {fk::DType::F64}, &gen) - 0.5).to(kGpu) *
                          (1e-6 * op.options().field_max);
    const fk::Tensor y =
        fk::randn(op.output_shape(kDomain.shape()), {fk::DType::F64}, &gen).to(kGpu);
    const fk::Tensor jty = op.vjp(x, y);
    ASSERT_EQ(jty.device(), kGpu);
    fk::Tensor jdx;
    {
      fk::autograd::NoGradGuard ng;
      jdx = (op.apply(x + dx) - op.apply(x - dx)) * 0.5;
    }
    const std::vector<double> a = host(jdx), b = host(y), p = host(dx), q = host(jty);
    double lhs = 0, rhs = 0;
    for (size_t i = 0; i < a.size(); ++i) lhs += a[i] * b[i];
    for (size_t i = 0; i < p.size(); ++i) rhs += p[i] * q[i];
    ASSERT_NE(rhs, 0.0);
    EXPECT_NEAR(lhs, rhs, 1e-5 * std::abs(rhs));
  }
}

// The unrolled reference (fk ops on the tape) runs where the field lives;
// fk's device kernels may round differently from its CPU loops, so the
// device result is compared to round-off, not to the bit.
TEST(NefiGrayScottDevice, UnrolledReferenceRunsOnTheDevice) {
  NEFI_SKIP_WITHOUT_GPU();
  for (const Case& c : {kCases[0], kCases[5]}) {
    SCOPED_TRACE(name_of(c.unknown));
    const nefi::ReactionDiffusionOperator op(kDomain, options_for(c, nefi::RDGradMode::kAutograd));
    const fk::Tensor x = field_for(c, op.options(), 9);
    fk::Generator gen(10);
    const fk::Tensor g = fk::randn(op.output_shape(kDomain.shape()), {fk::DType::F64}, &gen);
    const fk::Tensor xd = x.to(kGpu);
    const fk::Tensor yd = op.apply(xd);
    ASSERT_EQ(yd.device(), kGpu);
    expect_close(host(yd), host(op.apply(x)), 1e-13, "unrolled snapshots");
    const fk::Tensor gd = op.vjp(xd, g.to(kGpu));
    ASSERT_EQ(gd.device(), kGpu);
    expect_close(host(gd), host(op.vjp(x, g)), 1e-10, "unrolled gradient");
  }
}

// One upload per device: the same buffer on a second call and from a copy.
TEST(NefiGrayScottDevice, InitialStateIsUploadedOncePerDevice) {
  NEFI_SKIP_WITHOUT_GPU();
  const nefi::ReactionDiffusionOperator op(kDomain, options_for(kCases[0], {}));
  const fk::Tensor a = op.initial_state_on(kGpu);
  ASSERT_EQ(a.device(), kGpu);
  EXPECT_EQ(op.initial_state_on(kGpu).data_ptr(), a.data_ptr());
  const nefi::ReactionDiffusionOperator copy = op;
  EXPECT_EQ(copy.initial_state_on(kGpu).data_ptr(), a.data_ptr());
  EXPECT_EQ(host(a), host(op.initial_state_on(fk::kCPU)));
}

// The adjoint reads the unknown the forward ran with (an alias of a
// contiguous f64 input): changed in place in between, the backward refuses
// rather than return the gradient at a field the snapshots never saw.
TEST(NefiGrayScottDevice, FieldChangedInPlaceBeforeBackwardIsAClearError) {
  NEFI_SKIP_WITHOUT_GPU();
  const Case& c = kCases[0];
  const nefi::ReactionDiffusionOperator op(kDomain, options_for(c, nefi::RDGradMode::kCheckpoint));
  fk::Tensor x = field_for(c, op.options(), 11).to(kGpu);
  x.set_requires_grad(true);
  const fk::Tensor y = op.apply(x);
  fk::Tensor alias = x.detach();
  fk::add_(alias, fk::full(kDomain.shape(), 1e-3, {fk::DType::F64, kGpu}));
  try {
    y.backward(fk::ones(y.shape(), {fk::DType::F64, kGpu}));
    FAIL() << "no error";
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("modified by an in-place op"), std::string::npos)
        << e.what();
  }
}

// An eager device apply checks a Du field as the CPU does.
TEST(NefiGrayScottDevice, NonPositiveDuIsAClearError) {
  NEFI_SKIP_WITHOUT_GPU();
  const nefi::ReactionDiffusionOperator op(kDomain, options_for(kCases[4], {}));
  EXPECT_THROW(op.apply(fk::zeros(kDomain.shape(), {fk::DType::F64, kGpu})), fk::Error);
}

// A neural reaction_diffusion stage on the device: the step (field, the
// Gray-Scott solve and its adjoint, MSE, TV) captured as one CUDA graph
// replays bitwise the eager solve, with the rollouts fused into one launch
// each and with one launch per substep.
TEST(NefiGrayScottDevice, ReactionDiffusionStageIsCapturedAndReplaysBitwise) {
  NEFI_SKIP_WITHOUT_GPU();
  for (const char* fused_cells : {"4096", "0"})
    expect_captured_stage_replays_eager(
        "reaction_diffusion",
        {{"n", "16"}, {"obs_times", "[10, 20]"}, {"device_fused_cells", fused_cells}}, "x");
}

}  // namespace
