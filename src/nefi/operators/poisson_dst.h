#pragma once
// PoissonOperator: u = A f solving -kappa Laplace(u) = f in a box with u = 0
// on its boundary, on the cell-centred grid (1-3 D). The orthonormal DST-II
// diagonalises the Dirichlet Laplacian there (its basis sin(pi (k+1)(i+1/2)/n)
// vanishes half a cell outside the box), so A = S^T diag(1/lambda) S with
// S = the DST-II along every axis:
//   spectrum continuous: lambda = kappa sum_a ((k_a+1) pi / L_a)^2, the exact
//     eigenvalues of the continuous operator on each basis function;
//   spectrum fd: lambda = kappa sum_a 4/h_a^2 sin^2((k_a+1) pi / (2 n_a)), the
//     5-point (2d+1-point) stencil with antisymmetric ghost cells.
// The transforms are dense per-axis matrices (n_a x n_a, applied separably:
// 2 sum_a n_a numel multiply-adds per apply), built once per resolution.
// A is symmetric, so its adjoint is itself and one autograd node applies it
// both ways. Input (..., *shape) real f32/f64 (leading dims are a batch);
// output the same shape and dtype, computed in f64. Linear, batchable.
// Devices: a field on a CUDA device is solved there (poisson_dst_device.h)
// with cuFFT: the odd extension of the field (2^d times its cells), one FFT,
// a division by each frequency's eigenvalue (a table uploaded once per
// resolution and device), one inverse FFT, the box's real part
// (cuda/poisson_dst_cells.h says why that is S^T diag(1/lambda) S). Equal to
// the CPU's to rounding; nothing is read back to the host (graph-capturable).
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "nefi/domain.h"
#include "nefi/operators/operator.h"

namespace nefi {

enum class PoissonSpectrum { kContinuous, kFiniteDifference };

// The orthonormal DST-II matrix of length n, row k = frequency k+1 (C order,
// n x n): S[k][i] = sqrt(2/n) sin(pi (k+1)(i+1/2)/n), row n-1 scaled by 1/sqrt(2).
std::vector<double> dst2_matrix(int64_t n);

class PoissonOperator : public Operator {
 public:
  // Throws fk::Error for conductivity <= 0 or a domain of more than 3 axes.
  PoissonOperator(Domain domain, PoissonSpectrum spectrum = PoissonSpectrum::kContinuous,
                  double conductivity = 1.0);
  fk::Tensor apply(const fk::Tensor& x) const override;
  std::shared_ptr<Operator> at_resolution(const fk::Dims& shape) const override;
  std::optional<double> homogeneity() const override { return 1.0; }
  std::string fidelity_tag() const override;
  std::string kind() const override { return "poisson_dst"; }
  void prepare_tables(fk::Device device, fk::DType dtype) const override;
  bool batchable() const override { return true; }
  const Domain& domain() const { return domain_; }
  // lambda per mode, C order over (k_0, ..., k_{d-1}).
  const std::vector<double>& eigenvalues() const { return lambda_; }
  // The solve on host values, (batch, *shape) C order, f64 (apply's kernel).
  std::vector<double> solve(const std::vector<double>& f, int64_t batch) const;
  // 1/lambda of the DST mode each frequency of the odd extension (2 n_0, ...,
  // 2 n_{d-1}) carries, 0 at frequency 0 along any axis; C order. The device
  // solve's spectral division.
  std::vector<double> extended_inverse_eigenvalues() const;
  // That table on `device`, uploaded on first use and cached (copies of the
  // operator at this resolution share it).
  fk::Tensor extended_inverse_eigenvalues_on(fk::Device device) const;

 private:
  struct DeviceCache {
    std::mutex mu;
    std::map<std::string, fk::Tensor> by_device;
  };
  void prepare();
  Domain domain_;
  PoissonSpectrum spectrum_;
  double kappa_;
  std::vector<std::vector<double>> dst_;  // per axis
  std::vector<double> lambda_;
  std::shared_ptr<DeviceCache> device_cache_;
};

}  // namespace nefi
