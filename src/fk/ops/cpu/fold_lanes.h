#pragma once
// Folding a contiguous run with independent partial accumulators, so that a
// reduction runs at the speed of the loads instead of the latency of one add
// chain, without -ffast-math (which would let the compiler reorder on its own
// terms). The order is fixed and depends on the run's length only:
//
//   lane k (k = 0..7) folds x[i] for i = k, k + 8, k + 16, ... in increasing i,
//   up to the last full group of 8; the lanes are combined as
//   ((l0 . l1) . (l2 . l3)) . ((l4 . l5) . (l6 . l7)), then the n mod 8
//   remaining elements are folded in, in increasing i.
//
// So a result never depends on the thread count or the way callers split
// work, as long as they split at shape-derived boundaries (cpu/reduce_block.h splits
// rows at multiples of its block size). GCC turns the 8 lanes into vector
// registers (f32 terms widened to f64: cvtps2pd + addpd); 8 lanes keep four
// SSE2 f64 add chains in flight, enough to hide the add latency.
#include <cstdint>

namespace fk::cpu {

inline constexpr int64_t kFoldLanes = 8;

// Combines the 8 lanes in the documented tree order.
template <typename Acc, typename Op>
Acc combine_lanes(const Acc (&l)[kFoldLanes], const Op& op) {
  return op(op(op(l[0], l[1]), op(l[2], l[3])), op(op(l[4], l[5]), op(l[6], l[7])));
}

// op(acc, term(x[i])) over x[0..n) in the order above; `identity` is op's
// neutral element (0 for +, 1 for *).
template <typename Acc, typename T, typename Term, typename Op>
Acc fold_lanes(const T* x, int64_t n, Acc identity, const Term& term, const Op& op) {
  Acc l[kFoldLanes];
  for (int64_t k = 0; k < kFoldLanes; ++k) l[k] = identity;
  int64_t i = 0;
  for (; i + kFoldLanes <= n; i += kFoldLanes) {
    for (int64_t k = 0; k < kFoldLanes; ++k) l[k] = op(l[k], term(x[i + k]));
  }
  Acc a = combine_lanes(l, op);
  for (; i < n; ++i) a = op(a, term(x[i]));
  return a;
}

}  // namespace fk::cpu
