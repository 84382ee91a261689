#pragma once
// The CPU engine of the reductions: folding each lane of a contiguous
// [A, R, C] block with a reducer (the op-specific accumulator: SumReducer in
// reduce/sum.cpp, ExtremeReducer in reduce/extremes.cpp, ...), split over
// threads at shape-derived boundaries so that results do not depend on the
// thread count.
#include <algorithm>
#include <array>
#include <complex>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "fk/dtype.h"
#include "fk/ops/cpu/loops.h"
#include "fk/parallel.h"
#include "fk/profile.h"

namespace fk::cpu {

// Rows longer than this are reduced in blocks of this many elements whose
// partial results are combined in block order. The split depends on the shape
// only, so results do not depend on the thread count.
inline constexpr int64_t kReduceBlock = 32768;
// Output lanes handled together when the reduced dims are not innermost, so
// that each step reads a contiguous run of the input (accumulating rows).
inline constexpr int64_t kLaneBlock = 256;

template <typename T>
constexpr bool kIsComplex = std::is_same_v<T, c64> || std::is_same_v<T, c128>;

template <typename T>
struct RealOf {
  using type = T;
};
template <typename T>
struct RealOf<std::complex<T>> {
  using type = T;
};

// Accumulator type: f32 and c64 accumulate in double precision; i64 in
// uint64, whose sums and products wrap as torch's and NumPy's do without a
// signed overflow (undefined behaviour, which UBSan reported).
template <typename T>
struct SumAcc {
  using type = T;
};
template <>
struct SumAcc<int64_t> {
  using type = uint64_t;
};
template <>
struct SumAcc<float> {
  using type = double;
};
template <>
struct SumAcc<c64> {
  using type = c128;
};

// Folds each lane of a contiguous [A, R, C] block with a reducer:
//   Acc init(); void step(Acc&, T value, int64_t r);
//   void merge(Acc& left, const Acc& right);  // right covers later r
//   void finish(int64_t out_index, const Acc&);
// and optionally, for contiguous runs (C == 1):
//   Acc fold_row(const T* x, int64_t n);  // the run x[0..n) in one Acc
//   Acc fold_row(const T* x, int64_t n, int64_t r0);  // elements r0 .. r0 + n
// and for rows of lanes (C > 1):
//   void fold_rows(const T* base, int64_t r0, int64_t r1, int64_t C, int64_t w, Acc* acc);
//     // acc[j] = lane j (< w) of the rows r0 .. r1 at base + r * C
// Every output is accumulated by one thread, by step in increasing r (C > 1:
// the C lanes are independent, so the compiler vectorises across them), by
// fold_rows, or by fold_row (C == 1: 8 partial accumulators in the fixed
// order of cpu/fold_lanes.h); rows longer than kReduceBlock are cut into blocks at
// multiples of kReduceBlock whose partials are merged in block order. The
// split depends on the shape only, so the result is bitwise the same for any
// thread count.
// Lanes j0 .. w of the rows r0 .. r1 at base + r * C, one step at a time
// (acc[j] = lane j): the generic fold of rows of lanes, which the
// reducers' fold_rows fall back to.
template <typename T, typename Red>
void step_rows(const Red& red, const T* base, int64_t r0, int64_t r1, int64_t C, int64_t w,
               typename Red::Acc* acc, int64_t j0 = 0) {
  for (int64_t j = j0; j < w; ++j) acc[j] = red.init();
  for (int64_t r = r0; r < r1; ++r) {
    const T* row = base + r * C;
    for (int64_t j = j0; j < w; ++j) red.step(acc[j], row[j], r);
  }
}

// One contiguous run x[0..n) (elements r0 .. r0 + n of its row) in one Acc.
template <typename T, typename Red>
typename Red::Acc fold_run(const Red& red, const T* x, int64_t n, int64_t r0 = 0) {
  if constexpr (requires { red.fold_row(x, n, r0); }) {
    return red.fold_row(x, n, r0);
  } else if constexpr (requires { red.fold_row(x, n); }) {
    return red.fold_row(x, n);
  } else {
    typename Red::Acc s = red.init();
    for (int64_t i = 0; i < n; ++i) red.step(s, x[i], r0 + i);
    return s;
  }
}

template <typename T, typename Red>
void reduce_block(const T* in, int64_t A, int64_t R, int64_t C, const Red& red) {
  using Acc = typename Red::Acc;
  const int64_t nr = R > kReduceBlock ? (R + kReduceBlock - 1) / kReduceBlock : 1;
  const int64_t nc = (C + kLaneBlock - 1) / kLaneBlock;
  const int64_t tasks = A * nr * nc;
  if (tasks == 0) return;
  if (C == 1 && nr == 1) {  // whole contiguous rows: one task per row, no index arithmetic
    const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(R, 1));
    parallel_for(0, A, grain, [&](int64_t lo, int64_t hi) {
      for (int64_t a = lo; a < hi; ++a) red.finish(a, fold_run(red, in + a * R, R));
    });
    return;
  }
  std::vector<Acc> partial(nr > 1 ? static_cast<size_t>(A * nr * C) : 0);
  const int64_t per_task =
      std::max<int64_t>(1, std::min(R, kReduceBlock) * std::min(C, kLaneBlock));
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / per_task);
  parallel_for(0, tasks, grain, [&](int64_t lo, int64_t hi) {
    std::array<Acc, kLaneBlock> acc;
    for (int64_t task = lo; task < hi; ++task) {
      const int64_t cb = task % nc, rb = (task / nc) % nr, a = task / (nc * nr);
      const int64_t c0 = cb * kLaneBlock, w = std::min(C, c0 + kLaneBlock) - c0;
      const int64_t r0 = rb * kReduceBlock, r1 = std::min(R, r0 + kReduceBlock);
      const T* base = in + a * R * C + c0;
      if (C == 1) {
        acc[0] = fold_run(red, base + r0, r1 - r0, r0);
      } else if constexpr (requires { red.fold_rows(base, r0, r1, C, w, acc.data()); }) {
        red.fold_rows(base, r0, r1, C, w, acc.data());
      } else {
        step_rows(red, base, r0, r1, C, w, acc.data());
      }
      for (int64_t j = 0; j < w; ++j) {
        if (nr == 1) {
          red.finish(a * C + c0 + j, acc[j]);
        } else {
          partial[(a * nr + rb) * C + c0 + j] = acc[j];
        }
      }
    }
  });
  if (nr == 1) return;
  for (int64_t a = 0; a < A; ++a) {
    for (int64_t c = 0; c < C; ++c) {
      Acc s = partial[(a * nr) * C + c];
      for (int64_t rb = 1; rb < nr; ++rb) red.merge(s, partial[(a * nr + rb) * C + c]);
      red.finish(a * C + c, s);
    }
  }
}

inline constexpr auto kPlus = [](const auto& a, const auto& b) { return a + b; };
inline constexpr auto kTimes = [](const auto& a, const auto& b) { return a * b; };

}  // namespace fk::cpu
