#include "fk/ops/linalg.h"

#include <cmath>
#include <complex>
#include <optional>
#include <thread>
#include <vector>

#include <omp.h>

#include "../test_util.h"
#include "backward_check.h"
#include "fk/amp.h"
#include "fk/blas.h"
#include "fk/thread_count.h"

namespace fk {
namespace {

using Fn = testing::TensorFn;

// Plain triple loop on row-major [M, K] x [K, N] buffers, independent of fk.
template <typename T>
std::vector<T> ref_mm(const std::vector<T>& a, const std::vector<T>& b, int64_t M, int64_t K,
                      int64_t N, int64_t a_off = 0, int64_t b_off = 0) {
  std::vector<T> c(static_cast<size_t>(M * N), T(0));
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      T s(0);
      for (int64_t k = 0; k < K; ++k) s += a[a_off + i * K + k] * b[b_off + k * N + j];
      c[i * N + j] = s;
    }
  }
  return c;
}

std::vector<double> values(const Tensor& t) {
  return t.contiguous().to_vector<double>();
}

std::vector<c128> cvalues(const Tensor& t) {
  Tensor c = t.to(DType::C128).contiguous();
  const c128* p = c.data<c128>();
  return std::vector<c128>(p, p + c.numel());
}

TEST(Matmul, TwoDimensionalMatchesLoops) {
  Tensor a = test::random_tensor({3, 4}, DType::F64, -1, 1, 1);
  Tensor b = test::random_tensor({4, 5}, DType::F64, -1, 1, 2);
  Tensor c = matmul(a, b);
  EXPECT_EQ(c.shape(), (Dims{3, 5}));
  test::expect_close(c, ref_mm(values(a), values(b), 3, 4, 5), 1e-13);
  // f32 against the f64 loops.
  Tensor c32 = matmul(a.to(DType::F32), b.to(DType::F32));
  EXPECT_EQ(c32.dtype(), DType::F32);
  test::expect_close(c32, ref_mm(values(a), values(b), 3, 4, 5), 1e-5);
}

TEST(Matmul, VectorOperandsFollowNumPy) {
  Tensor v = test::random_tensor({4}, DType::F64, -1, 1, 3);
  Tensor w = test::random_tensor({4}, DType::F64, -1, 1, 4);
  Tensor m = test::random_tensor({4, 5}, DType::F64, -1, 1, 5);
  Tensor n = test::random_tensor({3, 4}, DType::F64, -1, 1, 6);
  Tensor bt = test::random_tensor({2, 4, 5}, DType::F64, -1, 1, 7);
  Tensor dot = matmul(v, w);
  EXPECT_EQ(dot.dim(), 0);
  double d = 0;
  for (int i = 0; i < 4; ++i) d += values(v)[i] * values(w)[i];
  EXPECT_NEAR(dot.item(), d, 1e-14);

  Tensor vm = matmul(v, m);  // [4]·[4,5] -> [5]
  EXPECT_EQ(vm.shape(), (Dims{5}));
  test::expect_close(vm, ref_mm(values(v), values(m), 1, 4, 5), 1e-13);
  Tensor nv = matmul(n, v);  // [3,4]·[4] -> [3]
  EXPECT_EQ(nv.shape(), (Dims{3}));
  test::expect_close(nv, ref_mm(values(n), values(v), 3, 4, 1), 1e-13);
  Tensor vb = matmul(v, bt);  // [4]·[2,4,5] -> [2,5]
  EXPECT_EQ(vb.shape(), (Dims{2, 5}));
  auto bv = values(bt);
  std::vector<double> expect;
  for (int64_t k = 0; k < 2; ++k) {
    auto r = ref_mm(values(v), bv, 1, 4, 5, 0, k * 20);
    expect.insert(expect.end(), r.begin(), r.end());
  }
  test::expect_close(vb, expect, 1e-13);
  Tensor bw = matmul(bt.transpose(1, 2), v.slice(0, 0, 4));  // [2,5,4]·[4] -> [2,5]
  EXPECT_EQ(bw.shape(), (Dims{2, 5}));
  auto btv = values(bt.transpose(1, 2));
  std::vector<double> expect2;
  for (int64_t k = 0; k < 2; ++k) {
    auto r = ref_mm(btv, values(v), 5, 4, 1, k * 20, 0);
    expect2.insert(expect2.end(), r.begin(), r.end());
  }
  test::expect_close(bw, expect2, 1e-13);
}

TEST(Matmul, BatchDimensionsBroadcast) {
  Tensor a = test::random_tensor({2, 1, 3, 4}, DType::F64, -1, 1, 8);
  Tensor b = test::random_tensor({3, 4, 5}, DType::F64, -1, 1, 9);
  Tensor c = matmul(a, b);
  ASSERT_EQ(c.shape(), (Dims{2, 3, 3, 5}));
  auto av = values(a), bv = values(b);
  std::vector<double> expect;
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t j = 0; j < 3; ++j) {
      auto r = ref_mm(av, bv, 3, 4, 5, i * 12, j * 20);
      expect.insert(expect.end(), r.begin(), r.end());
    }
  }
  test::expect_close(c, expect, 1e-13);
  // A 2-D left operand against a batch.
  Tensor m = test::random_tensor({3, 4}, DType::F64, -1, 1, 10);
  Tensor mb = matmul(m, b);
  ASSERT_EQ(mb.shape(), (Dims{3, 3, 5}));
  std::vector<double> expect3;
  for (int64_t j = 0; j < 3; ++j) {
    auto r = ref_mm(values(m), bv, 3, 4, 5, 0, j * 20);
    expect3.insert(expect3.end(), r.begin(), r.end());
  }
  test::expect_close(mb, expect3, 1e-13);
}

TEST(Matmul, TransposedViewsUseTransFlagsWithoutCopies) {
  Tensor at = test::random_tensor({4, 3}, DType::F64, -1, 1, 11);
  Tensor bt = test::random_tensor({5, 4}, DType::F64, -1, 1, 12);
  Tensor a = at.t(), b = bt.t();  // [3,4], [4,5], both transposed views
  auto expect = ref_mm(values(a), values(b), 3, 4, 5);
  profile::Counters before = profile::counters();
  Tensor c = matmul(a, b);
  profile::Counters after = profile::counters();
  test::expect_close(c, expect, 1e-13);
  EXPECT_EQ(after.ops - before.ops, 1) << "a transposed view was copied";
  EXPECT_EQ(after.launches - before.launches, 1);
  // Layouts GEMM cannot read (stepped rows and columns, broadcast rows) are copied
  // and still give the right numbers.
  Tensor big = test::random_tensor({6, 8}, DType::F64, -1, 1, 13);
  Tensor s = big.slice(0, 0, 6, 2).slice(1, 0, 8, 2);  // [3,4], strides (16, 2)
  test::expect_close(matmul(s, b), ref_mm(values(s), values(b), 3, 4, 5), 1e-13);
  Tensor row = test::random_tensor({1, 4}, DType::F64, -1, 1, 14);
  Tensor e = row.expand({3, 4});  // row stride 0
  test::expect_close(matmul(e, b), ref_mm(values(e), values(b), 3, 4, 5), 1e-13);
  // Batched transposed views.
  Tensor x = test::random_tensor({2, 4, 3}, DType::F64, -1, 1, 15).transpose(1, 2);  // [2,3,4]
  Tensor y = test::random_tensor({2, 5, 4}, DType::F64, -1, 1, 16).transpose(1, 2);  // [2,4,5]
  auto xv = values(x), yv = values(y);
  std::vector<double> ex;
  for (int64_t k = 0; k < 2; ++k) {
    auto r = ref_mm(xv, yv, 3, 4, 5, k * 12, k * 20);
    ex.insert(ex.end(), r.begin(), r.end());
  }
  before = profile::counters();
  Tensor z = matmul(x, y);
  after = profile::counters();
  test::expect_close(z, ex, 1e-13);
  EXPECT_EQ(after.ops - before.ops, 1);
  EXPECT_EQ(after.launches - before.launches, 2);  // one GEMM per batch entry
}

TEST(Matmul, SharedWeightBatchIsOneGemm) {
  Tensor a = test::random_tensor({2, 3, 4}, DType::F32, -1, 1, 17);
  Tensor w = test::random_tensor({4, 5}, DType::F32, -1, 1, 18);
  profile::Counters before = profile::counters();
  Tensor c = matmul(a, w);
  profile::Counters after = profile::counters();
  EXPECT_EQ(after.launches - before.launches, 1);
  auto av = values(a), wv = values(w);
  std::vector<double> ex;
  for (int64_t k = 0; k < 2; ++k) {
    auto r = ref_mm(av, wv, 3, 4, 5, k * 12, 0);
    ex.insert(ex.end(), r.begin(), r.end());
  }
  test::expect_close(c, ex, 1e-5);
}

TEST(Matmul, RepeatableForAThreadCountAndCloseAcrossThem) {
  // Tall and skinny: at 2 threads fk::gemm splits the rows over threads.
  // OpenBLAS's edge kernels depend on where a call's row range starts, so the
  // last bits may change with the thread count (see linalg.h), never between
  // runs at one thread count.
  Tensor a = test::random_tensor({8192, 16}, DType::F32, -1, 1, 19);
  Tensor w = test::random_tensor({16, 16}, DType::F32, -1, 1, 20);
  const test::ThreadCount threads(1);
  auto one = matmul(a, w).to_vector<float>();
  threads.set(2);
  auto two = matmul(a, w).to_vector<float>();
  auto again = matmul(a, w).to_vector<float>();
  EXPECT_EQ(two, again);
  ASSERT_EQ(one.size(), two.size());
  for (size_t i = 0; i < one.size(); ++i) {
    EXPECT_NEAR(one[i], two[i], 1e-6f * (1.0f + std::abs(one[i]))) << i;
  }
}

// A skinny product on a thread that never set fk's count (its OpenMP setting
// is the environment's) gives the calling thread's bits: the row blocks run
// inline there and OpenBLAS sized a team from that setting.
TEST(Matmul, SkinnyProductsGiveOneResultOnEveryThread) {
  Tensor a = test::random_tensor({6000, 200}, DType::F64, -1, 1, 31);
  Tensor w = test::random_tensor({200, 250}, DType::F64, -1, 1, 32);
  const test::ThreadCount threads(1);
  const std::vector<double> here = matmul(a, w).to_vector<double>();
  std::vector<double> there;
  std::thread t([&] {
    omp_set_num_threads(4);  // what an environment of OMP_NUM_THREADS=4 gives a new thread
    there = matmul(a, w).to_vector<double>();
  });
  t.join();
  EXPECT_EQ(here, there);
}

TEST(Matmul, ComplexAndPromotion) {
  Tensor a = test::random_complex({3, 4}, 21);
  Tensor b = test::random_complex({4, 2}, 23);
  auto expect = ref_mm(cvalues(a), cvalues(b), 3, 4, 2);
  for (DType dt : {DType::C128, DType::C64}) {
    Tensor c = matmul(a.to(dt), b.to(dt));
    EXPECT_EQ(c.dtype(), dt);
    auto cv = cvalues(c);
    double tol = dt == DType::C128 ? 1e-13 : 1e-5;
    for (size_t i = 0; i < cv.size(); ++i) EXPECT_LT(std::abs(cv[i] - expect[i]), tol) << i;
  }
  // Mixed dtypes promote: f32·f64 -> f64, f64·c128 -> c128.
  Tensor r = test::random_tensor({4, 2}, DType::F64, -1, 1, 24);
  EXPECT_EQ(matmul(test::random_tensor({3, 4}, DType::F32), r).dtype(), DType::F64);
  Tensor ar = matmul(a, r);
  EXPECT_EQ(ar.dtype(), DType::C128);
  auto rv = values(r);
  std::vector<c128> rc(rv.begin(), rv.end());
  auto expect2 = ref_mm(cvalues(a), rc, 3, 4, 2);
  auto arv = cvalues(ar);
  for (size_t i = 0; i < arv.size(); ++i) EXPECT_LT(std::abs(arv[i] - expect2[i]), 1e-13);
}

TEST(Matmul, HalfTypesAccumulateInF32) {
  // The reference multiplies the half-rounded inputs in f64, so the only error
  // is the rounding of the result (relative 2^-11 for f16, 2^-8 for bf16) plus
  // f32 accumulation.
  const int64_t M = 33, K = 40, N = 17;
  for (DType dt : {DType::F16, DType::BF16}) {
    Tensor a = test::random_tensor({M, K}, DType::F32, -1, 1, 31).to(dt);
    Tensor b = test::random_tensor({K, N}, DType::F32, -1, 1, 32).to(dt);
    Tensor c = matmul(a, b);
    EXPECT_EQ(c.dtype(), dt);
    auto expect = ref_mm(values(a), values(b), M, K, N);  // from the half inputs, in f64
    auto cv = values(c);
    double rel = dt == DType::F16 ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8);
    for (size_t i = 0; i < cv.size(); ++i) {
      EXPECT_LE(std::abs(cv[i] - expect[i]), rel * std::abs(expect[i]) + 1e-5) << name(dt) << i;
    }
    // And close to the f32 product of the unrounded inputs (input rounding dominates).
    Tensor c32 = matmul(test::random_tensor({M, K}, DType::F32, -1, 1, 31),
                        test::random_tensor({K, N}, DType::F32, -1, 1, 32));
    auto c32v = values(c32);
    double tol = dt == DType::F16 ? 0.02 : 0.15;
    for (size_t i = 0; i < cv.size(); ++i) EXPECT_NEAR(cv[i], c32v[i], tol) << name(dt) << i;
    // Transposed half views and batches.
    Tensor bt = b.t().contiguous().t();
    test::expect_close(matmul(a, bt), cv, 0.0);
    Tensor ab = matmul(a.unsqueeze(0).expand({2, M, K}), b);
    EXPECT_EQ(ab.shape(), (Dims{2, M, N}));
    test::expect_close(ab.select(0, 1), cv, 1e-2);
  }
}

TEST(Matmul, EmptyInnerDimensionGivesZeros) {
  Tensor c = matmul(ones({3, 0}), ones({0, 2}));
  EXPECT_EQ(c.shape(), (Dims{3, 2}));
  test::expect_close(c, std::vector<double>(6, 0.0));
  EXPECT_EQ(matmul(ones({0, 4}), ones({4, 2})).shape(), (Dims{0, 2}));
}

// Backward through products with a zero-size dimension: the gradients are
// zeros or empty, of the operands' shapes (their transposes are empty
// tensors of non-row-major strides, which must still view and reshape).
TEST(Matmul, ZeroSizeDimensionsHaveZeroOrEmptyGradients) {
  struct Case {
    Dims a, b;
  };
  for (const Case& c : {Case{{2, 4}, {4, 0}}, Case{{0, 4}, {4, 3}}, Case{{2, 0}, {0, 3}},
                        Case{{2, 2, 0}, {2, 0, 3}}, Case{{0, 2, 4}, {0, 4, 3}}}) {
    SCOPED_TRACE(c.a.str() + " @ " + c.b.str());
    Tensor a = test::random_tensor(c.a, DType::F64, -1, 1, 61).set_requires_grad(true);
    Tensor b = test::random_tensor(c.b, DType::F64, -1, 1, 62).set_requires_grad(true);
    Tensor y = c.a.size() == 3 ? bmm(a, b) : matmul(a, b);
    for (double v : y.to_vector<double>()) EXPECT_EQ(v, 0.0);
    sum(y).backward();
    EXPECT_EQ(a.grad().shape(), c.a);
    EXPECT_EQ(b.grad().shape(), c.b);
    for (double v : a.grad().to_vector<double>()) EXPECT_EQ(v, 0.0);
    for (double v : b.grad().to_vector<double>()) EXPECT_EQ(v, 0.0);
  }
  Tensor x = test::random_tensor({5, 0}, DType::F64, -1, 1, 63).set_requires_grad(true);
  Tensor w = test::random_tensor({3, 0}, DType::F64, -1, 1, 64).set_requires_grad(true);
  Tensor bias = test::random_tensor({3}, DType::F64, -1, 1, 65).set_requires_grad(true);
  sum(linear(x, w, bias)).backward();
  EXPECT_EQ(w.grad().shape(), (Dims{3, 0}));
  test::expect_close(bias.grad(), std::vector<double>(3, 5.0));
}

TEST(Bmm, ValuesAndErrors) {
  Tensor a = test::random_tensor({3, 2, 4}, DType::F64, -1, 1, 41);
  Tensor b = test::random_tensor({3, 4, 5}, DType::F64, -1, 1, 42);
  Tensor c = bmm(a, b);
  ASSERT_EQ(c.shape(), (Dims{3, 2, 5}));
  auto av = values(a), bv = values(b);
  std::vector<double> ex;
  for (int64_t k = 0; k < 3; ++k) {
    auto r = ref_mm(av, bv, 2, 4, 5, k * 8, k * 20);
    ex.insert(ex.end(), r.begin(), r.end());
  }
  test::expect_close(c, ex, 1e-13);
  EXPECT_THROW(bmm(a, ones({4, 5}, {DType::F64})), Error);     // not 3-D
  EXPECT_THROW(bmm(a, ones({1, 4, 5}, {DType::F64})), Error);  // no broadcasting
  try {
    bmm(a, ones({3, 5, 5}, {DType::F64}));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[3, 2, 4] and [3, 5, 5]"), std::string::npos) << e.what();
  }
}

TEST(Linear, MatchesLoops) {
  Tensor x = test::random_tensor({2, 3, 4}, DType::F64, -1, 1, 51);
  Tensor w = test::random_tensor({5, 4}, DType::F64, -1, 1, 52);
  Tensor bias = test::random_tensor({5}, DType::F64, -1, 1, 53);
  auto xv = values(x), wv = values(w), bv = values(bias);
  auto ref = [&](bool with_bias) {
    std::vector<double> y(30);
    for (int r = 0; r < 6; ++r) {
      for (int o = 0; o < 5; ++o) {
        double s = with_bias ? bv[o] : 0.0;
        for (int i = 0; i < 4; ++i) s += xv[r * 4 + i] * wv[o * 4 + i];
        y[r * 5 + o] = s;
      }
    }
    return y;
  };
  Tensor y = linear(x, w, bias);
  EXPECT_EQ(y.shape(), (Dims{2, 3, 5}));
  test::expect_close(y, ref(true), 1e-13);
  test::expect_close(linear(x, w), ref(false), 1e-13);
  // Transposed weight view and strided input.
  Tensor wt = w.t().contiguous().t();
  Tensor xs = x.transpose(0, 1).contiguous().transpose(0, 1);
  test::expect_close(linear(xs, wt, bias), ref(true), 1e-13);
  // A 1-D input gives a 1-D output.
  Tensor y1 = linear(x.select(0, 0).select(0, 0), w, bias);
  EXPECT_EQ(y1.shape(), (Dims{5}));
  auto full_ref = ref(true);
  test::expect_close(y1, std::vector<double>(full_ref.begin(), full_ref.begin() + 5), 1e-13);
  // f32 and half.
  test::expect_close(linear(x.to(DType::F32), w.to(DType::F32), bias.to(DType::F32)), ref(true),
                     1e-5);
  Tensor yh = linear(x.to(DType::BF16), w.to(DType::BF16), bias.to(DType::BF16));
  EXPECT_EQ(yh.dtype(), DType::BF16);
  test::expect_close(yh, ref(true), 0.05);
}

TEST(Linear, Errors) {
  Tensor x = ones({2, 4});
  try {
    linear(x, ones({5, 3}));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[2, 4] and [5, 3]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(linear(x, ones({4})), Error);
  try {
    linear(x, ones({5, 4}), ones({4}));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bias of shape [5], got [4]"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(linear(ones({2, 4}, {DType::I64}), ones({5, 4}, {DType::I64})), Error);
  // The pure forward checks its operands too (an f32 weight under f64 x was
  // read past its end; a shape mismatch gave numbers).
  EXPECT_THROW(linear_forward(ones({2, 4}, {DType::F64}), ones({3, 4}), {}), Error);
  EXPECT_THROW(linear_forward(ones({2, 4}), ones({3, 5}), {}), Error);
  try {
    linear(scalar_tensor(1.0), ones({4, 1}));
    FAIL();
  } catch (const Error& e) {  // said the features did not match ([] and [4, 1])
    EXPECT_NE(std::string(e.what()).find("at least 1 dim"), std::string::npos) << e.what();
  }
}

TEST(Matmul, Errors) {
  try {
    matmul(ones({2, 3}), ones({4, 5}));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "matmul: expected inner dimensions to match, got [2, 3] and [4, 5]");
  }
  EXPECT_THROW(matmul(ones({3}), ones({4})), Error);
  EXPECT_THROW(matmul(scalar_tensor(1.0), ones({4})), Error);
  try {
    matmul(ones({2, 3, 4}), ones({3, 4, 5}));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(
        std::string(e.what()).find("batch dimensions that broadcast, got [2, 3, 4] and [3, 4, 5]"),
        std::string::npos)
        << e.what();
  }
  try {
    matmul(ones({2, 2}, {DType::I64}), ones({2, 2}, {DType::I32}));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("got i64 and i32"), std::string::npos) << e.what();
  }
  // One integer operand too (as torch): promotion took it in, and autocast
  // rounded it to half (2049 -> 2048, past 65504 -> inf).
  for (bool autocast : {false, true}) {
    std::optional<amp::AutocastGuard> guard;
    if (autocast) guard.emplace(DType::F16);
    EXPECT_THROW(matmul(ones({2, 2}, {DType::I64}), ones({2, 2})), Error);
    EXPECT_THROW(linear(ones({1, 2}), ones({3, 2}), ones({3}, {DType::I32})), Error);
    EXPECT_THROW(linear(ones({1, 2}, {DType::Bool}), ones({3, 2}), Tensor()), Error);
    EXPECT_THROW(linear(ones({1, 2}), ones({3, 2}), ones({3}, {DType::Bool})), Error);
  }
  EXPECT_THROW(matmul(Tensor(), ones({2})), Error);
}

TEST(Gemm, SizesPastOpenBlasIntsAreErrors) {
  // Refused before any operand is read: the one-element buffers stand in for
  // operands of 2^31 rows or columns.
  float a = 1, b = 1, c = 0;
  const int64_t big = int64_t{1} << 31;
  try {
    gemm(DType::F32, false, false, big, 1, 1, 1.0, &a, 1, &b, 1, 0.0, &c, 1);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "fk::gemm: expected sizes and leading dimensions up to 2^31 - 1 (OpenBLAS's 32-bit "
              "ints), got m 2147483648, n 1, k 1, lda 1, ldb 1, ldc 1");
  }
  EXPECT_THROW(gemm(DType::F64, false, true, 1, 1, big, 1.0, &a, big, &b, big, 0.0, &c, 1), Error);
  EXPECT_THROW(gemm(DType::F32, false, false, 1, 1, 1, 1.0, &a, 1, &b, 1, 0.0, &c, big), Error);
  EXPECT_EQ(c, 0.f);
}

TEST(Matmul, GradcheckShapesAndLayouts) {
  auto rt = [](const Dims& s, unsigned seed) {
    return test::random_tensor(s, DType::F64, -1, 1, seed).set_requires_grad(true);
  };
  Fn mm = [](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); };
  EXPECT_GRADCHECK(mm, (std::vector<Tensor>{rt({3, 4}, 1), rt({4, 2}, 2)}));
  EXPECT_GRADCHECK(mm, (std::vector<Tensor>{rt({4}, 3), rt({4}, 4)}));
  EXPECT_GRADCHECK(mm, (std::vector<Tensor>{rt({4}, 5), rt({4, 3}, 6)}));
  EXPECT_GRADCHECK(mm, (std::vector<Tensor>{rt({3, 4}, 7), rt({4}, 8)}));
  EXPECT_GRADCHECK(mm, (std::vector<Tensor>{rt({2, 1, 2, 3}, 9), rt({3, 3, 2}, 10)}));
  EXPECT_GRADCHECK(mm, (std::vector<Tensor>{rt({2, 2, 3}, 11), rt({3, 2}, 12)}));  // shared weight
  EXPECT_GRADCHECK(mm, (std::vector<Tensor>{rt({3}, 13), rt({2, 3, 2}, 14)}));
  EXPECT_GRADCHECK(mm, (std::vector<Tensor>{rt({2, 2, 3}, 15), rt({3}, 16)}));
  // Transposed and sliced operands.
  Fn mt = [](const std::vector<Tensor>& in) { return matmul(in[0].t(), in[1].slice(1, 0, 4, 2)); };
  EXPECT_GRADCHECK(mt, (std::vector<Tensor>{rt({4, 3}, 17), rt({4, 4}, 18)}));
  // Only one side requiring grad.
  Tensor fixed = test::random_tensor({4, 2}, DType::F64, -1, 1, 19);
  Fn one = [fixed](const std::vector<Tensor>& in) { return matmul(in[0], fixed); };
  EXPECT_GRADCHECK(one, (std::vector<Tensor>{rt({3, 4}, 20)}));
  Fn bm = [](const std::vector<Tensor>& in) { return bmm(in[0], in[1].transpose(1, 2)); };
  EXPECT_GRADCHECK(bm, (std::vector<Tensor>{rt({2, 3, 4}, 21), rt({2, 2, 4}, 22)}));
}

TEST(Matmul, GradcheckComplex) {
  auto rc = [](const Dims& s, unsigned seed) {
    return test::random_complex(s, seed).set_requires_grad(true);
  };
  Fn mm = [](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); };
  EXPECT_GRADCHECK(mm, (std::vector<Tensor>{rc({3, 4}, 1), rc({4, 2}, 3)}));
  EXPECT_GRADCHECK(mm, (std::vector<Tensor>{rc({2, 2, 3}, 5), rc({3, 2}, 7)}));
  EXPECT_GRADCHECK(mm, (std::vector<Tensor>{rc({3}, 9), rc({3}, 11)}));
  Fn mt = [](const std::vector<Tensor>& in) { return matmul(in[0].t(), in[1]); };
  EXPECT_GRADCHECK(mt, (std::vector<Tensor>{rc({4, 3}, 13), rc({4, 2}, 15)}));
  // Real times complex (promotion's gradient keeps the real part for the real input).
  Tensor r = test::random_tensor({4, 2}, DType::F64, -1, 1, 17).set_requires_grad(true);
  EXPECT_GRADCHECK(mm, (std::vector<Tensor>{rc({3, 4}, 19), r}));
}

TEST(Linear, Gradcheck) {
  auto rt = [](const Dims& s, unsigned seed) {
    return test::random_tensor(s, DType::F64, -1, 1, seed).set_requires_grad(true);
  };
  Fn lb = [](const std::vector<Tensor>& in) { return linear(in[0], in[1], in[2]); };
  EXPECT_GRADCHECK(lb, (std::vector<Tensor>{rt({2, 3, 4}, 1), rt({2, 4}, 2), rt({2}, 3)}));
  EXPECT_GRADCHECK(lb, (std::vector<Tensor>{rt({4}, 4), rt({3, 4}, 5), rt({3}, 6)}));
  Fn ln = [](const std::vector<Tensor>& in) { return linear(in[0].t(), in[1]); };
  EXPECT_GRADCHECK(ln, (std::vector<Tensor>{rt({4, 3}, 7), rt({2, 4}, 8)}));
  Fn lc = [](const std::vector<Tensor>& in) { return linear(in[0], in[1], in[2]); };
  EXPECT_GRADCHECK(lc,
                   (std::vector<Tensor>{test::random_complex({3, 4}, 9).set_requires_grad(true),
                                        test::random_complex({2, 4}, 11).set_requires_grad(true),
                                        test::random_complex({2}, 13).set_requires_grad(true)}));
}

TEST(Matmul, BackwardOfHalfProducesHalfGradients) {
  Tensor a =
      test::random_tensor({3, 4}, DType::F32, -1, 1, 61).to(DType::F16).set_requires_grad(true);
  Tensor b =
      test::random_tensor({4, 2}, DType::F32, -1, 1, 62).to(DType::F16).set_requires_grad(true);
  sum(matmul(a, b)).backward();
  ASSERT_TRUE(a.grad().defined());
  EXPECT_EQ(a.grad().dtype(), DType::F16);
  // d sum(AB)/dA[i,k] = sum_j B[k,j]
  auto bv = values(b);
  std::vector<double> expect;
  for (int i = 0; i < 3; ++i) {
    for (int k = 0; k < 4; ++k) expect.push_back(bv[k * 2] + bv[k * 2 + 1]);
  }
  test::expect_close(a.grad(), expect, 2e-3);
}

// The exposed backward functions against autograd, with a broadcast batch
// and a complex pair, and dA = dC B^T by hand.
TEST(Matmul, PureBackwardMatchesAutograd) {
  Tensor a = test::random_tensor({2, 3, 4}, DType::F64, -1, 1, 171);
  Tensor b = test::random_tensor({4, 5}, DType::F64, -1, 1, 172);
  Tensor g = test::random_tensor({2, 3, 5}, DType::F64, -1, 1, 173);
  MatmulGrads got = matmul_backward(g, a, b, a.shape(), b.shape(), true, true);
  test::expect_same(got.a, test::autograd_grad([&](const Tensor& t) { return matmul(t, b); }, a, g),
                    1e-14);
  test::expect_same(got.b, test::autograd_grad([&](const Tensor& t) { return matmul(a, t); }, b, g),
                    1e-14);
  test::expect_same(got.a, matmul(g, b.t()), 1e-14);
  MatmulGrads only_a = matmul_backward(g, Tensor(), b, a.shape(), b.shape(), true, false);
  EXPECT_FALSE(only_a.b.defined());
  test::expect_same(only_a.a, got.a, 0);
  Tensor za = test::random_complex({3, 4}, 174), zb = test::random_complex({4, 2}, 175);
  Tensor zg = test::random_complex({3, 2}, 176);
  MatmulGrads z = matmul_backward(zg, za, zb, za.shape(), zb.shape(), true, true);
  test::expect_same(
      z.a, test::autograd_grad([&](const Tensor& t) { return matmul(t, zb); }, za, zg), 1e-14);
  test::expect_same(
      z.b, test::autograd_grad([&](const Tensor& t) { return matmul(za, t); }, zb, zg), 1e-14);
}

TEST(Linear, PureBackwardMatchesAutograd) {
  Tensor x = test::random_tensor({2, 3, 4}, DType::F64, -1, 1, 177);
  Tensor w = test::random_tensor({5, 4}, DType::F64, -1, 1, 178);
  Tensor bias = test::random_tensor({5}, DType::F64, -1, 1, 179);
  Tensor g = test::random_tensor({2, 3, 5}, DType::F64, -1, 1, 180);
  LinearGrads got = linear_backward(g, x, w, x.shape(), true, true, true);
  test::expect_same(
      got.x, test::autograd_grad([&](const Tensor& t) { return linear(t, w, bias); }, x, g), 1e-14);
  test::expect_same(got.weight,
                    test::autograd_grad([&](const Tensor& t) { return linear(x, t, bias); }, w, g),
                    1e-14);
  test::expect_same(got.bias,
                    test::autograd_grad([&](const Tensor& t) { return linear(x, w, t); }, bias, g),
                    1e-14);
  test::expect_same(got.bias, sum(g, {0, 1}), 1e-14);
}

}  // namespace
}  // namespace fk
