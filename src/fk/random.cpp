#include "fk/random.h"

#include <cmath>
#include <limits>
#include <numbers>
#include <string>

#include <fmt/format.h>

#include "fk/parallel.h"
#include "fk/profile.h"

namespace fk {
namespace {

// Philox4x32 constants (Salmon et al. 2011, Random123): round multipliers and
// the Weyl sequence that bumps the key between rounds.
constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;

// Blocks per parallel chunk: 32768 f32 outputs, the elementwise grain.
constexpr int64_t kGrainBlocks = 8192;

constexpr float kTwoPiF = 2.0f * std::numbers::pi_v<float>;
constexpr double kTwoPi = 2.0 * std::numbers::pi;

inline uint64_t join64(uint32_t hi, uint32_t lo) {
  return static_cast<uint64_t>(hi) << 32 | lo;
}
// [0, 1) from the top 24 / 53 bits.
inline float unit_f32(uint32_t w) {
  return static_cast<float>(w >> 8) * 0x1p-24f;
}
inline double unit_f64(uint64_t w) {
  return static_cast<double>(w >> 11) * 0x1p-53;
}
// (0, 1]: the log argument of Box–Muller must not be 0.
inline float open_unit_f32(uint32_t w) {
  return static_cast<float>((w >> 8) + 1) * 0x1p-24f;
}
inline double open_unit_f64(uint64_t w) {
  return static_cast<double>((w >> 11) + 1) * 0x1p-53;
}
// Uniform on [0, range) by a 64x64 -> 128-bit multiply (bias below range / 2^64).
inline uint64_t below(uint64_t w, uint64_t range) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(w) * range) >> 64);
}

Generator& pick(Generator* gen) {
  return gen ? *gen : default_generator();
}

// Fills out[0, n) block by block: fill(block, dst, count) writes count <=
// kPerBlock outputs from one Philox block. Blocks are split over threads by
// index, so the result does not depend on the thread count.
template <int kPerBlock, typename T, typename F>
void generate(T* out, int64_t n, Generator& gen, const F& fill) {
  const int64_t nblocks = (n + kPerBlock - 1) / kPerBlock;
  const uint64_t base = gen.reserve(static_cast<uint64_t>(nblocks));
  parallel_for(0, nblocks, kGrainBlocks, [&](int64_t lo, int64_t hi) {
    for (int64_t j = lo; j < hi; ++j) {
      int count = static_cast<int>(std::min<int64_t>(kPerBlock, n - j * kPerBlock));
      fill(gen.block(base + static_cast<uint64_t>(j)), out + j * kPerBlock, count);
    }
  });
}

void check_floating(const char* op, const TensorOptions& o) {
  FK_CHECK(is_floating(o.dtype), op, "dtype f16, bf16, f32 or f64", name(o.dtype));
}

// By the op's name (empty() named itself for rand({-1})).
void check_sizes(const char* op, const Dims& shape) {
  for (int64_t d : shape) FK_CHECK(d >= 0, op, "non-negative sizes", shape.str());
}

// Finishes a tensor generated in f32/f64/i64 on the CPU: converts it to the
// requested dtype, moves it to the requested device, marks it for grad.
Tensor finish(Tensor t, const TensorOptions& o) {
  if (t.dtype() != o.dtype) t = t.to(o.dtype);
  if (t.device() != o.device) t = t.to(o.device);
  if (o.requires_grad) t.set_requires_grad(true);
  return t;
}

// Uniform on [lo, hi) in the generation dtype of o (f64 for f64, else f32).
Tensor uniform_impl(const char* op, const Dims& shape, double lo, double hi, const TensorOptions& o,
                    Generator& gen) {
  profile::OpScope scope(op);
  check_floating(op, o);
  check_sizes(op, shape);
  FK_CHECK(lo < hi && std::isfinite(lo) && std::isfinite(hi), op, "finite bounds lo < hi",
           fmt::format("[{}, {})", lo, hi));
  // hi - lo is the scale: past the range it is inf, and every draw came out
  // one step below hi; bounds past the output dtype's range gave inf draws
  // (torch refuses both). f32, f16 and bf16 draw in f32: its width too.
  const double largest = o.dtype == DType::F64    ? std::numeric_limits<double>::max()
                         : o.dtype == DType::F16  ? 65504.0
                         : o.dtype == DType::BF16 ? 3.3895313892515355e38
                                                  : std::numeric_limits<float>::max();
  const bool f32_width =
      o.dtype == DType::F64 || std::isfinite(static_cast<float>(hi) - static_cast<float>(lo));
  FK_CHECK(hi - lo <= largest && std::abs(lo) <= largest && std::abs(hi) <= largest && f32_width,
           op, fmt::format("bounds and a width hi - lo within {}'s range", name(o.dtype)),
           fmt::format("[{}, {})", lo, hi));
  if (o.dtype == DType::F64) {
    Tensor t = empty(shape, {DType::F64});
    const double scale = hi - lo;
    generate<2>(t.data<double>(), t.numel(), gen,
                [&](const std::array<uint32_t, 4>& w, double* d, int c) {
                  for (int k = 0; k < c; ++k) {
                    double v = lo + scale * unit_f64(join64(w[2 * k], w[2 * k + 1]));
                    d[k] = v < hi ? v : std::nextafter(hi, lo);  // rounding can reach hi
                  }
                });
    return finish(t, o);
  }
  Tensor t = empty(shape, {DType::F32});
  const float flo = static_cast<float>(lo), fhi = static_cast<float>(hi), scale = fhi - flo;
  // As many random bits as the output's significand holds, so that rounding
  // rand() to f16/bf16 can never give 1.
  const int bits = o.dtype == DType::F16 ? 11 : o.dtype == DType::BF16 ? 8 : 24;
  const float unit = std::ldexp(1.0f, -bits);
  generate<4>(t.data<float>(), t.numel(), gen,
              [&](const std::array<uint32_t, 4>& w, float* d, int c) {
                for (int k = 0; k < c; ++k) {
                  float v = flo + scale * (static_cast<float>(w[k] >> (32 - bits)) * unit);
                  d[k] = v < fhi ? v : std::nextafter(fhi, flo);
                }
              });
  return finish(t, o);
}

Tensor normal_impl(const char* op, const Dims& shape, double mean, double std,
                   const TensorOptions& o, Generator& gen) {
  profile::OpScope scope(op);
  check_floating(op, o);
  check_sizes(op, shape);
  FK_CHECK(std >= 0 && std::isfinite(std) && std::isfinite(mean), op,
           "a finite mean and a finite std >= 0", fmt::format("mean {}, std {}", mean, std));
  // As uniform's bounds: a mean or std past the output dtype's range gave
  // inf draws (f32 draws their product with a unit normal: its range too).
  const double largest = o.dtype == DType::F64    ? std::numeric_limits<double>::max()
                         : o.dtype == DType::F16  ? 65504.0
                         : o.dtype == DType::BF16 ? 3.3895313892515355e38
                                                  : std::numeric_limits<float>::max();
  FK_CHECK(std::abs(mean) <= largest && std <= largest, op,
           fmt::format("a mean and std within {}'s range", name(o.dtype)),
           fmt::format("mean {}, std {}", mean, std));
  if (o.dtype == DType::F64) {
    Tensor t = empty(shape, {DType::F64});
    // One block: two 64-bit uniforms -> one Box–Muller pair.
    generate<2>(t.data<double>(), t.numel(), gen,
                [&](const std::array<uint32_t, 4>& w, double* d, int c) {
                  double r = std::sqrt(-2.0 * std::log(open_unit_f64(join64(w[0], w[1]))));
                  double th = kTwoPi * unit_f64(join64(w[2], w[3]));
                  d[0] = mean + std * r * std::cos(th);
                  if (c > 1) d[1] = mean + std * r * std::sin(th);
                });
    return finish(t, o);
  }
  Tensor t = empty(shape, {DType::F32});
  const float fm = static_cast<float>(mean), fs = static_cast<float>(std);
  // One block: four 32-bit uniforms -> two Box–Muller pairs.
  generate<4>(t.data<float>(), t.numel(), gen,
              [&](const std::array<uint32_t, 4>& w, float* d, int c) {
                for (int p = 0; p < 2 && 2 * p < c; ++p) {
                  float r = std::sqrt(-2.0f * std::log(open_unit_f32(w[2 * p])));
                  float th = kTwoPiF * unit_f32(w[2 * p + 1]);
                  d[2 * p] = fm + fs * r * std::cos(th);
                  if (2 * p + 1 < c) d[2 * p + 1] = fm + fs * r * std::sin(th);
                }
              });
  return finish(t, o);
}

}  // namespace

std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> ctr, std::array<uint32_t, 2> key) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key[0] += kW0;
      key[1] += kW1;
    }
    uint64_t p0 = static_cast<uint64_t>(kM0) * ctr[0];
    uint64_t p1 = static_cast<uint64_t>(kM1) * ctr[2];
    uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    ctr = {hi1 ^ ctr[1] ^ key[0], lo1, hi0 ^ ctr[3] ^ key[1], lo0};
  }
  return ctr;
}

std::array<uint32_t, 4> Generator::block(uint64_t c) const {
  return philox4x32_10({static_cast<uint32_t>(c), static_cast<uint32_t>(c >> 32), 0u, 0u},
                       {static_cast<uint32_t>(seed_), static_cast<uint32_t>(seed_ >> 32)});
}

Generator& default_generator() {
  static Generator g(0);
  return g;
}

void manual_seed(uint64_t seed) {
  default_generator().manual_seed(seed);
}

Tensor rand(const Dims& shape, TensorOptions options, Generator* gen) {
  return uniform_impl("rand", shape, 0.0, 1.0, options, pick(gen));
}

Tensor uniform(const Dims& shape, double lo, double hi, TensorOptions options, Generator* gen) {
  return uniform_impl("uniform", shape, lo, hi, options, pick(gen));
}

Tensor randn(const Dims& shape, TensorOptions options, Generator* gen) {
  return normal_impl("randn", shape, 0.0, 1.0, options, pick(gen));
}

Tensor normal(const Dims& shape, double mean, double std, TensorOptions options, Generator* gen) {
  return normal_impl("normal", shape, mean, std, options, pick(gen));
}

Tensor randint(int64_t lo, int64_t hi, const Dims& shape, TensorOptions options, Generator* gen) {
  profile::OpScope scope("randint");
  const DType dt = options.dtype;
  FK_CHECK(dt == DType::I32 || dt == DType::I64 || is_floating(dt), "randint",
           "dtype i32, i64, f16, bf16, f32 or f64", name(dt));
  check_sizes("randint", shape);
  FK_CHECK(lo < hi, "randint", "bounds lo < hi",
           "[" + fk::to_text(lo) + ", " + fk::to_text(hi) + ")");
  if (dt == DType::I32) {
    FK_CHECK(lo >= INT32_MIN && hi - 1 <= INT32_MAX, "randint", "bounds that fit i32",
             "[" + fk::to_text(lo) + ", " + fk::to_text(hi) + ")");
  } else if (dt != DType::I64) {
    // Whole numbers a float dtype holds exactly: past them draws rounded to
    // the excluded hi, or to inf in f16 (torch refuses f16's, warns for the rest).
    const int digits = dt == DType::F16 ? 11 : dt == DType::BF16 ? 8 : dt == DType::F32 ? 24 : 53;
    const int64_t exact = int64_t{1} << digits;
    FK_CHECK(
        lo >= -exact && hi - 1 <= exact, "randint",
        fmt::format("bounds within +-2^{} (the whole numbers {} holds exactly)", digits, name(dt)),
        "[" + fk::to_text(lo) + ", " + fk::to_text(hi) + ")");
  }
  Tensor t = empty(shape, {DType::I64});
  const uint64_t range = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
  generate<2>(t.data<int64_t>(), t.numel(), pick(gen),
              [&](const std::array<uint32_t, 4>& w, int64_t* d, int c) {
                for (int k = 0; k < c; ++k) {
                  uint64_t v =
                      static_cast<uint64_t>(lo) + below(join64(w[2 * k], w[2 * k + 1]), range);
                  d[k] = static_cast<int64_t>(v);
                }
              });
  return finish(t, options);
}

Tensor randperm(int64_t n, TensorOptions options, Generator* gen) {
  profile::OpScope scope("randperm");
  FK_CHECK(n >= 0, "randperm", "n >= 0", fk::to_text(n));
  FK_CHECK(options.dtype == DType::I64 || options.dtype == DType::I32, "randperm",
           "dtype i64 or i32", name(options.dtype));
  if (options.dtype == DType::I32) {
    FK_CHECK(n - 1 <= INT32_MAX, "randperm", "n that fits i32", fk::to_text(n));
  }
  Tensor t = empty({n}, {DType::I64});
  int64_t* p = t.data<int64_t>();
  for (int64_t i = 0; i < n; ++i) p[i] = i;
  Generator& g = pick(gen);
  // Fisher–Yates from the top: step i swaps p[i] with p[j], j uniform on
  // [0, i], drawn from 64-bit word pair i % 2 of block i / 2.
  const uint64_t base = g.reserve(static_cast<uint64_t>((n + 1) / 2));
  for (int64_t i = n - 1; i >= 1; --i) {
    std::array<uint32_t, 4> w = g.block(base + static_cast<uint64_t>(i / 2));
    int k = static_cast<int>(i % 2);
    int64_t j =
        static_cast<int64_t>(below(join64(w[2 * k], w[2 * k + 1]), static_cast<uint64_t>(i + 1)));
    std::swap(p[i], p[j]);
  }
  return finish(t, options);
}

}  // namespace fk
