#pragma once
// fast_tanh: tanh for the MLP trunk as one vectorisable loop. glibc's scalar
// tanhf (through expm1f) costs ~20 ns an element and was 60 % of a
// deconvolution step; this is a 13/6 odd rational approximation on
// [-7.90531, 7.90531] (clamped outside, where tanh is 1 to f32 precision),
// max abs error ~1e-7 in f32. f32 and f64 inputs (f64 uses std::tanh: it is
// for tests and gradchecks), on the CPU (a device tensor is refused by name).
// Backward: g (1 - y^2) from the saved output.
// One op forward, one op backward.
#include "fk/tensor.h"

namespace nefi {

// The rational's constants.
namespace tanh_rational {
constexpr float kClamp = 7.90531110763549805f;
constexpr float a1 = 4.89352455891786e-03f, a3 = 6.37261928875436e-04f, a5 = 1.48572235717979e-05f,
                a7 = 5.12229709037114e-08f, a9 = -8.60467152213735e-11f,
                a11 = 2.00018790482477e-13f, a13 = -2.76076847742355e-16f;
constexpr float b0 = 4.89352518554385e-03f, b2 = 2.26843463243900e-03f, b4 = 1.18534705686654e-04f,
                b6 = 1.19825839466702e-06f;
}  // namespace tanh_rational

fk::Tensor fast_tanh(const fk::Tensor& x);
// The raw kernel (in == out allowed): n f32 values.
void fast_tanh_f32(const float* in, float* out, int64_t n);

}  // namespace nefi
