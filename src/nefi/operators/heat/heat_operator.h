#pragma once
// HeatOperator: the NeFTY instrument. ∂T/∂t = ∇·(α∇T) on an extent[0] ×
// extent[1] × extent[2] slab sampled by a (nx, ny, nz) cell grid; the last
// axis is depth and z index 0 is the observed front surface. Finite volumes
// with harmonic-mean face diffusivities 2 α_i α_j / (α_i + α_j) (or
// arithmetic (α_i + α_j) / 2 with face_mode arithmetic), implicit
// Euler (I − Δt L(α)) Tⁿ⁺¹ = Tⁿ with `implicit_substeps` steps per camera
// frame; periodic lateral boundaries (or insulated sides: lateral_bc
// neumann, no face across the box's edge), adiabatic front face, adiabatic
// (neumann) or convective (robin, sink h/Δz) back face.
//
// apply(alpha): alpha (nx, ny, nz) f32 or f64 -> front-surface temperatures
// at the observed frames, (n_obs, nx, ny), same dtype and device. On a CUDA
// device (CUDA builds; stencil flat/auto, solver jacobi or chebyshev, and
// grad_mode adjoint when α requires grad) the rollout and the adjoint run as
// nefi/cuda kernels, the system and the K sweeps of a step enqueued without a
// host sync: nothing is read back between α and the frames or dJ/dα, so a
// solver step through it is captured as one CUDA graph (graph_capturable).
// Before an eager rollout α is scanned for non-positive or non-finite cells
// (one copy to the host); inside a capture α has no values yet, so a captured
// step is not scanned (the field's bounded head keeps α > 0). Frame 0 is the initial
// state; frames first_frame, first_frame + frame_stride, ... ≤ n_frames are
// observed. Not batchable; homogeneity none.
//
// Inner solvers of each implicit step (warm-started from the previous frame):
// jacobi (K sweeps), chebyshev (semi-iteration over the same sweeps with the
// Gershgorin bound ρ = max_i Σ_j W_j[i], no host sync), cg (Jacobi-
// preconditioned, relative tolerance cg_tol, convergence checked every
// check_every iterations, at most cg_max_iter).
// Stencil backends: flat (padded flat layout, every neighbour a constant
// offset, one fused kernel per sweep over preallocated buffers), roll (the
// plain reference built from fk::roll + addcmul), auto (= flat).
// Gradient modes: adjoint (the forward runs without a graph and saves only the
// trajectory; backward solves the discrete adjoint backwards in time and
// assembles dJ/dα once over face products — one autograd node), checkpoint
// (per frame recompute), autograd (unrolled through the inner iterations).
#include <array>
#include <optional>
#include <string>
#include <vector>

#include "nefi/domain.h"
#include "nefi/operators/operator.h"

namespace nefi {
namespace heat {
struct HeatPlan;
struct StepGeometry;
}  // namespace heat

// The flash that heats the front face at t = 0:
// A · exp(−r_xy² / 2 w_xy²) · exp(−z² / 2 w_z²), z measured from the front
// face, stored as exact cell averages (erf), laterally periodised. uniform:
// the reference's UniformFlash (initial: flash, the real-PVC setting),
// A · exp(−z² / 2 w_z²), the same in every column.
struct GaussianFlash {
  double amplitude = 100.0;
  double width_xy = 2.5;
  double width_z = 0.2;
  std::optional<std::array<double, 2>> center;  // physical (x, y); default the middle
  bool periodic = true;
  bool uniform = false;
};

struct HeatConfig {
  std::vector<double> extent{10.0, 10.0, 1.0};
  double dt = 0.05;
  int64_t n_frames = 100;
  int64_t implicit_substeps = 1;
  int64_t first_frame = 1;
  int64_t frame_stride = 1;
  std::string stencil = "auto";   // flat | roll | auto
  std::string solver = "jacobi";  // jacobi | chebyshev | cg
  int64_t jacobi_iters = 50;      // K for jacobi and chebyshev
  double cg_tol = 1e-6;           // relative residual (at least 8 eps of the dtype)
  int64_t cg_max_iter = 200;
  int64_t check_every = 1;              // cg: iterations between convergence checks
  std::string grad_mode = "adjoint";    // adjoint | checkpoint | autograd
  std::string back_bc = "neumann";      // neumann (adiabatic) | robin
  double robin_h = 0.0;                 // robin heat-transfer coefficient (>= 0)
  std::string face_mode = "harmonic";   // face diffusivity: harmonic | arithmetic
  std::string lateral_bc = "periodic";  // periodic | neumann (insulated sides)
  GaussianFlash flash;
  // Throws fk::Error naming the key for: non-positive dt/extent, n_frames < 1,
  // substeps < 1, first_frame outside [0, n_frames], frame_stride < 1, an
  // unknown stencil/solver/grad_mode/back_bc, K < 1, negative robin_h, ...
  void validate() const;
};

// Cell averages of the flash on `shape` = (nx, ny, nz) over `extent`, f64.
fk::Tensor flash_cell_averages(const GaussianFlash& flash, const fk::Dims& shape,
                               const std::vector<double>& extent);

class HeatOperator : public Operator {
 public:
  // shape = (nx, ny, nz); every axis >= 3 (the stencil's smallest grid).
  HeatOperator(HeatConfig cfg, fk::Dims shape);

  fk::Tensor apply(const fk::Tensor& alpha) const override;
  std::shared_ptr<Operator> at_resolution(const fk::Dims& shape) const override;
  fk::Dims output_shape(const fk::Dims& shape) const override;
  bool batchable() const override { return false; }
  // True for the configurations that run on a device with no host read: the
  // flat stencil (or auto) with jacobi or chebyshev and grad_mode adjoint.
  // False for cg (it reads its residual norm on the host every check_every
  // iterations) and for the roll stencil, checkpoint and autograd (CPU only).
  bool graph_capturable() const override;
  // The setting that keeps a step from being captured, what in it reads the
  // host, and the setting a capture needs ("" where capturable).
  std::string not_capturable_reason() const override;
  // The same three settings decide whether α may live on a device at all
  // (the cg solve, the roll stencil, checkpoint and autograd run on host
  // vectors): a device solve is refused at setup, naming the setting.
  std::string host_only_reason() const override;
  std::string fidelity_tag() const override;  // "implicit-euler-<solver>"
  std::string kind() const override { return "heat"; }
  void prepare_tables(fk::Device device, fk::DType dtype) const override;

  const HeatConfig& config() const { return cfg_; }
  const fk::Dims& shape() const { return shape_; }
  std::vector<double> spacing() const;
  std::vector<int64_t> observed_frames() const;
  // The initial state T⁰ (nx, ny, nz), f64.
  const fk::Tensor& initial_state() const { return t0_; }
  // Diagnostic solve without a graph: every frame's state, (n_frames + 1, nx, ny, nz).
  fk::Tensor simulate(const fk::Tensor& alpha) const;
  // Gershgorin bound ρ of the Jacobi iteration matrix at `alpha` (a 0-dim CPU tensor).
  fk::Tensor jacobi_bound(const fk::Tensor& alpha) const;
  // Spacing, Δt of one implicit step and back-face sink the solves use.
  const heat::StepGeometry& step_geometry() const;

 private:
  // Shape, dtype and device checks; then every cell finite and > 0, scanned
  // on the host -- for a device α only where `scan_device` (apply passes
  // false: its device result carries the check as a NaN instead).
  void check_alpha(const fk::Tensor& alpha, const char* where, bool scan_device = true) const;
  HeatConfig cfg_;
  fk::Dims shape_;
  fk::Tensor t0_;
  std::shared_ptr<const heat::HeatPlan> plan_;
};

}  // namespace nefi
