#pragma once
// f32 exp, log, tanh, sigmoid, silu and softplus, eight lanes at a time with
// AVX2 + FMA, for
// the unary ops' contiguous runs when fk::cpu_isa() >= CpuIsa::Avx2. glibc's
// scalar expf/logf/tanhf cost 5-30 ns per element on this project's machines
// (tanhf the worst); these run at about memory speed.
//
// Accuracy against the correctly rounded result, over the whole f32 range
// (tests/fk/ops/unary_test.cpp: VecMath.*): exp, log <= 1 ulp; tanh, sigmoid
// <= 2 ulp; silu, softplus <= 3 ulp (sigmoid and softplus where the result
// is a normal number, silu for x >= -87.3; below that both this and the
// generic formulas lose precision towards 0). Special values: NaN in, NaN out; exp(+-inf) = inf, 0;
// log(0) = -inf, log(x < 0) = NaN, log(inf) = inf; tanh(+-inf) = +-1;
// sigmoid(+-inf) = 1, 0; subnormal inputs and results are handled (no
// flush-to-zero). Each lane is computed on its own, so a value's result does
// not depend on its position in a run, the run's length or the thread split.
//
// Method (textbook range reduction, coefficients are Taylor's):
//   exp:  x = n ln2 + r, |r| <= ln2/2 (ln2 in two parts, so n ln2 is exact);
//         e^r by its degree-7 Taylor polynomial (truncation < 1e-8
//         relative); 2^n applied as two factors so subnormal results round
//         once.
//   log:  x = 2^e m, m in [sqrt(1/2), sqrt(2)), f = m - 1 (exact),
//         s = f / (2 + f), log(1 + f) = f - (f^2/2 - s (f^2/2 + T(s^2)))
//         with T(z) = sum_k 2 z^k / (2k + 1), k = 1..5 (this keeps the
//         exact f as the leading term, so small |f| loses nothing).
//   tanh: |x| < 0.5: odd Taylor series to x^17 (truncation < 1e-9);
//         otherwise sign(x) (1 - 2 / (e^{2|x|} + 1)).
//   sigmoid: 1 / (1 + e^{-x}); silu: see silu_ps.
//   softplus: see softplus_ps (log1p from log with Goldberg's correction).
#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace fk::cpu::avx2 {

#define FK_TARGET_AVX2 __attribute__((target("avx2,fma")))

enum class VecFn { Exp, Log, Tanh, Sigmoid, Silu, Softplus };

// softplus's beta (a) and threshold (b); unused by the others.
struct VecParams {
  float a = 1.0f, b = 20.0f;
};

FK_TARGET_AVX2 inline __m256 exp_ps(__m256 x) {
  const __m256 ln2_hi = _mm256_set1_ps(0.693145751953125f);  // 16 bits: n ln2_hi exact
  const __m256 ln2_lo = _mm256_set1_ps(1.42860682030941723e-6f);
  // Beyond these bounds the result is inf or 0 anyway; clamping keeps 2^n representable.
  const __m256 xc = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-104.0f)), _mm256_set1_ps(89.0f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(xc, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, ln2_hi, xc);
  r = _mm256_fnmadd_ps(n, ln2_lo, r);
  __m256 p = _mm256_set1_ps(float(1.0 / 5040.0));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(float(1.0 / 720.0)));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(float(1.0 / 120.0)));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(float(1.0 / 24.0)));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(float(1.0 / 6.0)));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  // 2^n with n in [-150, 129] as 2^(n - n/2) * 2^(n/2): both factors normal.
  const __m256i ni = _mm256_cvtps_epi32(n);
  const __m256i n1 = _mm256_srai_epi32(ni, 1), n2 = _mm256_sub_epi32(ni, n1);
  const __m256i bias = _mm256_set1_epi32(127);
  const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
  const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
  const __m256 y = _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
  const __m256 nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
  return _mm256_blendv_ps(y, _mm256_add_ps(x, x), nan);
}

FK_TARGET_AVX2 inline __m256 log_ps(__m256 x) {
  const __m256 zero = _mm256_setzero_ps();
  // Subnormal inputs: scale by 2^23 first, take 23 off the exponent.
  const __m256 sub = _mm256_and_ps(_mm256_cmp_ps(x, _mm256_set1_ps(1.17549435e-38f), _CMP_LT_OQ),
                                   _mm256_cmp_ps(x, zero, _CMP_GT_OQ));
  const __m256 xs = _mm256_blendv_ps(x, _mm256_mul_ps(x, _mm256_set1_ps(8388608.0f)), sub);
  const __m256i xi = _mm256_castps_si256(xs);
  __m256i e = _mm256_sub_epi32(_mm256_srli_epi32(xi, 23), _mm256_set1_epi32(127));
  e = _mm256_sub_epi32(e, _mm256_and_si256(_mm256_castps_si256(sub), _mm256_set1_epi32(23)));
  __m256 m =
      _mm256_castsi256_ps(_mm256_or_si256(_mm256_and_si256(xi, _mm256_set1_epi32(0x007fffff)),
                                          _mm256_set1_epi32(0x3f800000)));  // [1, 2)
  const __m256 big = _mm256_cmp_ps(m, _mm256_set1_ps(1.41421356f), _CMP_GT_OQ);
  m = _mm256_blendv_ps(m, _mm256_mul_ps(m, _mm256_set1_ps(0.5f)), big);
  e = _mm256_sub_epi32(e, _mm256_castps_si256(big));  // a true mask is -1: e + 1
  const __m256 ef = _mm256_cvtepi32_ps(e);
  const __m256 f = _mm256_sub_ps(m, _mm256_set1_ps(1.0f));
  const __m256 s = _mm256_div_ps(f, _mm256_add_ps(_mm256_set1_ps(2.0f), f));
  const __m256 z = _mm256_mul_ps(s, s);
  __m256 t = _mm256_set1_ps(float(2.0 / 11.0));
  t = _mm256_fmadd_ps(t, z, _mm256_set1_ps(float(2.0 / 9.0)));
  t = _mm256_fmadd_ps(t, z, _mm256_set1_ps(float(2.0 / 7.0)));
  t = _mm256_fmadd_ps(t, z, _mm256_set1_ps(float(2.0 / 5.0)));
  t = _mm256_fmadd_ps(t, z, _mm256_set1_ps(float(2.0 / 3.0)));
  t = _mm256_mul_ps(t, z);
  const __m256 hfsq = _mm256_mul_ps(_mm256_set1_ps(0.5f), _mm256_mul_ps(f, f));
  // log1p(f) - f = -(hfsq - s (hfsq + t)); e ln2 in two parts as in exp.
  __m256 lo = _mm256_fnmadd_ps(s, _mm256_add_ps(hfsq, t), hfsq);          // hfsq - s(..)
  lo = _mm256_fmsub_ps(ef, _mm256_set1_ps(1.42860682030941723e-6f), lo);  // e ln2_lo - ..
  __m256 y = _mm256_add_ps(_mm256_fmadd_ps(ef, _mm256_set1_ps(0.693145751953125f), f), lo);
  // Special values: x < 0 -> NaN, +-0 -> -inf, +inf -> +inf, NaN -> NaN.
  const __m256 inf = _mm256_set1_ps(__builtin_inff());
  y = _mm256_blendv_ps(y, _mm256_set1_ps(__builtin_nanf("")), _mm256_cmp_ps(x, zero, _CMP_LT_OQ));
  y = _mm256_blendv_ps(y, _mm256_sub_ps(zero, inf), _mm256_cmp_ps(x, zero, _CMP_EQ_OQ));
  y = _mm256_blendv_ps(y, inf, _mm256_cmp_ps(x, inf, _CMP_EQ_OQ));
  return _mm256_blendv_ps(y, _mm256_add_ps(x, x), _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

FK_TARGET_AVX2 inline __m256 tanh_ps(__m256 x) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 ax = _mm256_andnot_ps(sign, x);
  // Odd Taylor series: x + x z P(z), z = x^2, coefficients of x^3 .. x^17.
  const __m256 z = _mm256_mul_ps(x, x);
  __m256 p = _mm256_set1_ps(float(6404582.0 / 10854718875.0));
  p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(float(-929569.0 / 638512875.0)));
  p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(float(21844.0 / 6081075.0)));
  p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(float(-1382.0 / 155925.0)));
  p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(float(62.0 / 2835.0)));
  p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(float(-17.0 / 315.0)));
  p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(float(2.0 / 15.0)));
  p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(float(-1.0 / 3.0)));
  __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(x, z), p, x);
  small = _mm256_or_ps(_mm256_andnot_ps(sign, small), _mm256_and_ps(sign, x));  // tanh(-0) = -0
  // 1 - 2 / (e^{2|x|} + 1), with x's sign.
  const __m256 e = exp_ps(_mm256_add_ps(ax, ax));
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 t = _mm256_sub_ps(one, _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(e, one)));
  const __m256 large = _mm256_or_ps(t, _mm256_and_ps(sign, x));
  const __m256 y =
      _mm256_blendv_ps(large, small, _mm256_cmp_ps(ax, _mm256_set1_ps(0.5f), _CMP_LT_OQ));
  return _mm256_blendv_ps(y, _mm256_add_ps(x, x), _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

FK_TARGET_AVX2 inline __m256 sigmoid_ps(__m256 x) {
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 e = exp_ps(_mm256_sub_ps(_mm256_setzero_ps(), x));
  return _mm256_div_ps(one, _mm256_add_ps(one, e));
}

// x / (1 + e^{-x}) for x >= 0, x e^x / (1 + e^x) below: e^{-|x|} never
// overflows, so results stay accurate down to x = -87.3, where e^x turns
// subnormal. (The generic x sigmoid(x) loses them below -87.3 too.)
FK_TARGET_AVX2 inline __m256 silu_ps(__m256 x) {
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 ax = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x);
  const __m256 e = exp_ps(_mm256_sub_ps(_mm256_setzero_ps(), ax));
  const __m256 num =
      _mm256_blendv_ps(x, _mm256_mul_ps(x, e), _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ));
  return _mm256_div_ps(num, _mm256_add_ps(one, e));
}

// z = a x; z > b ? x : log1p(e^z) / a. log1p(u) as log(w) u / (w - 1) with
// w = 1 + u rounded (Goldberg's correction for the rounding of w; u itself
// where w == 1), and z where e^z overflows (the generic form gives inf there).
FK_TARGET_AVX2 inline __m256 softplus_ps(__m256 x, VecParams p) {
  const __m256 a = _mm256_set1_ps(p.a), one = _mm256_set1_ps(1.0f);
  const __m256 z = _mm256_mul_ps(a, x);
  const __m256 u = exp_ps(z);
  const __m256 w = _mm256_add_ps(one, u);
  __m256 l = _mm256_div_ps(_mm256_mul_ps(log_ps(w), u), _mm256_sub_ps(w, one));
  l = _mm256_blendv_ps(l, u, _mm256_cmp_ps(w, one, _CMP_EQ_OQ));
  l = _mm256_blendv_ps(l, z, _mm256_cmp_ps(u, _mm256_set1_ps(__builtin_inff()), _CMP_EQ_OQ));
  const __m256 r = _mm256_div_ps(l, a);
  return _mm256_blendv_ps(r, x, _mm256_cmp_ps(z, _mm256_set1_ps(p.b), _CMP_GT_OQ));
}

template <VecFn kFn>
FK_TARGET_AVX2 inline __m256 apply_ps(__m256 x, VecParams p) {
  if constexpr (kFn == VecFn::Exp) return exp_ps(x);
  if constexpr (kFn == VecFn::Log) return log_ps(x);
  if constexpr (kFn == VecFn::Tanh) return tanh_ps(x);
  if constexpr (kFn == VecFn::Sigmoid) return sigmoid_ps(x);
  if constexpr (kFn == VecFn::Silu) return silu_ps(x);
  if constexpr (kFn == VecFn::Softplus) return softplus_ps(x, p);
}

// y[i] = fn(x[i]) for i < n; y may equal x. The last n % 8 go through a padded
// buffer and the same vector code.
template <VecFn kFn>
FK_TARGET_AVX2 void apply_f32(const float* x, float* y, int64_t n, VecParams p) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, apply_ps<kFn>(_mm256_loadu_ps(x + i), p));
  if (i < n) {
    alignas(32) float buf[8] = {};
    const size_t rest = static_cast<size_t>(n - i) * sizeof(float);
    std::memcpy(buf, x + i, rest);
    _mm256_store_ps(buf, apply_ps<kFn>(_mm256_load_ps(buf), p));
    std::memcpy(y + i, buf, rest);
  }
}

inline void apply_f32(VecFn fn, const float* x, float* y, int64_t n, VecParams p = {}) {
  switch (fn) {
    case VecFn::Exp:
      return apply_f32<VecFn::Exp>(x, y, n, p);
    case VecFn::Log:
      return apply_f32<VecFn::Log>(x, y, n, p);
    case VecFn::Tanh:
      return apply_f32<VecFn::Tanh>(x, y, n, p);
    case VecFn::Sigmoid:
      return apply_f32<VecFn::Sigmoid>(x, y, n, p);
    case VecFn::Silu:
      return apply_f32<VecFn::Silu>(x, y, n, p);
    case VecFn::Softplus:
      return apply_f32<VecFn::Softplus>(x, y, n, p);
  }
}

#undef FK_TARGET_AVX2

}  // namespace fk::cpu::avx2
