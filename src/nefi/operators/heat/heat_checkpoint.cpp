// Gradient mode "checkpoint": the forward runs graph-free and keeps the state
// at the start of every frame up to the last observed one; the backward walks
// the frames in reverse, recomputes each frame's implicit steps with a graph
// (the same sweeps the unrolled mode records) and backpropagates the state
// gradient through it. The gradient equals the unrolled one to rounding; at
// most one frame's graph is alive at a time.
#include "fk/autograd.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "nefi/operators/heat/heat_modes.h"
#include "nefi/operators/heat/step_solver.h"

namespace nefi::heat {
namespace {

// The implicit steps of one frame from `state`, recorded by autograd.
fk::Tensor frame_with_graph(const fk::Tensor& alpha, const fk::Tensor& state, const HeatPlan& p) {
  const HeatSystem sys = build_system_ops(alpha, p.g);
  const Sweep sweep = make_sweep(p.flat, sys.weights, p.g);
  fk::Tensor omega;
  if (p.solver.solver == "chebyshev")
    omega = chebyshev_weights(gershgorin_bound(sys), p.solver.iters);
  fk::Tensor t = state;
  for (int64_t s = 0; s < p.substeps; ++s) t = solve_step(sys, sweep, t, t, p.solver, omega);
  return t;
}

struct HeatCheckpointBackward : fk::autograd::Node {
  fk::autograd::SavedTensor alpha, starts;  // starts (F, *grid): the state at frames 0..F-1
  std::shared_ptr<const HeatPlan> plan;
  const char* name() const override { return "HeatCheckpointBackward"; }
  void for_each_saved(const std::function<void(fk::autograd::SavedTensor&)>& fn) override {
    fn(alpha);
    fn(starts);
  }
  std::vector<fk::Tensor> apply(std::vector<fk::Tensor>&& grads) override {
    const fk::Tensor& a = alpha.unpack(name());
    const fk::Tensor& st = starts.unpack(name());
    const HeatPlan& p = *plan;
    const fk::DType dt = a.dtype();
    const fk::Tensor g = grads[0].to(dt);
    fk::Tensor g_state = fk::zeros(p.g.shape(), {dt});
    fk::Tensor g_alpha = fk::zeros(p.g.shape(), {dt});
    for (int64_t f = st.size(0); f >= 1; --f) {
      const int64_t row = p.row_of_frame(f);
      if (row >= 0) {
        fk::Tensor front = g_state.select(2, 0);
        fk::add_(front, g.select(0, row));
      }
      fk::autograd::EnableGradGuard eg;
      fk::Tensor a_leaf = a.detach();
      a_leaf.set_requires_grad(true);
      fk::Tensor s_leaf = st.select(0, f - 1).detach();
      s_leaf.set_requires_grad(true);
      const fk::Tensor out = frame_with_graph(a_leaf, s_leaf, p);
      auto d = fk::autograd::grad({out}, {g_state}, {a_leaf, s_leaf});
      fk::autograd::NoGradGuard ng;
      g_alpha = fk::add(g_alpha, d[0]);
      g_state = d[1].detach().clone();
    }
    return {g_alpha};
  }
};

}  // namespace

fk::Tensor apply_checkpoint(const fk::Tensor& alpha_in, std::shared_ptr<const HeatPlan> plan) {
  const HeatPlan& p = *plan;
  if (!fk::autograd::needs_grad(alpha_in)) return apply_adjoint(alpha_in, plan);
  fk::autograd::NoGradGuard ng;
  const fk::Tensor alpha = alpha_in.detach().contiguous();
  const fk::DType dt = alpha.dtype();
  const int64_t n_frames = p.last_frame();
  fk::Tensor out = fk::empty({static_cast<int64_t>(p.frames.size()), p.g.nx, p.g.ny}, {dt});
  fk::Tensor starts = fk::empty({n_frames, p.g.nx, p.g.ny, p.g.nz}, {dt});
  fk::Tensor state = p.t0.to(dt).contiguous();
  if (p.row_of_frame(0) >= 0) copy_surface(out, p.row_of_frame(0), state);
  if (n_frames > 0) {
    fk::Tensor first = starts.select(0, 0);
    first.copy_(state);
    auto solver = make_step_solver(alpha, p.g, p.flat, p.solver);
    solver->start(state);
    fk::Tensor scratch = fk::empty(p.g.shape(), {dt});
    for (int64_t f = 1; f <= n_frames; ++f) {
      for (int64_t s = 0; s < p.substeps; ++s) {
        solver->advance();
        fk::Tensor next = (s + 1 == p.substeps && f < n_frames) ? starts.select(0, f) : scratch;
        solver->result(next);
        state = next;
      }
      const int64_t row = p.row_of_frame(f);
      if (row >= 0) copy_surface(out, row, state);
    }
  }
  auto node = std::make_shared<HeatCheckpointBackward>();
  node->alpha = alpha;
  node->starts = starts;
  node->plan = std::move(plan);
  fk::autograd::record(node, {alpha_in}, out);
  return out;
}

}  // namespace nefi::heat
