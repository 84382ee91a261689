#pragma once
// Rolling and flipping along dims; semantics and memory in fk/ops/join.h.
#include <cstdint>
#include <vector>

#include "fk/tensor.h"

namespace fk {

Tensor roll(const Tensor& t, const std::vector<int64_t>& shifts, const std::vector<int64_t>& dims);
Tensor flip(const Tensor& t, const std::vector<int64_t>& dims);

// The pure backward functions: roll by -shifts, and flip again.
Tensor roll_backward(const Tensor& g, const std::vector<int64_t>& shifts,
                     const std::vector<int64_t>& dims);
Tensor flip_backward(const Tensor& g, const std::vector<int64_t>& dims);

}  // namespace fk
