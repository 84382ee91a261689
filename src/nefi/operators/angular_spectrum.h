#pragma once
// Angular-spectrum propagation of a scalar field on a 2-D grid, and the
// inline-holography operator built on it.
//
// propagate: u(z + dz) = F^-1[ H F[pad(u)] ] cropped, with the exact
// transfer function H = exp(i 2 pi dz sqrt(1/lambda^2 - fx^2 - fy^2)) for
// propagating waves and H = 0 for evanescent ones (f > 1/lambda), optionally
// band-limited (Matsushima & Shimobaba 2009: |f_a| <= 1 / (lambda sqrt((2
// df_a dz)^2 + 1)), df_a = 1 / (padded length a), which removes the aliased
// chirp of long distances), on a grid padded pad_factor times (edge: the
// border values replicated; zero: zeros) and centred. pad_factor 1 is a
// periodic propagation, unitary on propagating waves: a round trip +dz, -dz
// returns the field to round-off. Fields are (batch, n0, n1) complex f64,
// C order, spacing (dx0, dx1) in the wavelength's unit.
//
// HolographyOperator: a phase object t = exp(i phi - absorption) under unit
// plane-wave illumination, I_d = |P_{z_d} t|^2 at each distance z_d: input
// phi (..., n0, n1) real f32/f64 (leading dims a batch), output
// (..., n_dist, n0, n1), computed in f64. Its gradient is the exact adjoint:
// dL/dphi = -Im(t conj(w)), w = sum_d pad^T P_d^H crop^T (2 g_d u_d).
// Nonlinear (no homogeneity), batchable.
//
// Devices: a phase on a CUDA device is propagated there (the same steps:
// pad, multiply and crop are kernels of cuda/angular_spectrum.cu, the FFTs
// cuFFT's through fk::fftn, all in f64) and the intensity and gradient stay
// there. Each distance's transfer function is computed on the host once and
// its device copy cached per (grid, spacing, distance, device).
#include <complex>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "nefi/domain.h"
#include "nefi/operators/operator.h"

namespace nefi {

struct PropagationOptions {
  double wavelength = 0.5;
  bool band_limit = true;
  int64_t pad_factor = 2;
  bool edge_pad = true;  // else zero padding
};

using Field2 = std::vector<std::complex<double>>;

// Transfer function on an (m0, m1) FFT grid (unshifted frequency order).
Field2 transfer_function(int64_t m0, int64_t m1, const std::vector<double>& spacing, double dz,
                         const PropagationOptions& o);
// Propagates `batch` fields of (n0, n1) by dz; `adjoint` applies the exact
// adjoint of the whole pad -> filter -> crop map (conj(H), the transpose of
// the padding).
Field2 propagate(const Field2& u, int64_t batch, int64_t n0, int64_t n1,
                 const std::vector<double>& spacing, double dz, const PropagationOptions& o,
                 bool adjoint = false);
// The same for fields in a tensor u (batch, n0, n1) c128 on the CPU or a
// CUDA device; the result is on u's device.
fk::Tensor propagate(const fk::Tensor& u, const std::vector<double>& spacing, double dz,
                     const PropagationOptions& o, bool adjoint = false);

class HolographyOperator : public Operator {
 public:
  // Throws fk::Error on a non-2-D domain, a wavelength <= 0, a negative or
  // empty distance list, absorption < 0 or pad_factor < 1.
  HolographyOperator(Domain domain, std::vector<double> distances, PropagationOptions options,
                     double absorption = 0.0);
  fk::Tensor apply(const fk::Tensor& phi) const override;
  std::shared_ptr<Operator> at_resolution(const fk::Dims& shape) const override;
  fk::Dims output_shape(const fk::Dims& shape) const override;
  std::string fidelity_tag() const override { return "angular-spectrum-1x"; }
  std::string kind() const override { return "holography"; }
  void prepare_tables(fk::Device device, fk::DType dtype) const override;
  bool batchable() const override { return true; }
  const Domain& domain() const { return domain_; }
  const std::vector<double>& distances() const { return distances_; }
  const PropagationOptions& options() const { return options_; }
  double absorption() const { return absorption_; }
  // The transfer function of distance dz on this grid's padded FFT grid
  // (m0, m1) c128, on `device` (cached there per grid, spacing, dz).
  fk::Tensor transfer_on(double dz, fk::Device device) const;

 private:
  using TransferKey = std::tuple<std::vector<int64_t>, std::vector<double>, double, std::string>;
  struct TransferCache {
    std::mutex mu;
    std::map<TransferKey, fk::Tensor> tensors;
  };
  std::shared_ptr<TransferCache> cache_ = std::make_shared<TransferCache>();
  Domain domain_;
  std::vector<double> distances_;
  PropagationOptions options_;
  double absorption_;
};

}  // namespace nefi
