// The angular-spectrum propagation and the holography operator on a CUDA
// device against their CPU paths: propagate() forward and adjoint with edge
// and zero padding, the adjoint dot test <P u, v> = <u, P^H v> computed from
// device results, the operator's intensities and phase gradient in f64 and
// f32 (batched), and the device transfer functions' cache. Without a usable
// device the tests skip (scripts/gpu-check runs them on one).
//
// Tolerances: the device runs the CPU's arithmetic in f64 with cuFFT in place
// of FFTW; two FFTs of m points agree to O(log m) u64 of the field's norm, so
// 1e-12 of the largest value (f64). f32 phases and intensities are those f64
// results rounded once: 4 u32 of the largest value.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <string>
#include <vector>

#include "fk/cuda/runtime.h"
#include "fk/factory.h"
#include "fk/random.h"
#include "nefi/cuda/device_test_util.h"
#include "nefi/cuda/operator_parity.h"
#include "nefi/operators/angular_spectrum.h"

namespace {

using c128 = std::complex<double>;
const fk::Device kGpu = fk::cuda_device(0);

fk::Tensor random_fields(int64_t batch, int64_t n0, int64_t n1, uint64_t seed) {
  fk::Generator g(seed);
  const auto re = fk::randn({batch * n0 * n1}, {fk::DType::F64}, &g).to_vector<double>();
  const auto im = fk::randn({batch * n0 * n1}, {fk::DType::F64}, &g).to_vector<double>();
  std::vector<c128> f(re.size());
  for (size_t i = 0; i < f.size(); ++i) f[i] = {re[i], im[i]};
  return fk::from_vector(f, {batch, n0, n1});
}

std::vector<c128> host(const fk::Tensor& t) {
  return t.to(fk::kCPU).contiguous().to_vector<c128>();
}

c128 inner(const std::vector<c128>& a, const std::vector<c128>& b) {
  c128 s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += std::conj(a[i]) * b[i];
  return s;
}

template <typename V>
double max_abs(const std::vector<V>& v) {
  double m = 0;
  for (const V& a : v) m = nefi::cuda_test::nan_max(m, static_cast<double>(std::abs(a)));
  return m;
}

template <typename V>
double max_diff(const std::vector<V>& a, const std::vector<V>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i)
    m = nefi::cuda_test::nan_max(m, static_cast<double>(std::abs(a[i] - b[i])));
  return m;
}

TEST(NefiAngularSpectrumDevice, PropagateMatchesTheCpu) {
  NEFI_SKIP_WITHOUT_GPU();
  const std::vector<double> h{1.0, 0.8};
  const fk::Tensor u = random_fields(2, 9, 7, 1);
  for (int64_t pad : {1, 2})
    for (bool edge : {true, false})
      for (bool adjoint : {false, true}) {
        SCOPED_TRACE("pad " + std::to_string(pad) + (edge ? " edge" : " zero") +
                     (adjoint ? " adjoint" : " forward"));
        const nefi::PropagationOptions o{0.5, true, pad, edge};
        const std::vector<c128> cpu = host(nefi::propagate(u, h, 60.0, o, adjoint));
        const fk::Tensor gpu = nefi::propagate(u.to(kGpu), h, 60.0, o, adjoint);
        ASSERT_EQ(gpu.device(), kGpu);
        ASSERT_EQ(gpu.shape(), u.shape());
        EXPECT_LE(max_diff(host(gpu), cpu), 1e-12 * max_abs(cpu));
      }
}

// <P u, v> = <u, P^H v> for the whole pad -> filter -> crop map, both sides on the device.
TEST(NefiAngularSpectrumDevice, AdjointDotTestOnTheDevice) {
  NEFI_SKIP_WITHOUT_GPU();
  const std::vector<double> h{1.0, 0.8};
  for (bool edge : {true, false}) {
    SCOPED_TRACE(edge ? "edge" : "zero");
    const nefi::PropagationOptions o{0.5, true, 2, edge};
    const fk::Tensor u = random_fields(1, 9, 7, 2).to(kGpu), v = random_fields(1, 9, 7, 3).to(kGpu);
    const c128 lhs = inner(host(nefi::propagate(u, h, 60.0, o)), host(v));
    const c128 rhs = inner(host(u), host(nefi::propagate(v, h, 60.0, o, true)));
    EXPECT_NEAR(lhs.real(), rhs.real(), 1e-12 * std::abs(lhs));
    EXPECT_NEAR(lhs.imag(), rhs.imag(), 1e-12 * std::abs(lhs));
  }
}

// Intensities and the phase gradient (a batch of 2, three distances,
// absorption), device against CPU, f64 and f32.
TEST(NefiHolographyDevice, IntensityAndGradientMatchTheCpu) {
  NEFI_SKIP_WITHOUT_GPU();
  const nefi::HolographyOperator op(nefi::Domain({12, 10}, {6.0, 5.0}), {0.0, 20.0, 55.0},
                                    nefi::PropagationOptions{0.5, true, 2, true}, 0.1);
  fk::Generator gen(7);
  const fk::Tensor phi = fk::uniform({2, 12, 10}, -1.0, 1.0, {fk::DType::F64}, &gen);
  const fk::Tensor g = fk::randn(op.output_shape(phi.shape()), {fk::DType::F64}, &gen);
  for (fk::DType dt : {fk::DType::F64, fk::DType::F32}) {
    SCOPED_TRACE(fk::name(dt));
    const double tol = dt == fk::DType::F64 ? 1e-12 : 4 * 0x1p-24;
    // The output is the intensities, the input gradient the phase's.
    nefi::cuda_test::expect_device_matches_cpu(
        op, phi, g, dt,
        [tol](const std::vector<double>& got, const std::vector<double>& want,
              const std::string& what) {
          EXPECT_LE(max_diff(got, want), tol * max_abs(want)) << what;
        });
  }
}

// One device copy of each distance's transfer function per grid: the same
// tensor on a second call, another one at another resolution, each equal to
// transfer_function() on the host.
TEST(NefiHolographyDevice, TransferFunctionsAreCachedPerGrid) {
  NEFI_SKIP_WITHOUT_GPU();
  const nefi::PropagationOptions o{0.5, true, 2, true};
  const nefi::HolographyOperator op(nefi::Domain({12, 10}, {6.0, 5.0}), {20.0}, o);
  const fk::Tensor a = op.transfer_on(20.0, kGpu), b = op.transfer_on(20.0, kGpu);
  EXPECT_EQ(a.data_ptr(), b.data_ptr());
  EXPECT_EQ(host(a), nefi::transfer_function(24, 20, op.domain().spacing(), 20.0, o));
  const auto coarse = std::static_pointer_cast<nefi::HolographyOperator>(op.at_resolution({6, 5}));
  const fk::Tensor c = coarse->transfer_on(20.0, kGpu);
  EXPECT_NE(c.data_ptr(), a.data_ptr());
  EXPECT_EQ(host(c), nefi::transfer_function(12, 10, coarse->domain().spacing(), 20.0, o));
  EXPECT_NE(op.transfer_on(30.0, kGpu).data_ptr(), a.data_ptr());
  EXPECT_EQ(op.transfer_on(20.0, kGpu).data_ptr(), a.data_ptr());  // still cached
}

}  // namespace
