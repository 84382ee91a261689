#pragma once
// Padding (constant, reflect, replicate, circular; negative constant pads
// crop); the convention and memory in fk/ops/join.h.
#include <cstdint>
#include <vector>

#include "fk/tensor.h"

namespace fk {

enum class PadMode { Constant, Reflect, Replicate, Circular };
const char* name(PadMode mode);

Tensor pad(const Tensor& t, const std::vector<int64_t>& pads, PadMode mode = PadMode::Constant,
           double value = 0.0);

// The pure backward of pad: the gradient w.r.t. the unpadded input of shape
// `in_shape` (constant: the inverse crop/pad; other modes: padded cells
// accumulated into their sources, in a fixed order).
Tensor pad_backward(const Tensor& g, const Dims& in_shape, const std::vector<int64_t>& pads,
                    PadMode mode);

}  // namespace fk
