#pragma once
// Pooling transpose (unpooling) on SparseTensors: from a coarse tensor
// back onto finer coordinates, each fine output reducing the coarse inputs
// whose kernel reaches it. The map is the transpose of the pooling map from
// the fine to the coarse coordinates (the cached one when a pooling or strided
// convolution built it), so pooling_transpose with Sum is the exact adjoint of
// sum pooling with the same kernel and stride.
//
//   pooling_transpose             output tensor stride = input / stride (must
//                                 divide). Output coordinates: an existing map
//                                 of that stride (the encoder's: same tag,
//                                 else untagged), else a new one as the
//                                 generative variant makes; or `out` when
//                                 given (a map of the input's manager with
//                                 that tensor stride; another manager or
//                                 another stride is an fk::Error).
//   generative_pooling_transpose  always a new output map: every input
//                                 coordinate plus every offset of the region
//                                 the features are unpooled over
//                                 (pooling_region, scaled by the output
//                                 tensor stride), e.g. 2^D children per point
//                                 for kernel 2, stride 2. With kernel size =
//                                 stride odd (or dilated) that region is the
//                                 parent's cells o..o+s-1, not the centred
//                                 window: generated from the centred window,
//                                 o-1 got no feature and o+s-1 was missing.
//
// Modes (fine output f, coarse inputs o with f = o + offset_k):
//   Sum      sum of x[o]
//   Average  that sum divided by the number of such o present (with kernel
//            size = stride exactly one, so Average equals Sum there)
//   Max      per channel max, ties to the first offset, gradient to the arg-max
// MinkowskiEngine's MinkowskiPoolingTranspose sums whatever its docstring says
// (both of its backends call the average kernel with averaging off, reference
// §2.22); here each mode does what its name says, and Sum is ME's behaviour.
//
// Dtypes, determinism, memory and devices: as local pooling (pooling.h), whose
// kernels these are.
#include <optional>
#include <vector>

#include "minkowski/coords/kernel_region.h"
#include "minkowski/ops/pooling.h"
#include "minkowski/sparse_tensor.h"

namespace minkowski {

SparseTensor pooling_transpose(const SparseTensor& x, PoolingMode mode, const KernelRegion& kernel,
                               const std::vector<int32_t>& stride,
                               const std::optional<MapRef>& out = std::nullopt);
SparseTensor generative_pooling_transpose(const SparseTensor& x, PoolingMode mode,
                                          const KernelRegion& kernel,
                                          const std::vector<int32_t>& stride);

}  // namespace minkowski
