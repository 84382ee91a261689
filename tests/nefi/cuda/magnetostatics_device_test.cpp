// The magnetostatics operator on a CUDA device against its CPU path: fields
// and source gradients for the stream function and the two-channel current,
// f64 and f32. Its transfer function is copied to the device once per
// resolution and dtype (a captured step may not copy from the host), so the
// second apply must give the first's values. Without a usable device the
// tests skip (scripts/gpu-check runs them on one).
//
// Tolerance: cuFFT against the CPU FFT on the padded grid, O(log n)
// roundings per value: 1e-12 of the largest value in f64, 64 u32 in f32.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fk/factory.h"
#include "fk/random.h"
#include "nefi/cuda/device_test_util.h"
#include "nefi/cuda/operator_parity.h"
#include "nefi/operators/magnetostatics.h"

namespace {

using nefi::cuda_test::close_within;
using nefi::cuda_test::expect_close;
using nefi::cuda_test::expect_device_matches_cpu;
using nefi::cuda_test::host;
using nefi::cuda_test::kGpu;
using nefi::cuda_test::ParityOutputs;

TEST(NefiMagnetostaticsDevice, FieldsAndGradientsMatchTheCpu) {
  NEFI_SKIP_WITHOUT_GPU();
  const nefi::Domain dom({10, 12}, {5.0, 6.0});
  for (auto source : {nefi::MagneticSource::kStream, nefi::MagneticSource::kCurrent}) {
    nefi::MagnetostaticsOptions o;
    o.source = source;
    o.component = nefi::FieldComponent::kNV;
    o.nv_axis = {0.3, 0.2, 0.9};
    o.standoff = 0.4;
    const nefi::MagnetostaticsOperator op(dom, o);
    const bool current = source == nefi::MagneticSource::kCurrent;
    const fk::Dims in = current ? fk::Dims{2, 10, 12} : fk::Dims{10, 12};
    fk::Generator gen(5);
    const fk::Tensor x = fk::randn(in, {fk::DType::F64}, &gen);
    const fk::Tensor g = fk::randn({10, 12}, {fk::DType::F64}, &gen);
    for (fk::DType dt : {fk::DType::F64, fk::DType::F32}) {
      SCOPED_TRACE(std::string(current ? "current " : "stream ") + fk::name(dt));
      const double tol = dt == fk::DType::F64 ? 1e-12 : 64 * 0x1p-24;
      ParityOutputs y;
      expect_device_matches_cpu(op, x, g, dt, close_within(tol), &y);
      expect_close(host(op.apply(x.to(dt).to(kGpu))), y.device, 0,
                   "second apply (cached transfer)");
    }
  }
}

}  // namespace
