#pragma once
// DeviceFlatSweeper: FlatSweeper's graph-free Jacobi / Chebyshev iteration on a
// CUDA device, for the heat operator's rollouts when α lives there. The
// system's symmetric form (symmetric_faces of build_system) is built on the
// device from α by two kernels, and for Chebyshev the Gershgorin bound and
// the weights by a third (kernels.h: launch_heat_system,
// launch_chebyshev_weights): nothing is read back to the host or uploaded
// from it, so a sweeper's whole life can be captured in a CUDA graph. Every
// method only enqueues kernels on the device's current stream, and
// fk::cuda::after_op runs once per method (so under ME_LAZY_SYNC=1 a whole
// rollout runs without a host sync). The K sweeps of a step are one
// cooperative launch (kernels.h: launch_fused_sweeps) where the device
// supports it, else K launches back to back; both give the same bits. The
// iterate stays in the symmetric variable y = D^½ x between calls, as on the CPU.
#include <cstdint>

#include "fk/tensor.h"
#include "nefi/cuda/kernels.h"
#include "nefi/operators/heat/heat_system.h"

namespace nefi::heat {

// The kernels' coefficients of the system of g.
inline cuda::HeatCoefficients heat_coefficients(const StepGeometry& g) {
  cuda::HeatCoefficients k;
  k.h2[0] = g.hx * g.hx;
  k.h2[1] = g.hy * g.hy;
  k.h2[2] = g.hz * g.hz;
  k.dt = g.dt;
  k.sink = g.sink;
  k.arithmetic = g.arithmetic_faces;
  k.closed_sides = g.lateral_neumann;
  return k;
}

class DeviceFlatSweeper {
 public:
  // alpha: (nx, ny, nz) f32 or f64 on a CUDA device (its values only: no
  // graph); chebyshev_iters > 0 also computes the K Chebyshev weights there.
  DeviceFlatSweeper(const fk::Tensor& alpha, const StepGeometry& g, int64_t chebyshev_iters = 0);

  // The same contract as FlatSweeper's methods; every tensor argument must be
  // a grid (or surface) of the system's dtype on this sweeper's device.
  void load(const fk::Tensor& x);
  void store(fk::Tensor& x) const;
  void set_rhs(const fk::Tensor& b, const fk::Tensor& surface = fk::Tensor());
  void store_and_set_rhs(fk::Tensor& x);
  void add_surface(const fk::Tensor& surface);
  void jacobi(int64_t iters);
  // omega: contiguous weights (K,) of the system's dtype on this device, as
  // chebyshev_weights() holds them.
  void chebyshev(const fk::Tensor& omega);

  // chebyshev_weights(gershgorin_bound(build_system(α)), K) for the K of the
  // constructor, on the device (undefined when K was 0).
  const fk::Tensor& chebyshev_weights() const { return omega_; }
  // The symmetric system: faces (3, grid) and root_d (2, grid), as
  // symmetric_faces gives them on the CPU.
  const fk::Tensor& faces() const { return faces_; }
  const fk::Tensor& root_d() const { return root_d_; }

  // Fused (one cooperative launch per call) or one launch per sweep; fused is
  // the default where supported. Returns the mode now in use.
  bool set_fused(bool on);
  bool fused() const { return fused_; }
  const fk::Device& device() const { return device_; }

 private:
  void sweep(bool lerp, const fk::Tensor& omega, int64_t j);
  // After one fused launch of k sweeps: the result's buffer, versions, counters.
  void finish_fused(int64_t k);
  // x on this device, of the system's dtype, contiguous (a copy when strided).
  fk::Tensor operand(const fk::Tensor& x, int64_t numel, const char* where, const char* what) const;
  void* stream() const;
  cuda::Grid grid_;
  fk::Device device_;
  fk::DType dtype_;
  fk::Tensor faces_;   // (3, grid) on the device
  fk::Tensor root_d_;  // (2, grid) on the device: D^½, D^-½
  fk::Tensor omega_;   // (K,) on the device, or undefined
  fk::Tensor buf_[2];  // the iterate and the one before it
  fk::Tensor rhs_;     // D^-½ b
  int cur_ = 0;
  bool fused_ = false;
};

}  // namespace nefi::heat
