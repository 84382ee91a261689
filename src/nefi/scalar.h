#pragma once
// Host scalars without ops: reading a one-element f32/f64 tensor directly, and
// making a 0-dim tensor by writing its element (fk::Tensor::item() converts
// through a copy and fk::scalar_tensor() fills; each counts as an op, and a
// solver step reads and makes several).
#include "fk/tensor.h"

namespace nefi {

double scalar_value(const fk::Tensor& t);
fk::Tensor make_scalar(double value, fk::DType dtype);

}  // namespace nefi
