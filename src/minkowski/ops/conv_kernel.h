#pragma once
// The convolution compute on a kernel map (CPU): gather -> GEMM -> scatter.
//
//   forward   out[o]    = sum_k sum_{(i,o) in map_k} F[i] . W_k
//   backward  grad_F[i] = sum_k sum_{(i,o) in map_k} G[o] . W_k^T
//             grad_W_k  = sum_{(i,o) in map_k} F[i]^T . G[o]
//
// Shapes: features N_in x C_in, weight K x C_in x C_out (K = map volume; an
// identity map also accepts C_in x C_out), result N_out x C_out. Dtypes f32,
// f64, f16, bf16 (features and weight alike); f16/bf16 are converted to f32,
// computed (GEMM and accumulation) in f32 and rounded once at the end. bf16 on
// a CPU with AVX-512 BF16 (fk::cpu_avx512_bf16()) takes the bf16 tiles
// instead where they apply (gather_gemm_bf16.h: the pass's C_in even, its
// C_out a multiple of 8; the weight gradient: C_out a multiple of 8, not an
// identity map): they read the bf16 operands as they are and sum products of
// channel pairs (forward, input gradient) or of pairs of pairs (weight
// gradient) in f32 (vdpbf16ps), rounded once at the end; they differ from the
// f32 path in rounding only (pair sums; denormals flushed).
//
// Two dataflows, chosen per shape and pass (conv_path.h: ME_CONV_PATH, auto
// measures on a shape's first call): the f32 register tiles (AVX2 or AVX-512,
// FK_CPU_ISA) where they apply, or BLAS over staged rows ("gemm"). Each has
// two copy paths over the same map, chosen at every call by ME_FUSED_COPY
// (fused_copy.h; its default, auto, takes fused on the tiles and per-offset on
// BLAS, the faster on each):
//   fused            BLAS path (f64, and f32 where the micro-kernels do not
//                    apply): rows of all offsets of a group are gathered into
//                    one staging buffer, one GEMM per offset (in fixed 2048-row
//                    blocks, all in one parallel region) runs over it, and one
//                    scatter-accumulate writes the group. Groups are runs of
//                    whole offsets whose staging (rows x (C_in + C_out) x
//                    sizeof(compute type)) stays under ME_FUSED_COPY_MAX_MB
//                    (a number of MiB in [0, 1e9], fractions allowed; 0
//                    means the default 2048); an offset larger than the cap is cut into
//                    pieces of whole 2048-row GEMM blocks, so the cap holds
//                    down to one block (2048 x (C_in + C_out) elements).
//                    f32 with C_out (forward) / C_in (input gradient) a
//                    multiple of 8 on an AVX2+FMA CPU: row-stationary, i.e.
//                    each output row sums its terms F[i] . W_k straight from
//                    the feature matrix (gather_gemm.h), rows in blocks (128
//                    to 2048 rows, by the matrix size and the pairs per row)
//                    whose terms run offset by offset as register tiles: no
//                    staging at all, so the cap has nothing to split. The
//                    pairs come bucketed from the map's row blocks
//                    (KernelMap::row_blocks, built on a map's first call and
//                    kept); a symmetric map's input side is built from by_out
//                    through the offset mirror (no by_in).
//   per-offset       ME_FUSED_COPY=0: gather, GEMM and scatter per offset
//                    (f32: the per-pair micro-kernel into a staging buffer of
//                    one offset's rows, then the scatter).
// Both knobs are read at every call. The weight gradient is the same on both
// paths: f32 (C_out a multiple of 8): fixed chunks of output rows walked in
// blocks of rows sized to L2 (4096 rows where one offset's partial is
// >= 128 KiB), pairs bucketed by offset, each bucket through register tiles
// in sub-blocks of pairs, one partial per (chunk, offset);
// BLAS: fixed blocks of 4096 pairs gathered into per-thread buffers; partials
// summed in order.
//
// Determinism: by construction, on every copy path and any thread count,
// for a given dataflow (tiles or gemm: the two differ in rounding, and auto's
// choice depends on timing, so set_deterministic(true) pins the tiles). Each
// output row is owned by one thread and receives its terms in offset order
// (the scatter walks the map regrouped by row), every term is computed by the
// same instruction sequence on both paths (identical fixed-block BLAS calls,
// always inside an OpenMP region or single-threaded so OpenBLAS never splits
// them; or the f32 micro-kernels, whose per-row result does not depend on the
// tiling), and the weight gradient sums fixed blocks in order. Hence fused,
// chunked and per-offset results are bit-identical (tested), on each dataflow.
// The bf16 tiles have one copy path (row-stationary, whatever ME_FUSED_COPY
// says), so theirs are too; they depend on whether the CPU has AVX-512 BF16.
//
// Memory: BLAS path fused: staging of min(pairs, cap rows) x (C_in + C_out)
// elements per call; per-offset (auto's choice there): one offset's rows; f32
// fused: none; backward: f32 one
// K x C_in x C_out partial per row chunk (at most 64 MiB in all), BLAS one
// C_in x C_out partial per 4096 pairs (+ K x C_in x C_out transposed weights).
#include <cstdint>

#include "fk/tensor.h"
#include "minkowski/coords/kernel_map.h"
#include "minkowski/ops/conv_path.h"

namespace minkowski {

fk::Tensor conv_forward(const fk::Tensor& features, const fk::Tensor& weight, const KernelMap& map);

struct ConvGrads {
  fk::Tensor features;  // undefined unless requested
  fk::Tensor weight;
};
ConvGrads conv_backward(const fk::Tensor& grad_out, const fk::Tensor& features,
                        const fk::Tensor& weight, const KernelMap& map, bool need_features,
                        bool need_weight);

// Channelwise (depthwise) variant: weight K x C, out[o,c] = sum F[i,c] W[k,c].
fk::Tensor channelwise_forward(const fk::Tensor& features, const fk::Tensor& weight,
                               const KernelMap& map);
ConvGrads channelwise_backward(const fk::Tensor& grad_out, const fk::Tensor& features,
                               const fk::Tensor& weight, const KernelMap& map, bool need_features,
                               bool need_weight);

// What the last conv_forward/conv_backward on this thread did (for benchmarks).
struct ConvCallInfo {
  bool fused = true;
  int64_t groups = 0;
  int64_t staging_bytes = 0;
  ConvPath path = ConvPath::Tiles;         // forward, or the backward's input gradient
  ConvPath weight_path = ConvPath::Tiles;  // the backward's weight gradient
};
ConvCallInfo last_conv_call();

}  // namespace minkowski
