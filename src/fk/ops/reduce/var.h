#pragma once
// Variance and standard deviation over chosen dims (the family's conventions:
// fk/ops/reduce.h). Complex inputs give real results.
#include <cstdint>

#include "fk/tensor.h"

namespace fk {

// Variance: sum |x - mean|^2 / (N - correction) (Bessel's correction by default).
Tensor var(const Tensor& t, const Dims& dims = {}, int64_t correction = 1, bool keepdim = false);
Tensor std(const Tensor& t, const Dims& dims = {}, int64_t correction = 1, bool keepdim = false);

// The pure backward of var: g 2 (x - mean) / (N - correction); x of an
// inexact dtype (f32, f64, c64, c128).
Tensor var_backward(const Tensor& g, const Tensor& x, const Dims& dims = {}, int64_t correction = 1,
                    bool keepdim = false);
// The pure backward of std, `out` its result: var's with g / (2 out), 0 where
// out is 0 (as torch: sqrt's slope there made it NaN).
Tensor std_backward(const Tensor& g, const Tensor& x, const Tensor& out, const Dims& dims = {},
                    int64_t correction = 1, bool keepdim = false);

}  // namespace fk
