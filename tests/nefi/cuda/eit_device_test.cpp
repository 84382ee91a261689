// The eit operator on a CUDA device against the CPU (eit_flux_term.h and the
// elliptic solve, elliptic_device.h): the flux trace's 1/σ term and the
// whole operator (gap electrodes, flux trace, Jacobi-PCG, IFT adjoint),
// forward and σ gradient, f64 and f32; and an eit stage captured as one
// CUDA graph that replays its eager solve bitwise. Without a usable device
// the tests skip (scripts/gpu-check runs them on one).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/random.h"
#include "nefi/cuda/device_test_util.h"
#include "nefi/cuda/stage_graph_replay.h"
#include "nefi/instances/eit_flux_term.h"
#include "nefi/instances/eit_model.h"
#include "nefi/instances/instance.h"

namespace {

using nefi::cuda_test::expect_captured_stage_replays_eager;
using nefi::cuda_test::expect_close;
using nefi::cuda_test::host;
using nefi::cuda_test::kGpu;

fk::Tensor conductivity(int64_t n, uint64_t seed) {
  fk::Generator g(seed);
  return fk::rand({n, n}, {fk::DType::F64}, &g) * 2.0 + 0.3;
}

fk::Tensor normal(const fk::Dims& s, uint64_t seed) {
  fk::Generator g(seed);
  return fk::randn(s, {fk::DType::F64}, &g);
}

// x on the CPU and on GPU 0 in dtype dt through f, forward and gradient
// (cotangent g) within tol of each other.
template <typename F>
void expect_device_matches_cpu(F&& f, const fk::Tensor& x, const fk::Tensor& g, fk::DType dt,
                               double tol) {
  fk::Tensor xc = x.detach().to(dt), xd = x.detach().to(dt).to(kGpu);  // fresh leaves
  xc.set_requires_grad(true);
  xd.set_requires_grad(true);
  const fk::Tensor yc = f(xc), yd = f(xd);
  ASSERT_EQ(yd.device(), kGpu);
  ASSERT_EQ(yd.dtype(), dt);
  expect_close(host(yd), host(yc), tol, "forward");
  yc.backward(g.to(dt));
  yd.backward(g.to(dt).to(kGpu));
  ASSERT_EQ(xd.grad().device(), kGpu);
  expect_close(host(xd.grad()), host(xc.grad()), tol, "gradient");
}

TEST(NefiEitDevice, FluxTermMatchesTheCpu) {
  NEFI_SKIP_WITHOUT_GPU();
  constexpr int64_t n = 16, patterns = 4;
  const nefi::eit::Electrodes el{16, 0.5};
  const auto segments = nefi::eit::observed_segments(n, el);
  const auto m = static_cast<int64_t>(segments.size());
  const nefi::eit::FluxTerm term(
      fk::from_vector(nefi::eit::flux_trace_matrix(n, segments, patterns, 1.0, el),
                      {patterns * m, n * n}),
      n);
  for (fk::DType dt : {fk::DType::F64, fk::DType::F32}) {
    SCOPED_TRACE(fk::name(dt));
    const nefi::cuda_test::NoTf32 no_tf32;
    expect_device_matches_cpu([&term](const fk::Tensor& x) { return term.apply(x); },
                              conductivity(n, 1), normal({patterns * m}, 2), dt,
                              dt == fk::DType::F64 ? 1e-13 : 1e-5);
  }
}

// The instance's operator at 16² (12 electrodes, flux trace, CG to 1e-13
// with warm starts): the device and the CPU CG sum in other orders, so
// they agree to the tolerance, not bitwise.
TEST(NefiEitDevice, OperatorForwardAndGradientMatchTheCpu) {
  NEFI_SKIP_WITHOUT_GPU();
  auto inst = nefi::find_instance("eit");
  nefi::Params p = inst->default_config();
  for (auto [key, value] : std::vector<std::pair<const char*, const char*>>{{"n", "16"},
                                                                            {"n_patterns", "4"},
                                                                            {"electrodes", "12"},
                                                                            {"supersample", "1"},
                                                                            {"trace", "flux"},
                                                                            {"linear_solver", "cg"},
                                                                            {"tol", "1e-13"}})
    p.set(key, value);
  const auto s = inst->setup(p, "grid", 0);
  ASSERT_TRUE(s.has_value());
  const auto op = s->problem.op;
  EXPECT_EQ(op->host_only_reason(), "");
  EXPECT_TRUE(op->graph_capturable());
  const nefi::cuda_test::NoTf32 no_tf32;
  for (fk::DType dt : {fk::DType::F64, fk::DType::F32}) {
    SCOPED_TRACE(fk::name(dt));
    expect_device_matches_cpu([&op](const fk::Tensor& x) { return op->apply(x); },
                              conductivity(16, 3), normal(op->output_shape({16, 16}), 4), dt,
                              dt == fk::DType::F64 ? 1e-9 : 2e-3);
  }
}

TEST(NefiEitDevice, FluxTraceStageIsCapturedAndReplaysBitwise) {
  NEFI_SKIP_WITHOUT_GPU();
  expect_captured_stage_replays_eager(
      "eit", {{"n", "16"}, {"n_patterns", "4"}, {"linear_solver", "cg"}, {"trace", "flux"}},
      "sigma");
}

}  // namespace
