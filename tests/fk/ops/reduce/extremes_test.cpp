#include "fk/ops/reduce/extremes.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "../../test_util.h"
#include "../backward_check.h"
#include "reference.h"

namespace fk {
namespace {

using namespace reduce_ref;

TEST(Extremes, MaxMinAlongDimGiveFirstIndexAndRouteGradient) {
  Tensor x = from_vector(std::vector<double>{1, 3, 3, 2, 7, 0, 7, 7, -1, -1, 4, -1}, {3, 4})
                 .set_requires_grad(true);
  auto [v, i] = max(x, 1);
  test::expect_close(v, {3, 7, 4}, 0);
  EXPECT_EQ(i.dtype(), DType::I64);
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 2}));
  sum(mul(v, from_vector(std::vector<double>{1, 2, 3}))).backward();
  test::expect_close(x.grad(), {0, 1, 0, 0, 2, 0, 0, 0, 0, 0, 3, 0}, 0);

  auto [mv, mi] = min(x, 0, true);
  EXPECT_EQ(mv.shape(), (Dims{1, 4}));
  test::expect_close(mv, {-1, -1, 3, -1}, 0);
  EXPECT_EQ(mi.to_vector<int64_t>(), (std::vector<int64_t>{2, 2, 0, 2}));
  EXPECT_EQ(min(x, 1).second.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 0}));
  EXPECT_EQ(argmax(x, -1).to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 2}));
  EXPECT_EQ(argmin(x, 0, true).shape(), (Dims{1, 4}));
  EXPECT_EQ(argmin(x, 0).to_vector<int64_t>(), (std::vector<int64_t>{2, 2, 0, 2}));

  // Against a loop on a random 3-D input, every dim.
  Tensor r = test::random_tensor({3, 4, 5}, DType::F64, -1, 1, 21);
  auto rv = r.to_vector<double>();
  for (int d = 0; d < 3; ++d) {
    std::vector<bool> red(3, false);
    red[d] = true;
    auto gs = groups(rv, {3, 4, 5}, red);
    std::vector<double> want_i, want_v;
    for (const Group& g : gs) {
      auto it = std::max_element(g.begin(), g.end());
      want_v.push_back(*it);
      want_i.push_back(static_cast<double>(it - g.begin()));
    }
    auto [vals, idx] = max(r, d);
    test::expect_close(vals, want_v, 0);
    test::expect_close(idx, want_i, 0);
  }
}

TEST(Extremes, AmaxTiesSplitTheGradient) {
  Tensor x =
      from_vector(std::vector<double>{1, 3, 3, 2, 4, 4, 4, 0}, {2, 4}).set_requires_grad(true);
  sum(amax(x, {1})).backward();
  test::expect_close(x.grad(), {0, 0.5, 0.5, 0, 1.0 / 3, 1.0 / 3, 1.0 / 3, 0}, 1e-15);
  Tensor y = from_vector(std::vector<double>{2, 1, 1, 5}).set_requires_grad(true);
  amin(y).backward();
  test::expect_close(y.grad(), {0, 0.5, 0.5, 0}, 1e-15);
  // The inf-norm shares the rule, on |x|.
  Tensor z = from_vector(std::vector<double>{-3, 1, 3}).set_requires_grad(true);
  norm(z, std::numeric_limits<double>::infinity()).backward();
  test::expect_close(z.grad(), {-0.5, 0, 0.5}, 1e-15);
}

TEST(Extremes, NaNPropagatesThroughExtremes) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor x = from_vector(std::vector<double>{1, nan, 3, 2});
  EXPECT_TRUE(std::isnan(amax(x).item()));
  EXPECT_TRUE(std::isnan(amin(x).item()));
  EXPECT_EQ(argmax(x, 0).to_vector<int64_t>()[0], 1);
  EXPECT_TRUE(std::isnan(logsumexp(x, {0}).item()));
}

// Values drawn from a small palette so that ties are common, with -0 and +0
// (equal), +-inf and two NaNs of different payloads (and signs) at the rate
// `nan_rate`: the value a max returns must be the element itself.
template <typename T>
std::vector<T> palette_values(int64_t n, double nan_rate, unsigned seed) {
  const T inf = std::numeric_limits<T>::infinity();
  T nan_a = std::numeric_limits<T>::quiet_NaN(), nan_b = -std::numeric_limits<T>::quiet_NaN();
  if constexpr (sizeof(T) == 4) {
    uint32_t bits = 0x7fc00123u;
    std::memcpy(&nan_b, &bits, 4);
  } else {
    uint64_t bits = 0xfff8000000000abcull;
    std::memcpy(&nan_b, &bits, 8);
  }
  const T pal[] = {-inf, T(-2), T(-0.0), T(0), T(0.5), T(1), T(3), inf};
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> pick(0, 7);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<T> v(static_cast<size_t>(n));
  for (T& x : v) {
    double r = u(gen);
    x = r < nan_rate / 2 ? nan_a : r < nan_rate ? nan_b : pal[pick(gen)];
  }
  return v;
}

// The first NaN, else the first largest (std::max_element) or smallest.
template <typename T>
size_t ref_extreme(const std::vector<T>& g, bool want_max) {
  auto nan = std::find_if(g.begin(), g.end(), [](T v) { return v != v; });
  if (nan != g.end()) return static_cast<size_t>(nan - g.begin());
  auto it = want_max ? std::max_element(g.begin(), g.end()) : std::min_element(g.begin(), g.end());
  return static_cast<size_t>(it - g.begin());
}

// max/min/argmax/argmin/amax/amin of [A, R, C] along dim 1, against the loop:
// the same index and bitwise the same value (the element at that index).
template <typename T>
void check_extremes(const std::vector<T>& v, int64_t A, int64_t R, int64_t C) {
  Tensor x = from_vector(v, {A, R, C});
  for (bool want_max : {true, false}) {
    SCOPED_TRACE(want_max ? "max" : "min");
    std::vector<int64_t> want_i;
    std::vector<T> want_v;
    for (int64_t a = 0; a < A; ++a) {
      for (int64_t c = 0; c < C; ++c) {
        std::vector<T> g;
        for (int64_t r = 0; r < R; ++r) g.push_back(v[static_cast<size_t>((a * R + r) * C + c)]);
        size_t i = ref_extreme(g, want_max);
        want_i.push_back(static_cast<int64_t>(i));
        want_v.push_back(g[i]);
      }
    }
    auto [vals, idx] = want_max ? max(x, 1) : min(x, 1);
    EXPECT_EQ(idx.template to_vector<int64_t>(), want_i);
    EXPECT_EQ((want_max ? argmax(x, 1) : argmin(x, 1)).template to_vector<int64_t>(), want_i);
    for (const Tensor& got : {vals, want_max ? amax(x, {1}) : amin(x, {1})}) {
      std::vector<T> gv = got.template to_vector<T>();
      ASSERT_EQ(gv.size(), want_v.size());
      for (size_t k = 0; k < gv.size(); ++k) {
        EXPECT_TRUE(same_bits(gv[k], want_v[k]))
            << "output " << k << ": " << gv[k] << " vs " << want_v[k] << " at " << want_i[k];
      }
    }
  }
}

// Runs (C == 1) of lengths around the AVX2 kernel's vector widths and chain
// counts, rows of lanes (C > 1) around them and beyond kLaneBlock, and rows
// longer than one reduction block, for f32 and f64 on both ISA paths.
TEST(Extremes, ExtremesMatchPlainLoopsOnBothIsaPaths) {
  struct Shape {
    int64_t A, R, C;
  };
  const std::vector<Shape> shapes = {
      {3, 1, 1},  {3, 3, 1},  {3, 7, 1},  {2, 8, 1},   {2, 9, 1},    {2, 31, 1},    {2, 32, 1},
      {2, 33, 1}, {2, 63, 1}, {2, 65, 1}, {2, 100, 1}, {2, 257, 1},  {1, 40001, 1}, {1, 5, 3},
      {2, 9, 8},  {1, 7, 13}, {2, 5, 40}, {1, 6, 300}, {1, 40001, 9}};
  on_both_isa_paths([&](const char*) {
    for (const Shape& s : shapes) {
      for (double nan_rate : {0.0, 0.02}) {
        SCOPED_TRACE("shape " + std::to_string(s.A) + "x" + std::to_string(s.R) + "x" +
                     std::to_string(s.C) + " nan rate " + std::to_string(nan_rate));
        const int64_t n = s.A * s.R * s.C;
        const auto seed = static_cast<unsigned>(n + 1000 * nan_rate);
        check_extremes(palette_values<float>(n, nan_rate, seed), s.A, s.R, s.C);
        check_extremes(palette_values<double>(n, nan_rate, seed + 1), s.A, s.R, s.C);
      }
    }
  });
}

// Hand-made rows for the documented rules: ties go to the first, -0 and +0
// tie, the first NaN wins, +-inf are ordinary extremes.
TEST(Extremes, ExtremeTiesZerosInfsAndNaNs) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  struct Row {
    std::vector<double> v;
    int64_t argmax, argmin;
  };
  const std::vector<Row> rows = {
      {{-0.0, 0.0, -0.0, 0.0, -0.0, 0.0, -0.0, 0.0, 0.0}, 0, 0},
      {{0.0, -0.0, -0.0, -0.0, -0.0, -0.0, -0.0, -0.0, -0.0}, 0, 0},
      {{1, 2, 3, 3, 2, 3, 1, 1, 1}, 2, 0},
      {{inf, 1, inf, -inf, -inf, 0, 0, 0, inf}, 0, 3},
      {{-inf, -inf, -inf, -inf, -inf, -inf, -inf, -inf, -inf}, 0, 0},
      {{1, 2, 3, 4, 5, 6, 7, 8, nan}, 8, 8},
      {{nan, 2, nan, 4, 5, 6, 7, inf, -inf}, 0, 0},
      {{1, inf, 3, nan, 5, nan, 7, 8, -inf}, 3, 3},
  };
  on_both_isa_paths([&](const char*) {
    for (DType dt : {DType::F32, DType::F64}) {
      for (bool by_lanes : {false, true}) {  // rows as runs, or as columns
        std::vector<double> flat;
        for (const Row& r : rows) flat.insert(flat.end(), r.v.begin(), r.v.end());
        Tensor x = from_vector(flat, {static_cast<int64_t>(rows.size()), 9}).to(dt);
        if (by_lanes) x = x.t().contiguous();
        const int d = by_lanes ? 0 : 1;
        std::vector<int64_t> want_max, want_min;
        for (const Row& r : rows) want_max.push_back(r.argmax), want_min.push_back(r.argmin);
        EXPECT_EQ(argmax(x, d).to_vector<int64_t>(), want_max) << name(dt) << " " << d;
        EXPECT_EQ(argmin(x, d).to_vector<int64_t>(), want_min) << name(dt) << " " << d;
        // The zero rows' results keep the first element's sign.
        std::vector<double> mx = amax(x, {d}).to_vector<double>();
        EXPECT_TRUE(std::signbit(mx[0]) && !std::signbit(mx[1])) << name(dt) << " " << d;
        EXPECT_TRUE(std::isnan(mx[5]) && std::isnan(mx[6]) && std::isnan(mx[7]));
        EXPECT_EQ(mx[3], inf);
        EXPECT_EQ(amin(x, {d}).to_vector<double>()[3], -inf);
      }
    }
  });
}

TEST(Extremes, PureBackwardMatchesAutograd) {
  // Ties in rows 0 and 1 (the gradient is split among them).
  Tensor x = from_vector(std::vector<double>{1, 3, 3, 2, 4, 4, 4, 0, 5, -1, 2, 0}, {3, 4});
  for (bool want_max : {true, false}) {
    for (const Dims& dims : {Dims{}, Dims{0}, Dims{1}}) {
      for (bool keepdim : {false, true}) {
        auto f = [&](const Tensor& t) {
          return want_max ? amax(t, dims, keepdim) : amin(t, dims, keepdim);
        };
        Tensor out = f(x);
        Tensor g = test::random_tensor(out.shape(), DType::F64, -1, 1, 86);
        test::expect_same(amax_backward(g, x, out, dims, keepdim), test::autograd_grad(f, x, g),
                          1e-15);
      }
    }
    for (int64_t dim : {0, 1, -1}) {
      for (bool keepdim : {false, true}) {
        auto f = [&](const Tensor& t) {
          return (want_max ? max(t, dim, keepdim) : min(t, dim, keepdim)).first;
        };
        auto [values, indices] = want_max ? max(x, dim, keepdim) : min(x, dim, keepdim);
        Tensor g = test::random_tensor(values.shape(), DType::F64, -1, 1, 87);
        test::expect_same(max_backward(g, indices, x.shape(), dim, keepdim),
                          test::autograd_grad(f, x, g), 0);
      }
    }
  }
  // amax of row {1, 3, 3, 2}: half of g to each 3.
  Tensor g = from_vector(std::vector<double>{2, 4, 6});
  test::expect_close(amax_backward(g, x, amax(x, {1}), {1}).narrow(0, 0, 1), {0, 1, 1, 0}, 0);
  // max along dim 1: g at the first maximum's index, zeros elsewhere.
  test::expect_close(max_backward(g, max(x, 1).second, x.shape(), 1).narrow(0, 0, 1), {0, 2, 0, 0},
                     0);
}

}  // namespace
}  // namespace fk
