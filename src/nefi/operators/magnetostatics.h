#pragma once
// Planar magnetostatics in Fourier space: the field of a thin source sheet in
// the plane z = 0, read at height z0 by a sensor (an NV layer), as a
// transfer function on a zero-padded FFT grid (k = 2 pi f, k = |k|).
//
//   source stream:  g with the sheet current K = curl(g z^) (div K = 0
//                   exactly), B^_z = (mu0/2) k e^{-k z0} g^ — equivalently a
//                   thin film of perpendicular moment g per area;
//   source current: (K_x, K_y) as two channels, B^_z = (mu0/2) e^{-k z0}
//                   i (k_x K^_y - k_y K^_x) / k;
//   source film:    perpendicular magnetisation M of a film of thickness d
//                   under the plane, B^_z = (mu0/2) (1 - e^{-k d}) e^{-k z0} M^.
// Above the sources B = -grad(phi) with phi^ ~ e^{-kz}, so the in-plane
// components are B^_x = -i (k_x/k) B^_z, B^_y = -i (k_y/k) B^_z and an NV
// axis n reads n.B. A sensor layer of thickness t averages e^{-kz} over
// [z0, z0 + t]: a factor (1 - e^{-kt}) / (kt). The odd factors k_a/k are
// zero on the Nyquist row/column, so every transfer function is the
// spectrum of a real kernel and conj(H) is the exact adjoint.
//
// MagnetostaticsOperator: input (..., n0, n1) real f32/f64 (stream, film)
// or (..., 2, n0, n1) (current; channel 0 is K along axis 0); output
// (..., n0, n1), same dtype. Zero-padded to pad_factor x the grid (one FFT
// pair per channel); H is computed once per resolution. Linear, batchable;
// its backward is the conj(H) filter.
// Units: lengths in the domain's unit, mu0 in field x length / current
// (400 pi: um, mA and uT).
#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <numbers>
#include <string>
#include <vector>

#include "nefi/domain.h"
#include "nefi/operators/operator.h"

namespace nefi {

enum class MagneticSource { kStream, kCurrent, kFilm };
enum class FieldComponent { kX, kY, kZ, kNV };

struct MagnetostaticsOptions {
  double standoff = 1.0;  // z0 > 0
  MagneticSource source = MagneticSource::kStream;
  FieldComponent component = FieldComponent::kZ;
  std::array<double, 3> nv_axis{0, 0, 1};  // (axis 0, axis 1, z), normalised on use
  double layer_thickness = 0;              // sensor layer t >= 0 (0: a plane)
  double film_thickness = 1.0;             // d > 0 (source film)
  double mu0 = 400 * std::numbers::pi;
  int64_t pad_factor = 2;
};

// Parses the names used in configs: stream | current | film and z | x | y |
// nv; an unknown name is an fk::Error naming `key`.
MagneticSource magnetic_source_from(const std::string& name, const std::string& key);
FieldComponent field_component_from(const std::string& name, const std::string& key);

// The transfer function on an (m0, m1) FFT grid of spacing h as a half
// spectrum (m0, m1/2 + 1), c128; for the current source (2, m0, m1/2 + 1).
fk::Tensor magnetostatic_transfer(int64_t m0, int64_t m1, const std::vector<double>& h,
                                  const MagnetostaticsOptions& o);

class MagnetostaticsOperator : public Operator {
 public:
  // Throws fk::Error on a non-2-D domain, z0 <= 0, t < 0, d <= 0 (film), a
  // zero NV axis, mu0 <= 0 or pad_factor outside [1, 8].
  MagnetostaticsOperator(Domain domain, MagnetostaticsOptions options);
  fk::Tensor apply(const fk::Tensor& x) const override;
  std::shared_ptr<Operator> at_resolution(const fk::Dims& shape) const override;
  fk::Dims output_shape(const fk::Dims& shape) const override;
  std::optional<double> homogeneity() const override { return 1.0; }
  bool batchable() const override { return true; }
  std::string fidelity_tag() const override { return "magnetostatics-fft"; }
  std::string kind() const override { return "magnetostatics"; }
  void prepare_tables(fk::Device device, fk::DType dtype) const override;
  const Domain& domain() const { return domain_; }
  const MagnetostaticsOptions& options() const { return options_; }

 private:
  void prepare();  // the transfer function at this resolution, both precisions
  // H for a real dtype on `device`: the host tensor, or its copy there, made
  // by prepare_tables at a stage start (or the first device apply) and
  // reused, so a captured step copies nothing from the host.
  fk::Tensor transfer_on(fk::DType real_dtype, fk::Device device) const;
  struct DeviceTransfers {
    std::mutex mu;
    std::map<std::string, fk::Tensor> by_key;  // "<device> <real dtype>"
  };
  Domain domain_;
  MagnetostaticsOptions options_;
  std::vector<int64_t> fft_shape_;
  fk::Tensor H128_, H64_;
  std::shared_ptr<DeviceTransfers> device_transfers_;  // per resolution, shared by copies
};

}  // namespace nefi
