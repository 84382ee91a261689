#pragma once
// Moving a module's tensors to a device in place, all or none (Module::to).
// Every copy (of each tensor not on the device, and of each gradient not on
// it) is made first; only then is each handle's storage swapped for its copy
// and each gradient replaced. A copy that fails (an absent device, memory
// running out halfway) thus throws before anything changed: no module is
// left split across devices. Peak memory: every copy at once beside the
// originals.
#include <functional>
#include <vector>

#include "fk/device.h"
#include "fk/tensor.h"

namespace minkowski::nn {

// The copy a tensor gets on `device`: contiguous, its values, no autograd history.
fk::Tensor contiguous_copy_on(const fk::Tensor& t, fk::Device device);
using CopyOnDevice = std::function<fk::Tensor(const fk::Tensor& t, fk::Device device)>;

// Moves `tensors` (a handle listed twice moves once) and the defined
// gradients of those that require grad to `device` in place: each keeps its
// handle, dtype, shape and requires_grad, and gets `copy`'s result as its
// storage; the storage's version is one past the old one (a fresh storage
// starts at 0, which a never-updated tensor saved by an earlier graph also
// has, and the saved-tensor check has to see the move). `copy` is
// contiguous_copy_on but for tests that make it fail partway.
void move_in_place(const std::vector<fk::Tensor>& tensors, fk::Device device,
                   const CopyOnDevice& copy = contiguous_copy_on);

}  // namespace minkowski::nn
