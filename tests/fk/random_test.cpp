#include "fk/random.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "fk/thread_count.h"
#include "test_util.h"

namespace fk {
namespace {

// Known-answer vectors of Philox4x32-10 from Random123's kat_vectors.
TEST(Philox, KnownAnswerVectors) {
  using Ctr = std::array<uint32_t, 4>;
  using Key = std::array<uint32_t, 2>;
  EXPECT_EQ(philox4x32_10(Ctr{0, 0, 0, 0}, Key{0, 0}),
            (Ctr{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}));
  EXPECT_EQ(philox4x32_10(Ctr{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
                          Key{0xffffffffu, 0xffffffffu}),
            (Ctr{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}));
  EXPECT_EQ(philox4x32_10(Ctr{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
                          Key{0xa4093822u, 0x299f31d0u}),
            (Ctr{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}));
}

std::vector<double> vals(const Tensor& t) {
  return t.to_vector<double>();
}

TEST(Random, ElementsDependOnlyOnSeedOffsetAndIndex) {
  const uint64_t seed = 0x123456789abcdefull;
  Generator g(seed);
  Tensor r = rand({10}, {}, &g);
  EXPECT_EQ(g.offset(), 3u);  // ceil(10 / 4) blocks
  // Element i is the top 24 bits of word i % 4 of block i / 4, times 2^-24.
  auto rv = vals(r);
  for (int i = 0; i < 10; ++i) {
    auto w = philox4x32_10({static_cast<uint32_t>(i / 4), 0, 0, 0},
                           {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
    EXPECT_EQ(rv[i], std::ldexp(static_cast<double>(w[i % 4] >> 8), -24)) << i;
  }
  // Two calls of 4 equal one call of 8; a replay from the same offset repeats.
  Generator a(7), b(7);
  Tensor x1 = rand({4}, {}, &a), x2 = rand({4}, {}, &a);
  Tensor y = rand({8}, {}, &b);
  auto yv = vals(y), x1v = vals(x1), x2v = vals(x2);
  EXPECT_EQ(std::vector<double>(yv.begin(), yv.begin() + 4), x1v);
  EXPECT_EQ(std::vector<double>(yv.begin() + 4, yv.end()), x2v);
  b.set_offset(1);
  EXPECT_EQ(vals(rand({4}, {}, &b)), x2v);
  // Offsets advance by the blocks used: 2 per block for f64 and integers.
  Generator c(1);
  rand({5}, {DType::F64}, &c);
  EXPECT_EQ(c.offset(), 3u);
  randn({5}, {}, &c);
  EXPECT_EQ(c.offset(), 5u);
  randint(0, 10, {5}, {DType::I64}, &c);
  EXPECT_EQ(c.offset(), 8u);
  randperm(5, {DType::I64}, &c);
  EXPECT_EQ(c.offset(), 11u);
  // Different seeds differ; manual_seed rewinds the default generator.
  Generator d(8);
  EXPECT_NE(vals(rand({4}, {}, &d)), x1v);
  manual_seed(42);
  auto m1 = vals(randn({6}));
  manual_seed(42);
  EXPECT_EQ(vals(randn({6})), m1);
  EXPECT_EQ(default_generator().seed(), 42u);
}

TEST(Random, ThreadCountDoesNotChangeResults) {
  const Dims shape{100003};  // several parallel chunks, a ragged last block
  auto draw = [&](int threads) {
    const test::ThreadCount count(threads);
    Generator g(99);
    std::vector<std::vector<double>> out;
    out.push_back(vals(rand(shape, {}, &g)));
    out.push_back(vals(randn(shape, {DType::F64}, &g)));
    out.push_back(vals(normal(shape, 1.0, 2.0, {}, &g)));
    out.push_back(vals(randint(-5, 5, shape, {DType::I64}, &g)));
    return out;
  };
  auto one = draw(1), two = draw(2);
  for (size_t i = 0; i < one.size(); ++i) EXPECT_EQ(one[i], two[i]) << "draw " << i;
}

void expect_moments(const Tensor& t, double mean, double var, double tol_mean, double tol_var) {
  auto v = vals(t);
  double m = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  s /= static_cast<double>(v.size() - 1);
  EXPECT_NEAR(m, mean, tol_mean) << name(t.dtype());
  EXPECT_NEAR(s, var, tol_var) << name(t.dtype());
}

TEST(Random, DistributionMoments) {
  Generator g(2024);
  const Dims n{100000};
  for (DType dt : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
    Tensor u = rand(n, {dt}, &g);
    EXPECT_EQ(u.dtype(), dt);
    auto uv = vals(u);
    EXPECT_GE(*std::min_element(uv.begin(), uv.end()), 0.0);
    EXPECT_LT(*std::max_element(uv.begin(), uv.end()), 1.0);
    expect_moments(u, 0.5, 1.0 / 12, 0.005, 0.002);
    expect_moments(randn(n, {dt}, &g), 0.0, 1.0, 0.015, 0.03);
  }
  Tensor un = uniform(n, -2.0, 5.0, {}, &g);
  auto unv = vals(un);
  EXPECT_GE(*std::min_element(unv.begin(), unv.end()), -2.0);
  EXPECT_LT(*std::max_element(unv.begin(), unv.end()), 5.0);
  expect_moments(un, 1.5, 49.0 / 12, 0.04, 0.05);
  expect_moments(normal(n, 3.0, 2.0, {DType::F64}, &g), 3.0, 4.0, 0.03, 0.1);
  // randint: in range, every value about equally often.
  Tensor ri = randint(-3, 7, n, {DType::I64}, &g);
  EXPECT_EQ(ri.dtype(), DType::I64);
  std::vector<int> counts(10, 0);
  for (int64_t v : ri.to_vector<int64_t>()) {
    ASSERT_TRUE(v >= -3 && v < 7) << v;
    ++counts[static_cast<size_t>(v + 3)];
  }
  for (int c : counts) EXPECT_NEAR(c, 10000, 500);
  EXPECT_EQ(randint(0, 3, {4}, {DType::I32}, &g).dtype(), DType::I32);
  EXPECT_EQ(randint(0, 3, {4}, {DType::F32}, &g).dtype(), DType::F32);
  // A float dtype takes bounds it holds exactly: past them draws rounded to
  // the excluded hi (bf16 [0, 300) gave 300) or to inf (f16 [0, 100000)).
  EXPECT_THROW(randint(0, 100000, {4}, {DType::F16}, &g), Error);
  EXPECT_THROW(randint(0, 300, {4}, {DType::BF16}, &g), Error);
  EXPECT_THROW(randint(33553432, 33554432, {4}, {DType::F32}, &g), Error);
  EXPECT_THROW(randint(-(int64_t{1} << 24) - 1, 0, {4}, {DType::F32}, &g), Error);
  const auto edge = randint(0, 257, {2000}, {DType::BF16}, &g).to_vector<double>();
  EXPECT_LE(*std::max_element(edge.begin(), edge.end()), 256.0);
  EXPECT_EQ(randint(0, 2049, {4}, {DType::F16}, &g).dtype(), DType::F16);
  // normal's mean and std within the dtype's range, as uniform's bounds
  EXPECT_THROW(normal({4}, 0.0, 1e39, {DType::F32}, &g), Error);
  EXPECT_THROW(normal({4}, 1e5, 1.0, {DType::F16}, &g), Error);
  // a negative size is named by the op (empty() named itself)
  try {
    (void)rand({-1}, {}, &g);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("rand:", 0), 0u) << e.what();
  }
  // Full-width ranges do not overflow.
  auto wide = randint(INT64_MIN, INT64_MAX, {1000}, {DType::I64}, &g).to_vector<int64_t>();
  EXPECT_TRUE(std::any_of(wide.begin(), wide.end(), [](int64_t v) { return v < 0; }));
  EXPECT_TRUE(std::any_of(wide.begin(), wide.end(), [](int64_t v) { return v > 0; }));
}

TEST(Random, RandpermIsAPermutation) {
  Generator g(5);
  for (int64_t n : {0, 1, 2, 7, 1000}) {
    Tensor p = randperm(n, {DType::I64}, &g);
    EXPECT_EQ(p.shape(), (Dims{n}));
    auto v = p.to_vector<int64_t>();
    std::sort(v.begin(), v.end());
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(v[i], i);
  }
  auto a = randperm(1000, {DType::I32}, &g).to_vector<int64_t>();
  std::vector<int64_t> id(1000);
  std::iota(id.begin(), id.end(), 0);
  EXPECT_NE(a, id);
  // Each position is roughly uniform: the first element over many draws.
  std::vector<int> first(4, 0);
  for (int t = 0; t < 4000; ++t) ++first[randperm(4, {DType::I64}, &g).to_vector<int64_t>()[0]];
  for (int c : first) EXPECT_NEAR(c, 1000, 150);
}

TEST(Random, OptionsAndErrors) {
  Generator g(3);
  Tensor r = randn({2, 3}, {DType::F64, kCPU, true}, &g);
  EXPECT_TRUE(r.requires_grad());
  EXPECT_EQ(r.shape(), (Dims{2, 3}));
  EXPECT_THROW(rand({3}, {DType::I64}, &g), Error);
  EXPECT_THROW(randn({3}, {DType::C64}, &g), Error);
  EXPECT_THROW(uniform({3}, 1.0, 1.0, {}, &g), Error);
  try {
    normal({3}, 0.0, -1.0, {}, &g);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("std -1"), std::string::npos) << e.what();
  }
  try {
    randint(5, 5, {3}, {DType::I64}, &g);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[5, 5)"), std::string::npos) << e.what();
  }
  EXPECT_THROW(randint(0, 5, {3}, {DType::Bool}, &g), Error);
  EXPECT_THROW(randint(0, int64_t{1} << 40, {3}, {DType::I32}, &g), Error);
  EXPECT_THROW(randperm(-1, {DType::I64}, &g), Error);
  EXPECT_THROW(randperm(3, {DType::F32}, &g), Error);
  EXPECT_THROW(rand({-1}, {}, &g), Error);
  // A width past the generation type's range (every draw came out as one
  // value), and bounds printed in full (1e-7 read 0.000000).
  EXPECT_THROW(uniform({8}, -3e38, 3e38, {DType::F32}, &g), Error);
  EXPECT_THROW(uniform({8}, 1e39, 2e39, {DType::F32}, &g), Error);
  EXPECT_THROW(uniform({8}, -1e308, 1e308, {DType::F64}, &g), Error);
  EXPECT_EQ(uniform({8}, -1e38, 1e38, {DType::F32}, &g).numel(), 8);
  // The width as f32 computes it (both bounds rounded first), and the output
  // dtype's range for f16/bf16 (draws were inf).
  EXPECT_THROW(uniform({8}, -1.6354387244816144e38, 1.7673847419036742e38, {DType::F32}, &g),
               Error);
  EXPECT_THROW(uniform({8}, 0, 1e5, {DType::F16}, &g), Error);
  EXPECT_THROW(uniform({8}, -6e4, 6e4, {DType::F16}, &g), Error);
  EXPECT_THROW(uniform({8}, 3e38, 3.4e38, {DType::BF16}, &g), Error);
  EXPECT_EQ(uniform({8}, -3e4, 3e4, {DType::F16}, &g).numel(), 8);
  EXPECT_NE(test::error_of([&] { uniform({3}, 1e-7, 1e-8, {}, &g); }).find("1e-07"),
            std::string::npos);
}

}  // namespace
}  // namespace fk
