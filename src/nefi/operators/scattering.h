#pragma once
// 2-D scalar scattering, Delta u + k0^2 (1 + chi) u = 0 (time dependence
// e^{-i w t}, k0 = 2 pi n_b / wavelength), on the square [0, D]^2 (cell
// centred, origin of the phases at its centre c). Views l illuminate with
// plane waves u_i = exp(i k0 d_l . (y - c)), d_l at angle 2 pi l / n_angles;
// receivers sit on a ring of radius R about c at angles 2 pi r / n_receivers.
// The outgoing Green's function of -(Delta + k0^2) is G = (i/4) H0(k0 |x|).
//
// BornOperator: the first Born approximation of the scattered field at the
// receivers, a dense quadrature over the cells (point samples, cell area dA):
//   u_s[l, r] = k0^2 dA sum_j G(x_r - y_j) exp(i k0 d_l . (y_j - c)) chi_j
// kept as G (receivers x cells) and the illumination phases (views x cells),
// so a forward is one complex GEMM (batch * views, cells) x (cells, receivers)
// and the adjoint one GEMM back, both through fk::gemm (OpenBLAS zgemm), or,
// for a field on a CUDA device, fk::gemm_on (cuBLAS zgemm) between per-cell
// kernels (operators/scattering_device.h), the tables uploaded once per
// resolution and device;
// with `rytov` the output is the Rytov phase u_s / u_i(x_r) (the linearised
// log(u / u_i)). Input (..., n, n) real f32/f64; output (..., 2, n_angles,
// n_receivers), real then imaginary parts, the input's dtype, computed in
// f64. Linear, batchable; the adjoint is exact (its own node).
#include <complex>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "nefi/domain.h"
#include "nefi/operators/operator.h"

namespace nefi {

struct ScatteringGeometry {
  double wavelength = 1.0;  // in the units of the domain's extent
  double n_background = 1.0;
  int64_t n_angles = 16;
  int64_t n_receivers = 64;
  double receiver_radius = 3.0;
  bool rytov = false;
  double k0() const;
  // Throws fk::Error naming the bad field, or a ring that cuts the square of side `extent`.
  void validate(double extent) const;
};

// H0^(1)(z) = J0(z) + i Y0(z), z > 0.
std::complex<double> hankel0(double z);

// k0^2 dA G(x_r - y_j) from the cell centres y_j of the n x n grid over
// [0, D]^2 to the receivers x_r: (R, n * n), C order. When 4 divides R only
// a quarter of the ring is evaluated: a quarter turn maps the grid onto itself
// and receiver r onto r + R / 4, so the other rows are permutations of it.
std::vector<std::complex<double>> receiver_green(int64_t n, double D, const ScatteringGeometry& g);

// The precomputed factors of the Born map at one resolution (N = n * n cells).
struct ScatteringTables {
  std::vector<std::complex<double>> green;     // (R, N): k0^2 dA G(x_r - y_j)
  std::vector<std::complex<double>> phase;     // (V, N): exp(i k0 d_l . (y_j - c))
  std::vector<std::complex<double>> rotation;  // (V, R): exp(-i k0 d_l . (x_r - c)) (Rytov)
};

// The same tables on a device, each an f64 tensor of the complex values
// interleaved (re, im): 2 x the counts above.
struct ScatteringTablesOnDevice {
  fk::Tensor green, phase, rotation;
};

class BornOperator : public Operator {
 public:
  // Throws fk::Error on a non-square 2-D domain or a bad geometry.
  BornOperator(Domain domain, ScatteringGeometry geometry);
  fk::Tensor apply(const fk::Tensor& x) const override;
  std::shared_ptr<Operator> at_resolution(const fk::Dims& shape) const override;
  fk::Dims output_shape(const fk::Dims& shape) const override;
  std::optional<double> homogeneity() const override { return 1.0; }
  std::string fidelity_tag() const override;
  std::string kind() const override { return geometry_.rytov ? "rytov" : "born"; }
  void prepare_tables(fk::Device device, fk::DType dtype) const override;
  bool batchable() const override { return true; }
  const ScatteringGeometry& geometry() const { return geometry_; }
  const Domain& domain() const { return domain_; }
  // Host forward and exact adjoint, f64: (batch, n, n) <-> (batch, 2, V, R).
  std::vector<double> project(const std::vector<double>& chi, int64_t batch) const;
  std::vector<double> adjoint(const std::vector<double>& data, int64_t batch) const;
  const ScatteringTables& tables() const { return *tables_; }
  // The tables on `device`, uploaded on the first call per device and shared
  // by the copies of this operator (a solve makes that call at the stage
  // start, through prepare_tables, before any graph capture).
  ScatteringTablesOnDevice tables_on(fk::Device device) const;

 private:
  struct DeviceCache {
    std::mutex mu;
    std::map<std::string, ScatteringTablesOnDevice> by_device;
  };
  void prepare();
  Domain domain_;
  ScatteringGeometry geometry_;
  std::shared_ptr<const ScatteringTables> tables_;
  std::shared_ptr<DeviceCache> device_cache_;
};

}  // namespace nefi
