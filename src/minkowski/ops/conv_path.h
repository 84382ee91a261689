#pragma once
// Which dataflow computes a convolution pass, chosen per shape:
//   tiles  the f32 register tiles (gather_gemm.h: row-stationary, no staging;
//          AVX2 or AVX-512), where they apply (f32, C_out of the pass a
//          multiple of 8, an AVX2 CPU);
//   gemm   gather -> BLAS GEMM -> scatter over staged rows (conv_kernel.h).
// Under bf16 on a CPU with AVX-512 BF16 the forward and input gradient choose
// between the bf16 tiles (tiles) and the f32 dataflows on converted operands
// (gemm, which then choose their own path as an f32 shape).
// ME_CONV_PATH = auto (default) | tiles | gemm forces one for A/B (tiles
// falls back to gemm where the tiles do not apply). In auto, a pass under
// ~16M multiply-adds takes the tiles; a larger one's first call of a shape
// times both paths twice on its own operands (gemm, tiles, gemm, tiles; gemm
// once more when it wins by 20 %, so the call returns the winner's result),
// and the choice is kept for the process; ME_CONV_PATH_CACHE names a file that
// keeps the choices across processes (read once, appended to).
//
// A shape is (pass, pairs per written row in halves, log2 of the pairs,
// C_in, C_out, compute dtype, threads). The forward and input-gradient paths
// give the same bits when BLAS sums each product in input-channel order from
// zero, as OpenBLAS's x86 sgemm kernels do (tested); the weight gradient's
// paths sum pairs in different blocks and differ in rounding, so with
// set_deterministic(true) auto keeps the weight gradient on the tiles.
#include <cstdint>
#include <functional>

#include "fk/dtype.h"

namespace minkowski {

enum class ConvPath { Tiles, Gemm };
enum class ConvPass { Forward, InputGrad, WeightGrad };

const char* conv_path_name(ConvPath p);

struct ConvShape {
  ConvPass pass = ConvPass::Forward;
  int64_t pairs = 0, rows = 0;  // the map's pairs; the rows the pass writes
  int64_t cin = 0, cout = 0;
  fk::DType dtype = fk::DType::F32;
};

// Runs one pass: run(path) computes it (idempotently: every call overwrites
// the whole result) on the path that ME_CONV_PATH forces or that the shape's
// measurement chose; gemm where the tiles do not apply (!tiles_ok). Returns
// the path whose result stands.
ConvPath run_conv_pass(const ConvShape& shape, bool tiles_ok,
                       const std::function<void(ConvPath)>& run);

// Forgets every measured choice (tests, benchmarks); the file, not touched,
// is read again at the next measured call.
void clear_conv_path_choices();

}  // namespace minkowski
