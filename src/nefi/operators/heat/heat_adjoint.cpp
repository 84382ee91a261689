// Gradient mode "adjoint" (the default). Forward: Tⁿ⁺¹ = A⁻¹ Tⁿ without a graph,
// keeping T¹..T^N (N = the last observed step). Backward (NeFTY Eq. 10–11,
// App. D.3): with μ^{N+1} = 0, solve A μⁿ = μⁿ⁺¹ + ∂ℓ/∂Tⁿ for n = N..1 with the
// same inner solver (A is symmetric), the frame gradients entering at z = 0;
// then dJ/dα = Σ_n μⁿ·Δt (∂L/∂α) Tⁿ, which is bilinear over faces, so the
// products S_f = Σ_n (Δ_f μⁿ)(Δ_f Tⁿ) are accumulated per step and
// differentiated once through the face conductances (alpha_gradient).
// The adjoint differentiates the exactly solved recurrence; the forward runs
// K sweeps, so it differs from the unrolled gradient by O(ρ^K).
#include <cstring>
#include <mutex>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/profile.h"
#include "nefi/operators/heat/heat_modes.h"
#include "nefi/operators/heat/step_solver.h"

namespace nefi::heat {

int64_t HeatPlan::row_of_frame(int64_t f) const {
  for (size_t i = 0; i < frames.size(); ++i)
    if (frames[i] == f) return static_cast<int64_t>(i);
  return -1;
}

fk::Tensor HeatPlan::initial_state(fk::DType dt, const fk::Device& d) const {
  if (d.is_cpu()) return t0.to(dt).contiguous();
  std::lock_guard<std::mutex> lock(device_t0_mutex_);
  for (const fk::Tensor& c : device_t0_)
    if (c.device() == d && c.dtype() == dt) return c;
  device_t0_.push_back(t0.to(dt).to(d).contiguous());
  return device_t0_.back();
}

void copy_surface(fk::Tensor& out, int64_t row, const fk::Tensor& state) {
  if (state.device().is_cuda()) {  // one strided copy kernel
    fk::Tensor dst = out.select(0, row);
    dst.copy_(state.select(2, 0));
    return;
  }
  fk::profile::OpScope scope("heat_copy_surface");
  const int64_t rows = state.size(0) * state.size(1), nz = state.size(2);
  const size_t item = state.itemsize();
  const char* src = static_cast<const char*>(state.data_ptr());
  char* dst = static_cast<char*>(out.data_ptr()) + row * rows * item;
  for (int64_t r = 0; r < rows; ++r) std::memcpy(dst + r * item, src + r * nz * item, item);
  out.bump_version();
}

namespace {

struct HeatAdjointBackward : fk::autograd::Node {
  fk::autograd::SavedTensor alpha, trajectory;  // trajectory (N, *grid): T¹..T^N
  std::shared_ptr<const HeatPlan> plan;
  const char* name() const override { return "HeatAdjointBackward"; }
  void for_each_saved(const std::function<void(fk::autograd::SavedTensor&)>& fn) override {
    fn(alpha);
    fn(trajectory);
  }
  std::vector<fk::Tensor> apply(std::vector<fk::Tensor>&& grads) override {
    const fk::Tensor& a = alpha.unpack(name());
    const fk::Tensor& traj = trajectory.unpack(name());
    const HeatPlan& p = *plan;
    const fk::DType dt = a.dtype();
    fk::Tensor g = grads[0].dtype() == dt ? grads[0] : grads[0].to(dt);
    if (!g.is_contiguous()) g = g.contiguous();
    const int64_t n_steps = traj.size(0);
    const fk::TensorOptions on{dt, a.device()};
    fk::Tensor sums = fk::zeros({3, p.g.nx, p.g.ny, p.g.nz}, on);
    fk::Tensor mu = fk::zeros(p.g.shape(), on);
    auto solver = make_step_solver(a, p.g, p.flat, p.solver);
    solver->start(mu);
    for (int64_t m = n_steps; m >= 1; --m) {
      fk::Tensor surface;
      if (m % p.substeps == 0) {
        const int64_t row = p.row_of_frame(m / p.substeps);
        if (row >= 0) surface = g.select(0, row);
      }
      solver->advance(surface);
      solver->result(mu);
      accumulate_face_products(sums, mu, traj.select(0, m - 1), p.g);
    }
    return {alpha_gradient(sums, a, p.g)};
  }
};

}  // namespace

fk::Tensor apply_adjoint(const fk::Tensor& alpha_in, std::shared_ptr<const HeatPlan> plan) {
  const HeatPlan& p = *plan;
  const bool grad = fk::autograd::needs_grad(alpha_in);
  fk::autograd::NoGradGuard ng;
  const fk::Tensor alpha = alpha_in.detach().contiguous();
  const fk::DType dt = alpha.dtype();
  const fk::TensorOptions on{dt, alpha.device()};  // α's device: the CPU or a CUDA device
  const int64_t n_steps = p.last_frame() * p.substeps;
  fk::Tensor out = fk::empty({static_cast<int64_t>(p.frames.size()), p.g.nx, p.g.ny}, on);
  fk::Tensor state = p.initial_state(dt, alpha.device());
  if (p.row_of_frame(0) >= 0) copy_surface(out, p.row_of_frame(0), state);
  fk::Tensor traj = grad ? fk::empty({n_steps, p.g.nx, p.g.ny, p.g.nz}, on) : fk::Tensor();
  fk::Tensor spare[2];
  if (!grad && n_steps > 0)
    spare[0] = fk::empty(p.g.shape(), on), spare[1] = fk::empty(p.g.shape(), on);
  if (n_steps > 0) {
    auto solver = make_step_solver(alpha, p.g, p.flat, p.solver);
    solver->start(state);
    for (int64_t m = 1; m <= n_steps; ++m) {
      solver->advance();
      fk::Tensor next = grad ? traj.select(0, m - 1) : spare[m % 2];
      solver->result(next);
      state = next;
      if (m % p.substeps == 0) {
        const int64_t row = p.row_of_frame(m / p.substeps);
        if (row >= 0) copy_surface(out, row, state);
      }
    }
  }
  if (grad) {
    auto node = std::make_shared<HeatAdjointBackward>();
    node->alpha = alpha;
    node->trajectory = traj;
    node->plan = std::move(plan);
    fk::autograd::record(node, {alpha_in}, out);
  }
  return out;
}

}  // namespace nefi::heat
