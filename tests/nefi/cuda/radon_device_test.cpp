// The Radon operator on a CUDA device against its CPU path, with the
// device's own adjoint: projections and image gradients of 2-D and 3-D
// operators (batched, f64 and f32) equal the CPU's to the bit (the kernels
// sum each output in the CPU loop's order with unfused products); the
// adjoint dot test <A x, y> = <x, A^T y> computed from device results; the
// device matrices' cache; and a sparse-view CT solve whose stage is captured
// as one CUDA graph and replays bitwise its eager solve. Without a usable
// device the tests skip (scripts/gpu-check runs them on one).
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "fk/cuda/runtime.h"
#include "fk/factory.h"
#include "fk/random.h"
#include "nefi/cuda/device_test_util.h"
#include "nefi/cuda/operator_parity.h"
#include "nefi/cuda/stage_graph_replay.h"
#include "nefi/instances/instance.h"
#include "nefi/operators/radon.h"
#include "nefi/solve/solver.h"

namespace {

using nefi::cuda_test::expect_adjoint_on_device;
using nefi::cuda_test::expect_captured_stage_replays_eager;
using nefi::cuda_test::expect_device_matches_cpu;
using nefi::cuda_test::expect_same_values;
using nefi::cuda_test::host;
using nefi::cuda_test::kGpu;

struct Case {
  std::vector<int64_t> shape;  // with a leading batch of 2
  nefi::RadonGeometry geometry;
};

const std::vector<Case> kCases = {
    {{2, 12, 12}, {7, std::numbers::pi, 1, 2}},
    {{2, 10, 10}, {5, 2.0, 2, 1}},
    {{2, 9, 9, 4}, {6, std::numbers::pi, 1, 1}},
};

nefi::RadonOperator op_for(const Case& c) {
  std::vector<int64_t> s(c.shape.begin() + 1, c.shape.end());
  return nefi::RadonOperator(nefi::Domain(fk::Dims(s), std::vector<double>(s.size(), 1.2)),
                             c.geometry);
}

TEST(NefiRadonDevice, ProjectionAndGradientEqualTheCpu) {
  NEFI_SKIP_WITHOUT_GPU();
  for (const Case& c : kCases) {
    const nefi::RadonOperator op = op_for(c);
    fk::Generator gen(5);
    const fk::Tensor x = fk::randn(fk::Dims(c.shape), {fk::DType::F64}, &gen);
    const fk::Tensor g = fk::randn(op.output_shape(x.shape()), {fk::DType::F64}, &gen);
    for (fk::DType dt : {fk::DType::F64, fk::DType::F32}) {
      SCOPED_TRACE(op.fidelity_tag() + " " + fk::name(dt));
      expect_device_matches_cpu(op, x, g, dt, expect_same_values);
    }
  }
}

// <A x, y> = <x, A^T y>, A and A^T both applied on the device (A^T through
// the autograd node's transpose gather).
TEST(NefiRadonDevice, AdjointDotTestOnTheDevice) {
  NEFI_SKIP_WITHOUT_GPU();
  for (const Case& c : kCases) {
    const nefi::RadonOperator op = op_for(c);
    SCOPED_TRACE(op.fidelity_tag());
    fk::Generator gen(11);
    const fk::Tensor x = fk::randn(fk::Dims(c.shape), {fk::DType::F64}, &gen).to(kGpu);
    const fk::Tensor y = fk::randn(op.output_shape(x.shape()), {fk::DType::F64}, &gen).to(kGpu);
    expect_adjoint_on_device(op, x, y);
  }
}

// One upload per resolution and device: the same buffers on a second call
// and from a copy of the operator, others at another resolution.
TEST(NefiRadonDevice, MatricesAreCachedPerResolution) {
  NEFI_SKIP_WITHOUT_GPU();
  const nefi::RadonOperator op = op_for(kCases[0]);
  const nefi::RadonMatricesOnDevice a = op.matrices_on(kGpu), b = op.matrices_on(kGpu);
  EXPECT_EQ(a.weight.data_ptr(), b.weight.data_ptr());
  EXPECT_EQ(a.adjoint_weight.data_ptr(), b.adjoint_weight.data_ptr());
  const nefi::RadonOperator copy = op;
  EXPECT_EQ(copy.matrices_on(kGpu).col.data_ptr(), a.col.data_ptr());
  EXPECT_EQ(host(a.weight), op.matrix().weight);
  const auto coarse = op.at_resolution({6, 6});
  const auto& radon = static_cast<const nefi::RadonOperator&>(*coarse);
  const nefi::RadonMatricesOnDevice m = radon.matrices_on(kGpu);
  EXPECT_NE(m.weight.data_ptr(), a.weight.data_ptr());
  EXPECT_EQ(m.weight.numel(), static_cast<int64_t>(radon.matrix().weight.size()));
  EXPECT_TRUE(op.graph_capturable());
}

// A neural sparse-view CT stage on the device: the step (field, Radon
// forward and adjoint, MSE, TV) captured as one CUDA graph replays bitwise
// the eager solve.
TEST(NefiRadonDevice, SparseViewCtStageIsCapturedAndReplaysBitwise) {
  NEFI_SKIP_WITHOUT_GPU();
  expect_captured_stage_replays_eager("sparse_view_ct", {{"n", "24"}}, "x");
}

}  // namespace
