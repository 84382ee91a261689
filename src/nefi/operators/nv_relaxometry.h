#pragma once
// NV relaxometry (NeTMY): a widefield NV array at standoff z0 above a 2-D
// spin density rho reads magnetic-noise spectra S(omega, r).
//   Dipolar Green tensor  G_ia(R) = (mu0/4pi)(3 R_i R_a - |R|^2 d_ia)/|R|^5,
//                         R = (r - s, z0)
//   NV axis n (unit)      the sensor reads the field's projection n.B
//   power kernel          P(R) = sum_a |(G n)_a|^2 = (mu0/4pi)^2 (|R|^2 + 3 (R.n)^2)/|R|^8
//                         (source moments of random orientation add in power;
//                         n = z: (|R|^2 + 3 z0^2)/|R|^8)
//   coherent kernel       G_nn(R) = n.G.n = (mu0/4pi)(3 (R.n)^2 - |R|^2)/|R|^5
//                         (moments along n; n = z: G_zz)
//   Lorentzian            L(omega; w) = gamma^2 / ((omega - w)^2 + gamma^2)
//   F2 (incoherent)       S = (P * rho)(r) L(omega; omega_L(r))         linear in rho
//   F1 (coherent)         S = ((G_nn * rho)(r))^2 L(omega; omega_L(r))  quadratic in rho
//   F3 (data only)        S = sum_s rho(s) P(r - s) L(omega; omega_L(s)), f64, no FFT
// F2 and F1 read omega_L at the readout pixel, F3 at the source: they agree
// exactly only when omega_L is constant (the inverse-crime gap otherwise).
// Units: "normalized" divides G by g0 = 2 (mu0/4pi)/z0^3 (so P(0) = G_zz(0)
// = 1 for n = z; a tilted axis keeps this g0, so its peak is (1 + 3 n_z^2)/4);
// "physical" keeps SI (mu0/4pi = 1e-7 T m/A, lengths times
// length_scale). Sums run over source pixels (no area factor), as F3 does.
// Convolutions are FFTConvolution with zero padding and a kernel of 2n - 1
// cells per axis: exact linear convolutions at every stage's grid.
// Fields: "rho" (primary) and "omega_L" (same grid; optional: absent, it is
// the constant larmor_default); output (n_freq, H, W), leading batch dims
// allowed on both fields. apply(rho) uses the constant larmor_default.
#include <array>
#include <string>
#include <vector>

#include <memory>

#include "nefi/domain.h"
#include "nefi/operators/fft_convolution.h"
#include "nefi/operators/operator.h"
#include "nefi/operators/table_cache.h"

namespace nefi {

enum class NVMode { kF1, kF2 };

struct NVPhysics {
  std::vector<double> freqs;  // readout frequencies (GHz)
  double z0 = 20;             // standoff, in the domain's length unit
  double gamma = 0.5;         // Lorentzian half width (GHz)
  bool physical_units = false;
  double length_scale = 1e-9;   // metres per length unit (physical units)
  double larmor_default = 2.0;  // omega_L when the field is absent (GHz)
  // NV axis (axis 0, axis 1, z) of the readout grid, normalised on use.
  std::array<double, 3> nv_axis{0, 0, 1};
  // Checks every value (a non-positive z0, gamma or length_scale, no
  // frequencies, a zero or non-finite NV axis): fk::Error naming the key.
  void validate() const;
  // g0 = 2 (mu0/4pi)/z0^3 in the chosen units (1 when normalized).
  double g0() const;
};

// Kernels on the grid of `domain`'s shape at `spacing`: the power kernel
// P / g0^2 and G_nn / g0, of 2n - 1 cells per axis (offsets -(n-1)..n-1).
// Both are PsfFunctions (not normalised to unit sum) for FFTConvolution.
PsfFunction nv_power_kernel(const NVPhysics& phys, std::vector<double> extent);
PsfFunction nv_gzz_kernel(const NVPhysics& phys, std::vector<double> extent);
// P(R)/g0^2 and G_nn(R)/g0 at an in-plane offset (dx, dy) along (axis 0,
// axis 1) (the formulas the kernels sample; nv_gzz is G_nn for any axis).
double nv_power(const NVPhysics& phys, double dx, double dy);
double nv_gzz(const NVPhysics& phys, double dx, double dy);

// The fidelity tag of NVOperator in `mode` (the FFT spectra in f32).
inline const char* nv_operator_tag(NVMode mode) {
  return mode == NVMode::kF2 ? "F2-fft-float32" : "F1-fft-float32";
}

class NVOperator : public Operator {
 public:
  NVOperator(Domain domain, NVPhysics phys, NVMode mode);
  fk::Tensor forward(const FieldMap& fields) const override;
  fk::Tensor apply(const fk::Tensor& rho) const override;
  // The spectra from rho and omega_L (same trailing shape, or omega_L undefined).
  fk::Tensor spectra(const fk::Tensor& rho, const fk::Tensor& omega_l) const;
  std::shared_ptr<Operator> at_resolution(const fk::Dims& shape) const override;
  fk::Dims output_shape(const fk::Dims& shape) const override;
  std::optional<double> homogeneity() const override { return mode_ == NVMode::kF2 ? 1.0 : 2.0; }
  bool batchable() const override { return true; }
  std::string fidelity_tag() const override { return nv_operator_tag(mode_); }
  std::string kind() const override { return "nv_relaxometry"; }
  void prepare_tables(fk::Device device, fk::DType dtype) const override;
  const NVPhysics& physics() const { return phys_; }
  NVMode mode() const { return mode_; }
  // The spatial part alone: P * rho (F2) or G_nn * rho (F1).
  fk::Tensor convolve(const fk::Tensor& rho) const { return conv_.apply(rho); }

 private:
  Domain domain_;
  NVPhysics phys_;
  NVMode mode_;
  FFTConvolution conv_;
  fk::Tensor freqs_;  // (n_freq, 1, 1) f64 on the host, and its device copies
  std::shared_ptr<DeviceCopies> freqs_on_ = std::make_shared<DeviceCopies>();
};

// F3: the direct source-side sum in f64 (the data generator, tag
// "F3-direct-float64"): rho, omega_L C-ordered (H, W) host values on the
// grid of `domain`; returns (n_freq, H, W) C-ordered. Source pixels with
// rho == 0 are skipped.
std::vector<double> nv_direct_spectra(const Domain& domain, const NVPhysics& phys,
                                      const std::vector<double>& rho,
                                      const std::vector<double>& omega_l);
const char* nv_direct_tag();

}  // namespace nefi
