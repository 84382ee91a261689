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
#include <memory>
#include <string>
#include <vector>

#include "nefi/operators/operator.h"
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
  bool graph_capturable() const override { return false; }
  std::string host_only_reason() const override {
    return "the leapfrog solve and its checkpointed adjoint run on host vectors";
  }
  std::string fidelity_tag() const override;
  std::string kind() const override { return "wave"; }

  const WaveOperatorConfig& config() const { return cfg_; }
  const wave::ShotGeometry& geometry() const { return *geo_; }
  // The checkpoint interval the gradient uses (0 under grad_mode full).
  int64_t checkpoint_every() const;

 private:
  WaveOperatorConfig cfg_;
  fk::Dims shape_;
  std::shared_ptr<const wave::ShotGeometry> geo_;
};

// Checks a velocity for the operators: shape, dtype f32/f64, finite, in
// (0, c_max]. `where` names the caller in the error.
void check_velocity(const fk::Tensor& c, const fk::Dims& shape, double c_max,
                    const std::string& where);

}  // namespace nefi
