#include "fk/ops/join.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "../test_util.h"

namespace fk {
namespace {

using Fn = testing::TensorFn;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

Tensor vec(const std::vector<double>& v, const Dims& shape) {
  return from_vector(v, shape);
}

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

TEST(Pad, OneDimHandComputed) {
  Tensor x = vec({1, 2, 3, 4}, {4});
  test::expect_close(pad(x, {2, 1}, PadMode::Constant, 9), {9, 9, 1, 2, 3, 4, 9}, 0.0);
  test::expect_close(pad(x, {2, 1}, PadMode::Reflect), {3, 2, 1, 2, 3, 4, 3}, 0.0);
  test::expect_close(pad(x, {2, 1}, PadMode::Replicate), {1, 1, 1, 2, 3, 4, 4}, 0.0);
  test::expect_close(pad(x, {2, 1}, PadMode::Circular), {3, 4, 1, 2, 3, 4, 1}, 0.0);
  test::expect_close(pad(x, {4, 0}, PadMode::Circular), {1, 2, 3, 4, 1, 2, 3, 4}, 0.0);
  // Negative constant pads crop.
  test::expect_close(pad(x, {-1, 1}), {2, 3, 4, 0}, 0.0);
  test::expect_close(pad(x, {-1, -2}), {2}, 0.0);
  EXPECT_EQ(pad(x, {-2, -2}).shape(), (Dims{0}));
}

TEST(Pad, TwoDimHandComputed) {
  Tensor x = vec({1, 2, 3, 4}, {2, 2});
  // Last dim: 1 before; first dim: 1 after.
  std::vector<int64_t> p = {1, 0, 0, 1};
  test::expect_close(pad(x, p), {0, 1, 2, 0, 3, 4, 0, 0, 0}, 0.0);
  test::expect_close(pad(x, p, PadMode::Reflect), {2, 1, 2, 4, 3, 4, 2, 1, 2}, 0.0);
  test::expect_close(pad(x, p, PadMode::Replicate), {1, 1, 2, 3, 3, 4, 3, 3, 4}, 0.0);
  test::expect_close(pad(x, p, PadMode::Circular), {2, 1, 2, 4, 3, 4, 2, 1, 2}, 0.0);
  Tensor xt = x.t();  // [[1, 3], [2, 4]], strided
  test::expect_close(pad(xt, {0, 1}, PadMode::Replicate), {1, 3, 3, 2, 4, 4}, 0.0);
}

// Generic reference: out[i, j, k] = x[map(i), map(j), map(k)] per mode.
int64_t ref_map(int64_t i, int64_t n, int64_t l, PadMode m) {
  int64_t s = i - l;
  switch (m) {
    case PadMode::Reflect:
      return s < 0 ? -s : (s >= n ? 2 * n - 2 - s : s);
    case PadMode::Replicate:
      return s < 0 ? 0 : (s >= n ? n - 1 : s);
    case PadMode::Circular:
      return (s + n) % n;
    default:
      return (s >= 0 && s < n) ? s : -1;
  }
}

TEST(Pad, ThreeDimAgainstLoops) {
  Tensor x = test::random_tensor({2, 3, 4}, DType::F32, -1, 1, 4);
  auto xv = x.to_vector<double>();
  for (PadMode m : {PadMode::Constant, PadMode::Reflect, PadMode::Replicate, PadMode::Circular}) {
    std::vector<int64_t> p = {3, 1, 2, 0, 0, 1};  // last dim (3, 1), middle (2, 0), first (0, 1)
    Tensor out = pad(x, p, m, -2.0);
    ASSERT_EQ(out.shape(), (Dims{3, 5, 8})) << name(m);
    EXPECT_EQ(out.dtype(), DType::F32);
    std::vector<double> want;
    for (int64_t i = 0; i < 3; ++i) {
      for (int64_t j = 0; j < 5; ++j) {
        for (int64_t k = 0; k < 8; ++k) {
          int64_t a = ref_map(i, 2, 0, m), b = ref_map(j, 3, 2, m), c = ref_map(k, 4, 3, m);
          want.push_back(a < 0 || b < 0 || c < 0 ? -2.0 : xv[(a * 3 + b) * 4 + c]);
        }
      }
    }
    test::expect_close(out, want, 0.0);
  }
}

TEST(Pad, BackwardAccumulatesIntoSources) {
  Tensor x = vec({1, 2, 3, 4}, {4}).set_requires_grad(true);
  pad(x, {2, 1}, PadMode::Reflect).backward(ones({7}, {DType::F64}));
  test::expect_close(x.grad(), {1, 2, 3, 1}, 0.0);  // sources 2,1,0,1,2,3,2
  Tensor y = vec({1, 2, 3, 4}, {4}).set_requires_grad(true);
  pad(y, {2, 1}, PadMode::Replicate).backward(vec({1, 2, 3, 4, 5, 6, 7}, {7}));
  test::expect_close(y.grad(), {6, 4, 5, 13}, 0.0);
  Tensor z = vec({1, 2, 3, 4}, {4}).set_requires_grad(true);
  pad(z, {2, 1}, PadMode::Circular).backward(vec({1, 2, 3, 4, 5, 6, 7}, {7}));
  test::expect_close(z.grad(), {3 + 7, 4, 5 + 1, 6 + 2}, 0.0);
  Tensor w = vec({1, 2, 3, 4}, {4}).set_requires_grad(true);
  pad(w, {-1, 2}, PadMode::Constant, 5.0).backward(vec({1, 2, 3, 4, 5}, {5}));
  test::expect_close(w.grad(), {0, 1, 2, 3}, 0.0);
}

TEST(Pad, GradcheckEachMode) {
  Tensor x = test::random_tensor({3, 4}, DType::F64, -1, 1, 5).set_requires_grad(true);
  for (PadMode m : {PadMode::Constant, PadMode::Reflect, PadMode::Replicate, PadMode::Circular}) {
    Fn f = [m](const std::vector<Tensor>& in) { return pad(in[0].t(), {2, 1, 1, 2}, m, 0.5); };
    EXPECT_GRADCHECK(f, (std::vector<Tensor>{x})) << name(m);
    Fn g = [m](const std::vector<Tensor>& in) { return pad(in[0], {1, 2}, m); };
    EXPECT_GRADCHECK(g, (std::vector<Tensor>{x})) << name(m);
  }
  Fn crop = [](const std::vector<Tensor>& in) { return pad(in[0], {-1, 2, 1, -2}); };
  EXPECT_GRADCHECK(crop, (std::vector<Tensor>{x}));
  Tensor z = test::random_complex({5}).set_requires_grad(true);
  Fn c = [](const std::vector<Tensor>& in) { return pad(in[0], {3, 2}, PadMode::Reflect); };
  EXPECT_GRADCHECK(c, (std::vector<Tensor>{z}));
}

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
  const int saved = get_num_threads();
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
    set_num_threads(1);
    Tensor one = roll(t, sh, dims);
    set_num_threads(3);
    Tensor three = roll(t, sh, dims);
    set_num_threads(saved);
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
