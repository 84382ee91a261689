#pragma once
// The order of a device Gray-Scott solve's substeps (gray_scott_device.cpp):
// which buffers each substep reads and writes, forward and adjoint, as
// ReactionDiffusionOperator's CPU loops order their steps (checkpoints every
// `every` substeps, each block recomputed from its checkpoint, the observed
// cotangents added before the adjoint step that ends at their time). Host
// and device templates over a schedule R (GrayScottRollout on the host,
// GrayScottFusedRollout inside a kernel: fields n, total, every, observe_u,
// observe_v, obs[], and obs_count(r)) and a launcher (anything with
// step(const GrayScottStep&) and adjoint(const GrayScottAdjoint&)): the host
// driver launches one kernel per call, the fused kernels (gray_scott.cu)
// run every call in one thread block with a barrier after each, and the CPU
// tests run the calls through the cells (gray_scott_cells.h) and compare
// with the CPU operator. Every buffer is f64, a state (2, n).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "nefi/cuda/gray_scott_kernels.h"
#include "nefi/cuda/host_device.h"

namespace nefi::cuda {

struct GrayScottRollout {
  int64_t n = 0;                 // cells
  int64_t total = 0, every = 1;  // substeps, substeps per checkpoint
  std::vector<int64_t> obs;      // substep counts after which the state is observed
  bool observe_u = true, observe_v = true;
  int64_t channels() const { return int64_t{observe_u} + int64_t{observe_v}; }
  int64_t blocks() const { return (total + every - 1) / every; }
};

inline int64_t obs_count(const GrayScottRollout& r) {
  return static_cast<int64_t>(r.obs.size());
}

// The same schedule by value, for a kernel's parameters (at most
// kFusedMaxObs observation times).
inline GrayScottFusedRollout fused_rollout(const GrayScottRollout& r) {
  GrayScottFusedRollout f;
  f.n = r.n;
  f.total = r.total;
  f.every = r.every;
  f.observe_u = r.observe_u;
  f.observe_v = r.observe_v;
  f.n_obs = static_cast<int>(r.obs.size() < kFusedMaxObs ? r.obs.size() : kFusedMaxObs);
  for (int t = 0; t < f.n_obs; ++t) f.obs[t] = r.obs[t];
  return f;
}

NEFI_HOST_DEVICE inline int64_t obs_count(const GrayScottFusedRollout& r) {
  return r.n_obs;
}

// The forward: from `initial` (2, n) through r.total substeps, ping-ponging
// between state[0] and state[1] (2, n each), the observed channels into out
// (obs, channels, n), and when checkpoints (blocks, 2, n) is not null the
// state before substeps 0, every, 2 every, ... into it.
template <typename R, typename Launch>
NEFI_HOST_DEVICE void gray_scott_forward(const R& r, const double* initial, double* const state[2],
                                         double* checkpoints, double* out, const int* poison,
                                         Launch& launch) {
  const int64_t n = r.n, ch = int64_t{r.observe_u} + int64_t{r.observe_v};
  int64_t t = 0;
  for (int64_t s = 0; s < r.total; ++s) {
    GrayScottStep b;
    // Selected, not indexed: state[s % 2] would put the array in local memory.
    b.in = s == 0 ? initial : s % 2 == 1 ? state[0] : state[1];
    b.out = s % 2 == 0 ? state[0] : state[1];
    if (checkpoints && s % r.every == 0) b.checkpoint = checkpoints + s / r.every * 2 * n;
    if (t < obs_count(r) && s + 1 == r.obs[t]) {
      const int64_t slot = t++ * ch;
      if (r.observe_u) b.record_u = out + slot * n;
      if (r.observe_v) b.record_v = out + (slot + ch - 1) * n;
      b.poison = poison;
    }
    launch.step(b);
  }
}

// The adjoint: the cotangent g (obs, channels, n) of the forward's output
// back to the unknown's gradient (the grad_* set in `proto`, accumulated).
// block: (every, 2, n) scratch for a block's recomputed states (slot 0
// unused: the checkpoint itself is the block's first state); cot[0] (2, n)
// must hold zeros, cot[1] is scratch.
template <typename R, typename Launch>
NEFI_HOST_DEVICE void gray_scott_backward(const R& r, const double* checkpoints, double* block,
                                          const double* g, double* const cot[2],
                                          const GrayScottAdjoint& proto, Launch& launch) {
  const int64_t n = r.n, ch = int64_t{r.observe_u} + int64_t{r.observe_v};
  int64_t t = obs_count(r) - 1;
  int cur = 0;
  for (int64_t blk = (r.total - 1) / r.every; blk >= 0; --blk) {
    const int64_t start = blk * r.every;
    const int64_t end = start + r.every < r.total ? start + r.every : r.total;
    const double* saved = checkpoints + blk * 2 * n;
    auto state = [&](int64_t j) -> const double* { return j == 0 ? saved : block + j * 2 * n; };
    for (int64_t s = start + 1; s < end; ++s) {
      GrayScottStep b;
      b.in = state(s - 1 - start);
      b.out = block + (s - start) * 2 * n;
      launch.step(b);
    }
    for (int64_t s = end; s > start; --s) {
      GrayScottAdjoint a = proto;
      if (t >= 0 && r.obs[t] == s) {
        const int64_t slot = t-- * ch;
        if (r.observe_u) a.add_u = g + slot * n;
        if (r.observe_v) a.add_v = g + (slot + ch - 1) * n;
      }
      a.state = state(s - 1 - start);
      a.cot_in = cur == 0 ? cot[0] : cot[1];  // selected, as in gray_scott_forward
      a.cot_out = cur == 0 ? cot[1] : cot[0];
      launch.adjoint(a);
      cur = 1 - cur;
    }
  }
}

}  // namespace nefi::cuda
