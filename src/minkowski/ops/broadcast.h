#pragma once
// Broadcasting a per-batch-item global feature onto every point: `glob`
// is a global tensor (one row per batch item at (b, 0, ..., 0), e.g. from
// global_pooling) of the same manager as `x`; row i of x takes the glob row
// of its batch item.
//
//   broadcast_add             out[i] = x[i] + glob[b(i)]     (C channels each)
//   broadcast_multiply        out[i] = x[i] * glob[b(i)]     (C channels each)
//   broadcast_concatenation   out[i] = [x[i], glob[b(i)]]    (C_x + C_glob)
// The result lives on x's map. Tensor strides are not compared: a global
// tensor has no spatial extent (see global_pooling.h), so one pooled at any
// stride broadcasts onto any tensor of its manager. Errors (fk::Error naming
// expected vs given): another manager, a glob row off the origin, a batch
// item of x without a glob row, channel counts that differ (add, multiply),
// different dtypes, features and glob on different devices.
// Devices: CPU, and CUDA through fk's device ops (index_select, add/mul, cat)
// and global pooling's device sums for the glob gradient.
//
// Dtypes f32, f64, f16, bf16 (16-bit computed in f32, rounded once).
// Determinism: the glob gradient sums each item's rows in fixed blocks in
// row order (global_pooling.h's Sum), the rest is per row: bit-identical at
// any thread count. Memory: the output, 8 bytes per row of x for the rows'
// grouping.
#include <memory>

#include "fk/tensor.h"
#include "minkowski/ops/global_pooling.h"
#include "minkowski/sparse_tensor.h"

namespace minkowski {

enum class BroadcastMode { Add, Multiply, Concatenate };

// The glob row of each row of x, grouped (RowGroups over glob's rows); checks
// managers, that glob is global and that it covers x's batch items.
RowGroups broadcast_groups(const SparseTensor& x, const SparseTensor& glob, const char* where);

// The pure pair: out[i] = f[i] op g[group(i)] (Concatenate: [f[i], g[group(i)]]).
// The backward reads the values of features and glob for Multiply, only
// their widths (size(1)) for Concatenate, neither for Add.
fk::Tensor broadcast_forward(const fk::Tensor& features, const fk::Tensor& glob,
                             const RowGroups& groups, BroadcastMode mode);
struct BroadcastGrads {
  fk::Tensor features;  // undefined unless requested
  fk::Tensor glob;
};
BroadcastGrads broadcast_backward(const fk::Tensor& grad_out, const fk::Tensor& features,
                                  const fk::Tensor& glob, const RowGroups& groups,
                                  BroadcastMode mode, bool need_features, bool need_glob);

SparseTensor broadcast_add(const SparseTensor& x, const SparseTensor& glob);
SparseTensor broadcast_multiply(const SparseTensor& x, const SparseTensor& glob);
SparseTensor broadcast_concatenation(const SparseTensor& x, const SparseTensor& glob);

}  // namespace minkowski
