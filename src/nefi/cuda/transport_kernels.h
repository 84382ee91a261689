#pragma once
// Launchers of the advection-diffusion kernels (transport.cu) for a release
// unknown's explicit steps (operators/transport_steps.h), on device buffers
// of f64 states, `batch` rows of `cells` values each (row-major); raw
// pointers and a stream (a cudaStream_t as void*), no CUDA types. Each
// output value is one thread, with separately rounded products and sums in
// the CPU loops' order (no atomics, no fused multiply-adds): the CPU's bits,
// run to run reproducible. Per-cell arithmetic: transport_cells.h.
#include <cstdint>

namespace nefi::cuda {

// One factor's sparse rows: weight[e] (+ tau per_tau[e] where per_tau is not
// null) on column col[e] for the entries [row_start[i], row_start[i + 1]).
struct TransportRows {
  const int64_t* row_start = nullptr;
  const int32_t* col = nullptr;
  const double* weight = nullptr;
  const double* per_tau = nullptr;
};

// out = c + tau (M c + s) on every row (s null: none; else one per row).
void launch_transport_step(const TransportRows& m, int64_t batch, int64_t cells, double tau,
                           const double* c, const double* s, double* out, void* stream);

// Observation k of K: y[(b K + k) m + q] = c[b cells + cell_q], cell_q =
// sensors[q] (sensors null: q, m == cells).
void launch_transport_observe(int64_t batch, int64_t cells, int64_t observed, int64_t K, int64_t k,
                              const int64_t* sensors, const double* c, double* y, void* stream);

// Its transpose: lam[b cells + cell_q] += g[(b K + k) m + q] (distinct cells:
// no two threads write one value).
void launch_transport_inject(int64_t batch, int64_t cells, int64_t observed, int64_t K, int64_t k,
                             const int64_t* sensors, const double* g, double* lam, void* stream);

// acc += tau v over n values.
void launch_transport_accumulate(int64_t n, double tau, const double* v, double* acc, void* stream);

}  // namespace nefi::cuda
