#pragma once
// Readable printing: "tensor([[1, 2], [3, 4]], dtype=f32, shape=[2, 2])",
// eliding the middle of long dimensions.
#include <string>

#include "fk/tensor.h"

namespace fk {

std::string to_string(const Tensor& t, int edge_items = 3);

}  // namespace fk
