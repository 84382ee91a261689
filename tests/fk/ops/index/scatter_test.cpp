#include "fk/ops/index/scatter.h"

#include <cstring>
#include <string>
#include <vector>

#include "../../test_util.h"
#include "../backward_check.h"
#include "fk/ops/index/mask.h"
#include "fk/thread_count.h"
#include "helpers.h"

namespace fk {
namespace {

using namespace index_test;
using Fn = testing::TensorFn;

TEST(ScatterAdd, ValuesWithDuplicates) {
  Tensor self = test::random_tensor({3, 4}, DType::F64, -1, 1, 3);
  Tensor src = test::random_tensor({3, 5}, DType::F64, -1, 1, 4);
  std::vector<int64_t> iv = {0, 0, 3, 1, 0, 2, 2, 2, 2, 2, 1, 3, 3, 0, 1};
  Tensor out = scatter_add(self, 1, idx64(iv, {3, 5}), src);
  auto want = self.to_vector<double>();
  auto sv = src.to_vector<double>();
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 5; ++j) want[i * 4 + iv[i * 5 + j]] += sv[i * 5 + j];
  }
  test::expect_close(out, want, 1e-15);
  // dim 0 with a broadcast source (a scalar added per index entry).
  Tensor o2 = scatter_add(zeros({3, 2}, {DType::F64}), 0, idx64({0, 2, 0, 2, 0, 0}, {3, 2}),
                          ones({1}, {DType::F64}));
  test::expect_close(o2, {3, 1, 0, 0, 0, 2}, 0.0);
  // Promotion: f32 self with an f64 source gives f64.
  EXPECT_EQ(scatter_add(self.to(DType::F32), 1, idx64(iv, {3, 5}), src).dtype(), DType::F64);
}

// A source sharing self's memory is read as it was before the adds (they
// read values they had already changed: [0, 1, 3, 6, 4, 5], [12, 11]).
TEST(ScatterAdd, ASourceAliasingSelfIsReadBeforeTheAdds) {
  Tensor y = from_vector(std::vector<double>{0, 1, 2, 3, 4, 5});
  Tensor dst = slice(y, 0, 1, 4);
  scatter_add_(dst, 0, from_vector(std::vector<int64_t>{0, 1, 2}), slice(y, 0, 0, 3));
  EXPECT_EQ(y.to_vector<double>(), (std::vector<double>{0, 1, 3, 5, 4, 5}));
  Tensor x = from_vector(std::vector<double>{1, 10});
  index_add_(x, 0, from_vector(std::vector<int64_t>{1, 0}), x);
  EXPECT_EQ(x.to_vector<double>(), (std::vector<double>{11, 11}));
}

// An index sharing self's memory (an i64 self) is read as it was before the
// adds: read live it pointed outside the range checked (base[5] written
// through a 3-element view; a large one segfaulted). The same for a mask.
TEST(ScatterAdd, AnIndexAliasingSelfIsReadBeforeTheAdds) {
  for (bool scatter : {true, false}) {
    Tensor base = zeros({10}, {DType::I64});
    base.data<int64_t>()[0] = 1;  // x = [1, 0, 0]
    Tensor x = slice(base, 0, 0, 3);
    const Tensor src = from_vector(std::vector<int64_t>{5, 1000000000, 1});
    if (scatter)
      scatter_add_(x, 0, x, src);
    else
      index_add_(x, 0, x, src);
    // index [1, 0, 0]: x[1] += 5, x[0] += 1e9 + 1
    EXPECT_EQ(base.to_vector<int64_t>(),
              (std::vector<int64_t>{1000000002, 5, 0, 0, 0, 0, 0, 0, 0, 0}))
        << scatter;
  }
  Tensor m = from_vector(std::vector<bool>{true, false, false, false});
  Tensor tail = slice(m, 0, 1, 4);
  masked_fill_(tail, slice(m, 0, 0, 3), 1.0);  // the mask as it was: [T, F, F]
  EXPECT_EQ(m.to_vector<bool>(), (std::vector<bool>{true, true, false, false}));
}

// An expanded self shares one element among several indices: the in-place
// index ops refuse it before writing (scatter_add_ summed every batch into
// the one row; masked_fill_ wrote through it), as copy_ does.
TEST(ScatterAdd, AnExpandedSelfIsRefused) {
  Tensor base = zeros({1, 3}, {DType::F64});
  Tensor ex = base.expand({4, 3});
  const Tensor idx = zeros({4, 1}, {DType::I64});
  const std::string e = test::error_of([&] {
    scatter_add_(ex, 1, idx, ones({4, 1}, {DType::F64}));
  });
  EXPECT_NE(e.find("elements are distinct in memory"), std::string::npos) << e;
  EXPECT_NE(test::error_of([&] {
              index_add_(ex, 1, idx.reshape({4}).narrow(0, 0, 1), ones({4, 1}, {DType::F64}));
            }).find("index_add_"),
            std::string::npos);
  EXPECT_THROW(masked_fill_(ex, gt(ex, scalar_tensor(-1.0)), 2.0), Error);
  EXPECT_EQ(base.to_vector<double>(), std::vector<double>(3, 0.0));
}

TEST(IndexAdd, ValuesWithDuplicatesAndAlpha) {
  Tensor self = test::random_tensor({4, 3, 2}, DType::F64, -1, 1, 5);
  Tensor src = test::random_tensor({4, 5, 2}, DType::F64, -1, 1, 6);
  std::vector<int64_t> iv = {2, 0, 2, 2, 1};
  Tensor out = index_add(self, 1, idx64(iv, {5}), src, -0.5);
  auto want = self.to_vector<double>();
  auto sv = src.to_vector<double>();
  for (int i = 0; i < 4; ++i) {
    for (int k = 0; k < 5; ++k) {
      for (int c = 0; c < 2; ++c) {
        want[at3(self.shape(), i, iv[k], c)] += -0.5 * sv[at3(src.shape(), i, k, c)];
      }
    }
  }
  test::expect_close(out, want, 1e-15);
  // Integer tensors accumulate exactly; a fractional alpha is refused for them.
  Tensor ai = zeros({3}, {DType::I32});
  Tensor r = index_add(ai, 0, idx32({1, 1, 2}, {3}), from_vector(std::vector<int32_t>{4, 5, 6}));
  EXPECT_EQ(r.to_vector<int64_t>(), (std::vector<int64_t>{0, 9, 6}));
  EXPECT_THROW(index_add(ai, 0, idx32({0}, {1}), ones({1}, {DType::I32}), 0.5), Error);
  // A whole alpha past i32's range is refused as add refuses it (it was cast
  // to INT_MIN); i64 holds it.
  for (double alpha : {3e9, 4294967297.0, 1e300}) {
    EXPECT_NE(test::error_of([&] {
                index_add(ai, 0, idx32({0}, {1}), ones({1}, {DType::I32}), alpha);
              }).find("an integer alpha (in range)"),
              std::string::npos)
        << alpha;
    Tensor inplace = zeros({3}, {DType::I32});
    EXPECT_THROW(index_add_(inplace, 0, idx32({0}, {1}), ones({1}, {DType::I32}), alpha), Error);
    EXPECT_EQ(inplace.to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 0}));
  }
  EXPECT_EQ(index_add(zeros({2}, {DType::I64}), 0, idx32({0}, {1}), ones({1}, {DType::I64}), 3e9)
                .to_vector<int64_t>(),
            (std::vector<int64_t>{3000000000, 0}));
}

// Each output receives its additions in ascending order whatever the thread
// count, so the result is bit-identical to the serial loop.
TEST(Index, ScatterAddIsThreadCountDeterministic) {
  const int64_t rows = 96, n = 8, len = 3000;
  Tensor src = test::random_tensor({rows, len}, DType::F32, -1, 1, 13);
  std::vector<int64_t> iv(rows * len);
  for (size_t k = 0; k < iv.size(); ++k) iv[k] = static_cast<int64_t>((k * 2654435761u) >> 7) % n;
  Tensor index = idx64(iv, {rows, len});
  std::vector<float> want(rows * n, 0.0f);
  auto sv = src.to_vector<float>();
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < len; ++j) want[i * n + iv[i * len + j]] += sv[i * len + j];
  }
  // The same additions along dim 0 (fibers strided in memory).
  Tensor srcT = src.t().contiguous();  // [len, rows]
  // index_add over rows (one index list for every row), and over column blocks.
  std::vector<int64_t> flat(iv.begin(), iv.begin() + len);
  std::vector<float> want_rows(rows * n, 0.0f);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < len; ++j) want_rows[i * n + flat[j]] += sv[i * len + j];
  }
  const int64_t k2 = 64, width = 5000;
  Tensor src2 = test::random_tensor({k2, width}, DType::F32, -1, 1, 14);
  auto s2 = src2.to_vector<float>();
  std::vector<int64_t> rows2(iv.begin(), iv.begin() + k2);
  std::vector<float> want_cols(n * width, 0.0f);
  for (int64_t j = 0; j < k2; ++j) {
    for (int64_t c = 0; c < width; ++c) want_cols[rows2[j] * width + c] += s2[j * width + c];
  }
  auto same = [](const Tensor& t, const std::vector<float>& w) {
    auto v = t.contiguous().to_vector<float>();
    return v.size() == w.size() && std::memcmp(v.data(), w.data(), w.size() * sizeof(float)) == 0;
  };
  for (int threads : {1, 2, 3, 4}) {
    const test::ThreadCount count(threads);
    const int64_t launches = profile::counters().launches;
    Tensor out = scatter_add(zeros({rows, n}, {DType::F32}), 1, index, src);
    if (threads > 1) {
      EXPECT_GT(profile::counters().launches, launches);  // ran threaded
    }
    EXPECT_TRUE(same(out, want)) << threads;
    Tensor out0 = scatter_add(zeros({n, rows}, {DType::F32}), 0, index.t(), srcT);
    EXPECT_TRUE(same(out0.t(), want)) << threads;
    Tensor ia = index_add(zeros({rows, n}, {DType::F32}), 1, idx64(flat, {len}), src);
    EXPECT_TRUE(same(ia, want_rows)) << threads;
    Tensor ib = index_add(zeros({n, width}, {DType::F32}), 0, idx64(rows2, {k2}), src2);
    EXPECT_TRUE(same(ib, want_cols)) << threads;
  }
}

TEST(ScatterAdd, PureBackwardMatchesAutograd) {
  Tensor self = test::random_tensor({3, 4}, DType::F64, -1, 1, 136);
  Tensor src = test::random_tensor({3, 2}, DType::F64, -1, 1, 137);
  Tensor index = idx64({0, 3, 3, 3, 1, 0}, {3, 2});
  Tensor g = test::random_tensor({3, 4}, DType::F64, -1, 1, 138);
  test::expect_same(
      scatter_add_src_backward(g, 1, index, src.shape(), src.dtype()),
      test::autograd_grad([&](const Tensor& s) { return scatter_add(self, 1, index, s); }, src, g),
      0);
  test::expect_same(
      test::autograd_grad([&](const Tensor& s) { return scatter_add(s, 1, index, src); }, self, g),
      g, 0);
  // An f32 source gets an f32 gradient: gather(g) cast.
  Tensor got = scatter_add_src_backward(g, 1, index, src.shape(), DType::F32);
  EXPECT_EQ(got.dtype(), DType::F32);
  test::expect_same(got, gather(g, 1, index).to(DType::F32), 0);
}

TEST(IndexAdd, PureBackwardMatchesAutograd) {
  Tensor self = test::random_tensor({4, 3}, DType::F64, -1, 1, 139);
  Tensor src = test::random_tensor({5, 3}, DType::F64, -1, 1, 140);
  Tensor index = idx64({1, 1, 3, 0, 1}, {5});
  Tensor g = test::random_tensor({4, 3}, DType::F64, -1, 1, 141);
  test::expect_same(index_add_src_backward(g, 0, index, src.shape(), src.dtype(), 2.5),
                    test::autograd_grad(
                        [&](const Tensor& s) { return index_add(self, 0, index, s, 2.5); }, src, g),
                    0);
  // Broadcast source (one row for all five): summed over the broadcast dim.
  Tensor row = test::random_tensor({1, 3}, DType::F64, -1, 1, 142);
  test::expect_same(
      index_add_src_backward(g, 0, index, row.shape(), row.dtype()),
      test::autograd_grad([&](const Tensor& s) { return index_add(self, 0, index, s); }, row, g),
      1e-15);
}

}  // namespace
}  // namespace fk
