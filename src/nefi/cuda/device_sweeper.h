#pragma once
// DeviceFlatSweeper: FlatSweeper's graph-free Jacobi / Chebyshev iteration on a
// CUDA device, for the heat operator's rollouts when α lives there. The system
// and its symmetric scaling (symmetric_faces) are built on the host once per
// sweeper and uploaded; the Chebyshev weights stay on the host and reach the
// kernels by value. Every method only enqueues kernels on the device's
// current stream, and fk::cuda::after_op runs once per method (so under
// ME_LAZY_SYNC=1 a whole rollout runs without a host sync). The K sweeps of a
// step are one cooperative launch (kernels.h: launch_fused_sweeps; up to 128
// sweeps per launch) where the device supports it, else K launches back to
// back; both give the same bits. The iterate stays in the symmetric variable
// y = D^½ x between calls, as on the CPU.
#include <cstdint>

#include "fk/tensor.h"
#include "nefi/cuda/kernels.h"
#include "nefi/operators/heat/heat_system.h"

namespace nefi::heat {

class DeviceFlatSweeper {
 public:
  // system: the CPU system (build_system); device: a CUDA device.
  DeviceFlatSweeper(HeatSystem system, const StepGeometry& g, const fk::Device& device);

  // The same contract as FlatSweeper's methods; every tensor argument must be
  // a grid (or surface) of the system's dtype on this sweeper's device.
  void load(const fk::Tensor& x);
  void store(fk::Tensor& x) const;
  void set_rhs(const fk::Tensor& b, const fk::Tensor& surface = fk::Tensor());
  void store_and_set_rhs(fk::Tensor& x);
  void add_surface(const fk::Tensor& surface);
  void jacobi(int64_t iters);
  // omega: the CPU tensor (K,) chebyshev_weights gives, of the system's dtype.
  void chebyshev(const fk::Tensor& omega);

  // Fused (one cooperative launch per up to 128 sweeps) or one launch per
  // sweep; fused is the default where supported. Returns the mode now in use.
  bool set_fused(bool on);
  bool fused() const { return fused_; }

  const HeatSystem& system() const { return system_; }  // on the CPU
  const fk::Device& device() const { return device_; }

 private:
  void sweep(bool lerp, double omega);
  // Sweeps omega[0..k) (lerp from sweep lerp_from on) as fused launches; returns the launches.
  int64_t fused_sweeps(const double* omega, int64_t k, int64_t lerp_from);
  // x on this device, of the system's dtype, contiguous (a copy when strided).
  fk::Tensor operand(const fk::Tensor& x, int64_t numel, const char* where, const char* what) const;
  void* stream() const;
  HeatSystem system_;
  cuda::Grid grid_;
  fk::Device device_;
  fk::DType dtype_;
  fk::Tensor faces_;   // (3, grid) on the device
  fk::Tensor root_d_;  // (2, grid) on the device: D^½, D^-½
  fk::Tensor buf_[2];  // the iterate and the one before it
  fk::Tensor rhs_;     // D^-½ b
  int cur_ = 0;
  bool fused_ = false;
};

}  // namespace nefi::heat
