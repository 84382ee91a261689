#pragma once
// The implicit-GEMM (output-stationary) dataflow of the device convolution,
// and the per-call choice between it and gather-GEMM-scatter (device_conv.h).
//
// Row masks: for each destination row of a row index (by_out: output rows,
// by_in: input rows), the bitmask of the offsets it has a pair in (volume <=
// 64), and the rows stably sorted by mask, so rows with one neighbour pattern
// are contiguous. Made once per map and index on first use (one host read of
// a flag: whether some row has two pairs in one offset, which no map of
// distinct coordinates has; such a map, or volume > 64, is not eligible; and
// the tiles' padded slot counts, conv_dataflow.h) and cached with the map
// (DeviceKernelMap::row_masks); that host read synchronizes, so cached
// masks are complete for any stream.
//
// The product: a block owns a tile of sorted destination rows x destination
// channels (128 x 32 when the destination has <= 32 channels, else 64 x 64;
// 4 x 4 per thread). It walks the offsets present in the OR of its rows'
// masks, ascending; per offset it stages its rows' source rows (zero where a
// row has no pair: a row's pair in offset k is found from its CSR start and
// the popcount of its mask below k) and W_k, 16 inner channels at a time, in
// shared memory as f32, and accumulates with FMAs in f32 registers; or, on
// tensor cores (implicit_conv_mma.cu, sm_80+), stages them in their own
// dtype (f16, bf16; f32 as TF32) and multiplies WMMA fragments with f32
// accumulation, double-buffering the gather with cp.async. Each output is
// written once (rounded once to the dtype): no atomics, no staging buffers,
// no scatter, and the sum order is fixed, so results repeat bit for bit in
// every mode. A row without pairs gets zeros.
//   forward         by_out, source rows in_rows, W_k          (C_in -> C_out)
//   input gradient  by_in,  source rows out_rows, W_k^T       (C_out -> C_in)
// The weight gradient stays on gather-GEMM (device_conv.cpp).
//
// Tensor cores (ME_CONV_IMPLICIT_MMA=1, the default): f16 and bf16 always,
// f32 when fk::amp::allow_tf32(), on a device of compute capability >= 8
// running code built for sm_80+ (FK_CUDA_ARCHS); otherwise the FMA tiles.
// Any channel count: inner channels past C are zeros in shared memory
// (padded to the fragment depth, 16 for f16/bf16 and 8 for TF32), columns
// past C are computed and not written; source rows and weights load by
// cp.async in 16-byte chunks when C is a multiple of 8 halves / 4 floats,
// else element by element (same results).
//
// ME_CONV_DATAFLOW = auto (default) | gather | implicit (read per call).
// implicit runs the implicit dataflow wherever the map is eligible (else
// gather); auto compares the two dataflows' modelled costs from the map's
// pairs per offset, its tiles' density and the channel widths
// (conv_dataflow.h). Zero channels and maps without pairs always take
// gather (zeros without a launch).
#include <cstdint>
#include <string>

#include "fk/tensor.h"
#include "minkowski/cuda/conv_dataflow.h"
#include "minkowski/cuda/device_kernel_map.h"

namespace minkowski::cuda {

// The knob's value.
ConvDataflow conv_dataflow_knob();

struct DeviceRowMasks {
  bool eligible = false;
  fk::Tensor mask;   // i64 (rows): bit k set where the row has a pair in offset k
  fk::Tensor order;  // i32 (rows): the rows stably sorted by mask
  // padded_slots (conv_dataflow.h) with tiles of 64 and of 128 rows.
  int64_t slots_64 = 0, slots_128 = 0;
  int64_t slots(int tile_rows) const { return tile_rows == 128 ? slots_128 : slots_64; }
};
// The masks of the map's by_in (by_in) or by_out index, made on first use.
// Not eligible without any work when volume > 64.
const DeviceRowMasks& row_masks_of(const DeviceKernelMap& map, bool by_in);

// The implicit product on the current stream: the forward (transposed =
// false: src = features N_in x C_in, result N_out x C_out) or the input
// gradient (true: src = grad_out N_out x C_out, result N_in x C_in), weight
// K x C_in x C_out; result in src's dtype. Operands checked by the caller
// (device_conv.cpp); the masks must be eligible. f64 operands: fk::Error
// with implicit_refusal's reason, before any device work.
fk::Tensor implicit_conv(const fk::Tensor& src, const fk::Tensor& weight,
                         const DeviceKernelMap& map, bool transposed);

// Whether implicit_conv runs on tensor cores for this dtype on this device
// (the rule above; reads ME_CONV_IMPLICIT_MMA and the TF32 switch).
bool implicit_uses_tensor_cores(fk::DType dtype, int device);

// The cost model's problem for the product onto by_in's (input gradient)
// or by_out's (forward) rows; makes the row masks when volume <= 64.
DataflowProblem dataflow_problem(const DeviceKernelMap& map, bool by_in, int64_t cin, int64_t cout,
                                 fk::DType dtype);

}  // namespace minkowski::cuda
