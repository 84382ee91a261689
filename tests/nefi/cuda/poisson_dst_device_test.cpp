// The Poisson DST solve on a CUDA device (cuFFT on the odd extension)
// against the CPU's dense-DST solve: potentials and source gradients 1-D to
// 3-D, batched, both spectra, f64 and f32; the adjoint dot test <A x, y> =
// <x, A^T y> computed from device results; the eigenvalue table's cache; and
// a Poisson source-recovery solve whose stage is captured as one CUDA graph
// and replays bitwise its eager solve. Without a usable device the tests skip
// (scripts/gpu-check runs them on one).
//
// Tolerances: the device divides the spectrum of cuFFT's transforms where the
// CPU multiplies by dense DST matrices; both are f64 with O(log n) and O(n)
// roundings per value, so 1e-12 of the largest value (f64). f32 results are
// those f64 values rounded once: 2 u32 of the largest value.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "fk/cuda/runtime.h"
#include "fk/factory.h"
#include "fk/random.h"
#include "nefi/cuda/device_test_util.h"
#include "nefi/cuda/operator_parity.h"
#include "nefi/cuda/stage_graph_replay.h"
#include "nefi/instances/instance.h"
#include "nefi/operators/poisson_dst.h"
#include "nefi/solve/solver.h"

namespace {

using nefi::cuda_test::close_within;
using nefi::cuda_test::expect_adjoint_on_device;
using nefi::cuda_test::expect_captured_stage_replays_eager;
using nefi::cuda_test::expect_device_matches_cpu;
using nefi::cuda_test::host;
using nefi::cuda_test::kGpu;

const std::vector<nefi::Domain> kDomains = {nefi::Domain({11}, {1.3}),
                                            nefi::Domain({12, 9}, {1.0, 0.75}),
                                            nefi::Domain({6, 7, 4}, {1.0, 1.2, 0.6})};

fk::Dims batched(const nefi::Domain& d) {
  std::vector<int64_t> s{2};
  for (int64_t n : d.shape()) s.push_back(n);
  return fk::Dims(s);
}

TEST(NefiPoissonDstDevice, SolveAndGradientMatchTheCpu) {
  NEFI_SKIP_WITHOUT_GPU();
  for (const nefi::Domain& d : kDomains)
    for (auto spectrum :
         {nefi::PoissonSpectrum::kContinuous, nefi::PoissonSpectrum::kFiniteDifference}) {
      const nefi::PoissonOperator op(d, spectrum, 0.8);
      fk::Generator gen(4);
      const fk::Tensor x = fk::randn(batched(d), {fk::DType::F64}, &gen);
      const fk::Tensor g = fk::randn(batched(d), {fk::DType::F64}, &gen);
      for (fk::DType dt : {fk::DType::F64, fk::DType::F32}) {
        SCOPED_TRACE(d.shape().str() + " " + op.fidelity_tag() + " " + fk::name(dt));
        const double tol = dt == fk::DType::F64 ? 1e-12 : 2 * 0x1p-24;
        // The output is the potential, the input gradient the source's.
        expect_device_matches_cpu(op, x, g, dt, close_within(tol));
      }
    }
}

// <A x, y> = <x, A^T y>, both applied on the device (A^T through the
// autograd node).
TEST(NefiPoissonDstDevice, AdjointDotTestOnTheDevice) {
  NEFI_SKIP_WITHOUT_GPU();
  for (const nefi::Domain& d : kDomains) {
    SCOPED_TRACE(d.shape().str());
    const nefi::PoissonOperator op(d, nefi::PoissonSpectrum::kFiniteDifference, 1.0);
    fk::Generator gen(8);
    const fk::Tensor x = fk::randn(batched(d), {fk::DType::F64}, &gen).to(kGpu);
    const fk::Tensor y = fk::randn(batched(d), {fk::DType::F64}, &gen).to(kGpu);
    expect_adjoint_on_device(op, x, y);
  }
}

TEST(NefiPoissonDstDevice, EigenvalueTableIsCachedPerResolution) {
  NEFI_SKIP_WITHOUT_GPU();
  const nefi::PoissonOperator op(kDomains[1]);
  const fk::Tensor a = op.extended_inverse_eigenvalues_on(kGpu);
  EXPECT_EQ(a.data_ptr(), op.extended_inverse_eigenvalues_on(kGpu).data_ptr());
  EXPECT_EQ(a.shape(), fk::Dims({24, 18}));
  EXPECT_EQ(host(a), op.extended_inverse_eigenvalues());
  const auto coarse = op.at_resolution({6, 5});
  const auto& poisson = static_cast<const nefi::PoissonOperator&>(*coarse);
  const fk::Tensor c = poisson.extended_inverse_eigenvalues_on(kGpu);
  EXPECT_NE(c.data_ptr(), a.data_ptr());
  EXPECT_EQ(c.shape(), fk::Dims({12, 10}));
  EXPECT_TRUE(op.graph_capturable());
}

// A neural Poisson source stage on the device: the step (field, DST solve
// forward and adjoint, masked relative MSE, TV, L1) captured as one CUDA
// graph replays bitwise the eager solve.
TEST(NefiPoissonDstDevice, PoissonSourceStageIsCapturedAndReplaysBitwise) {
  NEFI_SKIP_WITHOUT_GPU();
  expect_captured_stage_replays_eager("poisson_source", {{"n", "24"}}, "x");
}

}  // namespace
