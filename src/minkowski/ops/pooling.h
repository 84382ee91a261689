#pragma once
// Local pooling on SparseTensors: max, average and sum over the inputs
// a kernel region reaches from each output, on the same cached kernel maps as
// convolution (any region: cube, cross, custom offsets; kernel size and
// dilation in the KernelRegion, stride as an argument).
//
//   output map   stride(input map, stride), exactly the strided convolution's
//                (floor(c / (ts*s)) * (ts*s) per axis, deduplicated; stride 1
//                is the input map itself). Output tensor stride = input * stride.
//   Sum          out[o] = sum of F[i] over the pairs (i, o) of the map
//   Average      that sum divided by the number of pairs of o, i.e. by the
//                number of input sites actually present under o's kernel
//                (not by the kernel volume: sparse, not dense, averaging)
//   Max          per channel, the largest F[i, c]; the arg-max input row is
//                recorded so the backward routes G[o, c] to it alone. Ties go
//                to the first pair in map order (offset order), so the choice
//                is deterministic.
// An output no input reaches (possible only with a region that does not cover
// the strided parent, e.g. custom offsets without zero) gets 0 in every mode
// and passes no gradient (no NaN from an average over nothing).
//
// Dtypes: f32, f64, f16, bf16 (16-bit converted to f32, accumulated in f32,
// rounded once at the end). Shapes: features N_in x C -> N_out x C.
//
// Algorithm: every output row is reduced by one thread from the map's
// by-output-row index (each row's pairs in offset order), the backward walks
// the by-input-row index the same way; rows are handed out in blocks, nothing
// is accumulated across threads, so no atomics and results are bit-identical
// at any thread count. Features on a CUDA device take the same walk there
// (pooling_device.h): the same values and arg-max rows, on the device. Memory: the output (plus
// N_out x C int32 arg-max rows for Max, kept for the backward); the by-input index is built on the
// first backward and cached with the map.
#include <cstdint>
#include <memory>
#include <vector>

#include "fk/tensor.h"
#include "minkowski/coords/kernel_map.h"
#include "minkowski/coords/kernel_region.h"
#include "minkowski/sparse_tensor.h"

namespace minkowski {

enum class PoolingMode { Max, Average, Sum };

const char* pooling_mode_name(PoolingMode mode);

struct PoolingResult {
  fk::Tensor out;     // N_out x C, the features' dtype
  fk::Tensor argmax;  // Max: N_out x C int32 input rows (-1: no input); else undefined
};

// The pure pair on a kernel map (in = the rows reduced, out = the rows made).
PoolingResult pool_forward(const fk::Tensor& features, const KernelMap& map, PoolingMode mode);
// Gradient w.r.t. the features (N_in x C, grad_out's dtype); `argmax` is
// pool_forward's (Max only).
fk::Tensor pool_backward(const fk::Tensor& grad_out, const KernelMap& map, PoolingMode mode,
                         const fk::Tensor& argmax);

// The differentiable core: pool_forward with an autograd node over pool_backward.
fk::Tensor pool_features(const fk::Tensor& features, std::shared_ptr<const KernelMap> map,
                         PoolingMode mode);

// The region a pooling (or unpooling) of `stride` reduces over. As in
// MinkowskiEngine, a cube or cross whose kernel size equals the stride on
// every axis maps each input to its floor-strided parent (its stride map,
// dilation ignored), which for an odd size is not the centred window: k = s =
// 3 pools o..o+2, not o-1..o+1 (where o+2 fell in no window). That map as a
// region: offsets 0..s-1 per axis. An even size without dilation is that
// region already and is returned unchanged, as is any other pooling.
KernelRegion pooling_region(const KernelRegion& kernel, const std::vector<int32_t>& stride,
                            int dimension);

// Each reduces over pooling_region(kernel, stride).
SparseTensor local_pooling(const SparseTensor& x, PoolingMode mode, const KernelRegion& kernel,
                           const std::vector<int32_t>& stride = {1});
SparseTensor max_pooling(const SparseTensor& x, const KernelRegion& kernel,
                         const std::vector<int32_t>& stride = {1});
SparseTensor avg_pooling(const SparseTensor& x, const KernelRegion& kernel,
                         const std::vector<int32_t>& stride = {1});
SparseTensor sum_pooling(const SparseTensor& x, const KernelRegion& kernel,
                         const std::vector<int32_t>& stride = {1});

}  // namespace minkowski
