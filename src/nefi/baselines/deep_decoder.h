#pragma once
// DeepDecoderField (Heckel & Hand 2019): an untrained image generator fitted
// to the data through the operator, in 2-D or 3-D. A fixed random input
// (C, 4, 4[, 4]) passes S stages of [linear upsampling to the stage's size,
// 1x1 convolution (a C x C matrix over channels), ReLU, channel normalisation
// with a learned per-channel scale and shift]; a last 1x1 convolution maps
// the C channels to one, then the head. The stage sizes grow geometrically
// from 4 to the domain's shape, so every curriculum stage renders at its own
// grid with the same weights. The prior is the architecture's: no spatial
// convolutions, and few weights (S (C^2 + 2C) + C) against the image's cells.
// The learned shift matters: without it every channel has zero mean and the
// image's mean is pinned at the head's initial value.
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "nefi/field/field.h"
#include "nefi/field/heads.h"
#include "nefi/params.h"

namespace nefi {

// The resize matrices a render reads on a CUDA device, made on the host
// once per (from, to) size and uploaded (a captured step then uploads
// nothing).
using ResizeMatrices = std::map<std::pair<int64_t, int64_t>, fk::Tensor>;

// Separable linear resize of x (C, a, b[, c]) to (C, sizes...), cell-centred
// samples with the edges clamped (align_corners false), on x's device.
// Differentiable in x. cache: where the matrices are kept (null: made each
// call).
fk::Tensor linear_resize(const fk::Tensor& x, const fk::Dims& sizes,
                         ResizeMatrices* cache = nullptr);
// The 2-D case of linear_resize.
fk::Tensor bilinear_resize(const fk::Tensor& x, int64_t to0, int64_t to1);

// The generator: input (C, a, b[, c]); weights = for each of the S stages its
// (C, C) convolution, (C) scale and (C) shift, then the (1, C) output
// convolution (3 S + 1 tensors) -> the raw image (prod(shape), 1).
// Differentiable in the weights (and the input).
fk::Tensor deep_decoder_render(const fk::Tensor& input, const std::vector<fk::Tensor>& weights,
                               const fk::Dims& shape, ResizeMatrices* cache = nullptr);

class DeepDecoderField : public Field {
 public:
  DeepDecoderField(HeadPtr head, int ndim, int64_t width, int64_t n_stages, uint64_t seed,
                   fk::DType dtype = fk::DType::F32);
  FieldMap forward(const Domain& domain, double progress) override;
  void reset_parameters(uint64_t seed) override;
  std::string kind() const override { return "deep_decoder"; }
  // Trains on a CUDA device through the same fk ops (its resize matrices
  // uploaded once per size); its forward reads no progress but the head's.
  bool has_device_path() const override { return true; }
  void to(fk::Device d) override;
  bool retarget(double progress) override;

 private:
  HeadPtr head_;
  int ndim_;
  int64_t width_, n_stages_;
  fk::DType dtype_;
  fk::Tensor input_;  // (C, 4, 4[, 4]), fixed, on the parameters' device
  ResizeMatrices resize_;
};

// The instances' deep_decoder keys: dd_width, dd_stages and dd_lr (the
// curriculum's learning rate, read by curriculum_from(p, shape, "dd_lr")).
void declare_deep_decoder_keys(Params& p, int64_t width, int64_t stages, double lr);
// Checks dd_width and dd_stages (an error names the key): instances call it
// while reading their config, before any data are made.
void check_deep_decoder_keys(const Params& p);
// A DeepDecoderField on `head` from those keys (checked), over an ndim-D
// domain.
std::shared_ptr<Field> deep_decoder_field(const Params& p, HeadPtr head, int ndim, uint64_t seed);

}  // namespace nefi
