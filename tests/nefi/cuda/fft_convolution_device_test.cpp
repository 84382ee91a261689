// FFTConvolution's device spectra: one device copy per (padded grid,
// spacing, dtype, device), reused by every call, another for another grid,
// each the host spectrum's bits; and a device apply that uses the cached copy.
// Without a usable device the tests skip (scripts/gpu-check runs them on one).
#include <gtest/gtest.h>

#include <complex>
#include <memory>
#include <vector>

#include "fk/cuda/runtime.h"
#include "fk/factory.h"
#include "fk/random.h"
#include "nefi/cuda/device_test_util.h"
#include "nefi/operators/fft_convolution.h"

namespace {

const fk::Device kGpu = fk::cuda_device(0);

std::vector<std::complex<float>> values(const fk::Tensor& t) {
  return t.to(fk::kCPU).contiguous().to_vector<std::complex<float>>();
}

TEST(NefiFFTConvolutionDevice, SpectrumIsUploadedOncePerGrid) {
  NEFI_SKIP_WITHOUT_GPU();
  const nefi::FFTConvolution op(nefi::gaussian_psf(0.05), nefi::Domain({40, 36}));
  const fk::Tensor a = op.spectrum(fk::DType::F32, kGpu);
  ASSERT_EQ(a.device(), kGpu);
  EXPECT_EQ(op.spectrum(fk::DType::F32, kGpu).data_ptr(), a.data_ptr());
  EXPECT_EQ(values(a), values(op.spectrum(fk::DType::F32)));
  // Another grid (and so another spacing and padded length): its own copy.
  const auto coarse = std::static_pointer_cast<nefi::FFTConvolution>(op.at_resolution({20, 18}));
  const fk::Tensor c = coarse->spectrum(fk::DType::F32, kGpu);
  EXPECT_NE(c.data_ptr(), a.data_ptr());
  EXPECT_EQ(values(c), values(coarse->spectrum(fk::DType::F32)));
  EXPECT_EQ(op.spectrum(fk::DType::F32, kGpu).data_ptr(), a.data_ptr());  // still cached
  // Another dtype: its own copy too.
  EXPECT_EQ(op.spectrum(fk::DType::F64, kGpu).dtype(), fk::DType::C128);
}

// Two grids that pad to one FFT length but sample the kernel at different
// spacings get different device spectra (the cache keys on the spacing).
TEST(NefiFFTConvolutionDevice, SameFftLengthOtherSpacingIsAnotherKey) {
  NEFI_SKIP_WITHOUT_GPU();
  const nefi::FFTConvolution op(nefi::gaussian_psf(0.02), nefi::Domain({60}));
  const auto other = std::static_pointer_cast<nefi::FFTConvolution>(op.at_resolution({62}));
  ASSERT_EQ(op.fft_shape(), other->fft_shape());
  const fk::Tensor a = op.spectrum(fk::DType::F32, kGpu);
  const fk::Tensor b = other->spectrum(fk::DType::F32, kGpu);
  EXPECT_NE(a.data_ptr(), b.data_ptr());
  const nefi::FFTConvolution fresh(nefi::gaussian_psf(0.02), nefi::Domain({62}));
  EXPECT_EQ(values(b), values(fresh.spectrum(fk::DType::F32)));
}

// A device apply after the spectrum is cached equals the host apply.
TEST(NefiFFTConvolutionDevice, ApplyWithTheCachedSpectrumMatchesTheCpu) {
  NEFI_SKIP_WITHOUT_GPU();
  const nefi::FFTConvolution op(nefi::disk_psf(0.1), nefi::Domain({24, 30}));
  fk::Generator gen(3);
  const fk::Tensor x = fk::uniform({2, 24, 30}, -1.0, 1.0, {fk::DType::F64}, &gen);
  const std::vector<double> cpu = op.apply(x).to_vector<double>();
  for (int call = 0; call < 2; ++call) {
    const std::vector<double> gpu = op.apply(x.to(kGpu)).to(fk::kCPU).to_vector<double>();
    ASSERT_EQ(gpu.size(), cpu.size());
    for (size_t i = 0; i < cpu.size(); ++i) EXPECT_NEAR(gpu[i], cpu[i], 1e-12) << "call " << call;
  }
}

// spectral_filter of a host input with the spectrum's device copy: the
// host multiply reads the spectrum after a copy to the host (it read the
// device pointer before), the bits of the call with the host spectrum, in
// both directions.
TEST(NefiFFTConvolutionDevice, AHostInputTakesADeviceSpectrum) {
  NEFI_SKIP_WITHOUT_GPU();
  const nefi::FFTConvolution op(nefi::gaussian_psf(0.08), nefi::Domain({20, 22}));
  fk::Generator gen(5);
  const fk::Tensor x = fk::uniform({20, 22}, -1.0, 1.0, {fk::DType::F64}, &gen);
  const std::vector<int64_t> L = op.fft_shape(), zeros{0, 0};
  for (bool conjugate : {false, true}) {
    const fk::Tensor want =
        nefi::spectral_filter(x, op.spectrum(fk::DType::F64), L, zeros, zeros, conjugate);
    const fk::Tensor got =
        nefi::spectral_filter(x, op.spectrum(fk::DType::F64, kGpu), L, zeros, zeros, conjugate);
    EXPECT_EQ(got.device(), fk::kCPU);
    EXPECT_EQ(got.to_vector<double>(), want.to_vector<double>()) << "conjugate " << conjugate;
  }
}

}  // namespace
