#pragma once
// The device convolution's dataflows and the cost model `auto` chooses
// between them with, per product (a layer's forward, or its input gradient).
//
// Gather-GEMM-scatter (device_conv.cpp) runs one cuBLAS GEMM per offset with
// pairs, at max(launch, FLOPs / GEMM rate) each (small offsets are
// launch-bound: pairs per offset matter), and moves every pair's rows
// through DRAM: gathered (read + write C_in), read by the GEMM, written
// (C_out), read by the scatter and added into the f32 accumulator (read +
// write 4 bytes each), plus the accumulator's zeroing and, for 16-bit
// dtypes, its conversion; three launches beside the GEMMs (four for 16 bits).
//
// The implicit kernel (implicit_conv.h) is one launch that multiplies every
// (tile row, offset present in the tile) slot, pair or not: its FLOPs are
// 2 x padded_slots x (inner padded to the product depth) x (cols padded to
// the tile width), where padded_slots = sum over tiles of tile rows x
// offsets in the OR of the tile's (sorted) masks; pairs / padded_slots is
// the tiles' density. Its traffic is each pair's source row once per column
// tile (an upper bound: L2 holds many) and the destination once; time =
// launch + max(FLOPs / rate, bytes / bandwidth).
//
// `auto` (ME_CONV_DATAFLOW's default) takes implicit when the map is
// eligible and its cost is the lower. The machine constants
// (DataflowMachine) are fitted to gpu-check's minkowski_cuda_bench rows on
// an H200 (BM_DeviceConv ... implicit:1/2, with the model's predictions as
// counters; conv_dataflow.cpp and docs/performance.md, session 26).
#include <cstdint>
#include <string>
#include <vector>

namespace minkowski::cuda {

enum class ConvDataflow { Auto, Gather, Implicit };
const char* name(ConvDataflow d);
// "auto", "gather" or "implicit"; else fk::Error naming ME_CONV_DATAFLOW.
ConvDataflow parse_conv_dataflow(const std::string& text);

// The arithmetic of a product: f32 FMAs or GEMMs (FP32), TF32, or 16-bit
// operands with f32 accumulation.
enum class ConvPrecision { F32, Tf32, Half };

struct DataflowMachine {
  double launch_s;               // one kernel or GEMM launch, host gap included
  double bytes_per_s;            // DRAM, streamed (the implicit kernel's rows)
  double gather_bytes_per_s[2];  // DRAM, gathered and scattered rows: 4-, 2-byte elements
  double gemm_flops[3];          // cuBLAS per-offset GEMMs, by ConvPrecision
  double implicit_mma_flops[3];  // implicit on tensor cores (Tf32, Half; F32 unused)
  double implicit_fma_flops;     // implicit on f32 FMAs (any dtype)
};
// The H200's fitted constants (conv_dataflow.cpp says where each comes from).
const DataflowMachine& default_dataflow_machine();

// One product: destination rows, channels summed over (inner) and produced
// (cols), the operand dtype's size.
struct DataflowProblem {
  int64_t rows = 0;
  std::vector<int64_t> pairs_per_offset;
  // Of the tiles the implicit kernel would use (implicit_tile_rows(cols));
  // negative: the map is not eligible (volume > 64 or repeated pairs).
  int64_t padded_slots = -1;
  int64_t inner = 0, cols = 0, element_bytes = 4;
  ConvPrecision precision = ConvPrecision::F32;
  bool implicit_tensor_cores = false;  // the implicit kernel would use mma
};

struct DataflowCosts {
  double gather_s = 0, implicit_s = 0;  // implicit_s infinite when not eligible
};
DataflowCosts dataflow_costs(const DataflowProblem& p,
                             const DataflowMachine& m = default_dataflow_machine());

// Why a product with elements of element_bytes bytes cannot take the
// implicit dataflow, or nullptr: 8-byte (f64) elements, which the implicit
// kernels (f32, f16, bf16; f32 staging and accumulation) would compute in
// f32; f64 products run gather-GEMM-scatter on cuBLAS DGEMM instead.
const char* implicit_refusal(int64_t element_bytes);

// Gather or Implicit: `want` when forced (Implicit only where eligible and
// not refused), else the lower cost (gather on a tie).
ConvDataflow choose_conv_dataflow(ConvDataflow want, const DataflowProblem& p,
                                  const DataflowMachine& m = default_dataflow_machine());

// The implicit kernels' tile heights: 128 rows for <= 32 destination
// channels, else 64 (implicit_conv.cu, implicit_conv_mma.cu).
int implicit_tile_rows(int64_t cols);
// padded_slots of rows with these offset masks, on the host (sorted as the
// device sorts them): the reference for the device's count, and how tests
// build problems from constructed maps.
int64_t padded_slots(std::vector<uint64_t> masks, int tile_rows);

}  // namespace minkowski::cuda
