// batched_mlp against N sequential NeuralFields (the reference: nefi::dense
// per layer, itself checked against fk::linear + tanh), and split_rows by
// gradcheck.
#include "nefi/field/batched_mlp.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <optional>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/knobs.h"
#include "fk/ops/binary.h"
#include "fk/ops/reduce.h"
#include "fk/random.h"
#include "fk/testing.h"
#include "nefi/field/mlp_test_fields.h"
#include "nefi/solve/split_rows.h"

namespace {

using nefi::mlp_test::fields;
using nefi::mlp_test::mlp_config;
using nefi::mlp_test::stacked;

// Each row and its gradient equal a sequential field's bit for bit: the
// batched op makes the very products nefi::dense makes. Hidden 12 takes
// fk::gemm with the epilogue after it; hidden 32 on 200 points the fused
// AVX-512 kernel (where the CPU has it); tanh and relu trunks fused, the
// other activations through fk's own element code after the product.
void expect_rows_equal_sequential(int hidden, const nefi::Domain& d,
                                  const std::string& activation = "tanh",
                                  std::optional<fk::DType> autocast = std::nullopt) {
  SCOPED_TRACE("hidden " + std::to_string(hidden) + " " + activation +
               (autocast ? " autocast" : ""));
  const double progress = 0.6;  // some bands half open
  auto fs = fields(3, mlp_config(hidden, activation, autocast));
  const nefi::MlpLayout L = nefi::mlp_layout(*fs[0]);
  EXPECT_EQ(L.n_params, fs[0]->n_parameters());
  const int64_t m = d.numel();
  nefi::FourierFeatures enc(2, 3);
  const fk::Tensor x = enc.forward(d.coords().reshape({m, 2}), progress);
  fk::Tensor params = stacked(fs);
  const fk::Tensor raw = nefi::batched_mlp(params, x, L);
  ASSERT_EQ(raw.shape(), fk::Dims({3, m, 2}));
  const fk::Tensor w = fk::uniform({3, m, 2}, -1.0, 1.0);
  fk::sum(fk::mul(raw, w)).backward();
  const fk::Tensor g = params.grad();
  for (int64_t b = 0; b < 3; ++b) {
    const fk::Tensor rb = fs[b]->raw(d, progress);
    EXPECT_EQ(raw.select(0, b).to_vector<float>(), rb.to_vector<float>());
    fk::sum(fk::mul(rb, w.select(0, b))).backward();
    EXPECT_EQ(g.select(0, b).to_vector<float>(), fs[b]->params().flat().grad().to_vector<float>());
  }
}

TEST(NefiBatchedMlp, RowsAndGradientsEqualSequentialFields) {
  expect_rows_equal_sequential(12, nefi::Domain({6, 5}));
  expect_rows_equal_sequential(32, nefi::Domain({20, 10}));
  expect_rows_equal_sequential(12, nefi::Domain({6, 5}), "relu");
  expect_rows_equal_sequential(32, nefi::Domain({20, 10}), "relu");
  for (const char* act : {"gelu", "silu", "softplus", "sine"}) {
    expect_rows_equal_sequential(12, nefi::Domain({6, 5}), act);
    expect_rows_equal_sequential(32, nefi::Domain({20, 10}), act);
  }
}

// bf16 autocast trunks: bit for bit too, through the native AVX512_BF16
// kernel (where the CPU has it) and through the emulation (FK_CPU_ISA=avx2:
// operands rounded into f32 copies, fk::gemm).
TEST(NefiBatchedMlp, Bf16AutocastRowsAndGradientsEqualSequentialFields) {
  for (const char* cap : {"auto", "avx2"}) {
    SCOPED_TRACE(cap);
    fk::KnobOverride isa("FK_CPU_ISA", cap);
    expect_rows_equal_sequential(12, nefi::Domain({6, 5}), "tanh", fk::DType::BF16);
    expect_rows_equal_sequential(32, nefi::Domain({20, 10}), "tanh", fk::DType::BF16);
    expect_rows_equal_sequential(32, nefi::Domain({20, 10}), "relu", fk::DType::BF16);
    expect_rows_equal_sequential(32, nefi::Domain({20, 10}), "gelu", fk::DType::BF16);
    expect_rows_equal_sequential(12, nefi::Domain({6, 5}), "sine", fk::DType::BF16);
  }
}

TEST(NefiBatchedMlp, InactiveProblemsGetZerosBothWays) {
  auto fs = fields(3, mlp_config(12));
  const nefi::MlpLayout L = nefi::mlp_layout(*fs[0]);
  nefi::FourierFeatures enc(2, 3);
  const fk::Tensor x = enc.forward(nefi::Domain({4, 4}).coords().reshape({16, 2}), 1.0);
  fk::Tensor params = stacked(fs);
  auto active = std::make_shared<std::vector<char>>(std::vector<char>{1, 0, 1});
  const fk::Tensor raw = nefi::batched_mlp(params, x, L, active);
  fk::sum(raw).backward();
  for (double v : raw.select(0, 1).to_vector<double>()) EXPECT_EQ(v, 0.0);
  for (double v : params.grad().select(0, 1).to_vector<double>()) EXPECT_EQ(v, 0.0);
  double g0 = 0;
  for (double v : params.grad().select(0, 0).to_vector<double>()) g0 += std::abs(v);
  EXPECT_GT(g0, 0.0);
}

TEST(NefiBatchedMlp, BadInputsThrow) {
  auto fs = fields(2, mlp_config(12));
  const nefi::MlpLayout L = nefi::mlp_layout(*fs[0]);
  const fk::Tensor x = fk::zeros({5, L.features});
  EXPECT_THROW(nefi::batched_mlp(fk::zeros({2, L.n_params + 1}), x, L), fk::Error);
  EXPECT_THROW(nefi::batched_mlp(fk::zeros({2, L.n_params}), fk::zeros({5, 3}), L), fk::Error);
  auto mask = std::make_shared<std::vector<char>>(3, 1);
  EXPECT_THROW(nefi::batched_mlp(fk::zeros({2, L.n_params}), x, L, mask), fk::Error);
  nefi::NeuralFieldConfig f16 = mlp_config(12);
  f16.autocast = fk::DType::F16;
  try {
    nefi::mlp_layout(*fields(1, f16)[0]);
    FAIL() << "fp16 autocast";
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("no or bf16 autocast"), std::string::npos) << e.what();
  }
}

TEST(NefiSplitRows, ViewsAndGradcheck) {
  const fk::Tensor x = fk::uniform({3, 2, 2}, -1.0, 1.0, {fk::DType::F64});
  const auto rows = nefi::split_rows(x);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[1].to_vector<double>(), x.select(0, 1).to_vector<double>());
  // Rows 0 and 2 feed a loss, row 1 does not (its gradient must be zero).
  const std::string err = fk::testing::gradcheck(
      [](const std::vector<fk::Tensor>& in) {
        const auto r = nefi::split_rows(in[0]);
        return fk::add(fk::sum(fk::mul(r[0], r[0])), fk::mul(fk::sum(r[2]), 3.0));
      },
      {x});
  EXPECT_EQ(err, "");
  EXPECT_THROW(nefi::split_rows(fk::zeros({0, 2})), fk::Error);
}

}  // namespace
