// grouped_mlp on a CUDA device (one cuBLAS strided-batched GEMM per layer)
// against the same op on the CPU (one fk::gemm per problem; itself checked
// against N separate evaluations and central differences in
// tests/nefi/field/grouped_mlp_test.cpp): output and parameter gradient, f32
// without TF32 (1e-5 of the largest value: cuBLAS and OpenBLAS sum in other
// orders) and f64 (1e-12), every activation, with the skip layer, and a bf16
// autocast trunk (1e-5 too: the operands are rounded to bf16 before either
// product; the gradient within 2e-4, since a sum order's last bit can move
// a later layer's bf16 rounding). Then the device rows against each
// problem's own device NeuralField (the fused MLP kernel, another sum order:
// 1e-5). Without a usable device the tests skip (scripts/gpu-check runs them
// on one).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fk/autograd.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/join.h"
#include "fk/ops/reduce.h"
#include "fk/random.h"
#include "fk/test_util.h"
#include "nefi/cuda/device_test_util.h"
#include "nefi/domain.h"
#include "nefi/field/batched_mlp.h"
#include "nefi/field/fast_tanh.h"
#include "nefi/field/fourier_features.h"
#include "nefi/field/grouped_mlp.h"
#include "nefi/field/mlp_test_fields.h"
#include "nefi/field/neural_field.h"

namespace {

using fk::test::max_abs;
using nefi::cuda_test::host;
using nefi::cuda_test::kGpu;
using nefi::cuda_test::max_abs_diff;
using nefi::cuda_test::NoTf32;
using nefi::mlp_test::mlp_config;
using nefi::mlp_test::two_head_field;

struct Outputs {
  std::vector<double> raw, grad;
};

Outputs run(const fk::Tensor& params_in, const fk::Tensor& x, const fk::Tensor& w,
            const nefi::MlpLayout& L, fk::Device d) {
  fk::Tensor params = params_in.detach().to(d);
  params.set_requires_grad(true);
  const fk::Tensor raw = nefi::grouped_mlp(params, x.to(d), L);
  fk::sum(fk::mul(raw, w.to(d))).backward();
  return {host(raw), host(params.grad())};
}

void expect_device_matches_cpu(const std::string& act, fk::DType dtype,
                               std::optional<fk::DType> autocast = std::nullopt) {
  SCOPED_TRACE(act + " " + fk::name(dtype) + (autocast ? " bf16 autocast" : ""));
  const nefi::MlpLayout L = nefi::mlp_layout(*two_head_field(mlp_config(24, act, autocast), 0));
  const int64_t n = 5, m = 300;  // rows not a multiple of any tile
  fk::Generator gen(11);
  // sine multiplies each pre-activation by 30: weights 30 times smaller keep
  // it O(1), as SIREN's initialisation does.
  const double r = act == "sine" ? 0.5 / 30 : 0.5;
  const fk::Tensor params = fk::uniform({n, L.n_params}, -r, r, {dtype}, &gen);
  const fk::Tensor x = fk::uniform({m, L.features}, -1.0, 1.0, {dtype}, &gen);
  const fk::Tensor w = fk::uniform({n, m, L.n_out}, -1.0, 1.0, {dtype}, &gen);
  const Outputs cpu = run(params, x, w, L, fk::kCPU);
  const Outputs gpu = run(params, x, w, L, kGpu);
  const double tol = dtype == fk::DType::F64 ? 1e-12 : 1e-5;
  EXPECT_LE(max_abs_diff(cpu.raw, gpu.raw), tol * max_abs(cpu.raw));
  // Under autocast a layer's f32 sums, in another order, are rounded to bf16
  // again as the next product's operands, where one ulp of f32 can move a
  // value across a bf16 rounding step (2^-8); the parameter gradient sums
  // such products over every row (3.7e-5 of its largest value on an H200).
  const double grad_tol = autocast ? 2e-4 : tol;
  EXPECT_LE(max_abs_diff(cpu.grad, gpu.grad), grad_tol * max_abs(cpu.grad));
}

TEST(NefiGroupedMlpDevice, MatchesTheCpuOpInF32AndF64) {
  NEFI_SKIP_WITHOUT_GPU();
  NoTf32 no_tf32;
  for (const char* act : {"tanh", "relu", "gelu", "silu", "softplus", "sine"}) {
    expect_device_matches_cpu(act, fk::DType::F32);
    expect_device_matches_cpu(act, fk::DType::F64);
  }
  expect_device_matches_cpu("tanh", fk::DType::F32, fk::DType::BF16);
  expect_device_matches_cpu("gelu", fk::DType::F32, fk::DType::BF16);
}

// The CPU batch's MLP (batched_mlp.h, host loops) and nefi::fast_tanh (a
// host loop the CPU trunk calls) name a device operand instead of reading
// its memory on the host; the device batch runs grouped_mlp.
TEST(NefiGroupedMlpDevice, TheHostMlpAndFastTanhRefuseDeviceOperands) {
  NEFI_SKIP_WITHOUT_GPU();
  const nefi::MlpLayout L = nefi::mlp_layout(*two_head_field(mlp_config(24, "tanh"), 0));
  fk::Generator gen(13);
  const fk::Tensor params = fk::uniform({2, L.n_params}, -0.5, 0.5, {fk::DType::F32}, &gen);
  const fk::Tensor x = fk::uniform({7, L.features}, -1.0, 1.0, {fk::DType::F32}, &gen);
  for (const std::string& msg :
       {fk::test::error_of([&] { nefi::batched_mlp(params.to(kGpu), x, L); }),
        fk::test::error_of([&] { nefi::batched_mlp(params, x.to(kGpu), L); })}) {
    EXPECT_NE(msg.find("nefi::batched_mlp"), std::string::npos) << msg;
    EXPECT_NE(msg.find("cuda:0"), std::string::npos) << msg;
  }
  const std::string msg = fk::test::error_of([&] { nefi::fast_tanh(x.to(kGpu)); });
  EXPECT_NE(msg.find("nefi::fast_tanh"), std::string::npos) << msg;
  EXPECT_NE(msg.find("one on cuda:0"), std::string::npos) << msg;
}

TEST(NefiGroupedMlpDevice, RowsMatchEachProblemsOwnDeviceField) {
  NEFI_SKIP_WITHOUT_GPU();
  NoTf32 no_tf32;
  const nefi::Domain d({20, 15});
  const double progress = 0.6;
  std::vector<std::shared_ptr<nefi::NeuralField>> fs;
  for (uint64_t b = 0; b < 3; ++b) fs.push_back(two_head_field(mlp_config(24, "tanh"), b + 3));
  const nefi::MlpLayout L = nefi::mlp_layout(*fs[0]);
  std::vector<fk::Tensor> rows;
  for (auto& f : fs) rows.push_back(f->params().flat().detach().clone().unsqueeze(0));
  fk::Tensor params = fk::cat(rows, 0).to(kGpu);
  nefi::FourierFeatures enc(2, 3);
  enc.to(kGpu);
  const fk::Tensor x = enc.forward(d.coords().reshape({d.numel(), 2}), progress);
  const fk::Tensor raw = nefi::grouped_mlp(params, x, L);
  for (int64_t b = 0; b < 3; ++b) {
    fs[b]->to(kGpu);
    const std::vector<double> own = host(fs[b]->raw(d, progress));
    const std::vector<double> got = host(raw.select(0, b));
    EXPECT_LE(max_abs_diff(own, got), 1e-5 * max_abs(own)) << "problem " << b;
  }
}

}  // namespace
