#pragma once
// The three gradient modes of HeatOperator::apply, each a function of α and
// the operator's plan, returning the observed surfaces (n_obs, nx, ny):
//   adjoint    graph-free forward saving T¹..T^N; one node whose backward runs
//              the discrete adjoint A μⁿ = μⁿ⁺¹ + ∂ℓ/∂Tⁿ backwards and
//              assembles dJ/dα once from the face sums (NeFTY Eq. 10–11).
//   checkpoint graph-free forward saving the state at every frame start; the
//              backward recomputes each frame with a graph and backpropagates
//              through it (exactly the unrolled gradient, one frame in memory).
//   autograd   the unrolled reference: every sweep recorded.
#include <memory>
#include <mutex>
#include <vector>

#include "fk/tensor.h"
#include "nefi/operators/heat/heat_system.h"
#include "nefi/operators/heat/inner_solvers.h"

namespace nefi::heat {

struct HeatPlan {
  StepGeometry g;        // spacing, dt of one implicit step, back sink
  int64_t substeps = 1;  // implicit steps per frame
  bool flat = true;      // stencil backend
  SolverOptions solver;
  std::vector<int64_t> frames;  // observed frames, ascending (0 = the initial state)
  fk::Tensor t0;                // T⁰ (nx, ny, nz), f64

  int64_t last_frame() const { return frames.empty() ? 0 : frames.back(); }
  // Output row of frame f, or -1 when f is not observed.
  int64_t row_of_frame(int64_t f) const;
  // T⁰ as a contiguous grid of dtype dt on device d (read-only). On a CUDA
  // device it is uploaded once per (device, dtype) and kept: a rollout inside
  // a captured step cannot copy from pageable host memory.
  fk::Tensor initial_state(fk::DType dt, const fk::Device& d) const;

 private:
  mutable std::mutex device_t0_mutex_;
  mutable std::vector<fk::Tensor> device_t0_;
};

fk::Tensor apply_adjoint(const fk::Tensor& alpha, std::shared_ptr<const HeatPlan> plan);
fk::Tensor apply_checkpoint(const fk::Tensor& alpha, std::shared_ptr<const HeatPlan> plan);
fk::Tensor apply_unrolled(const fk::Tensor& alpha, const HeatPlan& plan);

// Copies the front surface T[:, :, 0] of a contiguous grid into row `row` of
// out (n_obs, nx, ny), both of one dtype.
void copy_surface(fk::Tensor& out, int64_t row, const fk::Tensor& state);

}  // namespace nefi::heat
