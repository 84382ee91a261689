#pragma once
// Shifted exponentials exp(x - m) and their sums, over a contiguous run or
// over rows of lanes: the inner loops shared by softmax and logsumexp.
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "fk/ops/cpu/exp_shifted_sum.h"
#include "fk/ops/cpu/lane_sums.h"
#include "fk/ops/cpu/reduce_block.h"
#include "fk/ops/cpu/vec_math.h"

namespace fk::cpu {

// e = exp(x_i - m) over e[0..n), in place: the AVX2 exp for f32 with `vec`
// (<= 1 ulp, vec_math.h), else std::exp.
template <typename T>
void exp_in_place(T* e, int64_t n, bool vec) {
  if constexpr (std::is_same_v<T, float>) {
    if (vec) return avx2::apply_f32(avx2::VecFn::Exp, e, e, n);
  }
  for (int64_t i = 0; i < n; ++i) e[i] = std::exp(e[i]);
}

// sum exp(x_i - m) over the run x[0..n), a buffer of kLaneBlock at a time,
// in the fixed 8-lane order of cpu/lane_sums.h (the result depends on n
// only); softmax (kStore) also keeps each exp(x_i - m) in y. f32 with `vec`:
// the same exps and order in one AVX2 pass (cpu/exp_shifted_sum.h).
template <typename T, bool kStore>
typename SumAcc<T>::type exp_shifted_run(const T* x, T* y, int64_t n, T m, bool vec) {
  using Acc = typename SumAcc<T>::type;
  if constexpr (std::is_same_v<T, float>) {
    if (vec) return avx2::exp_shifted_sum_f32<kStore>(x, y, n, m);
  }
  LaneSums<Acc> sums;
  T buf[kLaneBlock];
  for (int64_t at = 0; at < n; at += kLaneBlock) {
    const int64_t len = std::min(kLaneBlock, n - at);
    T* e = buf;
    if constexpr (kStore) e = y + at;
    for (int64_t i = 0; i < len; ++i) e[i] = x[at + i] - m;
    exp_in_place(e, len, vec);
    const int64_t full = len - len % kFoldLanes;
    sums.add_groups(e, full);
    if (at + len == n) return sums.total(e + full, len - full);
  }
  return Acc(0);
}

// e = exp(x - m) for the R values of each of w lanes (lane j at x + j + r C),
// summed into total[j] in r order (one chain per lane; the lanes are the
// vector); softmax (kStore) also stores e in y.
template <typename T, bool kStore, typename Acc>
void exp_shifted_lanes(const T* x, T* y, int64_t R, int64_t C, int64_t w, const T* m, Acc* total,
                       bool vec) {
  T buf[kLaneBlock];
  for (int64_t r = 0; r < R; ++r) {
    const T* xr = x + r * C;
    T* e = buf;
    if constexpr (kStore) e = y + r * C;
    for (int64_t j = 0; j < w; ++j) e[j] = xr[j] - m[j];
    exp_in_place(e, w, vec);
    for (int64_t j = 0; j < w; ++j) total[j] += e[j];
  }
}

}  // namespace fk::cpu
