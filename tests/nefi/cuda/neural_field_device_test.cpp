// NeuralField on a CUDA device against the same field on the CPU: raw output
// and the flat parameter gradient of a fixed linear functional, for tanh,
// relu, sine and gelu (fused and unfused epilogues), with and without the
// skip, on 2-D and 3-D domains, in f32 and under bf16 / f16 autocast (with
// NEFI_FUSED_MLP at its default, both take the fused MLP (autocast since
// session 13); fused_mlp_device_test.cpp sets it both ways); plus the
// device dense layer's refusals. Without a usable device the parity
// tests skip (scripts/gpu-check runs them on one); the refusal of to(cuda)
// runs everywhere.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "fk/amp.h"
#include "fk/autograd.h"
#include "fk/cuda/runtime.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/reduce.h"
#include "fk/random.h"
#include "nefi/cuda/device_test_util.h"
#include "nefi/cuda/operator_parity.h"
#include "nefi/domain.h"
#include "nefi/field/dense.h"
#include "nefi/field/fourier_features.h"
#include "nefi/field/heads.h"
#include "nefi/field/neural_field.h"
#include "nefi/operators/angular_spectrum.h"
#include "nefi/operators/fft_convolution.h"

namespace {

using nefi::cuda_test::close_within;
using nefi::cuda_test::expect_close;
using nefi::cuda_test::expect_device_matches_cpu;
using nefi::cuda_test::kGpu;
using nefi::cuda_test::NoTf32;
constexpr double kProgress = 0.7;  // mid-annealing: the gate multiply runs too

struct Case {
  std::string activation;
  bool skip;
  int ndim;
  std::optional<fk::DType> autocast;
};

std::string case_name(const Case& c) {
  return c.activation + (c.skip ? " skip " : " no-skip ") + std::to_string(c.ndim) + "-D " +
         (c.autocast ? fk::name(*c.autocast) : "f32");
}

// hidden 40: column blocks with a ragged edge; two heads: an output of width 2.
nefi::NeuralField make_field(const Case& c) {
  nefi::NeuralFieldConfig cfg;
  cfg.hidden = 40;
  cfg.depth = 3;
  cfg.skip_at = c.skip ? 2 : -1;
  cfg.activation = c.activation;
  cfg.n_octaves = 4;
  cfg.autocast = c.autocast;
  return nefi::NeuralField(c.ndim, {nefi::softplus_head("a", 0.3), nefi::identity_head("b", 0.1)},
                           cfg, 11);
}

nefi::Domain domain_for(int ndim) {
  return ndim == 2 ? nefi::Domain({16, 12}) : nefi::Domain({8, 6, 5});
}

struct Result {
  std::vector<double> raw, grad;
};

// raw(domain) and the gradient of sum(raw * r) w.r.t. the flat parameters,
// r fixed random weights (made on the host, moved to the field's device).
Result evaluate(nefi::NeuralField& f, const nefi::Domain& d) {
  fk::Generator gen(5);
  const fk::Tensor r = fk::uniform({d.numel(), 2}, -1.0, 1.0, {fk::DType::F32}, &gen);
  f.params().flat().set_grad(fk::Tensor());
  const fk::Tensor raw = f.raw(d, kProgress);
  EXPECT_EQ(raw.device(), f.device());
  fk::sum(fk::mul(raw, r.to(raw.device()))).backward();
  return {raw.to_vector<double>(), f.params().flat().grad().to_vector<double>()};
}

// Tolerance relative to the largest value: f32 round-off (sums of 40 to 300
// terms in another order, the CPU's rational tanh) grown per layer; sine
// multiplies every angle error by w0 = 30. Under autocast both sides round
// the same operands to 16 bits, but an f32 difference can flip a rounding:
// a few ulps of the 16-bit type per layer (the CPU's f16 trunk also stores
// its activations in f16), sine's angles a few times more.
double tolerance(const Case& c) {
  const double depth = 4;  // three hidden layers and the output projection
  if (!c.autocast) return 128 * 0x1p-24 * depth * (c.activation == "sine" ? 30 : 1);
  const bool bf16 = *c.autocast == fk::DType::BF16;
  // The CPU's f16 trunk also rounds sine's angles (up to 30) to f16.
  const double sine = c.activation != "sine" ? 1 : bf16 ? 3 : 8;
  return 4 * (bf16 ? 0x1p-8 : 0x1p-11) * depth * sine;
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (const char* a : {"tanh", "relu", "sine", "gelu"})
    for (bool skip : {false, true})
      for (int ndim : {2, 3})
        for (std::optional<fk::DType> ac :
             {std::optional<fk::DType>{}, std::optional<fk::DType>{fk::DType::BF16},
              std::optional<fk::DType>{fk::DType::F16}})
          cases.push_back({a, skip, ndim, ac});
  return cases;
}

TEST(NefiFieldDevice, ForwardAndParameterGradientsMatchTheCpu) {
  NEFI_SKIP_WITHOUT_GPU();
  NoTf32 no_tf32;
  for (const Case& c : all_cases()) {
    const std::string what = case_name(c);
    const nefi::Domain d = domain_for(c.ndim);
    nefi::NeuralField cpu = make_field(c), gpu = make_field(c);
    gpu.to(kGpu);
    ASSERT_EQ(gpu.device(), kGpu);
    ASSERT_EQ(gpu.params().flat().to_vector<float>(), cpu.params().flat().to_vector<float>());
    const Result want = evaluate(cpu, d), got = evaluate(gpu, d);
    expect_close(got.raw, want.raw, tolerance(c), what + " raw");
    expect_close(got.grad, want.grad, tolerance(c), what + " gradient");
  }
}

TEST(NefiFieldDevice, HeadsAndResetStayOnTheDevice) {
  NEFI_SKIP_WITHOUT_GPU();
  NoTf32 no_tf32;
  const Case c{"tanh", true, 2, std::nullopt};
  nefi::NeuralField cpu = make_field(c), gpu = make_field(c);
  gpu.to(kGpu);
  cpu.reset_parameters(99);
  gpu.reset_parameters(99);
  EXPECT_EQ(gpu.params().flat().to_vector<float>(), cpu.params().flat().to_vector<float>());
  const nefi::Domain d = domain_for(2);
  const nefi::FieldMap want = cpu.forward(d, kProgress), got = gpu.forward(d, kProgress);
  for (const char* name : {"a", "b"}) {
    ASSERT_EQ(got.at(name).device(), kGpu) << name;
    ASSERT_EQ(got.at(name).shape(), d.shape()) << name;
    expect_close(got.at(name).to_vector<double>(), want.at(name).to_vector<double>(), tolerance(c),
                 name);
  }
  // Back to the host: the CPU path again, same numbers as the CPU field.
  gpu.to(fk::kCPU);
  EXPECT_EQ(gpu.raw(d, kProgress).to_vector<float>(), cpu.raw(d, kProgress).to_vector<float>());
}

TEST(NefiFieldDevice, BackwardIsBitwiseReproducible) {
  NEFI_SKIP_WITHOUT_GPU();
  for (const Case& c :
       {Case{"sine", true, 3, std::nullopt}, Case{"relu", false, 2, fk::DType::BF16}}) {
    nefi::NeuralField f = make_field(c);
    f.to(kGpu);
    const nefi::Domain d = domain_for(c.ndim);
    const Result a = evaluate(f, d), b = evaluate(f, d);
    EXPECT_EQ(a.raw, b.raw) << case_name(c);
    EXPECT_EQ(a.grad, b.grad) << case_name(c);
  }
}

// More rows than one chunk of the bias-gradient sums and a width above one
// column block: the device layer alone against a plain f64 reference.
TEST(NefiFieldDevice, DenseLayerAgainstPlainReference) {
  NEFI_SKIP_WITHOUT_GPU();
  NoTf32 no_tf32;
  const int64_t n = 300, in = 7, out = 150;
  fk::Generator gen(3);
  const fk::Tensor x = fk::uniform({n, in}, -1.0, 1.0, {fk::DType::F32}, &gen);
  const fk::Tensor w = fk::uniform({out, in}, -0.5, 0.5, {fk::DType::F32}, &gen);
  const fk::Tensor b = fk::uniform({out}, -0.5, 0.5, {fk::DType::F32}, &gen);
  const fk::Tensor g = fk::uniform({n, out}, -1.0, 1.0, {fk::DType::F32}, &gen);
  const std::vector<double> xv = x.to_vector<double>(), wv = w.to_vector<double>(),
                            bv = b.to_vector<double>(), gv = g.to_vector<double>();
  fk::Tensor xd = x.to(kGpu), wd = w.to(kGpu), bd = b.to(kGpu);
  xd.set_requires_grad(true);
  wd.set_requires_grad(true);
  bd.set_requires_grad(true);
  const fk::Tensor y = nefi::dense(xd, wd, bd, nefi::DenseActivation::Tanh);
  y.backward(g.to(kGpu));
  std::vector<double> yw(n * out), dx(n * in, 0.0), dw(out * in, 0.0), db(out, 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < out; ++j) {
      double z = bv[j];
      for (int64_t k = 0; k < in; ++k) z += xv[i * in + k] * wv[j * in + k];
      const double t = std::tanh(z), gz = gv[i * out + j] * (1 - t * t);
      yw[i * out + j] = t;
      db[j] += gz;
      for (int64_t k = 0; k < in; ++k) {
        dx[i * in + k] += gz * wv[j * in + k];
        dw[j * in + k] += gz * xv[i * in + k];
      }
    }
  expect_close(y.to_vector<double>(), yw, 1e-6, "y");
  expect_close(xd.grad().to_vector<double>(), dx, 1e-5, "dx");
  expect_close(wd.grad().to_vector<double>(), dw, 1e-5, "dw");
  expect_close(bd.grad().to_vector<double>(), db, 1e-5, "db");
}

TEST(NefiFieldDevice, MixedDevicesAreRefused) {
  NEFI_SKIP_WITHOUT_GPU();
  const fk::Tensor x = fk::ones({4, 3}), w = fk::ones({2, 3}), b = fk::ones({2});
  // A layer with operands on two devices, and f64 on the device.
  EXPECT_THROW(nefi::dense(x.to(kGpu), w, b, nefi::DenseActivation::Relu), fk::Error);
  EXPECT_THROW(nefi::dense(x, w.to(kGpu), b.to(kGpu), nefi::DenseActivation::None), fk::Error);
  EXPECT_THROW(nefi::dense(x.to(fk::DType::F64).to(kGpu), w.to(fk::DType::F64).to(kGpu),
                           b.to(fk::DType::F64).to(kGpu), nefi::DenseActivation::None),
               fk::Error);
  try {
    nefi::dense(x.to(kGpu), w.to(kGpu), b, nefi::DenseActivation::Tanh);
    ADD_FAILURE() << "no error for a bias on the host";
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("one CUDA device"), std::string::npos) << e.what();
  }
  // A device field against a host measurement (what an operator or loss on
  // the CPU would meet), and device coordinates for the encoding.
  nefi::NeuralField f = make_field({"tanh", false, 2, std::nullopt});
  f.to(kGpu);
  const nefi::Domain d = domain_for(2);
  const fk::Tensor field = f.forward(d, 1.0).at("a");
  EXPECT_THROW(fk::sub(field, fk::zeros(d.shape())), fk::Error);
  nefi::FourierFeatures enc(2, 2);
  EXPECT_THROW(enc.forward(d.coords().reshape({d.numel(), 2}).to(kGpu), 1.0), fk::Error);
  // The holography operator propagates on the phase's device (cuFFT on the
  // GPU, angular_spectrum_device.h): a device phase gives a device hologram.
  const nefi::HolographyOperator holo(d, {0.5}, nefi::PropagationOptions{});
  EXPECT_EQ(holo.apply(field).device(), kGpu);
}

// Runs everywhere: without a usable device (CPU-only builds, or no GPU)
// to(cuda) is refused with the device named; with one, an index past the
// last device is.
TEST(NefiFieldDevice, UnavailableDeviceIsRefused) {
  nefi::NeuralField f = make_field({"tanh", false, 2, std::nullopt});
  const fk::Device missing = fk::cuda_device(fk::cuda::device_count());
  try {
    f.to(missing);
    ADD_FAILURE() << "no error for " << missing.str();
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find(missing.str()), std::string::npos) << e.what();
  }
  EXPECT_EQ(f.device(), fk::kCPU);
  EXPECT_NO_THROW(f.to(fk::kCPU));
}

// The FFT blur on device fields: cuFFT through fk's dispatch, against the
// CPU (FFTW) forward and adjoint, linear and periodic, with a batch dim.
TEST(NefiFieldDevice, FftConvolutionRunsOnTheDevice) {
  NEFI_SKIP_WITHOUT_GPU();
  for (bool periodic : {false, true}) {
    const nefi::FFTConvolution op(nefi::gaussian_psf(0.08), nefi::Domain({20, 18}), periodic);
    fk::Generator gen(9);
    const fk::Tensor x = fk::uniform({2, 20, 18}, -1.0, 1.0, {fk::DType::F32}, &gen);
    const fk::Tensor g = fk::uniform({2, 20, 18}, -1.0, 1.0, {fk::DType::F32}, &gen);
    SCOPED_TRACE(periodic ? "periodic" : "linear");
    expect_device_matches_cpu(op, x, g, fk::DType::F32, close_within(1e-5));
  }
}

}  // namespace
