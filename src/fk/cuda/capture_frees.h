#pragma once
// Which frees the device pool (runtime.h's pool_deallocate) may issue while a
// stream capture runs, as plain bookkeeping: no CUDA header, so CPU-only
// builds and host tests use it too.
//
// cudaFreeAsync inside a capture is recorded as a graph free node, and a free
// node takes only a graph allocation: freeing memory allocated before the
// capture (a tensor made by an eager warm-up and dropped by the captured
// step) fails with an invalid-value error, which the pool cannot report from
// a destructor and which the next launch check would then blame on an
// unrelated kernel. So the pool notes the pointers it hands out while a
// capture runs; a free of any other pointer while a capture runs is held back
// and issued, in stream order, at the first allocation or free made when no
// capture runs. A graph that still reads such a buffer after its step dropped
// it is the caller's bug, as with any freed tensor (nefi's StepGraph refuses
// a step whose allocations do not balance).
#include <cstdint>
#include <unordered_set>
#include <vector>

namespace fk::cuda {

class CaptureFrees {
 public:
  // The pool handed out p (capturing: while a capture ran on its stream).
  void allocated(void* p, bool capturing);
  // The pool is asked to free p: true when it may free p now; false when p
  // is held back (a capture runs and p is not one of its allocations).
  bool free_now(void* p, bool capturing);
  // The held-back pointers, to free now that no capture runs (emptied).
  std::vector<void*> take_held_back();
  int64_t held_back() const { return static_cast<int64_t>(held_.size()); }

 private:
  std::unordered_set<void*> captured_;  // handed out while a capture ran, not yet freed
  std::vector<void*> held_;
};

}  // namespace fk::cuda
