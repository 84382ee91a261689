#pragma once
// Elementwise binary and ternary ops with NumPy broadcasting and type
// promotion, differentiable (gradients reduced back over broadcast dims).
// f16/bf16 operands are computed in f32 and the result stored in the promoted
// type. Integer division is true division (-> f32); an integer tensor to an
// integer tensor's powers is exact (wrapping past the type, as torch's; the
// scalar form pow(x, double) is f32 for integers); for two bools + and maximum
// are or, * and minimum are and, - (and an alpha) is refused; add/sub's alpha on integers
// must be a whole value they hold. Comparisons give bool. A 0-d tensor
// promotes as any other tensor (NumPy 2's rule: f32[3] + f64[] is f64, where
// torch keeps f32 for a 0-d operand of the same kind); the scalar forms
// (double operands) keep the tensor's dtype where it holds the value.
// The in-place forms (add_, mul_, addcmul_, ...) bump the version counter and
// refuse tensors autograd would have to record (use the out-of-place form).
//
// One header per kind under fk/ops/binary/, each declaring its pure forward
// and backward: binary.h (`a op b`, scalar forms, operators), ternary.h
// (where, addcmul, addcdiv, lerp) and inplace.h (add_, mul_, ...); this
// header includes them all.
#include "fk/ops/binary/binary.h"
#include "fk/ops/binary/inplace.h"
#include "fk/ops/binary/ternary.h"
