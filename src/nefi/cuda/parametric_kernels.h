#pragma once
// Launchers of a ParametricField's shape kernels (parametric.cu), on device
// buffers with a stream (a cudaStream_t as void*), no CUDA types. The
// arithmetic is parametric_cells.h's, in f64; parameters, coordinates and
// gradients are f32 or f64 (one dtype per call). `tunables` holds
// kShapeTunables f64 on the device (1 / (2 eps), then the gates), read when
// the kernels run.
#include <cstdint>

#include "nefi/cuda/parametric_cells.h"

namespace nefi::cuda {

// n points of d coordinates; C channels of K shapes of P entries; the
// backward's sub-chunks of `sub` points (shape_sub_chunk(n, row())).
struct ShapeLayout {
  int d = 0, P = 0;
  int64_t n = 0, C = 0, K = 0, sub = kShapeChunk;
  NEFI_HOST_DEVICE int64_t chunks() const { return (n + kShapeChunk - 1) / kShapeChunk; }
  NEFI_HOST_DEVICE int64_t subs() const { return (n + sub - 1) / sub; }
  // Entries of one sub-chunk's row of partial sums: every shape's, then the
  // background's.
  NEFI_HOST_DEVICE int64_t row() const { return C * K * P + C; }
};

// y (n, C) = background_c + sum_k sinh(alpha_ck) g_ck(x_i). One thread per
// (point, channel).
void launch_parametric_forward(const ShapeProfile& profile, const ShapeLayout& layout,
                               const float* coords, const float* shapes, const float* background,
                               const double* tunables, float* y, void* stream);
void launch_parametric_forward(const ShapeProfile& profile, const ShapeLayout& layout,
                               const double* coords, const double* shapes, const double* background,
                               const double* tunables, double* y, void* stream);

// The gradients of sum go * y into grad_shapes (C, K, P) and
// grad_background (C): per sub-chunk of layout.sub points, one thread per
// shape and one per channel into partial (subs x layout.row() f64), then
// one thread per entry summing them in parametric_cells.h's order.
void launch_parametric_backward(const ShapeProfile& profile, const ShapeLayout& layout,
                                const float* coords, const float* shapes, const double* tunables,
                                const float* go, double* partial, float* grad_shapes,
                                float* grad_background, void* stream);
void launch_parametric_backward(const ShapeProfile& profile, const ShapeLayout& layout,
                                const double* coords, const double* shapes, const double* tunables,
                                const double* go, double* partial, double* grad_shapes,
                                double* grad_background, void* stream);

}  // namespace nefi::cuda
