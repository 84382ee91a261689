#pragma once
// WaveOperator: acoustic full-waveform modelling. p_tt = c(x)² Δp + Σ_s w(t)
// δ(x − x_s) with a Ricker w of peak f0, one shot per source, on the domain
// padded by an absorbing layer (wave_grid.h, leapfrog.h).
//
// apply(c): c (*shape) f32 or f64, every value in (0, c_max] (else an
// fk::Error: the step was sized for c_max) -> traces (n_src, n_rec, n_t) of
// the same dtype, p at every receiver at t = j dt_obs. The output does not
// depend on the grid (at_resolution keeps the physical sources, receivers
// and sampling). Not batchable; homogeneity none.
//
// Gradient: one autograd node whose backward runs the discrete adjoint of the
// leapfrog (no graph per step). grad_mode full keeps every shot's u^0..u^N;
// checkpoint keeps a checkpoint every `checkpoint_every` steps (0: √N) and
// recomputes one block at a time; the two gradients are bitwise equal.
//
// Devices: a velocity on a CUDA device runs there (wave_device.h): every
// shot's leapfrog, its record (trajectories or checkpoints, in device
// memory) and the discrete adjoint are kernels on the device's current
// stream, with the CPU's arithmetic in the CPU's order (wave_cells.h); the
// velocity-free tables are uploaded once per device and dtype (tables_on).
// Nothing crosses to the host inside a solve except the velocity check's
// three numbers, which a CUDA graph capture skips, so a step through it can
// be captured.
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "nefi/operators/operator.h"
#include "nefi/operators/wave/wave_device_tables.h"
#include "nefi/operators/wave/wave_propagation.h"

namespace nefi {

struct WaveOperatorConfig {
  wave::WaveConfig wave;                       // extent, order, layer, courant, c_max, dt_obs, n_t
  std::vector<std::vector<double>> sources;    // physical positions, (n_src, ndim)
  std::vector<std::vector<double>> receivers;  // (n_rec, ndim)
  double f0 = 0.0;                             // Ricker peak frequency
  double amplitude = 1.0;
  std::string grad_mode = "checkpoint";  // full | checkpoint
  int64_t checkpoint_every = 0;          // 0: round(√N)
  std::string tag;                       // fidelity tag; empty: wave-leapfrog-o<order>-<layer>
};

class WaveOperator : public Operator {
 public:
  // Throws fk::Error for a bad config (wave::WaveConfig::validate), no
  // source, a point outside the domain, an unknown grad_mode or k < 0.
  WaveOperator(WaveOperatorConfig cfg, fk::Dims shape);

  fk::Tensor apply(const fk::Tensor& c) const override;
  std::shared_ptr<Operator> at_resolution(const fk::Dims& shape) const override;
  fk::Dims output_shape(const fk::Dims& shape) const override;
  std::string fidelity_tag() const override;
  std::string kind() const override { return "wave"; }
  // tables_on(device, dtype) for a CUDA device and f32/f64 (else nothing).
  void prepare_tables(fk::Device device, fk::DType dtype) const override;

  const WaveOperatorConfig& config() const { return cfg_; }
  const wave::ShotGeometry& geometry() const { return *geo_; }
  const std::shared_ptr<const wave::ShotGeometry>& geometry_ptr() const { return geo_; }
  // The velocity-free tables on `device` in `dtype` (f32 or f64), uploaded on
  // first use and cached with the geometry (copies of the operator share them).
  std::shared_ptr<const wave::WaveDeviceTables> tables_on(fk::Device device, fk::DType dtype) const;
  // The checkpoint interval the gradient uses (0 under grad_mode full).
  int64_t checkpoint_every() const;

 private:
  WaveOperatorConfig cfg_;
  fk::Dims shape_;
  std::shared_ptr<const wave::ShotGeometry> geo_;
  struct DeviceCache {
    std::mutex mu;
    std::map<std::string, std::shared_ptr<const wave::WaveDeviceTables>> by_key;
  };
  std::shared_ptr<DeviceCache> device_cache_ = std::make_shared<DeviceCache>();
};

// Checks a velocity for the operators: shape, dtype f32/f64, finite, in
// (0, c_max]. `where` names the caller in the error. A velocity on a CUDA
// device gets the shape and dtype checks only: wave_device checks its values
// there (one reduction, three numbers read back, skipped while capturing).
void check_velocity(const fk::Tensor& c, const fk::Dims& shape, double c_max,
                    const std::string& where);
// The value half of check_velocity from a velocity's smallest and largest
// finite values and its count of non-finite ones (the device path's reduction).
void check_velocity_range(double lo, double hi, double non_finite, double c_max,
                          const std::string& where);

}  // namespace nefi
