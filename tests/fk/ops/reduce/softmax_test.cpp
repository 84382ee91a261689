#include "fk/ops/reduce/softmax.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "../../test_util.h"
#include "../backward_check.h"
#include "reference.h"

namespace fk {
namespace {

using namespace reduce_ref;

TEST(Softmax, SoftmaxSumsToOneAndIsStable) {
  Tensor x = test::random_tensor({4, 6}, DType::F64, -3, 3, 51);
  auto xv = x.to_vector<double>();
  for (int d : {0, 1}) {
    Tensor y = softmax(x, d);
    test::expect_close(sum(y, {d}), std::vector<double>(d == 0 ? 6 : 4, 1.0), 1e-12);
    test::expect_close(exp(log_softmax(x, d)), y.to_vector<double>(), 1e-12);
  }
  std::vector<double> want;
  for (int i = 0; i < 4; ++i) {
    double s = 0;
    for (int j = 0; j < 6; ++j) s += std::exp(xv[i * 6 + j]);
    for (int j = 0; j < 6; ++j) want.push_back(std::exp(xv[i * 6 + j]) / s);
  }
  test::expect_close(softmax(x, -1), want, 1e-12);

  // exp(1000) overflows; the shifted forms do not.
  for (DType dt : {DType::F32, DType::F64}) {
    Tensor big = from_vector(std::vector<double>{1000, 1001, 1002, -1000}).to(dt);
    double e0 = std::exp(-2.0), e1 = std::exp(-1.0), s = e0 + e1 + 1.0;
    test::expect_close(softmax(big, 0), {e0 / s, e1 / s, 1 / s, 0}, 1e-6);
    test::expect_close(log_softmax(big, 0),
                       {-2 - std::log(s), -1 - std::log(s), -std::log(s), -2002 - std::log(s)},
                       1e-4);
    test::expect_close(logsumexp(big, {0}), {1002 + std::log(s)}, 1e-4);
    test::expect_close(logsumexp(neg(big), {0}), {1000}, 1e-4);
  }
}

// A row holding +inf is NaN throughout, softmax and log_softmax, as torch's
// (0s around one NaN before: not a distribution); across rows and along a
// leading dim alike.
TEST(Softmax, ARowWithPlusInfinityIsNaN) {
  const std::vector<double> v{-1.76, -0.29, 1.05, INFINITY, 0.05, -1.03};
  for (DType dt : {DType::F32, DType::F64}) {
    const Tensor x = from_vector(v, {1, 6}).to(dt);
    for (const Tensor& y : {softmax(x, 1), log_softmax(x, 1), softmax(transpose(x, 0, 1), 0)}) {
      const auto out = y.to_vector<double>();
      EXPECT_TRUE(std::all_of(out.begin(), out.end(), [](double e) { return std::isnan(e); }))
          << name(dt);
    }
  }
}

TEST(Softmax, SoftmaxF32VectorExpMatchesGenericAndF64) {
  // The AVX2 exp path (last dim: one lane's run; dim 0: rows of lanes) and
  // the generic std::exp path, against f64 on the same values.
  Tensor x64 = test::random_tensor({37, 300}, DType::F64, -20, 20, 52);
  Tensor x = x64.to(DType::F32);
  for (int d : {0, 1}) {
    std::vector<double> want = softmax(x.to(DType::F64), d).to_vector<double>();
    std::vector<double> want_log = log_softmax(x.to(DType::F64), d).to_vector<double>();
    for (const char* v : {"auto", "generic"}) {
      KnobOverride isa("FK_CPU_ISA", v);
      test::expect_close(softmax(x, d), want, 1e-6);
      test::expect_close(log_softmax(x, d), want_log, 1e-5);
    }
  }
}

// Softmax over the last dim sums exp(x - max) over 8 lanes in the order of
// cpu/fold_lanes.h (tail last), in f64: the results are exactly e_i / total
// and x_i - (max + log total) with total that documented sum of the e_i, on
// both ISA paths, for f64 and f32. The e_i come from fk::exp on the same ISA
// path (for f32 on AVX2, the vector exp that softmax also uses). The f64 case
// pins the order; in f32 a different order of the f64 sum rarely survives the
// rounding to f32, so that case pins the exps and the rest of the formula.
template <typename T>
void check_softmax_sum_order(int64_t n) {
  std::vector<double> v64 = test::random_values(2 * n, -20, 20, static_cast<unsigned>(3 * n));
  std::vector<T> v(v64.begin(), v64.end());
  Tensor x = from_vector(v, {2, n});
  on_both_isa_paths([&](const char*) {
    std::vector<T> want, want_log;
    for (int64_t r = 0; r < 2; ++r) {
      const T* row = v.data() + r * n;
      const T m = *std::max_element(row, row + n);
      std::vector<T> d(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) d[static_cast<size_t>(i)] = row[i] - m;
      std::vector<T> e = exp(from_vector(d)).template to_vector<T>();
      std::vector<double> e64(e.begin(), e.end());
      const double total = documented_sum(e64.data(), n);
      const T k = static_cast<T>(1.0 / total), shift = m + static_cast<T>(std::log(total));
      for (int64_t i = 0; i < n; ++i) want.push_back(e[static_cast<size_t>(i)] * k);
      for (int64_t i = 0; i < n; ++i) want_log.push_back(row[i] - shift);
    }
    EXPECT_EQ(softmax(x, 1).template to_vector<T>(), want);
    EXPECT_EQ(log_softmax(x, 1).template to_vector<T>(), want_log);
  });
}

TEST(Softmax, SoftmaxLastDimSumsInTheDocumentedOrder) {
  for (int64_t n : {5, 8, 21, 300}) {
    SCOPED_TRACE("n = " + std::to_string(n));
    check_softmax_sum_order<double>(n);
    check_softmax_sum_order<float>(n);
  }
}

TEST(Softmax, PureBackwardMatchesAutogradAndFormula) {
  Tensor x = test::random_tensor({3, 4, 5}, DType::F64, -3, 3, 97);
  Tensor g = test::random_tensor({3, 4, 5}, DType::F64, -1, 1, 98);
  for (int64_t dim : {0, 1, -1}) {
    Tensor y = softmax(x, dim), ly = log_softmax(x, dim);
    test::expect_same(softmax_backward(g, y, dim),
                      test::autograd_grad([&](const Tensor& t) { return softmax(t, dim); }, x, g),
                      1e-15);
    test::expect_same(
        log_softmax_backward(g, ly, dim),
        test::autograd_grad([&](const Tensor& t) { return log_softmax(t, dim); }, x, g), 1e-15);
    // softmax: y (g - sum(g y)); log_softmax: g - exp(ly) sum(g).
    test::expect_same(softmax_backward(g, y, dim), mul(y, sub(g, sum(mul(g, y), {dim}, true))),
                      1e-15);
    test::expect_same(log_softmax_backward(g, ly, dim), sub(g, mul(exp(ly), sum(g, {dim}, true))),
                      1e-15);
  }
}

}  // namespace
}  // namespace fk
