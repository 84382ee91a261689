#pragma once
// Indexing ops: select, gather and scatter along one dimension, and boolean
// masks, one header per kind under fk/ops/index/ (select.h, scatter.h,
// mask.h, each with its pure backward functions); this header includes them
// all and states their common contract. Every op is differentiable w.r.t. its float/complex data
// operands; indices and masks never receive gradients.
//
// Devices: CPU and CUDA; indices, masks and sources must be on the indexed
// tensor's device. On CUDA, index tensors are range-checked by the op's own
// kernel, which records an out-of-range value in device-written host memory
// and skips it; the next synchronization (after every op by default; a host
// read under ME_LAZY_SYNC=1 or after a graph replay) throws fk::Error naming
// the op, the value and the range (fk/cuda/index_errors.h): no host read, so
// these ops run inside device steps and CUDA graphs. The host-index forms of
// index_select, gather and index_add check on the host at the call, then
// upload: no read back, forward or backward. scatter_add and
// index_add use the sort-based deterministic scatter (each target adds its
// sources in the CPU's order: bitwise reproducible); masked_select reads the
// mask back to the host (its length sizes the output) and gathers with the
// positions found there.
//
// Indices are i32 or i64 tensors. Negative indices are an error (they are not
// wrapped), as is any index >= the size of the indexed dimension; the error
// names the offending value and the valid range. On the CPU (and in the
// host-index forms) indices are validated before any element is written, so a
// failed call leaves in-place targets untouched; on CUDA the in-range
// positions of a failed in-place index_add_ or scatter_add_ may have been added.
//
// Shapes (d = dim):
//   index_select(t, d, idx)     idx 1-D (or 0-dim) of length K; out = t with size K at d.
//   gather(t, d, idx)           idx has t's rank; NumPy take_along_axis semantics:
//                               out[..i..] = t[.., idx[..i..], ..] with the index
//                               taking the place of coordinate d. Sizes other than d
//                               broadcast between t and idx; out has idx's size at d.
//   scatter_add(self, d, idx, src)  the adjoint of gather: out = self, then
//                               out[.., idx[p], ..] += src[p] for every p of the
//                               "scatter shape" S (self's shape with idx's size at
//                               d). idx and src broadcast to S.
//   index_add(self, d, idx, src, alpha)  idx 1-D of length K; src broadcasts to
//                               self's shape with size K at d; out = self, then
//                               out[.., idx[k], ..] += alpha * src[.., k, ..].
//   masked_fill(t, mask, v)     mask bool, broadcast to t's shape.
//   masked_select(t, mask)      t and mask broadcast together; out is 1-D, the
//                               selected elements in row-major order.
//
// Dtypes: index_select, gather, masked_fill and masked_select move elements of
// any dtype. scatter_add and index_add add in i32, i64, f32, f64, c64, c128
// (f16/bf16 accumulate in f32 and are rounded once at the end); the result has
// promote(self, src)'s dtype.
//
// Determinism: scatter_add and index_add give bit-identical results for any
// thread count. Threads split the work by output slices that no other thread
// touches, and each output element receives its additions in ascending source
// order, so no two threads ever add into the same element.
//
// Memory: each out-of-place op allocates its output; non-contiguous inputs to
// index_select and index_add are first copied to contiguous buffers, and
// indices are converted to a contiguous i64 copy (validated in one pass).
//
// In-place forms (index_add_, scatter_add_, masked_fill_) write `self` (any
// layout), keep its dtype (index_add_'s and scatter_add_'s source must be
// writable into it: can_write_into in fk/dtype.h; masked_fill_'s value is cast),
// bump its version and refuse tensors autograd would have to record (use the
// out-of-place forms for gradients).
#include "fk/ops/index/mask.h"
#include "fk/ops/index/scatter.h"
#include "fk/ops/index/select.h"
