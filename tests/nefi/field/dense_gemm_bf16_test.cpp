#include "nefi/field/dense_gemm_bf16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "fk/autograd.h"
#include "fk/factory.h"
#include "fk/half.h"
#include "fk/knobs.h"
#include "fk/ops/binary.h"
#include "fk/ops/reduce.h"
#include "fk/random.h"
#include "fk/test_util.h"
#include "fk/thread_count.h"
#include "nefi/field/dense.h"

namespace {

using fk::test::relative_l2;

std::vector<float> random_floats(size_t n, uint64_t seed) {
  fk::Generator g(seed);
  return fk::randn({static_cast<int64_t>(n)}, {fk::DType::F32}, &g).to_vector<float>();
}

double bf16(float v) {
  return fk::bf16_to_float(fk::float_to_bf16(v));
}

double activate(double v, nefi::DenseActivation act) {
  if (act == nefi::DenseActivation::Relu) return v > 0 ? v : 0;
  if (act == nefi::DenseActivation::Tanh) return std::tanh(v);
  return v;
}

struct Shape {
  int64_t m, n, k;
};

// The kernel against a plain f64 loop over the bf16-rounded operands (exact
// products; the kernel differs by its f32 summation only), for every
// transpose, each epilogue, with and without accumulation. Shapes cover edge
// tiles (m, n not multiples of 12 and 32, n < 16), odd K (a zero-padded
// pair), K over three 512-blocks (the last odd), M over several 144-row
// blocks and K = 1.
TEST(NefiDenseGemmBf16, MatchesDirectProductOfRoundedOperands) {
  if (!nefi::dense_gemm_bf16_native()) GTEST_SKIP() << "no AVX512_BF16 (or FK_CPU_ISA caps it)";
  double max_rounding_effect = 0;
  for (const Shape s : {Shape{37, 45, 300}, Shape{300, 33, 21}, Shape{12, 5, 1},
                        Shape{30, 70, 1031}, Shape{7, 130, 64}}) {
    const auto a = random_floats(s.m * s.k, 1), b = random_floats(s.k * s.n, 2);
    const auto c0 = random_floats(s.m * s.n, 3), bias = random_floats(s.n, 4);
    for (int layout = 0; layout < 4; ++layout) {
      const bool ta = layout & 1, tb = layout & 2;
      const int64_t lda = ta ? s.m : s.k, ldb = tb ? s.k : s.n;
      for (auto act : {nefi::DenseActivation::None, nefi::DenseActivation::Relu,
                       nefi::DenseActivation::Tanh}) {
        for (bool accumulate : {false, true}) {
          std::vector<float> c = c0;
          nefi::dense_gemm_bf16(ta, tb, s.m, s.n, s.k, a.data(), lda, b.data(), ldb, c.data(), s.n,
                                accumulate,
                                act == nefi::DenseActivation::None ? nullptr : bias.data(), act);
          for (int64_t i = 0; i < s.m; ++i) {
            for (int64_t j = 0; j < s.n; ++j) {
              double sum = accumulate ? c0[i * s.n + j] : 0.0, mag = std::abs(sum), exact = sum;
              for (int64_t p = 0; p < s.k; ++p) {
                const float av = ta ? a[p * lda + i] : a[i * lda + p];
                const float bv = tb ? b[j * ldb + p] : b[p * ldb + j];
                sum += bf16(av) * bf16(bv);
                mag += std::abs(bf16(av) * bf16(bv));
                exact += static_cast<double>(av) * bv;
              }
              if (act != nefi::DenseActivation::None) {
                sum += bias[j];
                exact += bias[j];
              }
              const double got = c[i * s.n + j];
              ASSERT_NEAR(got, activate(sum, act), 1e-6 * (mag + 1))
                  << "m n k " << s.m << " " << s.n << " " << s.k << " layout " << layout << " act "
                  << static_cast<int>(act) << " at " << i << "," << j;
              if (act == nefi::DenseActivation::None)
                max_rounding_effect =
                    std::max(max_rounding_effect, std::abs(got - exact) / (mag + 1));
            }
          }
        }
      }
    }
  }
  // The operands were rounded: far from the f32 product's round-off.
  EXPECT_GT(max_rounding_effect, 1e-4);
}

struct DenseGrads {
  std::vector<double> y, dx, dw, db;
};

DenseGrads dense_with_grads(fk::DType dt, nefi::DensePrecision precision,
                            nefi::DenseActivation act) {
  fk::Generator g(9);
  const fk::TensorOptions f64{fk::DType::F64};
  fk::Tensor x = fk::randn({300, 71}, f64, &g).to(dt), w = fk::randn({64, 71}, f64, &g).to(dt),
             b = fk::randn({64}, f64, &g).to(dt), up = fk::randn({300, 64}, f64, &g).to(dt);
  for (fk::Tensor* t : {&x, &w, &b}) t->set_requires_grad(true);
  fk::Tensor y = nefi::dense(x, fk::mul(w, 0.1), b, act, precision);
  fk::sum(fk::mul(y, up)).backward();
  return {y.to_vector<double>(), x.grad().to_vector<double>(), w.grad().to_vector<double>(),
          b.grad().to_vector<double>()};
}

// max |got - want| / (1 + |want|)
double max_rel_diff(const std::vector<double>& got, const std::vector<double>& want) {
  EXPECT_EQ(got.size(), want.size());
  double d = 0;
  for (size_t i = 0; i < got.size() && i < want.size(); ++i)
    d = std::max(d, std::abs(got[i] - want[i]) / (1 + std::abs(want[i])));
  return d;
}

// The bf16 layer, forward and backward, through the native kernel and
// through the emulation (FK_CPU_ISA=avx2: operands rounded into f32 copies,
// f32 products) agree to f32 round-off; both sit at bf16 accuracy from the
// f64 layer (the gradients in relative L2: 1e-2, relu 3e-2), and every product (y, dx, dW) is
// measurably off the f32 layer, so each of the three is rounded. db sums f32 gz: f32 accuracy.
TEST(NefiDenseGemmBf16, LayerNativeEmulatedAndF64Agree) {
  using nefi::DensePrecision;
  for (auto act :
       {nefi::DenseActivation::None, nefi::DenseActivation::Relu, nefi::DenseActivation::Tanh}) {
    const DenseGrads f64 = dense_with_grads(fk::DType::F64, DensePrecision::F32, act);
    const DenseGrads f32 = dense_with_grads(fk::DType::F32, DensePrecision::F32, act);
    const DenseGrads native = dense_with_grads(fk::DType::F32, DensePrecision::Bf16, act);
    const DenseGrads emulated = [&] {
      fk::KnobOverride avx2("FK_CPU_ISA", "avx2");
      EXPECT_FALSE(nefi::dense_gemm_bf16_native());
      return dense_with_grads(fk::DType::F32, DensePrecision::Bf16, act);
    }();
    const int a = static_cast<int>(act);
    EXPECT_LT(max_rel_diff(native.y, emulated.y), 1e-5) << a;
    EXPECT_LT(max_rel_diff(native.dx, emulated.dx), 1e-5) << a;
    EXPECT_LT(max_rel_diff(native.dw, emulated.dw), 1e-5) << a;
    EXPECT_LT(max_rel_diff(native.db, emulated.db), 1e-5) << a;
    EXPECT_LT(max_rel_diff(native.y, f64.y), 1e-2) << a;
    // The gradients in relative L2: relu's derivative jumps where a
    // bf16-rounded pre-activation changes sign, so single gradient elements
    // may move by O(1); the whole gradient moves by bf16's relative precision.
    const double tol = act == nefi::DenseActivation::Relu ? 3e-2 : 1e-2;  // measured 0.020 / 0.004
    EXPECT_LT(relative_l2(native.dx, f64.dx), tol) << a;
    EXPECT_LT(relative_l2(native.dw, f64.dw), tol) << a;
    EXPECT_LT(relative_l2(native.db, f64.db), tol) << a;
    EXPECT_GT(max_rel_diff(native.y, f32.y), 1e-4) << a;
    EXPECT_GT(max_rel_diff(native.dx, f32.dx), 1e-4) << a;
    EXPECT_GT(max_rel_diff(native.dw, f32.dw), 1e-4) << a;
  }
  // f64 operands ignore the bf16 request.
  EXPECT_EQ(dense_with_grads(fk::DType::F64, DensePrecision::Bf16, nefi::DenseActivation::Tanh).dw,
            dense_with_grads(fk::DType::F64, DensePrecision::F32, nefi::DenseActivation::Tanh).dw);
}

// Bitwise the same at one and two threads (each output summed by one thread).
TEST(NefiDenseGemmBf16, ThreadCountIndependent) {
  const fk::test::ThreadCount threads(1);
  const DenseGrads one =
      dense_with_grads(fk::DType::F32, nefi::DensePrecision::Bf16, nefi::DenseActivation::Relu);
  threads.set(2);
  const DenseGrads two =
      dense_with_grads(fk::DType::F32, nefi::DensePrecision::Bf16, nefi::DenseActivation::Relu);
  EXPECT_EQ(one.y, two.y);
  EXPECT_EQ(one.dx, two.dx);
  EXPECT_EQ(one.dw, two.dw);
}

}  // namespace
