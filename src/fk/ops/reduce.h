#pragma once
// Reductions over chosen dimensions (keepdim keeps them as size 1) and the
// softmax family, one header per op under fk/ops/reduce/ (each declaring the
// op's pure backward too); this header includes them all and states their
// common conventions. All are differentiable except argmax/argmin. Devices: CPU and
// CUDA. On CUDA, sum, prod, amax/amin/max/min/argmax/argmin and the softmax
// family are deterministic row kernels (reduced dims moved last); norm, var,
// std and logsumexp are composed from them and the elementwise ops, and
// accumulate in the input's precision (f32 stays f32; the CPU uses f64).
//
// Dims: an empty `dims` reduces over every dimension; negative dims count from
// the end; a repeated dim is an error. Reducing over no elements gives 0 (sum),
// 1 (prod), NaN (mean, var, std: 0 / 0, as torch), 0 (the finite p-norms)
// and an error for amax/amin/max/min/argmax/argmin and the inf norm.
//
// Dtypes: i32/i64/bool inputs give i64 from sum and prod, f32 from mean, var,
// std, norm, logsumexp and softmax (computed in f64 and rounded once, so
// integers past 2^24 keep their digits), and keep their dtype in amax/amin/max/min.
// f16/bf16 inputs are computed in f32 and returned in their own dtype. Complex
// inputs are accepted by sum, mean, prod (complex results) and norm, var, std
// (real results); the ordered ops, logsumexp and softmax want a real dtype.
// f32 and c64 are accumulated in double precision.
//
// Determinism: each output element is accumulated in a fixed order, so results
// do not depend on the thread count. On the CPU a reduction over contiguous
// runs (innermost dims) folds each run into 8 partial accumulators (f64 for
// f32 input) combined in the tree order of ops/cpu/fold_lanes.h, which keeps
// the loads vectorised without -ffast-math (sum, mean, prod, norm, var, std;
// max/min and logsumexp fold one element at a time). Runs longer than a fixed
// block size are split into blocks combined in block order. Reducing leading
// or middle dims accumulates each output in increasing order of the reduced
// index, many outputs side by side.
//
// Memory: a contiguous input, or a permutation of one (a transpose), whose
// reduced dims are adjacent in memory is read in place: no copy when reducing
// the innermost dims, and leading or middle dims are reduced by accumulating
// whole rows (no transposed copy). Other layouts are copied once.
#include "fk/ops/reduce/extremes.h"
#include "fk/ops/reduce/logsumexp.h"
#include "fk/ops/reduce/norm.h"
#include "fk/ops/reduce/prod.h"
#include "fk/ops/reduce/softmax.h"
#include "fk/ops/reduce/sum.h"
#include "fk/ops/reduce/var.h"
