#include "fk/ops/join/cat.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "../../test_util.h"
#include "../backward_check.h"
#include "helpers.h"

namespace fk {
namespace {

using namespace join_test;
using Fn = testing::TensorFn;

TEST(Cat, ValuesAgainstLoops) {
  Tensor a = test::random_tensor({2, 3, 4}, DType::F64, -1, 1, 1);
  Tensor b = test::random_tensor({2, 1, 4}, DType::F64, -1, 1, 2);
  Tensor c = test::random_tensor({4, 2, 2}, DType::F64, -1, 1, 3)
                 .permute({1, 2, 0});  // [2, 2, 4], strided
  Tensor e = zeros({2, 0, 4}, {DType::F64});
  Tensor out = cat({a, e, b, c}, 1);
  ASSERT_EQ(out.shape(), (Dims{2, 6, 4}));
  auto av = a.to_vector<double>(), bv = b.to_vector<double>();
  auto cv = c.contiguous().to_vector<double>();
  std::vector<double> want;
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 6; ++j) {
      for (int k = 0; k < 4; ++k) {
        if (j < 3)
          want.push_back(av[(i * 3 + j) * 4 + k]);
        else if (j < 4)
          want.push_back(bv[i * 4 + k]);
        else
          want.push_back(cv[(i * 2 + j - 4) * 4 + k]);
      }
    }
  }
  test::expect_close(out, want, 0.0);
  // Along the last dim (-1) and the first.
  Tensor o2 = cat({a, a.narrow(2, 1, 2)}, -1);
  ASSERT_EQ(o2.shape(), (Dims{2, 3, 6}));
  EXPECT_DOUBLE_EQ(o2.to_vector<double>()[5], av[2]);
  Tensor o3 = cat({a, a}, 0);
  want = av;
  want.insert(want.end(), av.begin(), av.end());
  test::expect_close(o3, want, 0.0);
}

TEST(Cat, ContiguousInputsAreCopiedAsRows) {
  Tensor a = test::random_tensor({4, 3}, DType::F64, -1, 1, 10);
  Tensor b = test::random_tensor({4, 5}, DType::F64, -1, 1, 11);
  const int64_t ops = profile::counters().ops;
  Tensor out = cat({a, b}, 1);
  EXPECT_EQ(profile::counters().ops - ops, 1);  // no elementwise copy_ behind it
  auto av = a.to_vector<double>(), bv = b.to_vector<double>(), ov = out.to_vector<double>();
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 8; ++j) {
      EXPECT_EQ(ov[i * 8 + j], j < 3 ? av[i * 3 + j] : bv[i * 5 + j - 3]);
    }
  }
}

// Rows at every relative alignment (views starting 0..3 elements into a
// buffer) of every kind copy_rows tells apart: the fixed sizes 4..64 bytes,
// odd byte lengths (f16) and long rows; many rows, so the output is copied in
// several tiles. Against a plain loop.
TEST(Cat, ShortLongAndOddRowsAtAnyOffset) {
  for (DType dt : {DType::F32, DType::F16}) {
    for (int64_t off : {0, 1, 2, 3}) {
      for (int64_t la : {1, 2, 4, 7, 8, 15, 16, 17, 32, 63, 70, 1500}) {
        const int64_t lb = la % 2 == 0 ? la : la + 1, rows = la <= 70 ? 300 : 3;
        const int64_t width = la + lb;
        Tensor base_a = test::random_tensor({rows * la + 4}, DType::F64, -100, 100, 5).to(dt);
        Tensor base_b = test::random_tensor({rows * lb + 4}, DType::F64, -100, 100, 6).to(dt);
        Tensor a = base_a.narrow(0, off, rows * la).reshape({rows, la});
        Tensor b = base_b.narrow(0, 3 - off, rows * lb).reshape({rows, lb});
        ASSERT_TRUE(a.is_contiguous() && b.is_contiguous());
        Tensor out = cat({a, b}, 1);
        auto av = a.to_vector<double>(), bv = b.to_vector<double>(), ov = out.to_vector<double>();
        ASSERT_EQ(out.shape(), (Dims{rows, width}));
        for (int64_t i = 0; i < rows; ++i) {
          for (int64_t j = 0; j < width; ++j) {
            double want = j < la ? av[static_cast<size_t>(i * la + j)]
                                 : bv[static_cast<size_t>(i * lb + j - la)];
            ASSERT_EQ(ov[static_cast<size_t>(i * width + j)], want)
                << name(dt) << " off " << off << " len " << la << " at " << i << "," << j;
          }
        }
      }
    }
  }
}

TEST(Cat, PromotesDtypes) {
  Tensor a = from_vector(std::vector<int32_t>{1, 2});
  Tensor b = from_vector(std::vector<float>{0.5f});
  Tensor c = from_vector(std::vector<double>{3.25});
  Tensor ab = cat({a, b});
  EXPECT_EQ(ab.dtype(), DType::F32);
  test::expect_close(ab, {1, 2, 0.5}, 0.0);
  Tensor abc = cat({a, b, c});
  EXPECT_EQ(abc.dtype(), DType::F64);
  test::expect_close(abc, {1, 2, 0.5, 3.25}, 0.0);
  EXPECT_EQ(cat({a, test::random_complex({1})}).dtype(), DType::C128);
}

TEST(Stack, ValuesAndDims) {
  Tensor a = vec({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = vec({7, 8, 9, 10, 11, 12}, {2, 3});
  Tensor s0 = stack({a, b});
  EXPECT_EQ(s0.shape(), (Dims{2, 2, 3}));
  test::expect_close(s0, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, 0.0);
  Tensor bt = b.t().contiguous().t();  // b's values, transposed strides
  ASSERT_FALSE(bt.is_contiguous());
  Tensor s2 = stack({a, bt}, -1);
  EXPECT_EQ(s2.shape(), (Dims{2, 3, 2}));
  test::expect_close(s2, {1, 7, 2, 8, 3, 9, 4, 10, 5, 11, 6, 12}, 0.0);
  Tensor s1 = stack({a, b}, 1);
  test::expect_close(s1, {1, 2, 3, 7, 8, 9, 4, 5, 6, 10, 11, 12}, 0.0);
}

TEST(Split, ViewsAndSizes) {
  Tensor t = test::random_tensor({7, 2});
  auto parts = split(t, 3);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0].shape(), (Dims{3, 2}));
  EXPECT_EQ(parts[2].shape(), (Dims{1, 2}));
  EXPECT_EQ(parts[1].storage(), t.storage());  // a view
  auto tv = t.to_vector<double>();
  EXPECT_DOUBLE_EQ(parts[2].to_vector<double>()[1], tv[13]);
  auto p2 = split(t, std::vector<int64_t>{1, 1}, -1);
  ASSERT_EQ(p2.size(), 2u);
  EXPECT_DOUBLE_EQ(p2[1].to_vector<double>()[3], tv[7]);
  test::expect_close(cat(split(t, 2), 0), tv, 0.0);
  EXPECT_THROW(split(t, std::vector<int64_t>{3, 3}, 0), Error);
  EXPECT_THROW(split(t, 0), Error);
}

TEST(Cat, PureBackwardMatchesAutograd) {
  Tensor a = test::random_tensor({2, 3}, DType::F64, -1, 1, 151);
  Tensor b = test::random_tensor({2, 1}, DType::F32, -1, 1, 152);
  Tensor c = test::random_tensor({2, 4}, DType::F64, -1, 1, 153);
  Tensor g = test::random_tensor({2, 8}, DType::F64, -1, 1, 154);
  std::vector<Tensor> got = cat_backward(g, -1, {3, 1, 4}, {a.dtype(), b.dtype(), c.dtype()});
  ASSERT_EQ(got.size(), 3u);
  test::expect_same(got[0],
                    test::autograd_grad(
                        [&](const Tensor& t) {
                          return cat({t, b, c}, 1);
                        },
                        a, g),
                    0);
  test::expect_same(got[1],
                    test::autograd_grad(
                        [&](const Tensor& t) {
                          return cat({a, t, c}, 1);
                        },
                        b, g),
                    0);
  EXPECT_EQ(got[1].dtype(), DType::F32);
  test::expect_same(got[2], g.narrow(1, 4, 4), 0);
  EXPECT_THROW(cat_backward(g, 1, {3, 5}, {a.dtype()}), Error);
}

}  // namespace
}  // namespace fk
