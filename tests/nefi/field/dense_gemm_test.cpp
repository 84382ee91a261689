#include "nefi/field/dense_gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "fk/autograd.h"
#include "fk/cpu_isa.h"
#include "fk/factory.h"
#include "fk/knobs.h"
#include "fk/ops/binary.h"
#include "fk/ops/reduce.h"
#include "fk/random.h"
#include "fk/thread_count.h"
#include "nefi/field/dense.h"

namespace {

std::vector<float> random_floats(size_t n, uint64_t seed) {
  fk::Generator g(seed);
  return fk::randn({static_cast<int64_t>(n)}, {fk::DType::F32}, &g).to_vector<float>();
}

double activate(double v, nefi::DenseActivation act) {
  if (act == nefi::DenseActivation::Relu) return v > 0 ? v : 0;
  if (act == nefi::DenseActivation::Tanh) return std::tanh(v);
  return v;
}

// The kernel against a plainly written double-precision product, for every
// transpose, with edge tiles (m, n not multiples of 12 and 32), K over more
// than one 256-block, M over more than one 144-row block, N wide enough for
// packed rows of A (>= 256), a weight-gradient shape (one M block, a long
// K), rows of 167 (the skip layer's: its prefetches of the next tile run past
// the array's end on the last one), an accumulated C and each epilogue.
TEST(NefiDenseGemm, MatchesDirectProductForEveryLayoutAndEpilogue) {
  if (!fk::cpu_avx512()) GTEST_SKIP() << "no AVX-512 on this CPU (or FK_CPU_ISA caps it)";
  struct Shape {
    int64_t m, n, k;
  };
  for (const Shape s : {Shape{37, 45, 300}, Shape{150, 64, 20}, Shape{12, 16, 1},
                        Shape{30, 260, 40}, Shape{64, 91, 600}, Shape{40, 128, 167}}) {
    for (int layout = 0; layout < 4; ++layout) {
      const bool ta = layout & 1, tb = layout & 2;
      const auto a = random_floats(s.m * s.k, 1), b = random_floats(s.k * s.n, 2);
      const auto c0 = random_floats(s.m * s.n, 3), bias = random_floats(s.n, 4);
      const int64_t lda = ta ? s.m : s.k, ldb = tb ? s.k : s.n;
      for (auto act : {nefi::DenseActivation::None, nefi::DenseActivation::Relu,
                       nefi::DenseActivation::Tanh}) {
        for (bool accumulate : {false, true}) {
          std::vector<float> c = c0;
          nefi::dense_gemm(ta, tb, s.m, s.n, s.k, a.data(), lda, b.data(), ldb, c.data(), s.n,
                           accumulate, act == nefi::DenseActivation::None ? nullptr : bias.data(),
                           act);
          for (int64_t i = 0; i < s.m; ++i) {
            for (int64_t j = 0; j < s.n; ++j) {
              double sum = accumulate ? c0[i * s.n + j] : 0.0, mag = std::abs(sum);
              for (int64_t p = 0; p < s.k; ++p) {
                const double av = ta ? a[p * lda + i] : a[i * lda + p];
                const double bv = tb ? b[j * ldb + p] : b[p * ldb + j];
                sum += av * bv;
                mag += std::abs(av * bv);
              }
              if (act != nefi::DenseActivation::None) sum += bias[j];
              ASSERT_NEAR(c[i * s.n + j], activate(sum, act), 1e-6 * (mag + 1))
                  << "m n k " << s.m << " " << s.n << " " << s.k << " layout " << layout << " act "
                  << static_cast<int>(act) << " at " << i << "," << j;
            }
          }
        }
      }
    }
  }
}

// A product of one M block (the weight gradient's shape) and a taller one
// give the same bits row for row: each output is the same sum in the same
// order, whatever the blocking around it.
TEST(NefiDenseGemm, OneAndSeveralMBlocksSameBits) {
  if (!fk::cpu_avx512()) GTEST_SKIP() << "no AVX-512 on this CPU (or FK_CPU_ISA caps it)";
  const int64_t small = 64, tall = 300, n = 91, k = 600;
  const auto b = random_floats(k * n, 6);
  for (bool ta : {false, true}) {
    // A's first `small` rows of op(A) are the same numbers in both products.
    const auto a_tall = random_floats(tall * k, 5);
    std::vector<float> a_small(small * k);
    for (int64_t i = 0; i < small; ++i)
      for (int64_t p = 0; p < k; ++p)
        a_small[ta ? p * small + i : i * k + p] = ta ? a_tall[p * tall + i] : a_tall[i * k + p];
    std::vector<float> c_small(small * n), c_tall(tall * n);
    nefi::dense_gemm(ta, false, small, n, k, a_small.data(), ta ? small : k, b.data(), n,
                     c_small.data(), n, false, nullptr, nefi::DenseActivation::None);
    nefi::dense_gemm(ta, false, tall, n, k, a_tall.data(), ta ? tall : k, b.data(), n,
                     c_tall.data(), n, false, nullptr, nefi::DenseActivation::None);
    for (int64_t i = 0; i < small * n; ++i)
      ASSERT_EQ(std::memcmp(&c_small[i], &c_tall[i], sizeof(float)), 0)
          << "ta " << ta << " at " << i;
  }
}

struct DenseGrads {
  std::vector<double> y, dx, dw, db;
};

DenseGrads dense_with_grads(fk::DType dt, nefi::DenseActivation act) {
  fk::Generator g(9);
  const fk::TensorOptions f64{fk::DType::F64};
  fk::Tensor x = fk::randn({300, 70}, f64, &g).to(dt), w = fk::randn({64, 70}, f64, &g).to(dt),
             b = fk::randn({64}, f64, &g).to(dt), up = fk::randn({300, 64}, f64, &g).to(dt);
  for (fk::Tensor* t : {&x, &w, &b}) t->set_requires_grad(true);
  fk::Tensor y = nefi::dense(x, fk::mul(w, 0.1), b, act);
  fk::sum(fk::mul(y, up)).backward();
  return {y.to_vector<double>(), x.grad().to_vector<double>(), w.grad().to_vector<double>(),
          b.grad().to_vector<double>()};
}

void expect_close(const std::vector<double>& got, const std::vector<double>& want, double tol,
                  const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * (1 + std::abs(want[i]))) << what << " at " << i;
}

// The f32 layer (fused kernel where the CPU has AVX-512) and its backward
// (gz and db in one pass, both products) against the same layer in f64 (the
// plain path, gradchecked in fields_test.cpp).
TEST(NefiDenseGemm, F32LayerAndBackwardMatchF64) {
  for (auto act :
       {nefi::DenseActivation::None, nefi::DenseActivation::Relu, nefi::DenseActivation::Tanh}) {
    const DenseGrads f32 = dense_with_grads(fk::DType::F32, act);
    const DenseGrads f64 = dense_with_grads(fk::DType::F64, act);
    expect_close(f32.y, f64.y, 1e-5, "y");
    expect_close(f32.dx, f64.dx, 1e-4, "dx");
    expect_close(f32.dw, f64.dw, 1e-4, "dw");
    expect_close(f32.db, f64.db, 1e-4, "db");
  }
}

// Bitwise the same at one and two threads, and (within f32 round-off) the same
// through the AVX2/OpenBLAS path.
TEST(NefiDenseGemm, ThreadCountAndIsaIndependent) {
  const fk::test::ThreadCount threads(1);
  const DenseGrads one = dense_with_grads(fk::DType::F32, nefi::DenseActivation::Relu);
  threads.set(2);
  const DenseGrads two = dense_with_grads(fk::DType::F32, nefi::DenseActivation::Relu);
  EXPECT_EQ(one.y, two.y);
  EXPECT_EQ(one.dx, two.dx);
  EXPECT_EQ(one.dw, two.dw);
  const DenseGrads blas = [] {
    fk::KnobOverride avx2("FK_CPU_ISA", "avx2");
    EXPECT_FALSE(fk::cpu_avx512());
    EXPECT_FALSE(nefi::dense_gemm_fits(1000, 1000, 1000));
    return dense_with_grads(fk::DType::F32, nefi::DenseActivation::Relu);
  }();
  expect_close(one.y, blas.y, 1e-5, "y");
  expect_close(one.dx, blas.dx, 1e-5, "dx");
  expect_close(one.dw, blas.dw, 1e-5, "dw");
}

// relu keeps a NaN as fk::relu does (torch's max(x, 0)) on every path of
// the layer: the AVX-512 tile's epilogue, and the BLAS product with the
// separate epilogue (ISA capped to AVX2), in f32 and f64. A NaN in an input
// row reaches every output of that row; the other rows stay finite.
TEST(NefiDenseGemm, ReluKeepsNaNOnEveryPath) {
  for (const char* isa : {"auto", "avx2"}) {
    fk::KnobOverride cap("FK_CPU_ISA", isa);
    for (fk::DType dt : {fk::DType::F32, fk::DType::F64}) {
      SCOPED_TRACE(std::string(isa) + " " + fk::name(dt));
      const int64_t m = 40, in = 24, out = 48;
      std::vector<float> xv = random_floats(m * in, 5);
      xv[7 * in + 3] = NAN;
      const fk::Tensor x = fk::from_vector(xv, fk::Dims{m, in}).to(dt);
      const fk::Tensor w = fk::from_vector(random_floats(out * in, 6), fk::Dims{out, in}).to(dt);
      const fk::Tensor b = fk::from_vector(random_floats(out, 7), fk::Dims{out}).to(dt);
      const std::vector<double> y =
          nefi::dense(x, w, b, nefi::DenseActivation::Relu).to(fk::DType::F64).to_vector<double>();
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < out; ++j) {
          const double v = y[i * out + j];
          if (i == 7) {
            EXPECT_TRUE(std::isnan(v)) << j;
          } else {
            EXPECT_TRUE(std::isfinite(v) && v >= 0) << i << "," << j;
          }
        }
    }
  }
}

}  // namespace
