#pragma once
// Mixed precision in the nn layers. Inside an fk::amp::AutocastGuard(BF16 or
// F16) every layer computes in that dtype while its parameters stay f32: they
// are the master weights the optimizer updates, and the casts below are fk's
// differentiable to(), so gradients reach them in f32.
//   Convolutions, pooling, global pooling, broadcast: features, weight and
//     bias are cast to the autocast dtype (the ops accumulate 16-bit in f32).
//   Linear: fk::linear's own autocast.
//   BatchNorm, InstanceNorm: normalize f32 features (their statistics are
//     accumulated in f64 either way) and hand back the autocast dtype, so a
//     16-bit network stays 16-bit between layers without 16-bit statistics.
//   Activations, dropout, add, cat: in their inputs' dtype (fk promotes a
//     mixed pair).
//   Losses: 16-bit logits are promoted to f32 first.
// Only f32 and 16-bit tensors are cast: an f64 network ignores autocast.
#include <optional>
#include <string>

#include "fk/amp.h"
#include "fk/tensor.h"

namespace minkowski::nn {

// t in the autocast dtype when autocast is on and t is f32 or the other
// 16-bit dtype; t itself otherwise.
fk::Tensor autocast(const fk::Tensor& t);

// What a normalization layer with parameters of dtype `param` normalizes:
// under autocast, 16-bit features cast to `param` (f32); otherwise the
// features as they are.
fk::Tensor to_norm_input(const fk::Tensor& features, fk::DType param);

// An autocast scope for a precision named by the user: BF16 or F16 turn
// autocast on, F32 leaves it off (no scope). Other dtypes are an error.
class Precision {
 public:
  explicit Precision(fk::DType dtype);

 private:
  std::optional<fk::amp::AutocastGuard> guard_;
};

// "f32", "bf16" or "fp16" (also "f16") as a dtype; anything else an fk::Error
// naming `where`.
fk::DType parse_precision(const std::string& name, const std::string& where);

}  // namespace minkowski::nn
