#pragma once
// parametric_shapes (parametric_field.h) on a CUDA device, every family
// (cuda/parametric_device.cpp, kernels in cuda/parametric.cu; CPU-only
// builds refuse it, parametric_device_stub.cpp). The arithmetic is the CPU
// op's (cuda/parametric_cells.h), in f64 whatever the parameters' dtype:
//   forward   one kernel, a thread per (point, channel) summing its shapes
//             in order: the CPU's bits where the two libms agree
//   backward  a thread per (sub-chunk of 256 points, shape) and per
//             (sub-chunk, channel) for the background, then one per entry
//             summing them in the CPU op's order (cuda/parametric_cells.h),
//             so the same bits on the same terms, deterministic; memory one
//             f64 row of C K P + C partials per sub-chunk (a 128^3 grid of
//             16 ellipses: 14 MB), per chunk of 2048 points where that would
//             pass 512 MB (256 3-D stars of degree 8 there: 178 MB)
// The profile's moving numbers (1 / (2 eps) and the gates) are read from
// `tunables` when the kernels run, so rewriting it in place retargets a
// captured step as the fit anneals; the backward reads them when it runs
// too, so a forward and its backward must run at the same tunables.
#include <string>

#include "fk/tensor.h"

namespace nefi {

// Checks parametric_shapes' operands for a family (stars: of outline
// degree L = `degree`): the coordinates' dimension, the shapes' entries, the
// background's channels, one real dtype and one device. Returns the
// polygons' V (0 for the others).
int check_parametric_operands(const fk::Tensor& coords, const fk::Tensor& shapes,
                              const fk::Tensor& background, const std::string& family, int degree,
                              const char* op);

// coords (N, d), shapes (C, K, P), background (C), one real dtype on one
// CUDA device; degree the stars' L (0 for the others); tunables
// (cuda::kShapeTunables) f64 on that device: 1 / (2 eps) (read by all but
// blobs), then the stars' degree gates 3..L or the polygons' one gate
// (parametric_field.h's gates(progress)), each in [0, 1]. Returns raw
// (N, C), differentiable in shapes and background.
fk::Tensor parametric_shapes_device(const fk::Tensor& coords, const fk::Tensor& shapes,
                                    const fk::Tensor& background, const std::string& family,
                                    int degree, const fk::Tensor& tunables);

}  // namespace nefi
