#pragma once
// The sum of a run that is produced in chunks (softmax's and logsumexp's
// exp(x - max), computed a buffer at a time), in exactly the order of
// cpu/fold_lanes.h: element i of the run goes to lane i mod 8 while it is in a
// full group of 8, the lanes are combined in fold_lanes' tree, then the last
// n mod 8 elements are added in increasing i. Eight independent f64 add chains
// instead of one, and a result that depends on the run's length only (not on
// the thread count, nor on the chunk size as long as every chunk but the last
// is a whole number of groups).
#include <cstdint>

#include "fk/ops/cpu/fold_lanes.h"

namespace fk::cpu {

template <typename Acc>
class LaneSums {
 public:
  // Adds e[0..n) as the next elements of the run; n is a multiple of 8.
  template <typename T>
  void add_groups(const T* e, int64_t n) {
    Acc l[kFoldLanes];
    for (int64_t k = 0; k < kFoldLanes; ++k) l[k] = lanes_[k];
    for (int64_t i = 0; i + kFoldLanes <= n; i += kFoldLanes) {
      for (int64_t k = 0; k < kFoldLanes; ++k) l[k] += static_cast<Acc>(e[i + k]);
    }
    for (int64_t k = 0; k < kFoldLanes; ++k) lanes_[k] = l[k];
  }
  // The lanes combined, then the run's last elements rest[0..n), n < 8, added.
  template <typename T>
  Acc total(const T* rest, int64_t n) const {
    Acc a = combine_lanes(lanes_, [](Acc x, Acc y) { return x + y; });
    for (int64_t i = 0; i < n; ++i) a += static_cast<Acc>(rest[i]);
    return a;
  }

 private:
  Acc lanes_[kFoldLanes] = {};
};

}  // namespace fk::cpu
