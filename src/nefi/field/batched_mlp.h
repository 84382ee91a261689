#pragma once
// batched_mlp: the trunk and output projection of N NeuralFields of one
// architecture (any of their activations, f32 or a bf16 autocast trunk)
// evaluated as ONE op each way, on the shared Fourier features of one grid.
//   params    (N, P) f32: row b is problem b's flat parameter buffer, laid out
//             exactly as NeuralField's FlatParams (layer{i}.weight/bias, out.*)
//   features  (M, D) f32, the same for every problem (no gradient)
//   result    (N, M, n_out) f32, the pre-head output of every problem
// On the CPU (device operands are refused by name; the device batch runs
// grouped_mlp.h).
// Per problem the op makes the very products a sequential NeuralField makes
// (nefi::dense, f32: the fused AVX-512 kernel of dense_gemm.h with bias and
// activation applied to each tile in registers where the shape fits it, else
// fk::gemm and the epilogue after; gelu, silu, softplus and sine after the
// product through fk's own element code, fk::unary_forward_host, as the
// field's fk op applies it; the same m, n, k and leading dimensions;
// the skip layer's input the same concatenation; bf16 autocast: the hidden
// layers' products with bf16 operands as dense's Bf16 precision makes them,
// the output layer f32), so a row equals a sequential evaluation bit for bit. A grouped GEMM: N
// independent products a layer (each problem has its own weights), run inside one parallel region
// over problems, the kernels' own block loops inline in it. Backward writes the (N, P) gradient
// directly (one op); problems whose `active` flag is 0 are skipped both ways (zero output rows,
// zero gradient): batch_invert freezes stopped and failed problems this way. Memory: saves every
// layer's output (N, M, hidden), its input to the activation too where the activation's
// derivative reads it (gelu, silu, softplus, sine), and the skip layer's input (N, M, hidden + D):
// linear in N, like N sequential fields.
#include <memory>
#include <vector>

#include "fk/ops/unary.h"
#include "fk/tensor.h"
#include "nefi/field/dense.h"
#include "nefi/field/neural_field.h"

namespace nefi {

struct MlpLayout {
  // The hidden layers' activation, as NeuralField::activate applies it:
  // y = unary(scale z) (sine: sin(w0 z), SIREN's; the others scale 1). tanh
  // and relu are also `act`, fused into the CPU products' epilogue; act
  // None: `unary` after a plain product.
  DenseActivation act = DenseActivation::Tanh;
  fk::UnaryOp unary = fk::UnaryOp::Tanh;
  fk::UnaryParams unary_params;  // softplus: beta 1, threshold 20
  float scale = 1.0f;
  bool bf16 = false;  // autocast bf16: the hidden layers' products (dense.h's DensePrecision::Bf16)
  int depth = 0, hidden = 0, skip_at = 0, features = 0, n_out = 0;
  std::vector<int64_t> w_offset, b_offset;  // depth + 1 entries (the last: out.*)
  int64_t n_params = 0;
  bool has_skip() const { return skip_at > 0 && skip_at < depth; }
  int fan_in(int layer) const;  // input width of layer i (depth: the output layer)
};

// The layout of a NeuralField's parameters; fk::Error unless its autocast is
// none or bf16 (the batched op's scope).
MlpLayout mlp_layout(const NeuralField& field);

using ActiveMask = std::shared_ptr<const std::vector<char>>;

fk::Tensor batched_mlp(const fk::Tensor& params, const fk::Tensor& features,
                       const MlpLayout& layout, ActiveMask active = nullptr);

}  // namespace nefi
