#pragma once
// split_rows: x (N, ...) -> N views x[b] (...) recorded as ONE node whose
// backward assembles the N row gradients into one (N, ...) gradient (zeros
// for rows nothing flowed into). batch_invert reduces losses per problem on
// these rows; a row-by-row fk::select would build an (N, ...) zero gradient
// per row (O(N^2) work) and N nodes.
// x: f32/f64 on any device, made contiguous first; the gradient is made on
// x's device. One op each way.
#include <vector>

#include "fk/tensor.h"

namespace nefi {

std::vector<fk::Tensor> split_rows(const fk::Tensor& x);

}  // namespace nefi
