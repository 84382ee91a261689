// nefi diagnose with the operator's products on a CUDA device
// (DiagnoseOptions::device) against the same diagnosis on the CPU: a 2-D
// Gaussian blur (linear: J is F itself, through cuFFT) and a saturation
// (nonlinear: J v by central differences), both in f64, so the spectra,
// sensitivity maps and gauge readings agree to round-off amplified by the
// Lanczos steps (1e-8 relative); a host-only model, or one with trainable
// parameters, is refused by name before any product. Without a usable device the tests skip
// (scripts/gpu-check runs them on one).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/random.h"
#include "fk/test_util.h"
#include "nefi/byop/byop_test_models.h"
#include "nefi/cuda/device_test_util.h"
#include "nefi/diagnostics/diagnose.h"
#include "nefi/diagnostics/report.h"
#include "nefi/operators/composite.h"
#include "nefi/operators/fft_convolution.h"
#include "nefi/operators/function_operator.h"
#include "nefi/operators/pointwise.h"

namespace {

using nefi::cuda_test::kGpu;
using nefi::diagnostics::DiagnoseOptions;
using nefi::diagnostics::Diagnostics;

nefi::Measurement measured(const fk::Tensor& data, double noise) {
  nefi::Measurement m;
  m.data = data;
  m.noise_std = noise;
  return m;
}

double rel(double a, double b) {
  return std::abs(a - b) / std::max(std::abs(b), 1e-300);
}

void expect_same_diagnosis(const Diagnostics& gpu, const Diagnostics& cpu) {
  EXPECT_EQ(gpu.jvp_mode, cpu.jvp_mode);
  ASSERT_EQ(gpu.spectrum.singular_values.size(), cpu.spectrum.singular_values.size());
  for (size_t i = 0; i < cpu.spectrum.singular_values.size(); ++i)
    EXPECT_LT(rel(gpu.spectrum.singular_values[i], cpu.spectrum.singular_values[i]), 1e-8) << i;
  ASSERT_EQ(gpu.probes.sensitivity.size(), cpu.probes.sensitivity.size());
  const double top =
      *std::max_element(cpu.probes.sensitivity.begin(), cpu.probes.sensitivity.end());
  for (size_t i = 0; i < cpu.probes.sensitivity.size(); ++i)
    ASSERT_NEAR(gpu.probes.sensitivity[i], cpu.probes.sensitivity[i], 1e-8 * top) << i;
  EXPECT_NEAR(gpu.probes.blind_fraction, cpu.probes.blind_fraction,
              1.0 / static_cast<double>(cpu.probes.sensitivity.size()));
  EXPECT_NEAR(gpu.constant_visibility, cpu.constant_visibility, 1e-8 * cpu.constant_visibility);
  EXPECT_LT(rel(gpu.residual_rms, cpu.residual_rms), 1e-8);
  EXPECT_LT(rel(gpu.misfit_ratio, cpu.misfit_ratio), 1e-8);
}

DiagnoseOptions small(fk::Device d) {
  DiagnoseOptions o;
  o.k = 4;
  o.n_iter = 12;
  o.probes = 6;
  o.device = d;
  return o;
}

TEST(NefiDiagnoseDevice, ABlursSpectrumAndProbesFollowTheCpu) {
  NEFI_SKIP_WITHOUT_GPU();
  const fk::Dims shape{20, 16};
  const nefi::Domain d(shape, {1.0, 0.8});
  const nefi::FFTConvolution op(nefi::gaussian_psf(0.06), d);
  fk::Generator gen(3);
  const fk::Tensor x = fk::uniform(shape, 0.0, 1.0, {fk::DType::F64}, &gen);
  const nefi::Measurement y =
      measured(fk::add(op.apply(x), fk::mul(fk::randn(shape, {fk::DType::F64}, &gen), 0.01)), 0.01);
  const Diagnostics cpu = nefi::diagnostics::diagnose(op, x, y, small(fk::kCPU));
  const Diagnostics gpu = nefi::diagnostics::diagnose(op, x, y, small(kGpu));
  EXPECT_EQ(cpu.jvp_mode, "exact (linear operator)");
  expect_same_diagnosis(gpu, cpu);
  // The report says where the products ran.
  EXPECT_NE(nefi::diagnostics::diagnostics_json(gpu).find("\"device\": \"" + kGpu.str() + "\""),
            std::string::npos);
  EXPECT_NE(nefi::diagnostics::diagnostics_md(gpu).find("the products on " + kGpu.str()),
            std::string::npos);
}

TEST(NefiDiagnoseDevice, ASaturationsCentralDifferencesFollowTheCpu) {
  NEFI_SKIP_WITHOUT_GPU();
  const nefi::SaturationOperator op(0.7);
  fk::Generator gen(5);
  const fk::Tensor x = fk::uniform({12, 10}, -1.5, 1.5, {fk::DType::F64}, &gen);
  const nefi::Measurement y = measured(op.apply(x), 0.05);
  const Diagnostics cpu = nefi::diagnostics::diagnose(op, x, y, small(fk::kCPU));
  const Diagnostics gpu = nefi::diagnostics::diagnose(op, x, y, small(kGpu));
  EXPECT_EQ(cpu.jvp_mode, "central difference");
  expect_same_diagnosis(gpu, cpu);
}

// A model of host functions has no device path: refused naming it.
TEST(NefiDiagnoseDevice, AHostOnlyModelIsRefusedByName) {
  NEFI_SKIP_WITHOUT_GPU();
  const int64_t n = 8;
  const nefi::FunctionOperator op(fk::Dims{n}, fk::Dims{n},
                                  nefi::test::matrix_model(nefi::test::blur_matrix(n, 1.5), n, n),
                                  1.0, "blur");
  const fk::Tensor x = fk::full({n}, 0.5, {fk::DType::F64});
  const std::string e = fk::test::error_of(
      [&] { nefi::diagnostics::diagnose(op, x, measured(x, 0.1), small(kGpu)); });
  EXPECT_NE(e.find("diagnose device: expected an operator with a device path"), std::string::npos)
      << e;
}

// A trained gain is a parameter a solve moves with the field; diagnose
// leaves it on the CPU, so its device products are refused by name.
TEST(NefiDiagnoseDevice, AnOperatorWithTrainableParametersIsRefusedByName) {
  NEFI_SKIP_WITHOUT_GPU();
  auto inner = std::make_shared<nefi::SaturationOperator>(0.7);
  const nefi::NuisanceOperator op(inner, 1.5, 0.0, /*train_gain=*/true);
  const fk::Tensor x = fk::full({6}, 0.5, {fk::DType::F64});
  const std::string e = fk::test::error_of(
      [&] { nefi::diagnostics::diagnose(op, x, measured(x, 0.1), small(kGpu)); });
  EXPECT_NE(e.find("an operator without trainable parameters"), std::string::npos) << e;
  EXPECT_NE(e.find("1 trainable parameter tensor(s)"), std::string::npos) << e;
}

}  // namespace
