#pragma once
// grouped_mlp: the trunks and output projections of N NeuralFields of one
// shape (MlpLayout: any of their activations, f32 or a bf16 autocast trunk) on the shared
// features of one grid, each layer ONE strided-batched GEMM over the N
// problems (fk::gemm_strided_batched_on: cuBLAS on a CUDA device, one
// fk::gemm per problem on the CPU), as one autograd op. batch_invert's device
// loop evaluates its fields this way instead of N separate device MLPs.
//   params    (N, P) f32 or f64: row b is problem b's flat parameter buffer
//             (NeuralField's FlatParams layout, MlpLayout's offsets); a
//             layer's weights are the (out, in) matrix at w_offset in every
//             row (batch stride P), its bias the row's b_offset slice
//   features  (M, D), the params' dtype and device, shared by every problem
//             (batch stride 0; no gradient flows to them)
//   result    (N, M, n_out), the pre-head output of every problem
// Forward per layer: z = bias broadcast over the rows, z += x W^T (one GEMM,
// beta 1: fk::linear's order), y = unary(scale z) (fk's elementwise ops:
// tanh, relu, gelu, silu, softplus, or sin(w0 z) for sine); the skip layer's
// input is [h, features] (fk::cat). Per problem that is exactly fk::linear
// and the field's activation ops on its own weights: on the CPU a row is
// bitwise the separate evaluation (each GEMM is the same fk::gemm call, and
// fk's elementwise ops give every element the same code whatever the layout).
// Backward: gz = act' dL/dy (fk::unary_backward, from y for tanh and relu,
// from the saved scale z otherwise, times scale), db = the row sums of gz
// (fk::sum over the grid), dW = gz^T x and dx = gz W (strided-batched GEMMs
// writing straight into the (N, P) gradient); one op each way per layer.
// bf16 autocast (layout.bf16): the hidden layers' GEMM operands (x, W, gz)
// are rounded to bf16 once and multiplied in f32 (products of bf16 values are
// exact in f32, so this is a tensor core's bf16 x bf16 -> f32 product up to
// the order of the sums); activations, biases, the output layer and every
// gradient stay f32.
// Memory saved for the backward: each hidden layer's output (N, M, hidden)
// and, for activations other than tanh and relu, its input,
// the skip layer's input (N, M, hidden + D), and in bf16 mode the rounded
// operands; linear in N, like N separate fields. Determinism: what fk::gemm
// and cuBLAS give for fixed shapes (bitwise run to run on one machine).
#include "fk/tensor.h"
#include "nefi/field/batched_mlp.h"

namespace nefi {

fk::Tensor grouped_mlp(const fk::Tensor& params, const fk::Tensor& features,
                       const MlpLayout& layout);

}  // namespace nefi
