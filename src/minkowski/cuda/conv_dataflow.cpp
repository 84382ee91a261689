// The dataflow cost model of the device convolution (conv_dataflow.h).
#include "minkowski/cuda/conv_dataflow.h"

#include <algorithm>
#include <bit>
#include <limits>

#include "fk/error.h"

namespace minkowski::cuda {

namespace {

int64_t round_up(int64_t n, int64_t to) {
  return (n + to - 1) / to * to;
}

int idx(ConvPrecision p) {
  return static_cast<int>(p);
}

}  // namespace

const char* name(ConvDataflow d) {
  switch (d) {
    case ConvDataflow::Auto:
      return "auto";
    case ConvDataflow::Gather:
      return "gather";
    case ConvDataflow::Implicit:
      return "implicit";
  }
  return "?";
}

ConvDataflow parse_conv_dataflow(const std::string& text) {
  for (ConvDataflow d : {ConvDataflow::Auto, ConvDataflow::Gather, ConvDataflow::Implicit})
    if (text == name(d)) return d;
  FK_CHECK(false, "ME_CONV_DATAFLOW", "one of auto, gather, implicit", "'" + text + "'");
  return ConvDataflow::Auto;
}

// Fitted on an H200 to gpu-check's BM_DeviceConv rows (docs/performance.md,
// session 26: a 3x3x3 submanifold convolution of 100k points, C = 32..256,
// f32, TF32, bf16, f16, forward), where the spec-sheet guesses (4 TB/s, GEMMs
// at 40/200/400 TFLOPS, implicit at 27/75/150) chose the slower dataflow in
// 3 of 16 shapes and the fitted ones in none:
//  - gather's traffic is scattered rows: about 2.8 TB/s for 4-byte elements
//    and 1.4 TB/s for 2-byte ones (narrower rows, a wider f32 accumulator);
//  - cuBLAS's per-offset GEMMs (N <= 256, about 44k rows each) reach about
//    40 TFLOPS in FP32, 100 in TF32 and 250 in f16/bf16 at the widths where
//    they are not launch-bound (the rows' gemm_FLOPS counters);
//  - the implicit kernel: 15 TFLOPS on f32 FMAs, 24 in TF32 and 60 in
//    f16/bf16 on tensor cores (its time over its padded products);
//  - launches about 4 us apart (reference/peers.md 5.3).
const DataflowMachine& default_dataflow_machine() {
  static const DataflowMachine m{
      4e-6, 4.0e12, {2.8e12, 1.4e12}, {40e12, 100e12, 250e12}, {0, 24e12, 60e12}, 15e12};
  return m;
}

int implicit_tile_rows(int64_t cols) {
  return cols <= 32 ? 128 : 64;
}

int64_t padded_slots(std::vector<uint64_t> masks, int tile_rows) {
  std::sort(masks.begin(), masks.end());
  int64_t slots = 0;
  for (size_t t = 0; t < masks.size(); t += static_cast<size_t>(tile_rows)) {
    uint64_t m = 0;
    for (size_t r = t; r < std::min(masks.size(), t + tile_rows); ++r) m |= masks[r];
    slots += static_cast<int64_t>(std::popcount(m)) * tile_rows;
  }
  return slots;
}

DataflowCosts dataflow_costs(const DataflowProblem& p, const DataflowMachine& m) {
  DataflowCosts c;
  const double e = static_cast<double>(p.element_bytes);
  const double inner = static_cast<double>(p.inner), cols = static_cast<double>(p.cols);
  const double rows = static_cast<double>(p.rows);
  double pairs = 0, gemm_s = 0;
  for (int64_t n : p.pairs_per_offset) {
    if (n == 0) continue;
    pairs += static_cast<double>(n);
    gemm_s += std::max(
        m.launch_s, 2.0 * static_cast<double>(n) * inner * cols / m.gemm_flops[idx(p.precision)]);
  }
  const bool half = p.element_bytes < 4;
  const double gather_bytes =
      pairs * (e * (3 * inner + 2 * cols) + 8 * cols) + rows * cols * (4 + (half ? 4 + e : 0));
  c.gather_s =
      gemm_s + gather_bytes / m.gather_bytes_per_s[half ? 1 : 0] + (half ? 4 : 3) * m.launch_s;

  if (p.padded_slots < 0) {
    c.implicit_s = std::numeric_limits<double>::infinity();
    return c;
  }
  const bool mma = p.implicit_tensor_cores && p.precision != ConvPrecision::F32;
  // Product depth: 16 (f16/bf16 fragments and the FMA tiles' step), 8 (TF32).
  const int64_t depth = mma && p.precision == ConvPrecision::Tf32 ? 8 : 16;
  const int64_t width = p.cols <= 32 ? 32 : 64;
  const double flops = 2.0 * static_cast<double>(p.padded_slots) *
                       static_cast<double>(round_up(p.inner, depth)) *
                       static_cast<double>(round_up(p.cols, width));
  const double rate = mma ? m.implicit_mma_flops[idx(p.precision)] : m.implicit_fma_flops;
  const double col_tiles = static_cast<double>((p.cols + width - 1) / width);
  const double implicit_bytes = pairs * inner * e * col_tiles + rows * cols * e;
  c.implicit_s = m.launch_s + std::max(flops / rate, implicit_bytes / m.bytes_per_s);
  return c;
}

const char* implicit_refusal(int64_t element_bytes) {
  return element_bytes == 8 ? "f64: the implicit kernels compute in f32; gather runs cuBLAS DGEMM"
                            : nullptr;
}

ConvDataflow choose_conv_dataflow(ConvDataflow want, const DataflowProblem& p,
                                  const DataflowMachine& m) {
  if (want == ConvDataflow::Gather || p.padded_slots < 0 || implicit_refusal(p.element_bytes))
    return ConvDataflow::Gather;
  if (want == ConvDataflow::Implicit) return ConvDataflow::Implicit;
  const DataflowCosts c = dataflow_costs(p, m);
  return c.implicit_s < c.gather_s ? ConvDataflow::Implicit : ConvDataflow::Gather;
}

}  // namespace minkowski::cuda
