#include "fk/ops/join/roll_flip.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "../../test_util.h"
#include "../backward_check.h"
#include "fk/thread_count.h"
#include "helpers.h"

namespace fk {
namespace {

using namespace join_test;
using Fn = testing::TensorFn;

TEST(Roll, AgainstIndexArithmetic) {
  Tensor t = test::random_tensor({3, 5}, DType::F64, -1, 1, 6);
  auto tv = t.to_vector<double>();
  const int64_t s0 = -2, s1 = 7;
  Tensor out = roll(t, {s1, s0}, {1, 0});
  std::vector<double> want(15);
  for (int64_t i = 0; i < 3; ++i) {
    for (int64_t j = 0; j < 5; ++j) {
      int64_t oi = ((i + s0) % 3 + 3) % 3, oj = ((j + s1) % 5 + 5) % 5;
      want[oi * 5 + oj] = tv[i * 5 + j];
    }
  }
  test::expect_close(out, want, 0.0);
  // The same dim twice rolls twice; a transposed input rolls its view.
  std::vector<double> want7(15);
  for (int64_t i = 0; i < 3; ++i) {
    for (int64_t j = 0; j < 5; ++j) want7[i * 5 + (j + 7) % 5] = tv[i * 5 + j];
  }
  test::expect_close(roll(t, {3, 4}, {1, -1}), want7, 0.0);
  Tensor tt = t.t();  // [5, 3]
  Tensor r2 = roll(tt, {1}, {0});
  auto r2v = r2.to_vector<double>();
  for (int64_t j = 0; j < 5; ++j) {
    for (int64_t i = 0; i < 3; ++i) EXPECT_EQ(r2v[((j + 1) % 5) * 3 + i], tv[i * 5 + j]);
  }
  // No dims: the flattened tensor rolls.
  std::vector<double> flat(15);
  for (int64_t k = 0; k < 15; ++k) flat[(k + 4) % 15] = tv[k];
  test::expect_close(roll(t, {-11}, {}), flat, 0.0);
}

// The contiguous CPU roll (one long copy plus a wrapped head per row) over
// every set of rolled dims, odd sizes, shifts past the size and negative, byte
// widths 1, 8 and 16, on tensors above the parallel grain: against index
// arithmetic, and bitwise the same on 1 and 3 threads.
TEST(Roll, EveryDimSetAgainstIndexArithmetic) {
  const Dims shape{5, 7, 3, 409};  // 42,945 elements: above one thread's grain
  const std::vector<int64_t> shifts{-2, 9, 1, -410};
  Tensor t = test::random_tensor(shape, DType::F64, -1, 1, 21);
  auto tv = t.to_vector<double>();
  for (int set = 1; set < 16; ++set) {
    std::vector<int64_t> dims, sh;
    int64_t s[4] = {0, 0, 0, 0};
    for (int d = 0; d < 4; ++d) {
      if (set & (1 << d)) {
        dims.push_back(d);
        sh.push_back(shifts[d]);
        s[d] = shifts[d];
      }
    }
    std::vector<double> want(tv.size());
    for (int64_t i = 0; i < shape[0]; ++i)
      for (int64_t j = 0; j < shape[1]; ++j)
        for (int64_t k = 0; k < shape[2]; ++k)
          for (int64_t l = 0; l < shape[3]; ++l) {
            auto src = [&](int64_t x, int d) {
              return ((x - s[d]) % shape[d] + shape[d]) % shape[d];
            };
            want[((i * 7 + j) * 3 + k) * 409 + l] =
                tv[((src(i, 0) * 7 + src(j, 1)) * 3 + src(k, 2)) * 409 + src(l, 3)];
          }
    const test::ThreadCount threads(1);
    Tensor one = roll(t, sh, dims);
    threads.set(3);
    Tensor three = roll(t, sh, dims);
    test::expect_close(one, want, 0.0);
    EXPECT_EQ(std::memcmp(one.data_ptr(), three.data_ptr(), static_cast<size_t>(one.nbytes())), 0)
        << "dim set " << set;
  }
  // Other widths move the same bytes: bool (1 byte) and c128 (16 bytes).
  Tensor b = gt(t, zeros({}, {DType::F64}));
  auto bv = roll(b, {3, -1}, {1, 3}).to(DType::F64).to_vector<double>();
  auto fv = roll(t, {3, -1}, {1, 3}).to_vector<double>();
  for (size_t i = 0; i < fv.size(); ++i) ASSERT_EQ(bv[i], fv[i] > 0.0 ? 1.0 : 0.0) << i;
  Tensor c = test::random_complex(shape, 22);
  test::expect_close(roll(c, {3, -1}, {1, 3}).real(),
                     roll(c.real().contiguous(), {3, -1}, {1, 3}).to_vector<double>(), 0.0);
  test::expect_close(roll(c, {3, -1}, {1, 3}).imag(),
                     roll(c.imag().contiguous(), {3, -1}, {1, 3}).to_vector<double>(), 0.0);
}

TEST(Flip, AgainstLoops) {
  Tensor t = test::random_tensor({2, 3, 4}, DType::F64, -1, 1, 7);
  auto tv = t.to_vector<double>();
  Tensor out = flip(t, {0, -1});
  std::vector<double> want;
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 3; ++j) {
      for (int k = 0; k < 4; ++k) want.push_back(tv[((1 - i) * 3 + j) * 4 + (3 - k)]);
    }
  }
  test::expect_close(out, want, 0.0);
  test::expect_close(flip(flip(t.transpose(0, 2), {1}), {1}),
                     t.transpose(0, 2).contiguous().to_vector<double>(), 0.0);
  test::expect_close(flip(t, {}), tv, 0.0);
}

TEST(Roll, PureBackwardMatchesAutograd) {
  Tensor x = test::random_tensor({3, 4, 5}, DType::F64, -1, 1, 157);
  Tensor g = test::random_tensor({3, 4, 5}, DType::F64, -1, 1, 158);
  const std::vector<int64_t> shifts = {2, -7, 1}, dims = {0, 2, 0};
  test::expect_same(
      roll_backward(g, shifts, dims),
      test::autograd_grad([&](const Tensor& t) { return roll(t, shifts, dims); }, x, g), 0);
  // The adjoint of a permutation is its inverse: rolling the result back gives g.
  test::expect_same(roll(roll_backward(g, shifts, dims), shifts, dims), g, 0);
  test::expect_same(flip_backward(g, {0, -1}),
                    test::autograd_grad(
                        [](const Tensor& t) {
                          return flip(t, {0, -1});
                        },
                        x, g),
                    0);
}

}  // namespace
}  // namespace fk
