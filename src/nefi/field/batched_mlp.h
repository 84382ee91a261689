#pragma once
// batched_mlp: the trunk and output projection of N NeuralFields of one
// architecture (tanh activation, f32, no autocast) evaluated as ONE op each
// way, on the shared Fourier features of one grid.
//   params    (N, P) f32: row b is problem b's flat parameter buffer, laid out
//             exactly as NeuralField's FlatParams (layer{i}.weight/bias, out.*)
//   features  (M, D) f32, the same for every problem (no gradient)
//   result    (N, M, n_out) f32, the pre-head output of every problem
// Per problem the op makes the very GEMM calls a sequential NeuralField makes
// (nefi::dense: bias rows, one GEMM with the same m, n, k and leading
// dimensions, fast_tanh over the same buffer; the skip layer's input is the
// same concatenation), so a row equals a sequential evaluation bit for bit
// when OpenBLAS is deterministic. OpenBLAS has no strided-batched sgemm: the
// op loops over problems inside itself (one fk op, N BLAS calls per layer),
// split over fk's threads when a problem is large enough to pay for it.
// Backward writes the (N, P) gradient directly (one op); problems whose
// `active` flag is 0 are skipped both ways (zero output rows, zero gradient):
// batch_invert freezes stopped and failed problems this way.
// Memory: saves every layer's output (N, M, hidden) and the skip layer's
// input (N, M, hidden + D): linear in N, like N sequential fields.
#include <memory>
#include <vector>

#include "fk/tensor.h"
#include "nefi/field/neural_field.h"

namespace nefi {

struct MlpLayout {
  int depth = 0, hidden = 0, skip_at = 0, features = 0, n_out = 0;
  std::vector<int64_t> w_offset, b_offset;  // depth + 1 entries (the last: out.*)
  int64_t n_params = 0;
  bool has_skip() const { return skip_at > 0 && skip_at < depth; }
  int fan_in(int layer) const;  // input width of layer i (depth: the output layer)
};

// The layout of a NeuralField's parameters; fk::Error unless its activation
// is tanh and it has no autocast (the batched op's scope).
MlpLayout mlp_layout(const NeuralField& field);

using ActiveMask = std::shared_ptr<const std::vector<char>>;

fk::Tensor batched_mlp(const fk::Tensor& params, const fk::Tensor& features,
                       const MlpLayout& layout, ActiveMask active = nullptr);

}  // namespace nefi
