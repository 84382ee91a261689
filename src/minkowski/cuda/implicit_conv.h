#pragma once
// The implicit-GEMM (output-stationary) dataflow of the device convolution,
// and the per-call choice between it and gather-GEMM-scatter (device_conv.h).
//
// Row masks: for each destination row of a row index (by_out: output rows,
// by_in: input rows), the bitmask of the offsets it has a pair in (volume <=
// 64), and the rows stably sorted by mask, so rows with one neighbour pattern
// are contiguous. Made once per map and index on first use (one host read of
// a flag: whether some row has two pairs in one offset, which no map of
// distinct coordinates has; such a map, or volume > 64, is not eligible) and
// cached with the map (DeviceKernelMap::row_masks); that host read
// synchronizes, so cached masks are complete for any stream.
//
// The product: a block owns a tile of sorted destination rows x destination
// channels (128 x 32 when the destination has <= 32 channels, else 64 x 64;
// 4 x 4 per thread). It walks the offsets present in the OR of its rows'
// masks, ascending; per offset it stages its rows' source rows (zero where a
// row has no pair: a row's pair in offset k is found from its CSR start and
// the popcount of its mask below k) and W_k, 16 inner channels at a time, in
// shared memory as f32, and accumulates with FMAs in f32 registers. Each
// output is written once (rounded once to the dtype): no atomics, no staging
// buffers, no scatter, and the sum order (offsets, then inner channels, both
// ascending) is fixed, so results repeat bit for bit in every mode. A row
// without pairs gets zeros. 16-bit operands are widened to f32 in shared
// memory: there is no tensor-core (mma) path yet.
//   forward         by_out, source rows in_rows, W_k          (C_in -> C_out)
//   input gradient  by_in,  source rows out_rows, W_k^T       (C_out -> C_in)
// The weight gradient stays on gather-GEMM (device_conv.cpp).
//
// ME_CONV_DATAFLOW = gather (default) | auto | implicit (read per call). implicit runs
// the implicit dataflow wherever the map is eligible (else gather); auto
// takes it when eligible and either the channels are narrow (C_in, C_out <=
// 64: the GEMMs are small and the staging traffic dominates) or the map is
// dense (pairs / (destination rows x volume) >= 0.5, so little of a tile's
// work is on absent pairs) with channels <= 128. The thresholds are a first
// cost model, not yet tuned on a device. Zero channels and maps without pairs
// always take gather (zeros without a launch).
#include <cstdint>
#include <string>

#include "fk/tensor.h"
#include "minkowski/cuda/device_kernel_map.h"

namespace minkowski::cuda {

enum class ConvDataflow { Auto, Gather, Implicit };
const char* name(ConvDataflow d);
// "auto", "gather" or "implicit"; else fk::Error naming ME_CONV_DATAFLOW.
ConvDataflow parse_conv_dataflow(const std::string& text);
// The knob's value.
ConvDataflow conv_dataflow_knob();

// What a call with these operands runs (Gather or Implicit): `want` as the
// knob gives it; eligible as the map's row masks say; density = pairs /
// (destination rows x volume).
ConvDataflow choose_conv_dataflow(ConvDataflow want, bool eligible, int64_t cin, int64_t cout,
                                  double density);

struct DeviceRowMasks {
  bool eligible = false;
  fk::Tensor mask;   // i64 (rows): bit k set where the row has a pair in offset k
  fk::Tensor order;  // i32 (rows): the rows stably sorted by mask
};
// The masks of the map's by_in (by_in) or by_out index, made on first use.
// Not eligible without any work when volume > 64.
const DeviceRowMasks& row_masks_of(const DeviceKernelMap& map, bool by_in);

// The implicit product on the current stream: the forward (transposed =
// false: src = features N_in x C_in, result N_out x C_out) or the input
// gradient (true: src = grad_out N_out x C_out, result N_in x C_in), weight
// K x C_in x C_out; result in src's dtype. Operands checked by the caller
// (device_conv.cpp); the masks must be eligible.
fk::Tensor implicit_conv(const fk::Tensor& src, const fk::Tensor& weight,
                         const DeviceKernelMap& map, bool transposed);

}  // namespace minkowski::cuda
