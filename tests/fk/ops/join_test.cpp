#include "fk/ops/join.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "../test_util.h"
#include "join/helpers.h"

namespace fk {
namespace {

using test::error_of;

using namespace join_test;
using Fn = testing::TensorFn;

// Rows long enough for the run-copy paths (runs along the last dim, trailing
// identity dims folded into one run per row), against index arithmetic.
TEST(Join, LongRowsAgainstLoops) {
  Tensor t = test::random_tensor({3, 4, 40}, DType::F32, -1, 1, 9);
  auto tv = t.to_vector<double>();
  auto at = [&](int64_t i, int64_t j, int64_t k) { return tv[(i * 4 + j) * 40 + k]; };
  auto mod = [](int64_t a, int64_t n) { return ((a % n) + n) % n; };
  std::vector<double> want;
  for (int64_t i = 0; i < 3; ++i)  // roll along the last dim: two runs per row
    for (int64_t j = 0; j < 4; ++j)
      for (int64_t k = 0; k < 40; ++k) want.push_back(at(i, j, mod(k - 5, 40)));
  test::expect_close(roll(t, {5}, {2}), want, 0.0);
  want.clear();
  for (int64_t i = 0; i < 3; ++i)  // roll along the first dim: folded rows of 160
    for (int64_t j = 0; j < 4; ++j)
      for (int64_t k = 0; k < 40; ++k) want.push_back(at(mod(i - 1, 3), j, k));
  test::expect_close(roll(t, {1}, {0}), want, 0.0);
  want.clear();
  for (int64_t i = 0; i < 4; ++i)  // constant pad: fill runs, a copy run, filled rows
    for (int64_t j = 0; j < 4; ++j)
      for (int64_t k = 0; k < 45; ++k) {
        const int64_t a = i - 1, c = k - 3;
        want.push_back(a < 0 || c < 0 || c >= 40 ? -1.0 : at(a, j, c));
      }
  test::expect_close(pad(t, {3, 2, 0, 0, 1, 0}, PadMode::Constant, -1.0), want, 0.0);
  want.clear();
  for (int64_t i = 0; i < 3; ++i)  // replicate pad on the last dim
    for (int64_t j = 0; j < 4; ++j)
      for (int64_t k = 0; k < 44; ++k) want.push_back(at(i, j, std::clamp<int64_t>(k - 2, 0, 39)));
  test::expect_close(pad(t, {2, 2}, PadMode::Replicate), want, 0.0);
  want.clear();
  for (int64_t i = 0; i < 3; ++i)  // flip of the middle dim folds the last
    for (int64_t j = 0; j < 4; ++j)
      for (int64_t k = 0; k < 40; ++k) want.push_back(at(i, 3 - j, k));
  test::expect_close(flip(t, {1}), want, 0.0);
  // A transposed (non-contiguous) source never folds; it still rolls right.
  Tensor tt = t.transpose(0, 2);  // [40, 4, 3]
  auto r = roll(tt, {3}, {0}).to_vector<double>();
  for (int64_t k = 0; k < 40; ++k)
    for (int64_t j = 0; j < 4; ++j)
      for (int64_t i = 0; i < 3; ++i) ASSERT_EQ(r[(mod(k + 3, 40) * 4 + j) * 3 + i], at(i, j, k));
}

TEST(Join, GradcheckAll) {
  Tensor a = test::random_tensor({3, 4}, DType::F64, -1, 1, 8).set_requires_grad(true);
  Tensor b = test::random_tensor({4, 2}, DType::F64, -1, 1, 9).set_requires_grad(true);
  Tensor z = test::random_complex({3, 1}).set_requires_grad(true);
  std::vector<Tensor> in = {a, b, z};
  Fn c1 = [](const std::vector<Tensor>& x) {
    return cat({x[0], x[1].t(), x[0].narrow(0, 1, 1)}, 0);
  };
  EXPECT_GRADCHECK(c1, in);
  Fn c2 = [](const std::vector<Tensor>& x) { return cat({x[0], x[2]}, 1); };  // real + complex
  EXPECT_GRADCHECK(c2, in);
  Fn s1 = [](const std::vector<Tensor>& x) {
    return stack({x[0].t().narrow(1, 0, 2), x[1], x[1]}, 1);
  };
  EXPECT_GRADCHECK(s1, in);
  Fn sp = [](const std::vector<Tensor>& x) {
    auto p = split(x[0], std::vector<int64_t>{1, 3}, 1);
    return cat({p[1], p[0]}, 1);
  };
  EXPECT_GRADCHECK(sp, in);
  Fn r1 = [](const std::vector<Tensor>& x) { return roll(x[0].t(), {-5, 2}, {0, 1}); };
  EXPECT_GRADCHECK(r1, in);
  Fn r2 = [](const std::vector<Tensor>& x) { return roll(x[1], {3}, {}); };
  EXPECT_GRADCHECK(r2, in);
  Fn f1 = [](const std::vector<Tensor>& x) { return flip(x[0].t(), {0, 1}); };
  EXPECT_GRADCHECK(f1, in);
  Fn f2 = [](const std::vector<Tensor>& x) { return flip(x[2], {0}); };
  EXPECT_GRADCHECK(f2, in);
}

TEST(Join, Errors) {
  Tensor a = zeros({2, 3}, {DType::F64});
  EXPECT_THROW(cat({}), Error);
  std::string msg = error_of([&] { cat({a, zeros({2, 3}), zeros({3, 3})}, 1); });
  EXPECT_NE(msg.find("tensor 2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[3, 3]"), std::string::npos) << msg;
  EXPECT_THROW(cat({a, zeros({2, 3, 1})}), Error);
  EXPECT_THROW(cat({a}, 2), Error);
  EXPECT_THROW(cat({scalar_tensor(1.0)}), Error);
  EXPECT_THROW(stack({}), Error);
  msg = error_of([&] { stack({a, a, zeros({3, 2})}); });
  EXPECT_NE(msg.find("tensor 2"), std::string::npos) << msg;
  EXPECT_THROW(stack({a}, 3), Error);
  // Pads.
  Tensor x = zeros({2, 3});
  msg = error_of([&] { pad(x, {3, 0}, PadMode::Reflect); });
  EXPECT_NE(msg.find("reflect"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(3, 0)"), std::string::npos) << msg;
  EXPECT_NO_THROW(pad(x, {2, 2}, PadMode::Reflect));
  EXPECT_THROW(pad(x, {4, 0}, PadMode::Circular), Error);
  EXPECT_NO_THROW(pad(x, {3, 3}, PadMode::Circular));
  EXPECT_THROW(pad(x, {-1, 0}, PadMode::Replicate), Error);
  EXPECT_THROW(pad(x, {1}), Error);
  EXPECT_THROW(pad(x, {1, 1, 1, 1, 1, 1}), Error);
  EXPECT_THROW(pad(x, {-2, -2}), Error);
  EXPECT_THROW(pad(zeros({0}), {1, 1}, PadMode::Replicate), Error);
  // roll / flip.
  EXPECT_THROW(roll(x, {1, 2}, {0}), Error);
  EXPECT_THROW(roll(x, {1}, {2}), Error);
  EXPECT_THROW(roll(x, {1, 1}, {}), Error);
  msg = error_of([&] { flip(x, {1, -1}); });
  EXPECT_NE(msg.find("twice"), std::string::npos) << msg;
  EXPECT_THROW(flip(x, {2}), Error);
}

}  // namespace
}  // namespace fk
