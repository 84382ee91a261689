#include "nefi/instances/numpy_rng.h"

#include <array>
#include <cmath>
#include <string>

#include "fk/error.h"

namespace nefi {
namespace {

using u128 = unsigned __int128;

// SeedSequence constants (32-bit hash mixing).
constexpr uint32_t kInitA = 0x43b0d7e5, kMultA = 0x931e8875, kInitB = 0x8b51f9dd,
                   kMultB = 0x58f38ded, kMixL = 0xca01f9dd, kMixR = 0x4973f715;
constexpr int kXShift = 16;
constexpr int kPool = 4;

uint32_t hashmix(uint32_t v, uint32_t& h) {
  v ^= h;
  h *= kMultA;
  v *= h;
  v ^= v >> kXShift;
  return v;
}

uint32_t mix(uint32_t x, uint32_t y) {
  uint32_t r = kMixL * x - kMixR * y;
  r ^= r >> kXShift;
  return r;
}

// SeedSequence(seed).generate_state(4, uint64): the PCG64 seed words.
std::array<uint64_t, 4> seed_words(uint64_t seed) {
  // The entropy as 32-bit words, least significant first (at least one).
  uint32_t entropy[2] = {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
  const int n_entropy = (seed >> 32) ? 2 : 1;
  std::array<uint32_t, kPool> pool{};
  uint32_t h = kInitA;
  for (int i = 0; i < kPool; ++i) pool[i] = hashmix(i < n_entropy ? entropy[i] : 0u, h);
  for (int s = 0; s < kPool; ++s)
    for (int d = 0; d < kPool; ++d)
      if (s != d) pool[d] = mix(pool[d], hashmix(pool[s], h));
  std::array<uint32_t, 8> w{};
  uint32_t hb = kInitB;
  for (int i = 0; i < 8; ++i) {
    uint32_t v = pool[i % kPool];
    v ^= hb;
    hb *= kMultB;
    v *= hb;
    v ^= v >> kXShift;
    w[i] = v;
  }
  std::array<uint64_t, 4> out{};
  for (int i = 0; i < 4; ++i) out[i] = w[2 * i] | (static_cast<uint64_t>(w[2 * i + 1]) << 32);
  return out;
}

// Marsaglia & Tsang's exponential ziggurat as NumPy's
// random_standard_exponential reads it: 256 strips of equal area v under
// e^-x, the base strip (0) carrying the tail beyond r. A 53-bit integer u
// lands at x = u · we[i] in strip i and is accepted at once when u < ke[i]
// (x lies under the next strip up); fe[i] = e^-x_i bounds the wedge test.
// Built once in long double (64-bit mantissa): every we and fe rounds to the
// double NumPy's table holds; a ke may differ from NumPy's in its last unit,
// which changes a draw only when u equals it (probability 2^-53).
struct ExpZiggurat {
  static constexpr long double kR = 7.6971174701310497140446280481L;  // the tail's start
  double we[256], fe[256];
  uint64_t ke[256];
  ExpZiggurat() {
    using ld = long double;
    const ld v = std::exp(-kR) * (kR + 1);  // each strip's area (the tail's included)
    const ld m = 0x1p53L;
    ld x[256];
    x[255] = kR;
    for (int i = 254; i >= 1; --i) x[i] = -std::log(v / x[i + 1] + std::exp(-x[i + 1]));
    const ld q = v / std::exp(-kR);  // the base strip's width
    we[0] = static_cast<double>(q / m);
    ke[0] = static_cast<uint64_t>(kR / q * m);
    fe[0] = 1.0;
    ke[1] = 0;  // strip 1 has no narrower strip above it: always the wedge test
    for (int i = 1; i < 256; ++i) {
      we[i] = static_cast<double>(x[i] / m);
      fe[i] = static_cast<double>(std::exp(-x[i]));
      if (i >= 2) ke[i] = static_cast<uint64_t>(x[i - 1] / x[i] * m);
    }
  }
};

const ExpZiggurat& exp_ziggurat() {
  static const ExpZiggurat z;
  return z;
}

// The normal ziggurat as NumPy's random_standard_normal reads it: 256 strips
// of equal area v under e^(-x²/2), strip 0 carrying the tail beyond r; a
// 52-bit integer u lands at x = u · wn[i] and is accepted at once when
// u < kn[i]. Same construction as ExpZiggurat, v = r f(r) + ∫_r^∞ f.
struct NormalZiggurat {
  static constexpr long double kR = 3.6541528853610087963519472518L;  // the tail's start
  double wn[256], fn[256];
  uint64_t kn[256];
  NormalZiggurat() {
    using ld = long double;
    auto f = [](ld x) { return std::exp(-0.5L * x * x); };
    const ld v = kR * f(kR) + std::sqrt(std::acos(-1.0L) / 2) * std::erfc(kR / std::sqrt(2.0L));
    const ld m = 0x1p52L;
    ld x[256];
    x[255] = kR;
    for (int i = 254; i >= 1; --i) x[i] = std::sqrt(-2 * std::log(v / x[i + 1] + f(x[i + 1])));
    const ld q = v / f(kR);  // the base strip's width
    wn[0] = static_cast<double>(q / m);
    kn[0] = static_cast<uint64_t>(kR / q * m);
    fn[0] = 1.0;
    kn[1] = 0;
    for (int i = 1; i < 256; ++i) {
      wn[i] = static_cast<double>(x[i] / m);
      fn[i] = static_cast<double>(f(x[i]));
      if (i >= 2) kn[i] = static_cast<uint64_t>(x[i - 1] / x[i] * m);
    }
  }
};

const NormalZiggurat& normal_ziggurat() {
  static const NormalZiggurat z;
  return z;
}

constexpr u128 kMult = (static_cast<u128>(0x2360ed051fc65da4ull) << 64) | 0x4385df649fccf645ull;

}  // namespace

NumpyRng::NumpyRng(uint64_t seed) {
  const auto s = seed_words(seed);
  const u128 init = (static_cast<u128>(s[0]) << 64) | s[1];
  const u128 seq = (static_cast<u128>(s[2]) << 64) | s[3];
  inc_ = (seq << 1) | 1u;
  state_ = 0;
  state_ = state_ * kMult + inc_;
  state_ += init;
  state_ = state_ * kMult + inc_;
}

uint64_t NumpyRng::next_u64() {
  state_ = state_ * kMult + inc_;
  const uint64_t hi = static_cast<uint64_t>(state_ >> 64), lo = static_cast<uint64_t>(state_);
  const unsigned rot = static_cast<unsigned>(state_ >> 122);
  const uint64_t x = hi ^ lo;
  return (x >> rot) | (x << ((64u - rot) & 63u));
}

uint32_t NumpyRng::next_u32() {
  if (has_u32_) {
    has_u32_ = false;
    return u32_;
  }
  const uint64_t v = next_u64();
  has_u32_ = true;
  u32_ = static_cast<uint32_t>(v >> 32);
  return static_cast<uint32_t>(v);
}

double NumpyRng::random() {
  return static_cast<double>(next_u64() >> 11) * 0x1.0p-53;
}

double NumpyRng::uniform(double lo, double hi) {
  return lo + (hi - lo) * random();
}

int64_t NumpyRng::integers(int64_t lo, int64_t hi) {
  FK_CHECK(lo < hi && static_cast<uint64_t>(hi - lo - 1) < 0xffffffffull,
           "nefi::NumpyRng::integers", "lo < hi with hi - lo <= 2^32 - 1",
           fk::to_text(lo) + ", " + fk::to_text(hi));
  const uint32_t range = static_cast<uint32_t>(hi - lo - 1);  // inclusive span
  if (range == 0) return lo;
  const uint32_t excl = range + 1;
  uint64_t m = static_cast<uint64_t>(next_u32()) * excl;
  uint32_t left = static_cast<uint32_t>(m);
  if (left < excl) {
    const uint32_t threshold = (0xffffffffu - range) % excl;
    while (left < threshold) {
      m = static_cast<uint64_t>(next_u32()) * excl;
      left = static_cast<uint32_t>(m);
    }
  }
  return lo + static_cast<int64_t>(m >> 32);
}

double NumpyRng::standard_exponential() {
  const ExpZiggurat& z = exp_ziggurat();
  for (;;) {
    uint64_t u = next_u64() >> 3;
    const auto i = static_cast<uint8_t>(u & 0xff);
    u >>= 8;
    const double x = static_cast<double>(u) * z.we[i];
    if (u < z.ke[i]) return x;
    if (i == 0) return static_cast<double>(ExpZiggurat::kR) - std::log1p(-random());
    if ((z.fe[i - 1] - z.fe[i]) * random() + z.fe[i] < std::exp(-x)) return x;
  }
}

double NumpyRng::standard_normal() {
  const NormalZiggurat& z = normal_ziggurat();
  const double r = static_cast<double>(NormalZiggurat::kR), inv_r = 0.27366123732975827203338247596;
  for (;;) {
    uint64_t u = next_u64();
    const auto i = static_cast<uint8_t>(u & 0xff);
    u >>= 8;
    const bool negative = u & 1;
    const uint64_t a = (u >> 1) & 0x000fffffffffffffull;
    double x = static_cast<double>(a) * z.wn[i];
    if (negative) x = -x;
    if (a < z.kn[i]) return x;
    if (i == 0) {
      for (;;) {  // Marsaglia's tail: r + ξ, ξ ~ Exp(r), kept when 2 Exp(1) > ξ²
        const double xx = -inv_r * std::log1p(-random()), yy = -std::log1p(-random());
        if (yy + yy > xx * xx) return ((a >> 8) & 1) ? -(r + xx) : r + xx;
      }
    }
    if ((z.fn[i - 1] - z.fn[i]) * random() + z.fn[i] < std::exp(-0.5 * x * x)) return x;
  }
}

std::vector<double> NumpyRng::dirichlet_flat(int64_t k) {
  FK_CHECK(k >= 1, "nefi::NumpyRng::dirichlet_flat", "k >= 1 components", fk::to_text(k));
  std::vector<double> w(k);
  double sum = 0;
  for (double& v : w) {
    v = standard_exponential();
    sum += v;
  }
  const double inv = 1.0 / sum;
  for (double& v : w) v *= inv;
  return w;
}

}  // namespace nefi
