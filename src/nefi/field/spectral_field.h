#pragma once
// SpectralField: each raw channel a cosine series over the grid, then the
// heads (the reference's Fourier-basis and spectral-preconditioned fields,
// in one class):
//   raw(x) = sum_k g_k theta_k prod_a cos(pi k_a (i_a + 1/2) / n_a)
// over k_a in 0..m_a - 1 on each axis (the DCT-II's cosines: the cell
// centres of any grid sample the same continuous cosine). Two things set
// what it prefers:
//   modes       m_a = min(modes, n_a). Fewer than the cells: a band-limited
//               field (the Fourier basis); 0: as many as the cells, a grid
//               in another basis.
//   smoothness  g_k = c (1 + |kappa|^2)^(-s / 2), kappa_a = k_a L_max / L_a
//               (half periods across the longest axis). Gradient descent
//               in theta is descent in the field preconditioned by g^2:
//               the coarse modes fit first, the fine ones late, so an
//               iterative method stopped at the noise floor (Morozov) has
//               fitted the scene before the noise (the Sobolev-
//               preconditioned grid). That needs steps that follow the
//               gradient (from_forward runs L-BFGS): Adam moves a mode the
//               data barely see (a blur's fine ones) as far as one they
//               pin and fills the field with them (docs/performance.md).
//               s = 0: every mode alike (a grid in another basis).
//   c           1 / sqrt(sum_k (g_k / c)^2 nu_k), nu_k = prod_a (k_a ? 1/2 : 1)
//               (a cosine's mean square): a step of every theta by +-1 at
//               random changes the field by about 1 RMS per cell, as a
//               grid's step by +-1 does.
// init     every theta 0 but the constant one, which starts the field at the
//          heads' initial value (the same for every seed)
// stages   the shared modes keep their amplitudes (theta rescaled by
//          g / g'), new ones start at 0: a refinement keeps the field's
//          values exactly at the old modes' cosines, a coarsening drops
//          the modes the new grid cannot hold
// forward  one DCT-III over the spatial axes (fk::dct, REDFT01's definition), the
//          modes zero-padded to the cells: O(N log N). One matrix per axis
//          was 2.7x its time per step at 256^2 (docs/performance.md).
// On a CUDA device (to()) the DCT runs through cuFFT (fk::dct); a stage's
// rescaling of the coefficients goes through the host, as a grid field's
// resampling does.
#include <cstdint>
#include <string>
#include <vector>

#include "nefi/field/field.h"
#include "nefi/field/heads.h"

namespace nefi {

struct SpectralConfig {
  int modes = 0;            // cosines per axis, 0: the grid's cells
  double smoothness = 2.0;  // s >= 0
};

// The per-mode gains g_k (m_0, ..., m_{d-1}) of a series with m_a modes per
// axis on a domain of these extents (as above; c included).
std::vector<double> spectral_gains(const fk::Dims& modes, const std::vector<double>& extent,
                                   double smoothness);

class SpectralField : public Field {
 public:
  SpectralField(const Domain& domain, std::vector<HeadPtr> heads, SpectralConfig cfg = {});
  FieldMap forward(const Domain& domain, double progress) override;
  void on_stage_start(const Domain& domain) override;
  void reset_parameters(uint64_t seed) override;
  std::string kind() const override { return "spectral"; }
  const fk::Dims& modes() const { return modes_; }

  bool has_device_path() const override { return true; }
  // Moves the coefficients and gains to d; later stages' are allocated there.
  void to(fk::Device d) override;
  // The coefficients have nothing progress moves: true on a device while no head reads it.
  bool retarget(double progress) override;

 private:
  void build(const Domain& domain);  // modes_, gains_, dct_gains_ and the parameter
  std::vector<HeadPtr> heads_;
  SpectralConfig cfg_;
  int n_out_ = 0;
  fk::Dims shape_, modes_;
  std::vector<double> gains_;  // (m...), as spectral_gains
  fk::Tensor dct_gains_;       // (1, m...) f32: the gains, halved per axis where k_a > 0
  fk::Device device_ = fk::kCPU;
};

}  // namespace nefi
