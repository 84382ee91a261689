// The Born and Rytov operators on a CUDA device against their CPU paths:
// forward fields and field gradients (batched, f64 and f32) equal the CPU's
// to the rounding of the complex GEMM (cuBLAS and OpenBLAS sum in different
// orders); the adjoint dot test <A x, y> = <x, A^T y> from device results;
// the device tables' cache; and a diffraction-tomography stage (Rytov) whose
// step is captured as one CUDA graph and replays bitwise its eager solve.
// Without a usable device the tests skip (scripts/gpu-check runs them on one).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "fk/factory.h"
#include "fk/random.h"
#include "nefi/cuda/device_test_util.h"
#include "nefi/cuda/operator_parity.h"
#include "nefi/cuda/stage_graph_replay.h"
#include "nefi/instances/instance.h"
#include "nefi/operators/scattering.h"
#include "nefi/solve/solver.h"

namespace {

using nefi::cuda_test::expect_adjoint_on_device;
using nefi::cuda_test::expect_captured_stage_replays_eager;
using nefi::cuda_test::expect_device_matches_cpu;
using nefi::cuda_test::host;
using nefi::cuda_test::kGpu;

struct Case {
  std::vector<int64_t> shape;  // with a leading batch
  nefi::ScatteringGeometry geometry;
};

// R = 7 evaluates every receiver; R = 8 the quarter ring and its rotations.
const std::vector<Case> kCases = {
    {{2, 6, 6}, {1.0, 1.0, 5, 7, 2.0, false}},
    {{2, 6, 6}, {1.0, 1.0, 5, 7, 2.0, true}},
    {{3, 10, 10}, {0.7, 1.3, 4, 8, 2.5, true}},
};

nefi::BornOperator op_for(const Case& c) {
  const int64_t n = c.shape.back();
  return nefi::BornOperator(nefi::Domain({n, n}, {2.0, 2.0}), c.geometry);
}

// Elementwise |a - b| <= rel * max |b|.
void expect_close(const std::vector<double>& a, const std::vector<double>& b, double rel) {
  ASSERT_EQ(a.size(), b.size());
  double scale = 0;
  for (double v : b) scale = std::max(scale, std::abs(v));
  for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], rel * scale) << i;
}

TEST(NefiScatteringDevice, ForwardAndGradientMatchTheCpu) {
  NEFI_SKIP_WITHOUT_GPU();
  for (const Case& c : kCases) {
    const nefi::BornOperator op = op_for(c);
    fk::Generator gen(5);
    const fk::Tensor x = fk::randn(fk::Dims(c.shape), {fk::DType::F64}, &gen);
    const fk::Tensor g = fk::randn(op.output_shape(x.shape()), {fk::DType::F64}, &gen);
    for (fk::DType dt : {fk::DType::F64, fk::DType::F32}) {
      SCOPED_TRACE(op.fidelity_tag() + " " + fk::name(dt));
      const double rel = dt == fk::DType::F64 ? 1e-13 : 1e-6;
      expect_device_matches_cpu(op, x, g, dt,
                                [rel](const std::vector<double>& got,
                                      const std::vector<double>& want, const std::string& what) {
                                  SCOPED_TRACE(what);
                                  expect_close(got, want, rel);
                                });
    }
  }
}

// <A x, y> = <x, A^T y>, A and A^T both applied on the device (A^T through
// the autograd node's conjugate-GEMM-demodulate passes).
TEST(NefiScatteringDevice, AdjointDotTestOnTheDevice) {
  NEFI_SKIP_WITHOUT_GPU();
  for (const Case& c : kCases) {
    const nefi::BornOperator op = op_for(c);
    SCOPED_TRACE(op.fidelity_tag());
    fk::Generator gen(11);
    const fk::Tensor x = fk::randn(fk::Dims(c.shape), {fk::DType::F64}, &gen).to(kGpu);
    const fk::Tensor y = fk::randn(op.output_shape(x.shape()), {fk::DType::F64}, &gen).to(kGpu);
    expect_adjoint_on_device(op, x, y);
  }
}

// One upload per resolution and device: the same buffers on a second call
// and from a copy of the operator, others at another resolution.
TEST(NefiScatteringDevice, TablesAreCachedPerResolution) {
  NEFI_SKIP_WITHOUT_GPU();
  const nefi::BornOperator op = op_for(kCases[1]);
  const nefi::ScatteringTablesOnDevice a = op.tables_on(kGpu), b = op.tables_on(kGpu);
  EXPECT_EQ(a.green.data_ptr(), b.green.data_ptr());
  EXPECT_EQ(a.phase.data_ptr(), b.phase.data_ptr());
  const nefi::BornOperator copy = op;
  EXPECT_EQ(copy.tables_on(kGpu).rotation.data_ptr(), a.rotation.data_ptr());
  const std::vector<double> green = host(a.green);
  ASSERT_EQ(green.size(), 2 * op.tables().green.size());
  for (size_t i = 0; i < op.tables().green.size(); ++i) {
    EXPECT_EQ(green[2 * i], op.tables().green[i].real());
    EXPECT_EQ(green[2 * i + 1], op.tables().green[i].imag());
  }
  const auto fine = op.at_resolution({8, 8});
  const auto& born = static_cast<const nefi::BornOperator&>(*fine);
  const nefi::ScatteringTablesOnDevice t = born.tables_on(kGpu);
  EXPECT_NE(t.green.data_ptr(), a.green.data_ptr());
  EXPECT_EQ(t.green.numel(), static_cast<int64_t>(2 * born.tables().green.size()));
  EXPECT_TRUE(op.graph_capturable());
  EXPECT_EQ(op.host_only_reason(), "");
}

// A neural diffraction-tomography stage (Rytov) on the device: the step
// (field, Born forward and adjoint, MSE, TV) captured as one CUDA graph
// replays bitwise the eager solve.
TEST(NefiScatteringDevice, DiffractionTomographyStageIsCapturedAndReplaysBitwise) {
  NEFI_SKIP_WITHOUT_GPU();
  expect_captured_stage_replays_eager("diffraction_tomography",
                                      {{"n", "16"},
                                       {"n_angles", "8"},
                                       {"n_receivers", "16"},
                                       {"supersample", "1"},
                                       {"rytov", "true"}},
                                      "chi");
}

}  // namespace
