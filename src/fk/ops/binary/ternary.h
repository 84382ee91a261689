#pragma once
// The elementwise ternary ops (where, addcmul, addcdiv, lerp) with NumPy
// broadcasting of all three operands; conventions in fk/ops/binary.h.
#include <array>

#include "fk/ops/binary/binary.h"
#include "fk/tensor.h"

namespace fk {

// cond ? a : b (cond is bool; a, b promoted).
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
// self + value * t1 * t2
Tensor addcmul(const Tensor& self, const Tensor& t1, const Tensor& t2, double value = 1.0);
// self + value * t1 / t2
Tensor addcdiv(const Tensor& self, const Tensor& t1, const Tensor& t2, double value = 1.0);
// a + w * (b - a)
// lerp = a + w (b - a), the one formula everywhere (host, device, in place):
// at w = 1 with far-apart ends it can miss b by a rounding, and an infinite a
// gives NaN (torch switches to b - (b - a)(1 - w) for |w| >= 0.5).
Tensor lerp(const Tensor& a, const Tensor& b, const Tensor& w);
Tensor lerp(const Tensor& a, const Tensor& b, double w);

enum class TernaryOp { Where, Addcmul, Addcdiv, Lerp };

// Pure forward of op(x, y, z): where(x, y, z), addcmul/addcdiv(x, y, z, value),
// lerp(x, y, z); op_name names the op in errors and the profile.
Tensor ternary_forward(TernaryOp op, const Tensor& x, const Tensor& y, const Tensor& z,
                       double value, const char* op_name);
// Pure backward: the gradients w.r.t. x, y, z (undefined where `need` is
// false, and always for where's condition), reduced to their shapes and
// dtypes. The tensors needed (others may be undefined): Where: x; Addcmul: z
// for need[1], y for need[2]; Addcdiv: z, and y for need[2]; Lerp: z for
// need[0] or need[1], x and y for need[2].
std::array<Tensor, 3> ternary_backward(TernaryOp op, const Tensor& grad, const Tensor& x,
                                       const Tensor& y, const Tensor& z,
                                       const std::array<OperandInfo, 3>& info,
                                       const std::array<bool, 3>& need, double value = 1.0);

}  // namespace fk
