#include "fk/ops/index/select.h"

#include <cstring>
#include <string>
#include <vector>

#include "../../test_util.h"
#include "../backward_check.h"
#include "helpers.h"

namespace fk {
namespace {

using namespace index_test;
using Fn = testing::TensorFn;

TEST(IndexSelect, ValuesAgainstLoops) {
  Tensor t = test::random_tensor({3, 4, 5}, DType::F64, -1, 1, 1);
  std::vector<double> tv = t.to_vector<double>();
  std::vector<int32_t> iv = {3, 0, 3, 1};
  for (int d = 0; d < 3; ++d) {
    std::vector<int32_t> ids;
    for (int32_t i : iv) ids.push_back(i % static_cast<int32_t>(t.size(d)));
    Tensor out = index_select(t, d, idx32(ids, {4}));
    Dims s = out.shape();
    ASSERT_EQ(s[d], 4);
    std::vector<double> want;
    for (int64_t i = 0; i < s[0]; ++i) {
      for (int64_t j = 0; j < s[1]; ++j) {
        for (int64_t k = 0; k < s[2]; ++k) {
          int64_t c[3] = {i, j, k};
          c[d] = ids[c[d]];
          want.push_back(tv[at3(t.shape(), c[0], c[1], c[2])]);
        }
      }
    }
    test::expect_close(out, want, 0.0);
  }
  // Non-contiguous input, i64 index, negative dim.
  Tensor tt = t.transpose(0, 2);  // [5, 4, 3]
  Tensor out = index_select(tt, -1, idx64({2, 2, 0}, {3}));
  test::expect_close(
      out, index_select(tt.contiguous(), 2, idx64({2, 2, 0}, {3})).to_vector<double>(), 0.0);
  EXPECT_EQ(out.shape(), (Dims{5, 4, 3}));
  EXPECT_DOUBLE_EQ(out.to_vector<double>()[0], tv[at3(t.shape(), 2, 0, 0)]);
}

// Long and odd-length rows from a view at every offset, f32 and f16, against a loop.
TEST(IndexSelect, LongAndOddRowsAtAnyOffset) {
  for (DType dt : {DType::F32, DType::F16}) {
    for (int64_t off : {0, 1, 3}) {
      for (int64_t len : {2, 9, 33, 70, 1500}) {
        Tensor base = test::random_tensor({5 * len + 3}, DType::F64, -100, 100, 9).to(dt);
        Tensor t = base.narrow(0, off, 5 * len).reshape({5, len});
        const std::vector<int64_t> ids = {4, 0, 4, 2, 1, 3};
        Tensor out = index_select(t, 0, idx64(ids, {6}));
        auto tv = t.to_vector<double>(), ov = out.to_vector<double>();
        ASSERT_EQ(out.shape(), (Dims{6, len}));
        for (size_t r = 0; r < ids.size(); ++r) {
          for (int64_t j = 0; j < len; ++j) {
            ASSERT_EQ(ov[r * static_cast<size_t>(len) + static_cast<size_t>(j)],
                      tv[static_cast<size_t>(ids[r] * len + j)])
                << name(dt) << " off " << off << " len " << len << " row " << r;
          }
        }
      }
    }
  }
}

TEST(IndexSelect, MovesAnyDtype) {
  Tensor c = test::random_complex({4, 2});
  Tensor out = index_select(c, 0, idx64({3, 1}, {2}));
  auto cv = c.to_vector<c128>(), ov = out.to_vector<c128>();
  EXPECT_EQ(ov[0], cv[6]);
  EXPECT_EQ(ov[3], cv[3]);
  Tensor h = from_vector(std::vector<double>{1, 2, 3}).to(DType::F16);
  EXPECT_EQ(index_select(h, 0, idx64({2, 0}, {2})).to_vector<double>(),
            (std::vector<double>{3, 1}));
}

TEST(Gather, TakeAlongAxisValues) {
  Tensor t = test::random_tensor({3, 4}, DType::F64, -1, 1, 2);
  auto tv = t.to_vector<double>();
  std::vector<int64_t> iv = {3, 0, 1, 1, 2, 3};
  Tensor out = gather(t, 1, idx64(iv, {3, 2}));
  std::vector<double> want;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 2; ++j) want.push_back(tv[i * 4 + iv[i * 2 + j]]);
  }
  test::expect_close(out, want, 0.0);
  // Along dim 0 on a transposed input.
  Tensor tt = t.t();  // [4, 3]: tt[i][j] = t[j][i]
  std::vector<int64_t> jv = {2, 0, 1, 0, 0, 2};
  Tensor o2 = gather(tt, 0, idx64(jv, {2, 3}));
  want.clear();
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 3; ++j) want.push_back(tv[j * 4 + jv[i * 3 + j]]);
  }
  test::expect_close(o2, want, 0.0);
  // Broadcasting: t [1, 4] against index [3, 2], and t [3, 4] against index [1, 2].
  Tensor row = t.narrow(0, 1, 1);
  Tensor o3 = gather(row, 1, idx64(iv, {3, 2}));
  EXPECT_EQ(o3.shape(), (Dims{3, 2}));
  want.clear();
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 2; ++j) want.push_back(tv[4 + iv[i * 2 + j]]);
  }
  test::expect_close(o3, want, 0.0);
  Tensor o4 = gather(t, 1, idx32({2, 0}, {1, 2}));
  EXPECT_EQ(o4.shape(), (Dims{3, 2}));
  test::expect_close(o4, {tv[2], tv[0], tv[6], tv[4], tv[10], tv[8]}, 0.0);
}

TEST(IndexSelect, PureBackwardMatchesAutograd) {
  Tensor t = test::random_tensor({4, 3}, DType::F64, -1, 1, 131);
  Tensor index = idx64({2, 0, 2, 3, 2}, {5});
  Tensor g = test::random_tensor({5, 3}, DType::F64, -1, 1, 132);
  Tensor got = index_select_backward(g, t.shape(), 0, index);
  test::expect_same(
      got, test::autograd_grad([&](const Tensor& x) { return index_select(x, 0, index); }, t, g),
      0);
  // Row 2 was selected three times: its gradient is the sum of those rows.
  test::expect_same(got.select(0, 2), add(add(g.select(0, 0), g.select(0, 2)), g.select(0, 4)),
                    1e-15);
  test::expect_close(got.select(0, 1), {0, 0, 0}, 0);
}

TEST(Gather, PureBackwardMatchesAutograd) {
  Tensor t = test::random_tensor({3, 4}, DType::F64, -1, 1, 133);
  Tensor index = idx64({0, 3, 3, 1, 2, 2, 0, 0, 1}, {3, 3});
  Tensor g = test::random_tensor({3, 3}, DType::F64, -1, 1, 134);
  test::expect_same(gather_backward(g, t.shape(), 1, index),
                    test::autograd_grad([&](const Tensor& x) { return gather(x, 1, index); }, t, g),
                    0);
  // t broadcast along dim 0 (size 1 against the index's 3): summed back.
  Tensor row = test::random_tensor({1, 4}, DType::F64, -1, 1, 135);
  test::expect_same(
      gather_backward(g, row.shape(), 1, index),
      test::autograd_grad([&](const Tensor& x) { return gather(x, 1, index); }, row, g), 1e-15);
}

}  // namespace
}  // namespace fk
