// grouped_mlp on the CPU against N separate MLP evaluations:
//  - each problem written out as its own chain of fk::linear and the field's
//    activation ops (tanh, relu, gelu, silu, softplus, sin of 30 z) on its
//    own weights (what a row of the grouped op is, per layer the same
//    fk::gemm call and elementwise code): the rows bitwise, the gradients to
//    1e-5 of their largest magnitude (fk::linear's backward makes its GEMMs
//    and bias sums in other call shapes, so the last bits may differ; bf16
//    trunks 1e-2, see below);
//  - each problem's own NeuralField::raw (nefi::dense: bias and a fast tanh
//    fused into its AVX-512 tiles, so not the same rounding): 1e-5 absolute
//    on outputs of order 1;
//  - central differences in f64 (fk::testing::gradcheck), every
//    activation, with a skip layer.
// The device parity (cuBLAS strided-batched) is in
// tests/nefi/cuda/grouped_mlp_device_test.cpp.
#include "nefi/field/grouped_mlp.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/join.h"
#include "fk/ops/linalg.h"
#include "fk/ops/reduce.h"
#include "fk/ops/unary.h"
#include "fk/random.h"
#include "fk/test_util.h"
#include "fk/testing.h"
#include "nefi/field/fourier_features.h"
#include "nefi/field/mlp_test_fields.h"

namespace {

using fk::test::max_abs;

using fk::test::error_of;
using nefi::mlp_test::fields;
using nefi::mlp_test::mlp_config;
using nefi::mlp_test::stacked;

fk::Tensor rounded_bf16(const fk::Tensor& t) {
  return t.to(fk::DType::BF16).to(t.dtype());
}

// Problem b's MLP written out: fk::linear and the activation per layer on
// the weights of its row, the skip layer's input [h, x]; bf16 rounds the
// hidden layers' GEMM operands (the autocast trunk).
fk::Tensor activated(const std::string& activation, const fk::Tensor& z) {
  if (activation == "tanh") return fk::tanh(z);
  if (activation == "relu") return fk::relu(z);
  if (activation == "gelu") return fk::gelu(z);
  if (activation == "silu") return fk::silu(z);
  if (activation == "softplus") return fk::softplus(z);
  return fk::sin(fk::mul(z, 30.0));
}

fk::Tensor separate_mlp(const fk::Tensor& row, const fk::Tensor& x, const nefi::MlpLayout& L,
                        const std::string& activation) {
  auto slice = [&](int64_t off, fk::Dims shape) {
    return row.narrow(0, off, shape.numel()).reshape(shape);
  };
  fk::Tensor h = x;
  for (int l = 0; l < L.depth; ++l) {
    if (l == L.skip_at && L.has_skip()) h = fk::cat({h, x}, 1);
    fk::Tensor w = slice(L.w_offset[l], {L.hidden, L.fan_in(l)});
    fk::Tensor in = h;
    if (L.bf16) {
      w = rounded_bf16(w);
      in = rounded_bf16(in);
    }
    const fk::Tensor z = fk::linear(in, w, slice(L.b_offset[l], {L.hidden}));
    h = activated(activation, z);
  }
  return fk::linear(h, slice(L.w_offset[L.depth], {L.n_out, L.hidden}),
                    slice(L.b_offset[L.depth], {L.n_out}));
}

void expect_rows_equal_separate(int hidden, const std::string& activation,
                                std::optional<fk::DType> autocast = std::nullopt) {
  SCOPED_TRACE("hidden " + std::to_string(hidden) + " " + activation + (autocast ? " bf16" : ""));
  const nefi::Domain d({6, 5});
  const double progress = 0.6;  // some bands half open
  auto fs = fields(3, mlp_config(hidden, activation, autocast));
  const nefi::MlpLayout L = nefi::mlp_layout(*fs[0]);
  const int64_t m = d.numel();
  nefi::FourierFeatures enc(2, 3);
  const fk::Tensor x = enc.forward(d.coords().reshape({m, 2}), progress);
  fk::Tensor params = stacked(fs);
  const fk::Tensor raw = nefi::grouped_mlp(params, x, L);
  ASSERT_EQ(raw.shape(), fk::Dims({3, m, 2}));
  const fk::Tensor w = fk::uniform({3, m, 2}, -1.0, 1.0);
  fk::sum(fk::mul(raw, w)).backward();
  const fk::Tensor g = params.grad();
  for (int64_t b = 0; b < 3; ++b) {
    SCOPED_TRACE("problem " + std::to_string(b));
    fk::Tensor row = params.detach().select(0, b).clone();
    row.set_requires_grad(true);
    const fk::Tensor want = separate_mlp(row, x, L, activation);
    EXPECT_EQ(raw.select(0, b).to_vector<float>(), want.to_vector<float>());
    fk::sum(fk::mul(want, w.select(0, b))).backward();
    const std::vector<double> gw = row.grad().to_vector<double>();
    const std::vector<double> gb = g.select(0, b).to_vector<double>();
    // bf16: the written-out chain's autograd rounds each gradient that
    // passes back through a cast to bf16 (8 significant bits), where the
    // grouped op keeps them f32: 1e-2 of the largest.
    const double tol = (autocast ? 1e-2 : 1e-5) * max_abs(gw);
    for (size_t i = 0; i < gw.size(); ++i) ASSERT_NEAR(gb[i], gw[i], tol) << "parameter " << i;
    if (autocast) continue;  // nefi::dense's bf16 kernels round elsewhere
    const std::vector<double> own = fs[b]->raw(d, progress).to_vector<double>();
    const std::vector<double> got = raw.select(0, b).to_vector<double>();
    for (size_t i = 0; i < own.size(); ++i) ASSERT_NEAR(got[i], own[i], 1e-5) << "output " << i;
  }
}

TEST(NefiGroupedMlp, RowsEqualSeparateEvaluationsBitwise) {
  expect_rows_equal_separate(12, "tanh");
  expect_rows_equal_separate(32, "tanh");
  expect_rows_equal_separate(12, "relu");
  for (const char* act : {"gelu", "silu", "softplus", "sine"}) expect_rows_equal_separate(12, act);
}

TEST(NefiGroupedMlp, Bf16AutocastRowsEqualSeparateRoundedEvaluations) {
  expect_rows_equal_separate(12, "tanh", fk::DType::BF16);
  expect_rows_equal_separate(32, "relu", fk::DType::BF16);
  expect_rows_equal_separate(12, "sine", fk::DType::BF16);
}

TEST(NefiGroupedMlp, F64GradientsMatchCentralDifferences) {
  for (const char* act : {"tanh", "relu", "gelu", "silu", "softplus", "sine"}) {
    SCOPED_TRACE(act);
    const nefi::MlpLayout L = nefi::mlp_layout(*fields(1, mlp_config(4, act))[0]);
    fk::Generator gen(5);
    // sine's 30 z: weights 30 times smaller keep it O(1) (SIREN's scale), where
    // central differences stay accurate.
    const double r = std::string(act) == "sine" ? 0.8 / 30 : 0.8;
    const fk::Tensor params =
        fk::uniform({2, L.n_params}, -r, r, {fk::DType::F64, fk::kCPU, true}, &gen);
    const fk::Tensor x = fk::uniform({5, L.features}, -1.0, 1.0, {fk::DType::F64}, &gen);
    const fk::Tensor w = fk::uniform({2, 5, L.n_out}, -1.0, 1.0, {fk::DType::F64}, &gen);
    const std::string err = fk::testing::gradcheck(
        [&](const std::vector<fk::Tensor>& in) {
          return fk::sum(fk::mul(nefi::grouped_mlp(in[0], x, L), w));
        },
        {params});
    EXPECT_EQ(err, "");
  }
}

TEST(NefiGroupedMlp, BadInputsNameWhatWasExpected) {
  const nefi::MlpLayout L = nefi::mlp_layout(*fields(1, mlp_config(4, "tanh"))[0]);
  const fk::Tensor x = fk::zeros({5, L.features});
  const std::string wrong_p = error_of([&] {
    nefi::grouped_mlp(fk::zeros({2, L.n_params + 1}), x, L);
  });
  EXPECT_NE(wrong_p.find("(N, " + std::to_string(L.n_params) + ")"), std::string::npos) << wrong_p;
  const std::string mixed = error_of([&] {
    nefi::grouped_mlp(fk::zeros({2, L.n_params}, {fk::DType::F64}), x, L);
  });
  EXPECT_NE(mixed.find("in f64"), std::string::npos) << mixed;
  EXPECT_THROW(nefi::grouped_mlp(fk::zeros({2, L.n_params}), fk::zeros({5, 3}), L), fk::Error);
  EXPECT_THROW(nefi::grouped_mlp(fk::zeros({2, L.n_params}, {fk::DType::I32}), x, L), fk::Error);
}

}  // namespace
