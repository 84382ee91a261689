#pragma once
// activation_grad: the dense layer's backward pass before its two GEMMs:
// gz = g act'(y) (tanh: 1 - y^2 from the saved output, relu: g where y > 0)
// and db = the column sums of gz, in one pass over the rows.
// Why its own kernel: written as a plain loop it compiled to scalar SSE with
// a branch per element (relu's select), which mispredicts on every other
// element and cost more than the layer's GEMMs (13 % of a dot3d step against
// 13 % for all its GEMM tiles). f32 on AVX-512 runs 16 lanes with a mask
// select; everything else the plain loop. Both give the same bits: db sums
// rows in order, and tanh's factor is g (1 - y y) with each product rounded
// (no FMA).
#include <cstdint>

#include "nefi/field/dense.h"

namespace nefi {

// g, y (n, out) row-major; gz (n, out) may be g itself when act is None (then
// only db is made); db (out) may be null (no bias gradient).
void activation_grad(const float* g, const float* y, DenseActivation act, int64_t n, int64_t out,
                     float* gz, float* db);
void activation_grad(const double* g, const double* y, DenseActivation act, int64_t n, int64_t out,
                     double* gz, double* db);

// The same pass writing gz rounded to bf16 (round to nearest even, as the
// bf16 GEMMs round their operands) in rows of ldz >= out bf16, a zero after
// the last column when ldz > out; with act None gz is g rounded. db from the
// f32 gz. Needs fk::cpu_avx512_bf16().
void activation_grad_bf16(const float* g, const float* y, DenseActivation act, int64_t n,
                          int64_t out, uint16_t* gz, int64_t ldz, float* db);

}  // namespace nefi
