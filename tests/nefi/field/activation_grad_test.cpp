#include "nefi/field/activation_grad.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "fk/cpu_isa.h"
#include "fk/factory.h"
#include "fk/knobs.h"
#include "fk/random.h"

namespace {

using nefi::DenseActivation;

std::vector<float> random_floats(size_t n, uint64_t seed) {
  fk::Generator g(seed);
  return fk::randn({static_cast<int64_t>(n)}, {fk::DType::F32}, &g).to_vector<float>();
}

// g and a saved output y for `act` (tanh: y in (-1, 1); relu: y >= 0 with
// exact zeros), with a few special values: signed zeros, and for relu a NaN
// output (not > 0: its gradient is 0).
void make_inputs(DenseActivation act, int64_t n, int64_t out, std::vector<float>& g,
                 std::vector<float>& y) {
  g = random_floats(n * out, 11);
  y = random_floats(n * out, 12);
  for (float& v : y) {
    if (act == DenseActivation::Tanh) v = std::tanh(v);
    if (act == DenseActivation::Relu) v = v > 0.3f ? v : 0.0f;
  }
  g[0] = -0.0f;
  if (n * out > 2) {
    y[1] = -0.0f;
    if (act == DenseActivation::Relu) y[2] = std::numeric_limits<float>::quiet_NaN();
  }
}

bool same_bits(float a, float b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

struct Result {
  std::vector<float> gz, db;
};

Result run(DenseActivation act, int64_t n, int64_t out, const std::vector<float>& g,
           const std::vector<float>& y) {
  Result r{act == DenseActivation::None ? g : std::vector<float>(g.size(), 7.0f),
           std::vector<float>(out, 7.0f)};
  nefi::activation_grad(act == DenseActivation::None ? r.gz.data() : g.data(), y.data(), act, n,
                        out, r.gz.data(), r.db.data());
  return r;
}

// The definition as a plain f32 loop: gz = g (1 - y y) rounded after each
// operation, g where y > 0, or g; db the column sums, rows in order.
Result definition(DenseActivation act, int64_t n, int64_t out, const std::vector<float>& g,
                  const std::vector<float>& y) {
  Result r{std::vector<float>(g.size()), std::vector<float>(out, 0.0f)};
  for (int64_t i = 0; i < n * out; ++i) {
    float z = g[i];
    if (act == DenseActivation::Tanh) {
      const float yy = y[i] * y[i];
      const float d = 1.0f - yy;
      z = g[i] * d;
    } else if (act == DenseActivation::Relu) {
      z = y[i] > 0.0f ? g[i] : 0.0f;
    }
    r.gz[i] = z;
    r.db[i % out] += z;
  }
  return r;
}

// Bit for bit the plain loop (so the AVX-512 pass changed no result), at
// widths below, at and around the 16-lane vector, and within f32 round-off of
// the same pass in f64.
TEST(NefiActivationGrad, MatchesDefinitionBitwiseAndF64) {
  const int64_t n = 37;
  for (DenseActivation act :
       {DenseActivation::None, DenseActivation::Relu, DenseActivation::Tanh}) {
    for (int64_t out : {1, 15, 16, 17, 64, 130}) {
      std::vector<float> g, y;
      make_inputs(act, n, out, g, y);
      const Result got = run(act, n, out, g, y), want = definition(act, n, out, g, y);
      const std::string at =
          "act " + std::to_string(static_cast<int>(act)) + " out " + std::to_string(out);
      for (size_t i = 0; i < got.gz.size(); ++i)
        ASSERT_TRUE(same_bits(got.gz[i], want.gz[i])) << at << " gz " << i;
      for (int64_t j = 0; j < out; ++j)
        ASSERT_TRUE(same_bits(got.db[j], want.db[j])) << at << " db " << j;

      std::vector<double> g64(g.begin(), g.end()), y64(y.begin(), y.end());
      std::vector<double> gz64 = g64, db64(out);  // act None: gz is g itself
      nefi::activation_grad(g64.data(), y64.data(), act, n, out, gz64.data(), db64.data());
      for (int64_t j = 0; j < out; ++j) {
        double mag = 0;
        for (int64_t i = 0; i < n; ++i) mag += std::abs(gz64[i * out + j]);
        ASSERT_NEAR(got.db[j], db64[j], 4e-6 * (mag + 1)) << at << " db f64 " << j;
      }
    }
  }
}

// Without a bias gradient only gz is written; and the path without AVX-512
// (FK_CPU_ISA capped) gives the same bits.
TEST(NefiActivationGrad, NoBiasAndPlainPathSameBits) {
  const int64_t n = 20, out = 33;
  for (DenseActivation act : {DenseActivation::Relu, DenseActivation::Tanh}) {
    std::vector<float> g, y;
    make_inputs(act, n, out, g, y);
    std::vector<float> gz(g.size());
    nefi::activation_grad(g.data(), y.data(), act, n, out, gz.data(), nullptr);
    const Result want = definition(act, n, out, g, y);
    for (size_t i = 0; i < gz.size(); ++i) ASSERT_TRUE(same_bits(gz[i], want.gz[i])) << i;

    const Result plain = [&] {
      fk::KnobOverride generic("FK_CPU_ISA", "generic");
      return run(act, n, out, g, y);
    }();
    const Result fast = run(act, n, out, g, y);
    for (size_t i = 0; i < gz.size(); ++i) ASSERT_TRUE(same_bits(plain.gz[i], fast.gz[i])) << i;
    for (int64_t j = 0; j < out; ++j) ASSERT_TRUE(same_bits(plain.db[j], fast.db[j])) << j;
  }
}

}  // namespace
