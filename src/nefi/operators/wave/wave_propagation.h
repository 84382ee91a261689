#pragma once
// Shot gathers on a WaveGrid and their velocity gradient. Each shot starts at
// rest, is driven by one point source (wavelet[n] at step n, injected with the
// transposed multilinear weights / cell volume) and is sampled by every
// receiver at t = j dt_obs (multilinear weights), giving traces
// (n_src, n_rec, n_t). Shots run in parallel; their κ gradients are summed in
// shot order, so results do not depend on the thread count.
//
// What the backward needs is kept by mode:
//   full        u^0..u^N of every shot: memory n_src (N + 1) S
//   checkpoint  (u^{n−1}, u^n, ψ^n) every k steps, the backward recomputes
//               one block of k steps at a time from its checkpoint:
//               memory n_src (N/k)(2 + n_ψ) S + (k + 1) S per running shot
// Both run the same adjoint step on the same (recomputed bit for bit)
// fields, so their gradients are bitwise equal.
#include <cstdint>
#include <vector>

#include "fk/tensor.h"
#include "nefi/operators/wave/leapfrog.h"
#include "nefi/operators/wave/wave_grid.h"

namespace nefi::wave {

struct ShotGeometry {
  WaveGrid grid;
  Damping damping;
  std::vector<PointStencil> sources, receivers;
  std::vector<double> wavelet;  // source term at step n (wavelet / cell volume), n < N
};

// The grid of `cfg` at `shape` with its layer, the point stencils (each
// position checked) and the Ricker wavelet of f0 times amplitude per step.
ShotGeometry make_shot_geometry(const WaveConfig& cfg, const fk::Dims& shape,
                                const std::vector<std::vector<double>>& sources,
                                const std::vector<std::vector<double>>& receivers, double f0,
                                double amplitude);

struct TraceRecord {
  int64_t every = 0;  // 0: full trajectories; else the checkpoint interval k
  fk::Tensor saved;   // full: (n_src, N + 1, S); checkpoint: (n_src, ceil(N/k), 2 + n_ψ, S)
};

// k = round(√N), at least 1: minimises N/k + k.
int64_t auto_checkpoint_every(int64_t n_steps);

// Traces (n_src, n_rec, n_t) for κ per stored cell. With record non-null,
// also fills it for the backward (record->every chooses the mode).
template <typename T>
fk::Tensor shot_traces(const ShotGeometry& geo, const StepCoefficients<T>& co, TraceRecord* record);

// κ̄ per stored cell for the trace gradient g (n_src, n_rec, n_t) of dtype T.
template <typename T>
std::vector<double> shot_kappa_gradient(const ShotGeometry& geo, const StepCoefficients<T>& co,
                                        const TraceRecord& record, const fk::Tensor& g);

// The photoacoustic map: traces (n_rec, n_t) from the initial pressure p0 on
// the stored layout (zero in the layer and halo), at rest otherwise:
// u^0 = p0, u^{−1} = p0 + ½ dt² κ Δ_h p0. Linear in p0.
template <typename T>
std::vector<T> initial_value_traces(const ShotGeometry& geo, const StepCoefficients<T>& co,
                                    const std::vector<double>& kappa, const std::vector<T>& p0);
// Its exact adjoint: traces (n_rec, n_t) -> p0 on the stored layout.
template <typename T>
std::vector<T> initial_value_adjoint(const ShotGeometry& geo, const StepCoefficients<T>& co,
                                     const std::vector<double>& kappa,
                                     const std::vector<T>& traces);

}  // namespace nefi::wave
