#pragma once
// Segment normalization (normalization.h: BatchNorm, InstanceNorm) of features
// on a CUDA device. normalization.cpp keeps its host side (segments,
// statistics as f64 host vectors, the per-(segment, channel) coefficients)
// and comes here for its two passes over the rows when x is on a CUDA device:
//   device_segment_sums    the statistics' blocked f64 sums (blocks of
//                          block_rows rows, each summed in row order by one
//                          thread per channel, the blocks combined in order);
//                          one device-to-host copy of K x S x C doubles
//   device_segment_affine  the elementwise pass with the coefficients
// Both in the CPU's order with the CPU's roundings (products not contracted
// into adds), so statistics, outputs and gradients are the CPU's. x and g:
// contiguous, f32 or f64, on one device; the segments are uploaded per call.
//
// CUDA builds implement these in minkowski/cuda/normalization_dispatch.cpp;
// CPU-only builds in normalization_device_stub.cpp, as an fk::Error.
#include <cstdint>
#include <vector>

#include "fk/tensor.h"
#include "minkowski/ops/normalization.h"

namespace minkowski {

enum class SegmentTerm {
  Value,             // x                  (K = 1)
  SquaredDeviation,  // (x - mean)^2       (K = 1)
  GradAndGradXhat,   // g and g * xhat     (K = 2), xhat = (x - mean) * invstd
};

// Sums per (term k, segment s, channel c) at [(k * S + s) * C + c]; mean and
// invstd (S x C) as the term needs them (else empty); g only for GradAndGradXhat.
std::vector<double> device_segment_sums(SegmentTerm term, const fk::Tensor& x, const fk::Tensor& g,
                                        const Segments& seg, int64_t block_rows,
                                        const std::vector<double>& mean,
                                        const std::vector<double>& invstd);
// coef: (4 or 5, S x C) of x's dtype, on the host, rows m, r, s, u (and v for
// the gradient); per element with k = (segment, channel):
//   g undefined: (x - m - r) s + u            (the forward)
//   else:        g s - (x - m - r) u - v      (the input gradient)
fk::Tensor device_segment_affine(const fk::Tensor& x, const fk::Tensor& g, const Segments& seg,
                                 const fk::Tensor& coef);

}  // namespace minkowski
