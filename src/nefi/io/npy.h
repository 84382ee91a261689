#pragma once
// NumPy .npy (format 1.0) writer for real f32/f64 tensors, C order,
// little-endian. Throws fk::Error when the file cannot be written.
#include <string>

#include "fk/tensor.h"

namespace nefi {

void write_npy(const std::string& path, const fk::Tensor& t);

}  // namespace nefi
