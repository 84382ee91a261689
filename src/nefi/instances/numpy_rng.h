#pragma once
// The random stream of NumPy's `np.random.default_rng(seed)` (SeedSequence
// → PCG64 XSL-RR 128/64), with the draws the reference's scene generators
// (thermal, deconvolution, toy1d) make: `uniform(lo, hi)`, `integers(lo, hi)` (hi
// exclusive) and `dirichlet(np.ones(k))` (thermal's layered strata). A sized draw `uniform(lo, hi,
// size=k)` is k consecutive `uniform(lo, hi)` calls (NumPy fills the array with one double per
// element). Scenes drawn from it are the reference's scenes for the same seed, so a smoke seed here
// is the seed the reference reports numbers for. Written from the published algorithms (O'Neill's
// PCG, NumPy's SeedSequence hash mixing, Lemire's bounded integers, Marsaglia & Tsang's 256-strip
// exponential ziggurat with NumPy's 53-bit layout); checked against values NumPy
// prints (tests/nefi/instances/numpy_rng_test.cpp).
#include <cstdint>
#include <vector>

namespace nefi {

class NumpyRng {
 public:
  explicit NumpyRng(uint64_t seed);
  // The next 64 output bits.
  uint64_t next_u64();
  // 32 bits: the low half of a fresh 64-bit output, its high half kept for
  // the next call (NumPy's PCG64 next_uint32 buffer).
  uint32_t next_u32();
  // [0, 1) with 53 random bits: Generator.random().
  double random();
  // lo + (hi − lo) · random(): Generator.uniform(lo, hi).
  double uniform(double lo = 0.0, double hi = 1.0);
  // An integer in [lo, hi): Generator.integers(lo, hi) for int64 with a range
  // below 2³² (Lemire's multiply-shift with rejection on 32-bit draws).
  int64_t integers(int64_t lo, int64_t hi);
  // Exp(1): Generator.standard_exponential() (the ziggurat; about 1 draw in
  // 90 takes a second uniform for the wedge or the tail).
  double standard_exponential();
  // N(0, 1): Generator.standard_normal() (the 256-strip normal ziggurat on
  // 52-bit integers, the tail beyond r by Marsaglia's exponential pair). The
  // strips are rebuilt from their definition, and NumPy's table entries come
  // out a few units in the last place apart from them: a draw equals NumPy's
  // to ≲ 2e-14 relative (two million checked, same branch and stream each
  // time) — equal after rounding to f32, which the reference's data are.
  double standard_normal();
  // A uniform point on the (k−1)-simplex: Generator.dirichlet(np.ones(k)).
  // NumPy draws standard_gamma(1) = standard_exponential per component and
  // scales them by 1 / their sum.
  std::vector<double> dirichlet_flat(int64_t k);

 private:
  unsigned __int128 state_ = 0, inc_ = 0;
  bool has_u32_ = false;
  uint32_t u32_ = 0;
};

}  // namespace nefi
