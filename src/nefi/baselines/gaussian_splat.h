#pragma once
// GaussianSplatField: the image is a sum of P anisotropic, axis-aligned
// Gaussians with trainable centres c_p, log-widths l_p and amplitudes a_p,
//   raw(r) = b + sum_p a_p exp(-1/2 sum_d ((r_d - c_pd) / exp(l_pd))^2),
// in the domain's normalised coordinates r in (-1, 1)^ndim, then one head
// (b is the head's initial bias, so zero amplitudes give its initial value).
// The primitives carry no grid, so every curriculum stage renders the same
// image. Fitted through the operator like any field (a baseline for sparse,
// blob-like scenes). Without Kerbl-style densification: P is fixed.
#include <cstdint>
#include <vector>

#include "nefi/field/field.h"
#include "nefi/field/heads.h"

namespace nefi {

// raw - b at `coords` (M, ndim) for centres (P, ndim), log_widths (P, ndim)
// and amplitudes (P): shape (M). Differentiable in all four.
fk::Tensor render_gaussian_splats(const fk::Tensor& coords, const fk::Tensor& centres,
                                  const fk::Tensor& log_widths, const fk::Tensor& amplitudes);

class GaussianSplatField : public Field {
 public:
  // Centres on a jittered lattice of m = ceil(P^(1/ndim)) sites per axis,
  // widths half the lattice spacing, amplitudes N(0, 0.01^2); from `seed`.
  GaussianSplatField(int ndim, HeadPtr head, int64_t n_primitives, uint64_t seed,
                     fk::DType dtype = fk::DType::F32);
  FieldMap forward(const Domain& domain, double progress) override;
  void reset_parameters(uint64_t seed) override;
  std::string kind() const override { return "gaussian_splat"; }
  int64_t n_primitives() const { return n_primitives_; }
  // Trains on a CUDA device through the same fk ops (the grid's coordinates
  // uploaded once per grid); its forward reads no progress but the head's.
  bool has_device_path() const override { return true; }
  void to(fk::Device d) override;
  bool retarget(double progress) override;

 private:
  int ndim_;
  HeadPtr head_;
  int64_t n_primitives_;
  fk::DType dtype_;
  fk::Device device_ = fk::kCPU;
  fk::Dims coords_shape_;
  fk::Tensor coords_;  // (cells, ndim) on device_
};

}  // namespace nefi
