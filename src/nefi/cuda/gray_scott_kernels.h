#pragma once
// Launchers of the Gray-Scott kernels (gray_scott.cu): one explicit Euler
// substep of operators/reaction_diffusion/gray_scott.h and its adjoint, each
// one kernel, one thread per cell, on device buffers of f64 (C order (n0,
// n1); a state is (u, v) as (2, n0, n1)); raw pointers and a stream (a
// cudaStream_t as void*), no CUDA types. Each substep reads one buffer and
// writes another (the caller ping-pongs), so no thread reads what another
// writes in the same substep; the fused kernels run many substeps in one
// block with a barrier between them. What a thread computes is
// gray_scott_cells.h's, the CPU loops' operations in their order
// (gray_scott.cu is built with --fmad=false), so device and CPU solves agree
// to the bit.
#include <cstdint>

namespace nefi::cuda {

// The constants of one solve's kernels; cells are indexed in 32 bits (n0 n1 of them).
struct GrayScottCoefficients {
  int n0 = 0, n1 = 0;
  bool wrap = false;                    // periodic axes (else Neumann: no flux through the box)
  double s0 = 1, s1 = 1;                // 1 / h^2 per axis, as gray_scott.cpp rounds them
  double tau = 1;                       // the substep
  double F = 0, k = 0, Du = 0, Dv = 0;  // the scalars, where no field is given
};

// The per-cell coefficients (n0, n1): null means the scalar above.
struct GrayScottFields {
  const double* F = nullptr;
  const double* k = nullptr;
  const double* Du = nullptr;
};

// One forward substep: the state `in` (2, n) to `out` (2, n). Where not
// null: `checkpoint` (2, n) gets a copy of `in`, `record_u` / `record_v`
// (n) a copy of the new u / v, and a nonzero `*poison` turns those records
// into NaN (the range guard's flag, gray_scott_device.cpp).
struct GrayScottStep {
  const double* in = nullptr;
  double* out = nullptr;
  double* checkpoint = nullptr;
  double* record_u = nullptr;
  double* record_v = nullptr;
  const int* poison = nullptr;
};

// One adjoint substep: the cotangents (2, n) after the step, `cot_in` plus
// the observed cotangents `add_u` / `add_v` (n) where not null, to those
// before it in `cot_out`; `state` (2, n) is the state before the step. The
// gradient of the unknown field accumulates into the one non-null grad_*.
struct GrayScottAdjoint {
  const double* state = nullptr;
  const double* cot_in = nullptr;
  const double* add_u = nullptr;
  const double* add_v = nullptr;
  double* cot_out = nullptr;
  double* grad_F = nullptr;
  double* grad_k = nullptr;
  double* grad_Du = nullptr;
};

// A whole schedule (gray_scott_rollout.h's GrayScottRollout) by value, for
// the fused kernels: at most kFusedMaxObs observation times.
constexpr int kFusedMaxObs = 64;
struct GrayScottFusedRollout {
  int64_t n = 0, total = 0, every = 1;
  bool observe_u = true, observe_v = true;
  int n_obs = 0;
  int64_t obs[kFusedMaxObs] = {};
};

// Threads of the fused kernels' one block (each takes cells c, c + 512, ...).
constexpr int kFusedThreads = 512;

void launch_gray_scott_step(const GrayScottCoefficients& k, const GrayScottFields& f,
                            const GrayScottStep& b, void* stream);
void launch_gray_scott_adjoint(const GrayScottCoefficients& k, const GrayScottFields& f,
                               const GrayScottAdjoint& b, void* stream);

// The whole forward (gray_scott_forward) or the whole adjoint
// (gray_scott_backward) of a schedule as one launch of one thread block of
// kFusedThreads, a block-wide barrier after every substep: for grids small
// enough that one launch per substep costs more than the substep (the
// buffers stay in one SM's L1/L2 reach). The same bits as the per-substep
// launches: each cell's arithmetic is the same function.
void launch_gray_scott_fused_forward(const GrayScottCoefficients& k, const GrayScottFields& f,
                                     const GrayScottFusedRollout& r, const double* initial,
                                     double* state0, double* state1, double* checkpoints,
                                     double* out, const int* poison, void* stream);
void launch_gray_scott_fused_backward(const GrayScottCoefficients& k, const GrayScottFields& f,
                                      const GrayScottFusedRollout& r, const double* checkpoints,
                                      double* block, const double* g, double* cot0, double* cot1,
                                      const GrayScottAdjoint& proto, void* stream);

// One block: *flag = 1 when some x[i] (i < n) is above `hi`, not above
// `lo_exclusive` or NaN, else 0 (the captured solve's stand-in for the
// eager one's host check of the field's range).
void launch_gray_scott_range_guard(const double* x, int n, double lo_exclusive, double hi,
                                   int* flag, void* stream);

}  // namespace nefi::cuda
