#pragma once
// DeepDecoderField (Heckel & Hand 2019): an untrained image generator fitted
// to the data through the operator. A fixed random input (C, 4, 4) passes S
// stages of [1x1 convolution (a C x C matrix over channels), ReLU, channel
// normalisation (zero mean, unit variance over the pixels), bilinear
// upsampling]; a last 1x1 convolution maps the C channels to one, then the
// head. The upsampling sizes grow geometrically from 4 to the domain's shape,
// so every curriculum stage renders at its own grid with the same weights.
// The prior is the architecture's: no spatial convolutions, and few weights
// (S C^2 + C) against the image's pixels.
#include <cstdint>
#include <vector>

#include "nefi/field/field.h"
#include "nefi/field/heads.h"

namespace nefi {

// Separable bilinear resize of x (C, a, b) to (C, to0, to1), cell-centred
// samples with the edges clamped (align_corners false). Differentiable in x.
fk::Tensor bilinear_resize(const fk::Tensor& x, int64_t to0, int64_t to1);

// The generator: input (C, a, b), weights[k] (C, C) for the n = weights.size()
// - 1 stages and weights[n] (1, C) -> the (n0 * n1) raw image. Differentiable
// in the weights (and the input).
fk::Tensor deep_decoder_render(const fk::Tensor& input, const std::vector<fk::Tensor>& weights,
                               int64_t n0, int64_t n1);

class DeepDecoderField : public Field {
 public:
  DeepDecoderField(HeadPtr head, int64_t width, int64_t n_stages, uint64_t seed,
                   fk::DType dtype = fk::DType::F32);
  FieldMap forward(const Domain& domain, double progress) override;
  void reset_parameters(uint64_t seed) override;
  std::string kind() const override { return "deep_decoder"; }

 private:
  HeadPtr head_;
  int64_t width_, n_stages_;
  fk::DType dtype_;
  fk::Tensor input_;  // (C, 4, 4), fixed
};

}  // namespace nefi
