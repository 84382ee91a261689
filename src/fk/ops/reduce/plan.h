#pragma once
// How a reduction sees its input, shared by the reduce ops (reduce/*.cpp):
// the plan of which dims are reduced, the input as a contiguous [A, R, C]
// block for the CPU kernels (cpu/reduce_block.h), and the CUDA row reduction.
#include <cstdint>
#include <optional>

#include "fk/dtype.h"
#include "fk/tensor.h"

namespace fk::detail {

struct ReducePlan {
  Dims out_shape;   // with keepdim applied
  Dims keep_shape;  // reduced dims as size 1
  Dims order;       // permutation: kept dims first, reduced dims last
  Dims dims;        // the reduced dims, wrapped and sorted
  bool reduced[kMaxDims] = {};
  int64_t outer = 1, inner = 1;
};

// The plan of reducing a tensor of `shape` over `dims` (checks the dims).
ReducePlan plan_reduce(const Dims& shape, const Dims& dims, bool keepdim, const char* op);
inline ReducePlan plan_reduce(const Tensor& t, const Dims& dims, bool keepdim, const char* op) {
  return plan_reduce(t.shape(), dims, keepdim, op);
}

// The input of a reduction as a contiguous [A, R, C] block: output element
// (a, c) reduces src[a, :, c]. A dense input (contiguous, or a permutation of
// a contiguous layout such as a transpose) whose reduced dims form one run in
// memory order is read in place: C == 1 when they are innermost (rows),
// C > 1 when they are leading or middle dims (rows are accumulated, no
// transposed copy). Any other layout is copied once into rows.
struct Reduction {
  ReducePlan plan;
  Tensor src;
  int64_t A = 1, R = 1, C = 1;
  Dims kept_mem;  // the kept dims in the order the kernel writes them (memory order)
  // A buffer the kernel writes (kept dims in memory order).
  Tensor alloc(DType dtype) const;
  // The buffer as the result: kept dims back in their logical order, keepdim applied.
  Tensor result(const Tensor& buf) const;
};

// The CPU input of a reduction of t over dims (checks that t is on the CPU).
Reduction prepare(const Tensor& t, const Dims& dims, bool keepdim, const char* op);
// Refuses reducing no elements into a non-empty output (ops without an identity).
void check_nonempty(const Reduction& r, const char* op, const Tensor& t);

// The dtype an op computes in when its result is inexact (mean, norm, ...).
DType inexact_type(DType t);
// For an op computed in inexact_type: op(t converted to it), a half result
// given back in t's dtype; nullopt when t already has that dtype and the op
// runs on it as it is. An integer t is computed in f64 and rounded once to the
// f32 result: through f32, integers past 2^24 lost their low digits first.
template <typename Op>
std::optional<Tensor> in_inexact_type(const Tensor& t, Op&& op) {
  const DType ct = inexact_type(t.dtype());
  if (ct == t.dtype()) return std::nullopt;
  if (is_integral(t.dtype())) return op(t.to(DType::F64)).to(ct);
  Tensor r = op(t.to(ct));
  return is_half(t.dtype()) ? r.to(t.dtype()) : r;
}
// g with the reduced dims as size 1, ready to broadcast against the input.
Tensor keep(const Tensor& g, const ReducePlan& p);

// A, R, C of a contiguous tensor split around one dim (0-dim tensors: 1, 1, 1).
struct Split {
  int64_t A = 1, R = 1, C = 1;
};
Split split_at(const Dims& shape, int d);

// CUDA: reduced dims moved last and made contiguous, then one deterministic
// row-reduction kernel (one block per output, fixed-order tree). `indices`
// (optional) receives the first-occurrence position of max/min within the
// reduced block.
Tensor reduce_cuda(const Tensor& t, const Dims& dims, bool keepdim, int code, const char* op,
                   Tensor* indices = nullptr);

}  // namespace fk::detail
