// The chained bf16 layer (dense.h): operands handed over already rounded to
// bf16, gz kept in bf16, the epilogue's bf16 copy of C, and the narrow f32
// products of a one-channel output layer.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/half.h"
#include "fk/ops/binary.h"
#include "fk/ops/join.h"
#include "fk/ops/reduce.h"
#include "fk/random.h"
#include "nefi/field/activation_grad.h"
#include "nefi/field/dense.h"
#include "nefi/field/dense_gemm_bf16.h"
#include "nefi/field/dense_narrow.h"

namespace {

using nefi::DenseActivation;

std::vector<float> random_floats(size_t n, uint64_t seed) {
  fk::Generator g(seed);
  return fk::randn({static_cast<int64_t>(n)}, {fk::DType::F32}, &g).to_vector<float>();
}

// rows x cols rounded to bf16 by the plain definition (round to nearest
// even), in rows of ld (zero after cols).
std::vector<uint16_t> rounded(const std::vector<float>& v, int64_t rows, int64_t cols, int64_t ld) {
  std::vector<uint16_t> r(static_cast<size_t>(rows * ld), 0);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) r[i * ld + j] = fk::float_to_bf16(v[i * cols + j]).bits;
  return r;
}

// Every operand given in bf16 (A by rows in place, A^T packed, B) gives the
// bits the f32 operands give, and the epilogue's bf16 copy is C rounded. The
// shapes have edge tiles, odd K (a zero pad read in place), K over two
// 512-blocks and M over several 144-row blocks.
TEST(NefiDenseBf16Chain, Bf16OperandsAndCopyAreTheF32OperandsBits) {
  if (!nefi::dense_gemm_bf16_native()) GTEST_SKIP() << "no AVX512_BF16 (or FK_CPU_ISA caps it)";
  struct Shape {
    int64_t m, n, k;
  };
  for (const Shape s : {Shape{301, 45, 37}, Shape{40, 70, 600}, Shape{12, 32, 2}}) {
    const auto a = random_floats(s.m * s.k, 1), b = random_floats(s.k * s.n, 2);
    const auto bias = random_floats(s.n, 3);
    for (int layout = 0; layout < 2; ++layout) {
      const bool ta = layout == 1;
      const int64_t ar = ta ? s.k : s.m, ac = ta ? s.m : s.k;
      const int64_t lda16 = (ac + 1) / 2 * 2 + 2, ldb16 = s.n + 3, ldc16 = s.n + 5;
      const auto a16 = rounded(a, ar, ac, lda16), b16 = rounded(b, s.k, s.n, ldb16);
      for (auto act : {DenseActivation::None, DenseActivation::Tanh, DenseActivation::Relu}) {
        std::vector<float> want(s.m * s.n), got(s.m * s.n);
        nefi::dense_gemm_bf16(ta, false, s.m, s.n, s.k, a.data(), ac, b.data(), s.n, want.data(),
                              s.n, false, bias.data(), act);
        for (int sides = 1; sides < 4; ++sides) {
          std::vector<uint16_t> c16(s.m * ldc16, 7);
          nefi::DenseBf16Sides bs;
          if (sides & 1) {
            bs.a = a16.data();
            bs.lda = lda16;
          }
          if (sides & 2) {
            bs.b = b16.data();
            bs.ldb = ldb16;
          }
          bs.c = c16.data();
          bs.ldc = ldc16;
          nefi::dense_gemm_bf16(ta, false, s.m, s.n, s.k, bs.a ? nullptr : a.data(), ac,
                                bs.b ? nullptr : b.data(), s.n, got.data(), s.n, false, bias.data(),
                                act, bs);
          EXPECT_EQ(got, want) << s.m << "x" << s.n << "x" << s.k << " ta " << ta;
          for (int64_t i = 0; i < s.m; ++i) {
            for (int64_t j = 0; j < s.n; ++j)
              ASSERT_EQ(c16[i * ldc16 + j], fk::float_to_bf16(want[i * s.n + j]).bits);
            ASSERT_EQ(c16[i * ldc16 + s.n], 7) << "a column past n was written";
          }
        }
      }
    }
  }
}

// gz in bf16 is the f32 pass's gz rounded; db the same bits; the pad is zero.
TEST(NefiDenseBf16Chain, ActivationGradBf16IsTheF32PassRounded) {
  if (!nefi::dense_gemm_bf16_native()) GTEST_SKIP() << "no AVX512_BF16 (or FK_CPU_ISA caps it)";
  for (int64_t out : {1, 17, 130}) {
    const int64_t n = 9, ldz = (out + 1) / 2 * 2;
    const auto g = random_floats(n * out, 4), y0 = random_floats(n * out, 5);
    std::vector<float> y(y0.size());
    for (size_t i = 0; i < y.size(); ++i) y[i] = std::tanh(y0[i]);
    for (auto act : {DenseActivation::None, DenseActivation::Tanh, DenseActivation::Relu}) {
      std::vector<float> gz(n * out), db(out), db16(out);
      nefi::activation_grad(g.data(), y.data(), act, n, out,
                            act == DenseActivation::None ? const_cast<float*>(g.data()) : gz.data(),
                            db.data());
      const std::vector<float>& gz_f32 = act == DenseActivation::None ? g : gz;
      std::vector<uint16_t> gz16(n * ldz, 7);
      nefi::activation_grad_bf16(g.data(), y.data(), act, n, out, gz16.data(), ldz, db16.data());
      EXPECT_EQ(db16, db);
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t j = 0; j < out; ++j)
          ASSERT_EQ(gz16[i * ldz + j], fk::float_to_bf16(gz_f32[i * out + j]).bits);
        if (ldz > out) {
          ASSERT_EQ(gz16[i * ldz + out], 0);
        }
      }
    }
  }
}

struct LayerResult {
  std::vector<float> y, dx, dw, db, dx2, dw2;
};

// Two bf16 layers, the second fed x (and, chained, x16 from the first), the
// skip input concatenated; forward and all gradients.
LayerResult two_layers(bool chained) {
  fk::Generator g(11);
  const fk::TensorOptions f32{fk::DType::F32};
  fk::Tensor x = fk::randn({97, 30}, f32, &g), w1 = fk::mul(fk::randn({40, 30}, f32, &g), 0.2),
             b1 = fk::randn({40}, f32, &g), w2 = fk::mul(fk::randn({33, 70}, f32, &g), 0.2),
             b2 = fk::randn({33}, f32, &g), up = fk::randn({97, 33}, f32, &g);
  for (fk::Tensor* t : {&x, &w1, &b1, &w2, &b2}) t->set_requires_grad(true);
  const auto bf16 = nefi::DensePrecision::Bf16;
  const nefi::Bf16Activation x16 = chained ? nefi::to_bf16(x) : nefi::Bf16Activation{};
  nefi::Bf16Activation h16;
  const fk::Tensor h = nefi::dense(x, w1, b1, DenseActivation::Tanh, bf16, x16, &h16);
  const nefi::Bf16Activation cat16 = chained ? nefi::cat_columns(h16, x16) : nefi::Bf16Activation{};
  const fk::Tensor y = nefi::dense(fk::cat({h, x}, 1), w2, b2, DenseActivation::Relu, bf16, cat16);
  fk::sum(fk::mul(y, up)).backward();
  return {y.to_vector<float>(),         x.grad().to_vector<float>(),  w1.grad().to_vector<float>(),
          b1.grad().to_vector<float>(), w2.grad().to_vector<float>(), b2.grad().to_vector<float>()};
}

TEST(NefiDenseBf16Chain, ChainedLayersGiveTheUnchainedBits) {
  if (!nefi::dense_gemm_bf16_native()) GTEST_SKIP() << "no AVX512_BF16 (or FK_CPU_ISA caps it)";
  const LayerResult plain = two_layers(false), chained = two_layers(true);
  EXPECT_EQ(chained.y, plain.y);
  EXPECT_EQ(chained.dx, plain.dx);
  EXPECT_EQ(chained.dw, plain.dw);
  EXPECT_EQ(chained.db, plain.db);
  EXPECT_EQ(chained.dx2, plain.dx2);
  EXPECT_EQ(chained.dw2, plain.dw2);
}

TEST(NefiDenseBf16Chain, MismatchedCopyIsRefused) {
  if (!nefi::dense_gemm_bf16_native()) GTEST_SKIP() << "no AVX512_BF16 (or FK_CPU_ISA caps it)";
  fk::Generator g(1);
  const fk::TensorOptions f32{fk::DType::F32};
  const fk::Tensor x = fk::randn({8, 6}, f32, &g), w = fk::randn({4, 6}, f32, &g),
                   b = fk::zeros({4}, f32);
  const nefi::Bf16Activation other = nefi::to_bf16(fk::randn({8, 5}, f32, &g));
  EXPECT_THROW(nefi::dense(x, w, b, DenseActivation::None, nefi::DensePrecision::Bf16, other),
               fk::Error);
  EXPECT_THROW(nefi::cat_columns(nefi::to_bf16(x), nefi::to_bf16(fk::randn({7, 2}, f32, &g))),
               fk::Error);
}

// The narrow products against a plain f64 loop (f32 summation round-off).
TEST(NefiDenseNarrow, MatchesDirectProduct) {
  struct Case {
    bool ta, tb;
    int64_t m, n, k;
  };
  bool ran = false;
  for (const Case c : {Case{false, true, 301, 1, 37}, Case{false, false, 45, 1, 130},
                       Case{false, false, 301, 37, 1}, Case{true, true, 20, 17, 1},
                       Case{true, false, 1, 37, 301}, Case{false, false, 1, 130, 45}}) {
    const auto a = random_floats(c.m * c.k, 6), b = random_floats(c.k * c.n, 7);
    const auto c0 = random_floats(c.m * c.n, 8);
    const int64_t lda = c.ta ? c.m : c.k, ldb = c.tb ? c.k : c.n;
    for (bool accumulate : {false, true}) {
      std::vector<float> out = c0;
      if (!nefi::dense_narrow(c.ta, c.tb, c.m, c.n, c.k, a.data(), lda, b.data(), ldb, out.data(),
                              c.n, accumulate))
        continue;
      ran = true;
      for (int64_t i = 0; i < c.m; ++i)
        for (int64_t j = 0; j < c.n; ++j) {
          double want = accumulate ? c0[i * c.n + j] : 0, mag = std::abs(want);
          for (int64_t p = 0; p < c.k; ++p) {
            const double t = double(c.ta ? a[p * lda + i] : a[i * lda + p]) *
                             double(c.tb ? b[j * ldb + p] : b[p * ldb + j]);
            want += t;
            mag += std::abs(t);
          }
          ASSERT_NEAR(out[i * c.n + j], want, 1e-6 * mag + 1e-30);
        }
    }
  }
  if (!ran) GTEST_SKIP() << "no AVX-512 (or FK_CPU_ISA caps it)";
  std::vector<float> z(4);
  EXPECT_FALSE(
      nefi::dense_narrow(false, false, 2, 2, 2, z.data(), 2, z.data(), 2, z.data(), 2, false));
}

}  // namespace
