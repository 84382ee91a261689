#pragma once
// NeuralField: coordinates -> annealed Fourier features -> MLP -> output
// projection -> heads. The MLP has `depth` hidden layers of width `hidden`;
// layer `skip_at` (0 < skip_at < depth) also sees the encoding again
// (concatenated). Initialisation follows the reference: hidden weights
// Kaiming (He) for relu/gelu/silu, SIREN (w0 = 30) for sine, Xavier for tanh
// and softplus, hidden biases 0; the output weights are Xavier scaled by
// out_init_scale and the output bias comes from the heads, so a fresh field
// is near-uniform at the heads' initial values.
// With `autocast` the trunk's products run in half precision and the output
// projection and the heads stay f32: bf16 multiplies bf16-rounded operands
// with f32 accumulation and keeps activations f32 (nefi::dense,
// DensePrecision::Bf16; native on AVX512_BF16); f16 stores the trunk in f16
// (fk autocast).
// All parameters sit in one flat f32 buffer (params()).
// to(cuda device) moves that buffer and the encoding's cache to the device
// (the coordinates stay host objects of the Domain): forward and backward
// then run there. A field with widths <= 128 (f32 or autocast) can run its
// MLP (hidden layers and output projection) as one fused op, one kernel
// forward and three back, and does where that is the faster (by width and
// rows: fused_mlp_device.h; knob NEFI_FUSED_MLP); otherwise each layer
// is one dense_device op (cuBLAS, bias + tanh / relu / sine fused; gelu,
// silu and softplus as fk device ops), the output projection in f32. The
// heads run as fk device ops. Device autocast (bf16 or f16 alike)
// multiplies 16-bit operands with f32 accumulation and keeps activations
// f32 (dense_device.h). The CPU path is untouched by it.
#include <optional>
#include <string>
#include <vector>

#include "nefi/field/field.h"
#include "nefi/field/fourier_features.h"
#include "nefi/field/heads.h"

namespace nefi {

// A sine trunk's frequency: every hidden layer is sin(w0 z) (SIREN's w0).
inline constexpr double kSirenW0 = 30.0;

struct NeuralFieldConfig {
  int hidden = 256;
  int depth = 6;
  int skip_at = 3;                  // <= 0 or >= depth: no skip
  std::string activation = "tanh";  // tanh | relu | gelu | silu | softplus | sine
  int n_octaves = 12;
  bool annealed = true;
  bool include_input = true;
  std::vector<int> periodic_axes;  // fourier_features.h: the domain is a period along these
  double out_init_scale = 0.1;
  std::optional<fk::DType> autocast;  // BF16 or F16
};

class NeuralField : public Field {
 public:
  NeuralField(int ndim, std::vector<HeadPtr> heads, NeuralFieldConfig cfg = {}, uint64_t seed = 0);
  FieldMap forward(const Domain& domain, double progress) override;
  void reset_parameters(uint64_t seed) override;
  std::string kind() const override { return "neural"; }
  std::optional<fk::DType> autocast() const override { return cfg_.autocast; }
  // The pre-head network output, (N, n_out) over the domain's cells.
  fk::Tensor raw(const Domain& domain, double progress);
  const NeuralFieldConfig& config() const { return cfg_; }
  bool has_device_path() const override { return true; }
  // Moves parameters and encoding to d (cpu or an available CUDA device).
  void to(fk::Device d) override;
  // The encoding's gate (FourierFeatures::retarget), with heads that do not read progress.
  bool retarget(double progress) override;
  fk::Device device() const { return params_.flat().device(); }
  FourierFeatures& encoding() { return enc_; }
  const std::vector<HeadPtr>& heads() const { return heads_; }

 private:
  fk::Tensor activate(const fk::Tensor& x) const;
  fk::Tensor trunk_on_device(const fk::Tensor& x, const std::vector<fk::Tensor>& p) const;
  const fk::Tensor& coords_for(const Domain& domain);

  int ndim_;
  std::vector<HeadPtr> heads_;
  NeuralFieldConfig cfg_;
  FourierFeatures enc_;
  int n_out_ = 0;
  fk::Dims coords_shape_;
  fk::Tensor coords_;
};

}  // namespace nefi
