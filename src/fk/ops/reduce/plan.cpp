#include "fk/ops/reduce/plan.h"

#include <algorithm>

#include "fk/cuda/kernels.h"
#include "fk/factory.h"
#include "fk/ops/cpu/loops.h"
#include "fk/ops/cuda_dispatch.h"

namespace fk::detail {

ReducePlan plan_reduce(const Dims& shape, const Dims& dims, bool keepdim, const char* op) {
  int n = shape.size();
  ReducePlan p;
  if (dims.empty()) {
    for (int i = 0; i < n; ++i) p.reduced[i] = true;
  } else {
    for (int64_t d : dims) {
      int w = wrap_dim(d, n, op);
      FK_CHECK(!p.reduced[w], op, "distinct dimensions", dims.str());
      p.reduced[w] = true;
    }
  }
  Dims red_order;
  for (int i = 0; i < n; ++i) {
    if (p.reduced[i]) {
      red_order.push_back(i);
      p.inner *= shape[i];
      p.keep_shape.push_back(1);
      if (keepdim) p.out_shape.push_back(1);
    } else {
      p.order.push_back(i);
      p.outer *= shape[i];
      p.keep_shape.push_back(shape[i]);
      p.out_shape.push_back(shape[i]);
    }
  }
  p.dims = red_order;
  for (int64_t d : red_order) p.order.push_back(d);
  return p;
}

Tensor Reduction::alloc(DType dtype) const {
  Dims shape;
  for (int64_t d : kept_mem) shape.push_back(plan.keep_shape[static_cast<int>(d)]);
  return empty(shape, {dtype, src.device()});
}

Tensor Reduction::result(const Tensor& buf) const {
  Dims back = Dims::filled(kept_mem.size(), 0);
  bool identity = true;
  for (int i = 0; i < kept_mem.size(); ++i) {
    int rank = 0;  // position of kept_mem[i] among the kept dims in logical order
    for (int j = 0; j < kept_mem.size(); ++j) rank += kept_mem[j] < kept_mem[i];
    back[rank] = i;
    identity = identity && rank == i;
  }
  Tensor logical = identity ? buf : buf.permute(back).contiguous();
  return logical.reshape(plan.out_shape);
}

namespace {

// A permutation listing t's dims from the largest stride to the smallest (ties
// in dim order): t.permute(result) is contiguous when t is dense.
Dims memory_order(const Tensor& t) {
  Dims order;
  for (int i = 0; i < t.dim(); ++i) order.push_back(i);
  std::stable_sort(order.data(), order.data() + order.size(), [&](int64_t a, int64_t b) {
    return t.strides()[static_cast<int>(a)] > t.strides()[static_cast<int>(b)];
  });
  return order;
}

}  // namespace

Reduction prepare(const Tensor& t, const Dims& dims, bool keepdim, const char* op) {
  cpu::check_cpu(t, op);
  Reduction r;
  r.plan = plan_reduce(t, dims, keepdim, op);
  const ReducePlan& p = r.plan;
  Tensor x = t.detach();  // internal views and copies record no autograd history
  Dims mem = memory_order(x);
  Tensor dense = x.permute(mem);
  if (x.numel() > 0 && dense.is_contiguous()) {
    // Positions (in memory order) of the first and last reduced dims of size > 1.
    int first = -1, last = -1;
    for (int i = 0; i < mem.size(); ++i) {
      int d = static_cast<int>(mem[i]);
      if (p.reduced[d] && x.shape()[d] > 1) {
        if (first < 0) first = i;
        last = i;
      }
    }
    bool run = true;
    for (int i = first + 1; i < last; ++i) {
      int d = static_cast<int>(mem[i]);
      run = run && (p.reduced[d] || x.shape()[d] == 1);
    }
    if (run) {
      r.src = dense;
      for (int i = 0; i < mem.size(); ++i) {
        int d = static_cast<int>(mem[i]);
        if (!p.reduced[d]) r.kept_mem.push_back(d);
        if (first < 0) {
          r.A *= x.shape()[d];  // nothing to reduce: every element is its own output
        } else if (i < first) {
          r.A *= x.shape()[d];
        } else if (i > last) {
          r.C *= x.shape()[d];
        }
      }
      r.R = p.inner;
      return r;
    }
  }
  r.src = x.permute(p.order).contiguous();
  for (int i = 0; i < x.dim(); ++i) {
    if (!p.reduced[i]) r.kept_mem.push_back(i);
  }
  r.A = p.outer;
  r.R = p.inner;
  return r;
}

void check_nonempty(const Reduction& r, const char* op, const Tensor& t) {
  FK_CHECK(r.R > 0 || r.A * r.C == 0, op, "a non-empty reduction",
           "shape " + t.shape().str() + " reduced over " + r.plan.dims.str());
}

DType inexact_type(DType t) {
  return is_integral(t) ? DType::F32 : compute_type(t);
}

Tensor keep(const Tensor& g, const ReducePlan& p) {
  return g.reshape(p.keep_shape);
}

Split split_at(const Dims& shape, int d) {
  Split s;
  if (shape.size() == 0) return s;
  for (int i = 0; i < d; ++i) s.A *= shape[i];
  s.R = shape[d];
  for (int i = d + 1; i < shape.size(); ++i) s.C *= shape[i];
  return s;
}

Tensor reduce_cuda(const Tensor& t, const Dims& dims, bool keepdim, int code, const char* op,
                   Tensor* indices) {
  const ReducePlan p = plan_reduce(t, dims, keepdim, op);
  const int64_t outer = p.outer, inner = p.inner;
  FK_CHECK(inner > 0 || code == cuda::kReduceSum || code == cuda::kReduceProd || outer == 0, op,
           "a non-empty reduction", "shape " + t.shape().str() + " reduced over " + dims.str());
  Tensor src = t.detach().permute(p.order).contiguous();
  auto out_dtype = static_cast<DType>(cuda::reduce_out_dtype(code, static_cast<int>(t.dtype())));
  Tensor out = empty(p.out_shape, {out_dtype, t.device()});
  cuda::launch_reduce_lastdim(code, static_cast<int>(t.dtype()), src.data_ptr(), out.data_ptr(),
                              outer, inner, cuda_ops::stream_of(t));
  if (indices) {
    *indices = empty(p.out_shape, {DType::I64, t.device()});
    cuda::launch_argreduce_lastdim(code == cuda::kReduceMax, static_cast<int>(t.dtype()),
                                   src.data_ptr(), indices->data<int64_t>(), outer, inner,
                                   cuda_ops::stream_of(t));
  }
  cuda_ops::launched(t);
  return out;
}

}  // namespace fk::detail
