#pragma once
// fast_tanh: tanh for the MLP trunk as one vectorisable loop. glibc's scalar
// tanhf (through expm1f) costs ~20 ns an element and was 60 % of a
// deconvolution step; this is a 13/6 odd rational approximation on
// [-7.90531, 7.90531] (clamped outside, where tanh is 1 to f32 precision),
// max abs error ~1e-7 in f32. f32 and f64 inputs (f64 uses std::tanh: it is
// for tests and gradchecks). Backward: g (1 - y^2) from the saved output.
// One op forward, one op backward.
#include "fk/tensor.h"

namespace nefi {

fk::Tensor fast_tanh(const fk::Tensor& x);
// The raw kernel (in == out allowed): n f32 values.
void fast_tanh_f32(const float* in, float* out, int64_t n);

}  // namespace nefi
