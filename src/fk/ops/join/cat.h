#pragma once
// Joining tensors along a dim (cat, stack) and splitting one into views
// (split); shapes, dtypes and memory in fk/ops/join.h.
#include <cstdint>
#include <vector>

#include "fk/tensor.h"

namespace fk {

Tensor cat(const std::vector<Tensor>& ts, int64_t dim = 0);
Tensor stack(const std::vector<Tensor>& ts, int64_t dim = 0);
std::vector<Tensor> split(const Tensor& t, int64_t size, int64_t dim = 0);
std::vector<Tensor> split(const Tensor& t, const std::vector<int64_t>& sizes, int64_t dim);

// The pure backward of cat: g cut along `dim` into pieces of the inputs'
// `sizes`, each cast to its input's dtype (the real part for a real input);
// stack's is the same with the pieces squeezed at dim. split returns views,
// whose own backward applies.
std::vector<Tensor> cat_backward(const Tensor& g, int64_t dim, const std::vector<int64_t>& sizes,
                                 const std::vector<DType>& dtypes);

}  // namespace fk
