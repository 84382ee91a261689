#include "fk/ops/index/checks.h"

#include <string>
#include <vector>

#include "fk/autograd.h"
#include "fk/cuda/index_errors.h"
#include "fk/cuda/runtime.h"
#include "fk/factory.h"
#include "fk/ops/copy.h"
#include "fk/ops/join.h"
#include "fk/ops/reduce.h"

namespace fk::index_detail {
namespace {

std::string bounds(int64_t bound, int dim) {
  return "indices in [0, " + std::to_string(bound) + ") along dim " + std::to_string(dim) +
         " (negative indices are not wrapped)";
}

}  // namespace

// `what` (an index, mask or source) must live on t's device.
void check_device(const Tensor& t, const Tensor& other, const char* op, const char* what) {
  FK_CHECK(other.device() == t.device(), op, std::string(what) + " on " + t.device().str(),
           std::string(what) + " on " + other.device().str());
}

// CUDA: the index as a contiguous i64 tensor on `t`'s device, its range
// checked by the op's kernel into the device's record (index_errors.h), or,
// without one, here before any kernel writes (two device reductions and one
// host read of their results).
CheckedIndex checked_index_cuda(const Tensor& t, const Tensor& index, int64_t bound, int dim,
                                const char* op) {
  check_device(t, index, op, "an index");
  Tensor idx = index.to(DType::I64).contiguous();
  if (idx.numel() == 0) return {idx, {}};
  if (int64_t* record = cuda::index_check_record(t.device().index, cuda::index_record_slot(op)))
    return {idx, cuda::IndexCheck{false, record}};
  const std::vector<int64_t> range = stack({amin(idx), amax(idx)}, 0).to_vector<int64_t>();
  if (range[0] < 0) throw Error(op, bounds(bound, dim), "index " + fk::to_text(range[0]));
  if (range[1] >= bound) throw Error(op, bounds(bound, dim), "index " + fk::to_text(range[1]));
  return {idx, {}};
}

void check_host_index(const std::vector<int64_t>& index, int64_t bound, int dim, const char* op) {
  for (size_t i = 0; i < index.size(); ++i) {
    if (index[i] < 0 || index[i] >= bound) [[unlikely]] {
      throw Error(op, bounds(bound, dim),
                  "index " + fk::to_text(index[i]) + " at flat position " + fk::to_text(i));
    }
  }
}

Tensor prechecked_index(const Tensor& t, const Tensor& index, const char* op) {
  FK_CHECK(index.dtype() == DType::I32 || index.dtype() == DType::I64, op,
           "an i32 or i64 index tensor", std::string("an index of dtype ") + name(index.dtype()));
  check_device(t, index, op, "an index");
  return index.to(DType::I64).contiguous();
}

// The index as a contiguous i64 tensor on t's device, every value checked
// against [0, bound).
CheckedIndex checked_index(const Tensor& t, const Tensor& index, int64_t bound, int dim,
                           const char* op) {
  FK_CHECK(index.dtype() == DType::I32 || index.dtype() == DType::I64, op,
           "an i32 or i64 index tensor", std::string("an index of dtype ") + name(index.dtype()));
  if (t.device().is_cuda()) return checked_index_cuda(t, index, bound, dim, op);
  check_device(t, index, op, "an index");
  Tensor idx = index.to(DType::I64).contiguous();
  const int64_t* p = idx.data<int64_t>();
  for (int64_t i = 0, n = idx.numel(); i < n; ++i) {
    if (p[i] < 0 || p[i] >= bound) [[unlikely]] {
      throw Error(op, bounds(bound, dim),
                  "index " + fk::to_text(p[i]) + " at flat position " + fk::to_text(i));
    }
  }
  return {idx, {}};
}

void check_broadcasts_to(const Tensor& t, const Dims& shape, const char* op, const char* what) {
  Dims b = broadcast_shapes(t.shape(), shape, op);
  FK_CHECK(b == shape, op, std::string(what) + " broadcastable to " + shape.str(), t.shape().str());
}

void check_inplace(const Tensor& self, const Tensor& other, const char* op) {
  FK_CHECK(
      !autograd::needs_grad(self, other), op,
      "operands that do not require grad, or grad mode off (in-place ops are not "
      "recorded by autograd; use the out-of-place op)",
      autograd::tensor_requires_grad(self) ? "self requiring grad" : "the source requiring grad");
  // An expanded self holds one element at several indices: the writes would
  // land on one another (scatter_add_ summed every batch into one row).
  FK_CHECK(!repeats_elements(self), op,
           "a self whose elements are distinct in memory (an expanded tensor shares them: "
           "write into a contiguous copy)",
           "shape " + self.shape().str() + " with strides " + self.strides().str());
}

// Reduces a gradient to an input's shape and dtype (real part for real inputs).
Tensor grad_for(const Tensor& g, const Dims& shape, DType dtype) {
  Tensor r = autograd::sum_to(g, shape);
  if (is_complex(r.dtype()) && !is_complex(dtype)) r = r.real();
  return r.dtype() == dtype ? r : r.to(dtype);
}

// A copy of `self` in dtype `ct` (contiguous), the buffer scatter/index add write.
Tensor accumulator_copy(const Tensor& self, DType ct) {
  Tensor out = empty(self.shape(), {ct, self.device()});
  out.copy_(self);
  return out;
}

}  // namespace fk::index_detail
