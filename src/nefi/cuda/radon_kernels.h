#pragma once
// Launchers of the Radon kernels (radon.cu): the projection and its exact
// adjoint as one sparse-row gather each, on device buffers (C order); raw
// pointers and a stream (a cudaStream_t as void*), no CUDA types. T (the
// image's and sinogram's dtype) is float or double; the matrices and the
// sums are f64. Each output element is one thread summing its row's entries
// in stored order with separately rounded products and sums (no atomics, no
// fused multiply-adds): the CPU loops of operators/radon.cpp to the bit, run
// to run reproducible. Index arithmetic: radon_cells.h.
#include <cstdint>

namespace nefi::cuda {

// out (batch, rows, inner) from src (batch, src_rows, inner) through a matrix
// of `rows` sparse rows over `src_rows` columns; every slice z < inner of a
// batch row is mapped by the same matrix (the 3-D operator's z slices).
// Projection: rows = views x detector bins, src_rows = pixels; adjoint: the
// transpose, rows = pixels, src_rows = views x bins.
struct GatherGeometry {
  int64_t batch = 1, rows = 0, src_rows = 0, inner = 1;
  int64_t out_numel() const { return batch * rows * inner; }
};

// out[b, r, z] = sum_{e in row r} weight[e] src[b, col[e], z].
template <typename T>
void launch_sparse_gather(const GatherGeometry& g, const int64_t* row_start, const int32_t* col,
                          const double* weight, const T* src, T* out, void* stream);

}  // namespace nefi::cuda
