#include "fk/ops/index.h"

#include <cstring>
#include <string>

#include "../test_util.h"

namespace fk {
namespace {

using Fn = testing::TensorFn;

Tensor idx64(const std::vector<int64_t>& v, const Dims& shape) {
  return from_vector(v, shape);
}
Tensor idx32(const std::vector<int32_t>& v, const Dims& shape) {
  return from_vector(v, shape);
}

// Row-major flat offset of a 3-D coordinate.
int64_t at3(const Dims& s, int64_t i, int64_t j, int64_t k) {
  return (i * s[1] + j) * s[2] + k;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

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
}

TEST(Masked, FillAndSelectValues) {
  Tensor t = test::random_tensor({2, 3}, DType::F64, -1, 1, 7);
  auto tv = t.to_vector<double>();
  Tensor mask = from_vector(std::vector<bool>{true, false, true}, {3});  // broadcast over rows
  Tensor f = masked_fill(t, mask, 9.5);
  test::expect_close(f, {9.5, tv[1], 9.5, 9.5, tv[4], 9.5}, 0.0);
  Tensor s = masked_select(t, mask);
  test::expect_close(s, {tv[0], tv[2], tv[3], tv[5]}, 0.0);
  // Full-shape mask on a transposed input: row-major order of the view.
  Tensor tt = t.t();  // [3, 2]
  Tensor m2 = from_vector(std::vector<bool>{false, true, true, true, false, false}, {3, 2});
  test::expect_close(masked_select(tt, m2), {tv[3], tv[1], tv[4]}, 0.0);
  // A mask that broadcasts the input (t [3] against mask [2, 3]).
  Tensor v = from_vector(std::vector<double>{1, 2, 3});
  Tensor m3 = from_vector(std::vector<bool>{true, false, true, false, true, true}, {2, 3});
  test::expect_close(masked_select(v, m3), {1, 3, 2, 3}, 0.0);
  EXPECT_EQ(masked_select(v, from_vector(std::vector<bool>{false, false, false})).shape(),
            (Dims{0}));
  Tensor b = from_vector(std::vector<int32_t>{1, 2, 3});
  EXPECT_EQ(masked_fill(b, mask, -4).to_vector<int64_t>(), (std::vector<int64_t>{-4, 2, -4}));
}

TEST(Index, InPlaceForms) {
  Tensor self = zeros({2, 3}, {DType::F64});
  uint32_t v0 = self.version();
  index_add_(self, 1, idx64({2, 2, 0}, {3}), ones({2, 3}, {DType::F64}), 2.0);
  test::expect_close(self, {2, 0, 4, 2, 0, 4}, 0.0);
  EXPECT_GT(self.version(), v0);
  scatter_add_(self, 0, idx64({1, 1, 1}, {1, 3}),
               from_vector(std::vector<double>{1, 2, 3}, {1, 3}));
  test::expect_close(self, {2, 0, 4, 3, 2, 7}, 0.0);
  masked_fill_(self, from_vector(std::vector<bool>{true, false}, {2, 1}), -1.0);
  test::expect_close(self, {-1, -1, -1, 3, 2, 7}, 0.0);
  // Non-contiguous targets are written through their view.
  Tensor base = zeros({3, 2}, {DType::F64});
  Tensor view = base.t();  // [2, 3]
  index_add_(view, 1, idx64({0, 2}, {2}), ones({2, 2}, {DType::F64}));
  scatter_add_(view, 1, idx64({1, 1}, {2, 1}), full({2, 1}, 5.0, {DType::F64}));
  test::expect_close(base, {1, 1, 5, 5, 1, 1}, 0.0);
  // f16 targets accumulate in f32.
  Tensor h = zeros({2}, {DType::F16});
  index_add_(h, 0, idx64({1, 1}, {2}), full({2}, 0.25, {DType::F32}));
  EXPECT_EQ(h.dtype(), DType::F16);
  test::expect_close(h, {0, 0.5}, 0.0);
  // Refused on tracked tensors and for sources that cannot cast to self.
  Tensor g = zeros({3}, {DType::F64, kCPU, true});
  EXPECT_THROW(masked_fill_(g, from_vector(std::vector<bool>{true, true, true}), 1.0), Error);
  EXPECT_THROW(index_add_(g, 0, idx64({0}, {1}), ones({1}, {DType::F64})), Error);
  // A source needing grad is refused too (its gradient would be dropped), but
  // not under no_grad.
  Tensor plain = zeros({3}, {DType::F64});
  Tensor src = ones({1}, {DType::F64, kCPU, true});
  for (int op = 0; op < 2; ++op) {
    try {
      if (op == 0) index_add_(plain, 0, idx64({1}, {1}), src);
      if (op == 1) scatter_add_(plain, 0, idx64({1}, {1}), src);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("in-place ops are not recorded by autograd"),
                std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find("source requiring grad"), std::string::npos) << e.what();
    }
  }
  test::expect_close(plain, {0, 0, 0}, 0.0);
  {
    autograd::NoGradGuard ng;
    index_add_(plain, 0, idx64({1}, {1}), src, 2.0);
    scatter_add_(plain, 0, idx64({2}, {1}), src);
    masked_fill_(g, from_vector(std::vector<bool>{true, false, false}), 4.0);
  }
  test::expect_close(plain, {0, 2, 1}, 0.0);
  test::expect_close(g, {4, 0, 0}, 0.0);
  Tensor f = zeros({3}, {DType::F32});
  EXPECT_THROW(index_add_(f, 0, idx64({0}, {1}), test::random_complex({1})), Error);
}

TEST(Index, GradcheckAll) {
  Tensor t = test::random_tensor({4, 3}, DType::F64, -1, 1, 8).set_requires_grad(true);
  Tensor u = test::random_tensor({3, 5}, DType::F64, -1, 1, 9).set_requires_grad(true);
  Tensor i1 = idx64({2, 0, 2, 3, 3}, {5});
  Tensor i2 = idx32({1, 1, 0, 2, 0, 0, 2, 2, 1, 1, 1, 1, 0, 1, 2}, {3, 5});
  Tensor mask = from_vector(std::vector<bool>{true, false, false, true, true, false, false, true,
                                              false, true, false, true},
                            {4, 3});
  std::vector<Tensor> in = {t, u};
  // index_select on a transposed input, both dims.
  Fn f1 = [&](const std::vector<Tensor>& x) { return index_select(x[1].t(), 0, i1); };
  EXPECT_GRADCHECK(f1, in);
  Fn f2 = [&](const std::vector<Tensor>& x) { return index_select(x[0], 1, idx64({2, 2}, {2})); };
  EXPECT_GRADCHECK(f2, in);
  // gather on a transposed input ([5, 3]) along dim 0, and with broadcasting.
  Fn f3 = [&](const std::vector<Tensor>& x) { return gather(x[1].t(), 1, i2.t()); };
  EXPECT_GRADCHECK(f3, in);
  Fn f4 = [&](const std::vector<Tensor>& x) {
    return gather(x[1].narrow(0, 1, 1), 1, i2);  // [1, 5] broadcast to [3, 5]
  };
  EXPECT_GRADCHECK(f4, in);
  // scatter_add: both operands, a non-contiguous source and a broadcast one.
  Fn f5 = [&](const std::vector<Tensor>& x) { return scatter_add(x[0].t(), 1, i2, x[1]); };
  EXPECT_GRADCHECK(f5, in);
  Fn f6 = [&](const std::vector<Tensor>& x) {
    return scatter_add(x[1], 0, idx64({2, 0, 0, 1, 2}, {1, 5}),
                       x[0].narrow(0, 0, 1).narrow(1, 0, 1));
  };
  EXPECT_GRADCHECK(f6, in);
  // index_add with alpha, source with transposed strides (same values).
  auto transposed_source = [](const Tensor& t0) { return t0.narrow(0, 0, 3).t().contiguous().t(); };
  ASSERT_FALSE(transposed_source(t).is_contiguous());
  Fn f7 = [&](const std::vector<Tensor>& x) {
    return index_add(x[1], 1, idx64({4, 0, 4}, {3}), transposed_source(x[0]), 1.5);
  };
  EXPECT_GRADCHECK(f7, in);
  Fn f8 = [&](const std::vector<Tensor>& x) {
    return index_add(x[0].t(), 1, idx64({1, 1, 3, 0, 2}, {5}), x[1]);
  };
  EXPECT_GRADCHECK(f8, in);
  // Masks: full-shape, broadcast, and on a transposed input.
  Fn f9 = [&](const std::vector<Tensor>& x) { return masked_fill(x[0], mask, 3.0); };
  EXPECT_GRADCHECK(f9, in);
  Fn f10 = [&](const std::vector<Tensor>& x) { return masked_select(x[0].t(), mask.t()); };
  EXPECT_GRADCHECK(f10, in);
  Fn f11 = [&](const std::vector<Tensor>& x) {
    return masked_select(x[0].narrow(0, 0, 1), mask);  // [1, 3] broadcast to [4, 3]
  };
  EXPECT_GRADCHECK(f11, in);
}

TEST(Index, ComplexGradcheck) {
  Tensor z = test::random_complex({4, 3}).set_requires_grad(true);
  Tensor r = test::random_tensor({2, 3}, DType::F64, -1, 1, 12).set_requires_grad(true);
  Tensor i = idx64({3, 3}, {2});
  Fn f = [&](const std::vector<Tensor>& x) { return index_add(x[0], 0, i, x[1], 0.5); };
  EXPECT_GRADCHECK(f, (std::vector<Tensor>{z, r}));
  Fn g = [&](const std::vector<Tensor>& x) {
    return gather(x[0], 0, idx64({0, 3, 1, 1, 2, 0}, {2, 3}));
  };
  EXPECT_GRADCHECK(g, (std::vector<Tensor>{z}));
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
  const int saved = get_num_threads();
  for (int threads : {1, 2, 3, 4}) {
    set_num_threads(threads);
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
  set_num_threads(saved);
}

TEST(Index, Errors) {
  Tensor t = zeros({3, 5}, {DType::F64});
  std::string msg = error_of([&] { index_select(t, 1, idx64({1, 7}, {2})); });
  EXPECT_NE(msg.find("index 7"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[0, 5)"), std::string::npos) << msg;
  msg = error_of([&] { gather(t, 0, idx64({-1}, {1, 1})); });
  EXPECT_NE(msg.find("index -1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[0, 3)"), std::string::npos) << msg;
  EXPECT_THROW(scatter_add(t, 1, idx64({5}, {1, 1}), ones({1, 1}, {DType::F64})), Error);
  EXPECT_THROW(index_add(t, 0, idx32({3}, {1}), ones({1, 5}, {DType::F64})), Error);
  // Index dtype.
  msg = error_of([&] { index_select(t, 0, from_vector(std::vector<double>{0})); });
  EXPECT_NE(msg.find("f64"), std::string::npos) << msg;
  EXPECT_THROW(gather(t, 0, zeros({1, 1}, {DType::Bool})), Error);
  // Ranks and shapes.
  msg = error_of([&] { gather(t, 0, idx64({0, 1}, {2})); });
  EXPECT_NE(msg.find("rank"), std::string::npos) << msg;
  EXPECT_THROW(scatter_add(t, 0, idx64({0}, {1}), ones({1}, {DType::F64})), Error);
  EXPECT_THROW(index_select(t, 0, idx64({0, 1}, {1, 2})), Error);
  EXPECT_THROW(gather(t, 0, idx64({0, 0, 0, 0}, {1, 4})), Error);  // 4 vs 5 outside dim
  EXPECT_THROW(index_add(t, 0, idx64({0}, {1}), ones({2, 5}, {DType::F64})), Error);
  EXPECT_THROW(index_select(t, 2, idx64({0}, {1})), Error);
  // Masks.
  msg = error_of([&] { masked_fill(t, ones({3, 5}, {DType::F64}), 1.0); });
  EXPECT_NE(msg.find("bool"), std::string::npos) << msg;
  EXPECT_THROW(masked_fill(t, zeros({2, 5}, {DType::Bool}), 1.0), Error);
  EXPECT_THROW(masked_fill(zeros({5}, {DType::F64}), zeros({3, 5}, {DType::Bool}), 1.0), Error);
  // A failed in-place op leaves its target untouched.
  Tensor s = ones({3}, {DType::F64});
  EXPECT_THROW(index_add_(s, 0, idx64({0, 9}, {2}), ones({2}, {DType::F64})), Error);
  test::expect_close(s, {1, 1, 1}, 0.0);
}

}  // namespace
}  // namespace fk
