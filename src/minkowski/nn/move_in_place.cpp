#include "minkowski/nn/move_in_place.h"

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "fk/autograd.h"

namespace minkowski::nn {
namespace {

// One tensor's move: its copy (undefined when it is on the device already)
// and its gradient's (undefined when it has none or that is on the device).
struct PlannedMove {
  fk::Tensor target, moved, moved_grad;
};

// Cannot throw: the copies exist, only pointers and counters change.
void swap_storage(const fk::Tensor& t, const fk::Tensor& moved) {
  const uint32_t version = t.version();
  fk::TensorImpl* impl = t.impl();
  impl->storage = moved.storage();
  impl->storage->version.store(version + 1, std::memory_order_relaxed);
  impl->strides = moved.strides();
  impl->offset = moved.offset();
}

}  // namespace

fk::Tensor contiguous_copy_on(const fk::Tensor& t, fk::Device device) {
  return t.detach().contiguous().to(device);
}

void move_in_place(const std::vector<fk::Tensor>& tensors, fk::Device device,
                   const CopyOnDevice& copy) {
  fk::autograd::NoGradGuard no_grad;
  std::vector<PlannedMove> plan;
  for (const fk::Tensor& t : tensors) {
    const bool listed = std::any_of(plan.begin(), plan.end(),
                                    [&](const PlannedMove& m) { return m.target.is_same(t); });
    if (listed) continue;
    PlannedMove m{t, {}, {}};
    if (t.device() != device) m.moved = copy(t, device);
    const fk::Tensor grad = t.requires_grad() ? t.grad() : fk::Tensor();
    if (grad.defined() && grad.device() != device) m.moved_grad = copy(grad, device);
    plan.push_back(std::move(m));
  }
  for (const PlannedMove& m : plan) {
    if (m.moved.defined()) swap_storage(m.target, m.moved);
    if (m.moved_grad.defined()) m.target.set_grad(m.moved_grad);
  }
}

}  // namespace minkowski::nn
