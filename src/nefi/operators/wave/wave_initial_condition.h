#pragma once
// WaveInitialConditionOperator: photoacoustics. p_tt = c² Δp with p(0) = p0,
// p_t(0) = 0, c known and constant; leapfrog started at u^{−1} = u^0 + ½ dt²
// c² Δ_h u^0 (time-symmetric), p0 zero in the absorbing layer. Traces are
// y_r(t_j) = [h ∗ p](x_r, t_j) with h the sensor's Gaussian low-pass
// (sensor_fc > 0; none at 0) applied to p(x_r, ·) at every leapfrog step,
// before the samples t_j = j dt_obs are taken: the response band-limits the
// pressure ahead of the sampling as a transducer ahead of its ADC, so
// content above dt_obs's Nyquist rate (sharp edges, which the grid also
// propagates worst) does not alias into the traces.
//
// apply(p0): p0 (*shape) f32/f64 -> traces (n_rec, n_t), same dtype. The map
// is linear (homogeneity 1); its vjp is the exact discrete adjoint (a
// backward run, no stored states). A p0 on a CUDA device runs there
// (wave_initial_device.h: the same leapfrog kernels as WaveOperator's and the
// start's and sensor's, tables uploaded once per device and dtype), with no
// host transfer, so a step through it can be captured as a CUDA graph.
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "nefi/operators/operator.h"
#include "nefi/operators/wave/wave_device_tables.h"
#include "nefi/operators/wave/wave_propagation.h"

namespace nefi {

struct WaveInitialConditionConfig {
  wave::WaveConfig wave;                       // c_max is the known velocity c
  std::vector<std::vector<double>> receivers;  // physical positions, (n_rec, ndim)
  double sensor_fc = 0.0;                      // Gaussian low-pass cut-off (0: none)
  std::string tag;                             // empty: wave-ic-o<order>-<layer>
};

class WaveInitialConditionOperator : public Operator {
 public:
  WaveInitialConditionOperator(WaveInitialConditionConfig cfg, fk::Dims shape);

  fk::Tensor apply(const fk::Tensor& p0) const override;
  std::shared_ptr<Operator> at_resolution(const fk::Dims& shape) const override;
  fk::Dims output_shape(const fk::Dims& shape) const override;
  std::optional<double> homogeneity() const override { return 1.0; }
  std::string fidelity_tag() const override;
  std::string kind() const override { return "wave_initial_condition"; }
  // tables_on(device, dtype) for a CUDA device and f32/f64 (else nothing).
  void prepare_tables(fk::Device device, fk::DType dtype) const override;

  // The transpose of apply on traces (n_rec, n_t) -> (*shape), run in f64
  // (f32: in the precision of an f32 apply).
  std::vector<double> adjoint(const std::vector<double>& traces,
                              fk::DType precision = fk::DType::F64) const;
  // k-Wave-style time reversal: the traces re-emitted backwards in time with
  // each receiver's nearest cell held to the reversed trace (Dirichlet),
  // from rest; the field at t = 0 on the domain, f64.
  std::vector<double> time_reversal(const std::vector<double>& traces) const;

  const WaveInitialConditionConfig& config() const { return cfg_; }
  const fk::Dims& shape() const { return shape_; }
  // The solve's geometry (a sample at every leapfrog step) and the steps per dt_obs.
  const wave::ShotGeometry& geometry() const { return model_->geo; }
  int64_t substeps() const { return model_->substeps; }
  // The tables a device apply reads, on `device` in `dtype` (f32 or f64),
  // uploaded on first use and shared by copies of this operator.
  std::shared_ptr<const wave::WaveInitialDeviceTables> tables_on(fk::Device device,
                                                                 fk::DType dtype) const;

 private:
  // The grid, κ and coefficients, shared by copies (the autograd node holds one).
  struct Model {
    int64_t substeps = 1;    // leapfrog steps per dt_obs
    wave::ShotGeometry geo;  // recording every step: n_t = (n_t − 1) substeps + 1
    std::vector<double> kappa;
    wave::StepCoefficients<float> co32;
    wave::StepCoefficients<double> co64;
  };
  template <typename T>
  std::vector<double> adjoint_as(const std::vector<double>& traces) const;
  // Receiver values at every step (n_rec, N + 1) -> the sensor's samples
  // (n_rec, n_t), and its transpose.
  std::vector<double> sensor_samples(const std::vector<double>& every_step) const;
  std::vector<double> sensor_samples_adjoint(const std::vector<double>& g) const;

  WaveInitialConditionConfig cfg_;
  fk::Dims shape_;
  std::shared_ptr<const Model> model_;
  struct DeviceCache {
    std::mutex mu;
    std::map<std::string, std::shared_ptr<const wave::WaveInitialDeviceTables>> by_key;
  };
  std::shared_ptr<DeviceCache> device_cache_ = std::make_shared<DeviceCache>();
};

// The weights of gaussian_lowpass for sampling interval dt and cut-off fc
// (2 half + 1 of them, half = ceil(4σ / dt)), normalised to sum 1.
std::vector<double> gaussian_lowpass_weights(double dt, double fc);

// Zero-padded convolution of each row of traces (n_rec, n_t) sampled every
// dt with the sampled Gaussian exp(−t²/2σ²), σ = 1/(2π fc), normalised to sum
// 1 and cut at 4σ; the kernel is even, so the map is symmetric (its own
// adjoint).
std::vector<double> gaussian_lowpass(const std::vector<double>& traces, int64_t n_t, double dt_obs,
                                     double fc);

}  // namespace nefi
