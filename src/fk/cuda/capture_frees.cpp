#include "fk/cuda/capture_frees.h"

#include <utility>

namespace fk::cuda {

void CaptureFrees::allocated(void* p, bool capturing) {
  if (capturing && p != nullptr) captured_.insert(p);
}

bool CaptureFrees::free_now(void* p, bool capturing) {
  // A graph allocation is freed as asked: by a free node inside its capture,
  // or, after the capture, as any allocation.
  if (captured_.erase(p) > 0 || !capturing) return true;
  held_.push_back(p);
  return false;
}

std::vector<void*> CaptureFrees::take_held_back() {
  return std::exchange(held_, {});
}

}  // namespace fk::cuda
