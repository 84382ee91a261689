// fk::dct: FFTW's unnormalised DCT-II and DCT-III against their sums written
// out (1-D, 2-D, a transformed subset of 3 dims, f32 and f64, strided input,
// every length 1-9 and 64),
// padding and truncation, III undoing II up to 2 n per dim, an adjoint dot
// test and f64 gradchecks, and the errors. Its own file beside fft_test.cpp
// (the same source, transform.cpp): another transform family, with its own
// written-out references.
#include <cmath>

#include "../test_util.h"
#include "backward_check.h"
#include "fk/autograd.h"
#include "fk/ops/fft.h"

namespace fk {
namespace {

constexpr double kPi = 3.14159265358979323846;

// The DCT along `dim` of a row-major array, written out.
std::vector<double> dct_along(const std::vector<double>& x, const Dims& shape, int dim,
                              DctType type) {
  int64_t inner = 1;
  for (int a = dim + 1; a < shape.size(); ++a) inner *= shape[a];
  const int64_t n = shape[dim];
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const int64_t k = (static_cast<int64_t>(i) / inner) % n;
    const size_t base = i - static_cast<size_t>(k * inner);
    double acc = 0;
    for (int64_t j = 0; j < n; ++j) {
      const double v = x[base + static_cast<size_t>(j * inner)];
      acc += type == DctType::II ? 2 * v * std::cos(kPi * k * (j + 0.5) / n)
             : j == 0            ? v
                                 : 2 * v * std::cos(kPi * j * (k + 0.5) / n);
    }
    y[i] = acc;
  }
  return y;
}

std::vector<double> dct_dims(std::vector<double> x, const Dims& shape, const std::vector<int>& dims,
                             DctType type) {
  for (int d : dims) x = dct_along(x, shape, d, type);
  return x;
}

void expect_close(const Tensor& t, const std::vector<double>& want, double tol) {
  const std::vector<double> got = t.to(DType::F64).to_vector<double>();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "at " << i;
}

TEST(Dct, MatchesTheSumsWrittenOut) {
  for (DctType type : {DctType::II, DctType::III}) {
    const Tensor a = test::random_tensor({7}, DType::F64, -1, 1, 1);
    expect_close(dct(a, type), dct_along(a.to_vector<double>(), {7}, 0, type), 1e-12);
    const Tensor b = test::random_tensor({5, 6}, DType::F64, -1, 1, 2);
    expect_close(dct(b, type), dct_dims(b.to_vector<double>(), {5, 6}, {0, 1}, type), 1e-12);
    // dims 0 and 2 of three, dim 1 a batch; in f32.
    const Tensor c = test::random_tensor({4, 3, 5}, DType::F64, -1, 1, 3);
    const std::vector<double> want = dct_dims(c.to_vector<double>(), {4, 3, 5}, {0, 2}, type);
    const Tensor c32 = dct(c.to(DType::F32), type, {}, {0, 2});
    EXPECT_EQ(c32.dtype(), DType::F32);
    expect_close(c32, want, 2e-5);
    // A strided input: the transpose of b, along its dim 1.
    const Tensor bt = b.t();
    expect_close(dct(bt, type, {}, {1}),
                 dct_along(bt.contiguous().to_vector<double>(), {6, 5}, 1, type), 1e-12);
  }
}

// Every length 1-9 and 64, along the last dim and a middle one of 37
// columns: the reordering's odd and even cases (dct runs as one real FFT
// per dim) and the passes' blocks of columns.
TEST(Dct, EveryLengthMatchesTheSums) {
  for (int64_t n : {1, 2, 3, 4, 5, 6, 7, 8, 9, 64}) {
    for (DctType type : {DctType::II, DctType::III}) {
      const Tensor a = test::random_tensor({n}, DType::F64, -1, 1, static_cast<uint64_t>(n));
      expect_close(dct(a, type), dct_along(a.to_vector<double>(), {n}, 0, type), 1e-11 * n);
      // 37 columns: two whole blocks of the passes' 16 and a part one.
      const Tensor b = test::random_tensor({2, n, 37}, DType::F64, -1, 1, 100 + n);
      expect_close(dct(b, type, {}, {1}), dct_along(b.to_vector<double>(), {2, n, 37}, 1, type),
                   1e-11 * n);
    }
  }
}

TEST(Dct, PadsTruncatesAndIIIUndoesII) {
  const Tensor x = test::random_tensor({3, 4}, DType::F64, -1, 1, 4);
  // Padded to 6 along dim 1: the sums over the zero-padded rows.
  std::vector<double> padded(18, 0.0);
  const std::vector<double> xv = x.to_vector<double>();
  for (int r = 0; r < 3; ++r)
    for (int j = 0; j < 4; ++j) padded[r * 6 + j] = xv[r * 4 + j];
  expect_close(dct(x, DctType::III, {6}, {1}), dct_along(padded, {3, 6}, 1, DctType::III), 1e-12);
  // Truncated to 2 along dim 0.
  const std::vector<double> first(xv.begin(), xv.begin() + 8);
  expect_close(dct(x, DctType::II, {2}, {0}), dct_along(first, {2, 4}, 0, DctType::II), 1e-12);
  // III(II(x)) = 2 n x per dim: (2 * 3) (2 * 4) x.
  const std::vector<double> back = dct(dct(x, DctType::II), DctType::III).to_vector<double>();
  for (size_t i = 0; i < xv.size(); ++i) EXPECT_NEAR(back[i], 48 * xv[i], 1e-12);
}

TEST(Dct, AdjointDotTestAndGradcheck) {
  // <D x, y> = <x, D^T y> with D^T y from autograd, padded along one dim.
  const Tensor x = test::random_tensor({3, 4, 5}, DType::F64, -1, 1, 5);
  const Tensor y = test::random_tensor({3, 7, 5}, DType::F64, -1, 1, 6);
  auto dot = [](const Tensor& a, const Tensor& b) {
    const std::vector<double> av = a.to_vector<double>(), bv = b.to_vector<double>();
    double acc = 0;
    for (size_t i = 0; i < av.size(); ++i) acc += av[i] * bv[i];
    return acc;
  };
  for (DctType type : {DctType::II, DctType::III}) {
    Tensor xg = x.clone().set_requires_grad(true);
    const Tensor dx = dct(xg, type, {7, 5}, {1, 2});
    const Tensor dty = autograd::grad({dx}, {y}, {xg})[0];
    EXPECT_NEAR(dot(dx.detach(), y), dot(x, dty), 1e-10);
    testing::TensorFn f = [=](const std::vector<Tensor>& in) {
      return dct(in[0], type, {6, 3}, {0, 2});
    };
    Tensor small = test::random_tensor({4, 2, 3}, DType::F64, -1, 1, 7).set_requires_grad(true);
    EXPECT_GRADCHECK(f, (std::vector<Tensor>{small}));
  }
}

TEST(Dct, Errors) {
  EXPECT_THROW(dct(test::random_complex({4}, 8), DctType::II), Error);
  EXPECT_THROW(dct(test::random_tensor({4}), DctType::II, {0}), Error);
  EXPECT_THROW(dct(test::random_tensor({4, 4}), DctType::II, {}, {0, 0}), Error);
  EXPECT_THROW(dct(Tensor(), DctType::II), Error);
}

}  // namespace
}  // namespace fk
