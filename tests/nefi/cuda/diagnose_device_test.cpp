// nefi diagnose with the operator's products on a CUDA device
// (DiagnoseOptions::device) against the same diagnosis on the CPU: a 2-D
// Gaussian blur (linear: J is F itself, through cuFFT) and a saturation
// (nonlinear: J v by central differences), both in f64, so the spectra,
// sensitivity maps and gauge readings agree to round-off amplified by the
// Lanczos steps (1e-8 relative); a host-only model, or one with trainable
// parameters, is refused by name before any product. The loss Hessian's
// gradients on the device give the CPU's spectrum, and a failure there
// leaves the field on the CPU as it was. Without a usable device
// the tests skip (scripts/gpu-check runs them on one).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/reduce.h"
#include "fk/random.h"
#include "fk/test_util.h"
#include "nefi/byop/auto_problem.h"
#include "nefi/byop/byop_test_models.h"
#include "nefi/cuda/device_test_util.h"
#include "nefi/diagnostics/diagnose.h"
#include "nefi/diagnostics/hessian.h"
#include "nefi/diagnostics/report.h"
#include "nefi/host_only_field.h"
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

// The loss Hessian's ends with the products' gradients on the device: a
// grid field through a blur (what a from_forward grid fit trains) gives
// the CPU's eigenvalues to 1e-3 (finite-difference products of f32
// gradients, each side's round-off over the step), and the field is back
// on the CPU with its parameters as they were. A field or a model without
// a device path is refused by name, the field left on the CPU.
TEST(NefiDiagnoseDevice, TheLossHessianOnTheDeviceFollowsTheCpu) {
  NEFI_SKIP_WITHOUT_GPU();
  nefi::cuda_test::NoTf32 no_tf32;
  const fk::Dims shape{16, 14};
  const nefi::Domain d(shape, {1.0, 0.9});
  const auto op = std::make_shared<nefi::FFTConvolution>(nefi::gaussian_psf(0.08), d);
  fk::Generator gen(4);
  const fk::Tensor x = fk::uniform(shape, 0.0, 1.0, {fk::DType::F64}, &gen);
  const nefi::Measurement y = measured(
      fk::add(op->apply(x), fk::mul(fk::randn(shape, {fk::DType::F64}, &gen), 0.01)), 0.01);
  nefi::AutoOptions o;
  o.representation = "grid";
  o.prior = "nonnegative + smooth";
  o.noise_std = 0.01;
  nefi::AutoProblem ap = nefi::auto_problem(op, shape, y, o);
  const std::vector<float> before = ap.problem.field->params().flat().to_vector<float>();
  const auto cpu = nefi::diagnostics::hessian_spectrum(ap.problem, 3, 12, 0);
  const auto gpu = nefi::diagnostics::hessian_spectrum(ap.problem, 3, 12, 0, kGpu);
  EXPECT_TRUE(ap.problem.field->params().flat().device().is_cpu());
  EXPECT_EQ(ap.problem.field->params().flat().to_vector<float>(), before);
  ASSERT_EQ(gpu.eigenvalues.largest.size(), cpu.eigenvalues.largest.size());
  ASSERT_EQ(gpu.eigenvalues.smallest.size(), cpu.eigenvalues.smallest.size());
  for (size_t i = 0; i < cpu.eigenvalues.largest.size(); ++i) {
    EXPECT_LT(rel(gpu.eigenvalues.largest[i], cpu.eigenvalues.largest[i]), 1e-3) << i;
    EXPECT_NEAR(gpu.eigenvalues.smallest[i], cpu.eigenvalues.smallest[i],
                1e-3 * cpu.eigenvalues.largest.front())
        << i;
  }
  EXPECT_GT(cpu.eigenvalues.largest.front(), 0);

  nefi::InverseProblem host_only = ap.problem;
  host_only.field = std::make_shared<nefi::test::HostOnlyField>(shape);
  std::string e = fk::test::error_of(
      [&] { (void)nefi::diagnostics::hessian_spectrum(host_only, 2, 4, 0, kGpu); });
  EXPECT_NE(e.find("a field with a device path, got a host_only field"), std::string::npos) << e;
  const nefi::test::Blur1D host_model(24, 0.01);
  nefi::AutoOptions g;
  g.representation = "grid";
  g.noise_std = host_model.sigma;
  const nefi::AutoProblem host_problem =
      nefi::auto_problem(host_model.op, fk::Dims{host_model.n}, host_model.measurement(), g);
  e = fk::test::error_of(
      [&] { (void)nefi::diagnostics::hessian_spectrum(host_problem.problem, 2, 4, 0, kGpu); });
  EXPECT_NE(e.find("an operator with a device path"), std::string::npos) << e;
}

// A loss that throws on the device, mid-Lanczos: the error reaches the
// caller, and the field is back on the CPU with its parameters as they were.
class ThrowsOnADevice : public nefi::Loss {
 public:
  ThrowsOnADevice() : Loss("throws_on_a_device") {}
  fk::Tensor forward(const nefi::LossContext& ctx) const override {
    const fk::Tensor& x = ctx.field("x");
    if (x.device().is_cuda()) throw fk::Error("throws_on_a_device", "the cpu", x.device().str());
    return fk::mean(fk::mul(x, x));
  }
};

TEST(NefiDiagnoseDevice, AFailingHessianLeavesTheFieldOnTheCpuAsItWas) {
  NEFI_SKIP_WITHOUT_GPU();
  const fk::Dims shape{12, 10};
  const nefi::Domain d(shape, {1.0, 1.0});
  const auto op = std::make_shared<nefi::FFTConvolution>(nefi::gaussian_psf(0.1), d);
  nefi::AutoOptions o;
  o.representation = "grid";
  o.noise_std = 0.01;
  nefi::AutoProblem ap = nefi::auto_problem(
      op, shape, measured(op->apply(fk::full(shape, 0.5, {fk::DType::F64})), 0.01), o);
  ap.problem.losses.add(std::make_shared<ThrowsOnADevice>(), 1.0);
  const std::vector<float> before = ap.problem.field->params().flat().to_vector<float>();
  const std::string e = fk::test::error_of(
      [&] { (void)nefi::diagnostics::hessian_spectrum(ap.problem, 2, 4, 0, kGpu); });
  EXPECT_NE(e.find("throws_on_a_device"), std::string::npos) << e;
  ASSERT_TRUE(ap.problem.field->params().flat().device().is_cpu());
  EXPECT_EQ(ap.problem.field->params().flat().to_vector<float>(), before);
}

}  // namespace
