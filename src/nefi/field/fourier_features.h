#pragma once
// FourierFeatures: gamma(x) = [x, w_k sin(2^k pi x), w_k cos(2^k pi x)]_{k<K}
// with the cosine band gate w_k(beta) = (1 - cos(pi clip(beta - k, 0, 1))) / 2,
// beta = progress * K (Nerfies; NeTMY Eq. 27, NeFTY Eq. 21).
// Periodic axes: their raw coordinate's slot holds 0. Cell centres lie in
// (-1, 1) with the domain 2 long, so every sin / cos feature has the domain
// as a period along such an axis, and so has any network of the features.
//
// Coordinates are fixed per stage, so the ungated features are computed once
// per coordinate shape and cached. An annealing forward is one multiply by the
// gate row; once every gate is 1 (progress >= 1, or annealing off) a forward
// returns the cached tensor: zero ops. Input (N, d) f32; output (N, out_dim()).
// The cache is keyed on the coordinate tensor's storage and version.
// After to(cuda device) the features are still computed on the host from the
// host coordinates (once per coordinate set, so a device forward sees the
// CPU's f32 features bit for bit) and kept on the device with the gate row:
// a forward there is again one multiply, or zero ops.
#include <memory>
#include <vector>

#include "fk/tensor.h"

namespace nefi {

class FourierFeatures {
 public:
  FourierFeatures(int in_dim, int n_octaves, bool include_input = true, bool annealed = true,
                  std::vector<int> periodic_axes = {});

  int out_dim() const { return (include_input_ ? in_dim_ : 0) + 2 * n_octaves_ * in_dim_; }
  int n_octaves() const { return n_octaves_; }
  // Gate of band k at `progress` (1 when annealing is off).
  double band_weight(int k, double progress) const;
  fk::Tensor forward(const fk::Tensor& coords, double progress);
  // Readies a forward at `progress` to enqueue exactly the device work of the
  // last forward (same kernels, same buffers), so a CUDA graph that captured
  // that forward stays valid: true when both are fully open, or both gated
  // and the gate row was rewritten in place (same values a fresh forward
  // would upload); false on the host, before any forward, or when bands
  // opening changes the work (the caller captures again).
  bool retarget(double progress);
  void clear_cache();
  // Where forward's result lives (the coordinates stay on the host).
  void to(fk::Device d);
  fk::Device device() const { return device_; }

 private:
  int in_dim_, n_octaves_;
  bool include_input_, annealed_;
  std::vector<bool> periodic_;  // per axis
  fk::Device device_ = fk::kCPU;
  // Cached ungated features and the coordinates they belong to.
  const void* key_ptr_ = nullptr;
  uint32_t key_version_ = 0;
  fk::Dims key_shape_;
  fk::Tensor base_;
  bool all_open(double progress) const;
  fk::Tensor gate_row(double progress) const;  // on the host, in base_'s dtype
  // Cached gate row for the last progress value.
  double gate_progress_ = -1;
  fk::Tensor gate_;
  double last_progress_ = -1;  // of the last forward
};

}  // namespace nefi
