#pragma once
// Sparse convolution on a CUDA device over a DeviceKernelMap (CUDA builds
// only: minkowski_cuda), f32, f16, bf16 or f64, the same sums as conv_kernel.h:
//   forward   out[o]    = sum_k sum_{(i,o) in map_k} F[i] . W_k
//   backward  grad_F[i] = sum_k sum_{(i,o) in map_k} G[o] . W_k^T
//             grad_W_k  = sum_{(i,o) in map_k} F[i]^T . G[o]
// Dataflow: offsets are cut into groups of whole offsets whose staged rows
// (pairs x (C_in + C_out) x itemsize bytes) fit ME_FUSED_COPY_MAX_MB (0 =
// 2048; an offset larger than the cap is a group of its own, so the staging
// is at most max(cap, the largest offset's rows); conv_plan.h). Per group:
// one vectorized gather (16/8/4-byte chunks) of the group's rows, one cuBLAS
// GEMM per offset on the staged rows, one scatter-accumulate into f32 rows
// (f64 rows for f64).
// The backward gathers G (and F for the weight gradient), writes grad_W_k
// with one GEMM per offset (beta = 0: every offset is in exactly one group),
// then overwrites the staged F rows with G_k . W_k^T and scatters them.
// ME_FUSED_COPY=0: every offset is its own group (one gather, GEMM and
// scatter launch per offset), for A/B. ME_CONV_GROUPED_GEMM (off by default,
// until measured on a GPU) makes a group's per-offset GEMMs one grouped
// cuBLAS call: `features` the forward's and the input gradient's, `all` the
// weight gradient's too (whose long k cuBLAS splits when it runs one
// product, and does not in a grouped call).
// Precision: f32 GEMMs are FP32, or TF32 when fk::amp::allow_tf32(). f16 and
// bf16 rows are gathered and staged in 16 bits and multiplied on tensor cores
// with f32 accumulation (fk::cuda::gemm); each pair's product row is rounded
// to 16 bits once (the GEMM's output), the sum over offsets is accumulated in
// an f32 buffer and rounded to the dtype once at the end (so a row with K
// offsets carries two roundings, not K). grad_W_k is one GEMM over all of
// offset k's pairs, f32 accumulation, rounded once. The results are in the
// features' dtype; for 16-bit dtypes the f32 accumulator (output rows x
// channels x 4 bytes) lives until that conversion. f64 is cuBLAS DGEMM on
// f64 staged rows, accumulated in f64 (the accumulator is the result): the
// CPU's f64 sums up to summation order, for gradchecks in f64.
// Dataflow (ME_CONV_DATAFLOW, implicit_conv.h): the forward and the input
// gradient run either the gather-GEMM-scatter sequence below or the
// implicit-GEMM (output-stationary) kernel, per call; the weight gradient is
// always gather-GEMM. f64 always runs gather-GEMM (the implicit kernels
// compute in f32): DeviceConvInfo::implicit_refused says so. What follows
// describes gather-GEMM-scatter.
// Accumulation: atomics (f32; f64 for f64) by default (run-to-run order varies); with
// minkowski::set_deterministic(true) each destination row is summed by one
// thread in offset order over the map's by_out / by_in (bitwise reproducible,
// every dtype; the CPU's summation order, though GEMM rounding differs from
// the CPU's).
// No host synchronization inside a call; the end of each call goes through
// fk::cuda::after_op (one sync unless ME_LAZY_SYNC=1).
// Operands: features N_in x C_in and weight K x C_in x C_out (grad_out
// N_out x C_out), one dtype (f32, f16, bf16 or f64), contiguous, on the map's
// device; else fk::Error (dtypes are checked first, before any device work).
#include <cstdint>

#include "fk/tensor.h"
#include "minkowski/cuda/device_kernel_map.h"
#include "minkowski/cuda/implicit_conv.h"

namespace minkowski::cuda {

fk::Tensor conv_forward(const fk::Tensor& features, const fk::Tensor& weight,
                        const DeviceKernelMap& map);

struct DeviceConvGrads {
  fk::Tensor features;  // undefined unless requested
  fk::Tensor weight;
};
DeviceConvGrads conv_backward(const fk::Tensor& grad_out, const fk::Tensor& features,
                              const fk::Tensor& weight, const DeviceKernelMap& map,
                              bool need_features, bool need_weight);

// What the last call on this thread did (benchmarks, tests).
struct DeviceConvInfo {
  bool fused = true;
  bool deterministic = false;
  fk::DType dtype = fk::DType::F32;
  int64_t groups = 0;
  int64_t staging_bytes = 0;
  int64_t gemms = 0;       // GEMM products
  int64_t gemm_calls = 0;  // cuBLAS calls that made them (fewer when grouped)
  // Gather or Implicit: the forward's, or the input gradient's (a backward
  // without it: Gather).
  ConvDataflow dataflow = ConvDataflow::Gather;
  // Whether that implicit product ran on tensor cores (implicit_conv.h).
  bool tensor_cores = false;
  // Why the implicit dataflow was not open to this call's dtype
  // (implicit_refusal, conv_dataflow.h: f64), whatever ME_CONV_DATAFLOW
  // asked; nullptr when it was open.
  const char* implicit_refused = nullptr;
};
DeviceConvInfo last_device_conv_call();

}  // namespace minkowski::cuda
