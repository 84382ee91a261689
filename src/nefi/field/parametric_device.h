#pragma once
// parametric_shapes written as fk ops, for a ParametricField of blobs or
// ellipses on a CUDA device (where the CPU op, parametric_field.h, does not
// run): per shape k of channel c, u = (x - m) M, q = |u|^2, g = exp(-q / 2)
// (blobs) or sigmoid((1 - q) inv_2eps) (ellipses), and
// raw_c = b_c + sum_k sinh(alpha_ck) g_ck. Autograd gives the gradient.
// u is d <= 3 broadcast multiply-adds, u = sum_l (x - m)_l M_l, in the CPU
// op's order of sums: elementwise ops, no GEMM (so no TF32, and no launch
// per shape). Memory: a few (C K, N, d) blocks a step, kept for the
// backward, where the CPU op keeps none (C K N d f32 numbers each: 6 GB for
// 256 shapes on a 128^3 grid); nothing here chunks them.
// inv_2eps is a 0-dim tensor on the shapes' device (rewritten in place as
// the edge anneals, so a captured step stays valid); undefined for blobs.
// The arithmetic is the shapes' dtype where the CPU op's is f64: an f32 run
// differs from it in round-off.
#include "fk/tensor.h"

namespace nefi {

// coords (N, d), shapes (C, K, 1 + d + d^2), background (C), one device and
// dtype; returns raw (N, C).
fk::Tensor parametric_shapes_ops(const fk::Tensor& coords, const fk::Tensor& shapes,
                                 const fk::Tensor& background, const fk::Tensor& inv_2eps);

}  // namespace nefi
