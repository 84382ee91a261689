#include "fk/ops/reduce/extremes.h"

#include <type_traits>

#include "fk/autograd.h"
#include "fk/cpu_isa.h"
#include "fk/cuda/kernels.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/cpu/dispatch.h"
#include "fk/ops/cpu/extrema.h"
#include "fk/ops/cpu/reduce_block.h"
#include "fk/ops/reduce/plan.h"
#include "fk/ops/reduce/sum.h"
#include "fk/profile.h"

namespace fk {
namespace {

using cpu::check_cpu;
using cpu::kLaneBlock;
using cpu::reduce_block;
using cpu::step_rows;
using detail::check_nonempty;
using detail::keep;
using detail::plan_reduce;
using detail::prepare;
using detail::reduce_cuda;
using detail::ReducePlan;
using detail::Reduction;
using detail::Split;
using detail::split_at;

template <typename T>
bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    return v != v;
  } else {
    return false;
  }
}

// NaN counts as the extreme value (it propagates); among equals the first wins.
template <bool kMax, typename T>
bool better(T v, T best) {
  if (is_nan(v)) return !is_nan(best);
  return kMax ? v > best : v < best;
}

// Extreme value and its first index; either output pointer may be null.
// f32/f64 with `vec` (an AVX2 CPU): runs and rows of lanes go through
// cpu/extrema.h, which finds the same positions without a branch per element;
// the value is then read at the position, so both paths agree bit for bit.
template <typename T, bool kMax>
struct ExtremeReducer {
  static constexpr bool kVector = std::is_same_v<T, float> || std::is_same_v<T, double>;
  struct Acc {
    T best{};
    int64_t index = -1;
  };
  T* values;
  int64_t* indices;
  bool vec = false;
  Acc init() const { return Acc{}; }
  void step(Acc& a, T v, int64_t r) const {
    if (a.index < 0 || better<kMax>(v, a.best)) a = Acc{v, r};
  }
  // n <= kReduceBlock (reduce_block's split), so positions fit the lanes' int32.
  Acc fold_row(const T* x, int64_t n, int64_t r0) const {
    if constexpr (kVector) {
      if (vec && n > 0) {
        const int64_t i = cpu::avx2::first_extreme_run<kMax>(x, n);
        return Acc{x[i], r0 + i};
      }
    }
    Acc a = init();
    for (int64_t i = 0; i < n; ++i) step(a, x[i], r0 + i);
    return a;
  }
  void fold_rows(const T* base, int64_t r0, int64_t r1, int64_t C, int64_t w, Acc* acc) const {
    int64_t done = 0;  // lanes handled by whole vectors
    if constexpr (kVector) {
      if (vec && r1 > r0) {
        int64_t row[kLaneBlock];
        done = cpu::avx2::first_extreme_lanes<kMax>(base + r0 * C, r1 - r0, C, w, row);
        for (int64_t j = 0; j < done; ++j) acc[j] = Acc{base[(r0 + row[j]) * C + j], r0 + row[j]};
      }
    }
    step_rows(*this, base, r0, r1, C, w, acc, done);
  }
  void merge(Acc& a, const Acc& b) const {
    if (b.index >= 0 && (a.index < 0 || better<kMax>(b.best, a.best))) a = b;
  }
  void finish(int64_t o, const Acc& a) const {
    if (values) values[o] = a.best;
    if (indices) indices[o] = a.index;
  }
};

// --- amax / amin, max / min along a dim -----------------------------------------

template <bool kMax>
Tensor extreme_forward(const Tensor& t, const Dims& dims, bool keepdim, const char* op,
                       Tensor* indices) {
  profile::OpScope scope(op);
  FK_CHECK(!is_complex(t.dtype()), op, "a real dtype (complex numbers are not ordered)",
           name(t.dtype()));
  if (t.device().is_cuda()) {
    return reduce_cuda(t, dims, keepdim, kMax ? cuda::kReduceMax : cuda::kReduceMin, op, indices);
  }
  check_cpu(t, op);
  DType ct = t.dtype() == DType::Bool ? DType::I32 : compute_type(t.dtype());
  Reduction r = prepare(t.detach().to(ct), dims, keepdim, op);
  check_nonempty(r, op, t);
  Tensor out = r.alloc(ct);
  if (indices) *indices = r.alloc(DType::I64);
  cpu::visit_real(ct, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    int64_t* idx = indices ? indices->data<int64_t>() : nullptr;
    const bool vec = cpu_isa() >= CpuIsa::Avx2;
    reduce_block(r.src.data<T>(), r.A, r.R, r.C, ExtremeReducer<T, kMax>{out.data<T>(), idx, vec});
  });
  out = r.result(out);
  if (indices) *indices = r.result(*indices);
  return out.dtype() == t.dtype() ? out : out.to(t.dtype());
}

// The gradient of amax/amin goes to every element equal to the result, split evenly.
Tensor amax_backward(const Tensor& g, const Tensor& x, const Tensor& out, const ReducePlan& plan) {
  Tensor mask = eq(x, keep(out, plan)).to(x.dtype());
  Tensor count = sum(mask, plan.dims, true);
  return mul(div(mask, count), keep(g, plan));
}

struct AmaxBackward : autograd::Node {
  autograd::SavedTensor x, out;
  ReducePlan plan;
  std::vector<Tensor> apply(std::vector<Tensor>&& g) override {
    return {amax_backward(g[0], x.unpack(name()), out.unpack(name()), plan)};
  }
  const char* name() const override { return "AmaxBackward"; }
  void for_each_saved(const std::function<void(autograd::SavedTensor&)>& fn) override {
    fn(x);
    fn(out);
  }
};

template <bool kMax>
Tensor amax_impl(const Tensor& t, const Dims& dims, bool keepdim, const char* op) {
  if (is_half(t.dtype())) return amax_impl<kMax>(t.to(DType::F32), dims, keepdim, op).to(t.dtype());
  Tensor out = extreme_forward<kMax>(t, dims, keepdim, op, nullptr);
  if (autograd::needs_grad(t)) {
    auto node = std::make_shared<AmaxBackward>();
    node->x = t;
    node->out = out.detach();
    node->plan = plan_reduce(t, dims, keepdim, op);
    autograd::record(node, {t}, out);
  }
  return out;
}

// Scatters the output gradient to the positions the indices name.
Tensor max_backward(const Tensor& grad, const Tensor& indices, const Dims& in_shape,
                    const Dims& keep_shape, int dim) {
  profile::OpScope scope("max_backward");
  if (grad.device().is_cuda()) {  // position == index along dim, as a mask
    Tensor idx = indices.reshape(keep_shape);
    Dims pos_shape = Dims::filled(in_shape.size(), 1);
    pos_shape[dim] = in_shape[dim];
    Tensor pos = arange(in_shape[dim], {DType::I64, grad.device()}).reshape(pos_shape);
    Tensor g = grad.reshape(keep_shape);
    return where(eq(pos, idx), g, scalar_like(g, 0.0)).expand(in_shape).contiguous();
  }
  Tensor g = grad.reshape(keep_shape).contiguous();
  Tensor idx = indices.contiguous();
  Tensor gx = zeros(in_shape, {g.dtype(), g.device()});
  Split s = split_at(in_shape, dim);
  cpu::visit_float(g.dtype(), "max_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* gp = g.data<T>();
    const int64_t* ip = idx.data<int64_t>();
    T* out = gx.data<T>();
    for (int64_t a = 0; a < s.A; ++a) {
      for (int64_t c = 0; c < s.C; ++c) {
        out[(a * s.R + ip[a * s.C + c]) * s.C + c] = gp[a * s.C + c];
      }
    }
  });
  return gx;
}

struct MaxDimBackward : autograd::Node {
  autograd::SavedTensor indices;
  Dims in_shape, keep_shape;
  int dim = 0;
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override {
    return {max_backward(grads[0], indices.unpack(name()), in_shape, keep_shape, dim)};
  }
  const char* name() const override { return "MaxDimBackward"; }
  void for_each_saved(const std::function<void(autograd::SavedTensor&)>& fn) override {
    fn(indices);
  }
};

template <bool kMax>
std::pair<Tensor, Tensor> max_dim_impl(const Tensor& t, int64_t dim, bool keepdim, const char* op) {
  if (is_half(t.dtype())) {
    auto [v, i] = max_dim_impl<kMax>(t.to(DType::F32), dim, keepdim, op);
    return {v.to(t.dtype()), i};
  }
  int d = wrap_dim(dim, t.dim(), op);
  Tensor indices;
  Tensor values = extreme_forward<kMax>(t, Dims{d}, keepdim, op, &indices);
  if (autograd::needs_grad(t)) {
    auto node = std::make_shared<MaxDimBackward>();
    node->indices = indices.detach();
    node->in_shape = t.shape();
    node->keep_shape = plan_reduce(t, Dims{d}, true, op).keep_shape;
    node->dim = d;
    autograd::record(node, {t}, values);
  }
  return {values, indices};
}

template <bool kMax>
Tensor arg_impl(const Tensor& t, int64_t dim, bool keepdim, const char* op) {
  FK_CHECK(!is_complex(t.dtype()), op, "a real dtype (complex numbers are not ordered)",
           name(t.dtype()));
  Tensor x = is_half(t.dtype()) ? t.detach().to(DType::F32) : t.detach();
  Tensor indices;
  extreme_forward<kMax>(x, Dims{wrap_dim(dim, t.dim(), op)}, keepdim, op, &indices);
  return indices;
}

}  // namespace

Tensor amax(const Tensor& t, const Dims& dims, bool keepdim) {
  return amax_impl<true>(t, dims, keepdim, "amax");
}
Tensor amin(const Tensor& t, const Dims& dims, bool keepdim) {
  return amax_impl<false>(t, dims, keepdim, "amin");
}

std::pair<Tensor, Tensor> max(const Tensor& t, int64_t dim, bool keepdim) {
  return max_dim_impl<true>(t, dim, keepdim, "max");
}
std::pair<Tensor, Tensor> min(const Tensor& t, int64_t dim, bool keepdim) {
  return max_dim_impl<false>(t, dim, keepdim, "min");
}

Tensor argmax(const Tensor& t, int64_t dim, bool keepdim) {
  return arg_impl<true>(t, dim, keepdim, "argmax");
}
Tensor argmin(const Tensor& t, int64_t dim, bool keepdim) {
  return arg_impl<false>(t, dim, keepdim, "argmin");
}

Tensor amax_backward(const Tensor& g, const Tensor& x, const Tensor& out, const Dims& dims,
                     bool keepdim) {
  return amax_backward(g, x.detach(), out, plan_reduce(x, dims, keepdim, "amax_backward"));
}

Tensor max_backward(const Tensor& g, const Tensor& indices, const Dims& in_shape, int64_t dim,
                    bool keepdim) {
  const int d = wrap_dim(dim, in_shape.size(), "max_backward");
  const Dims keep_shape = plan_reduce(in_shape, Dims{d}, keepdim, "max_backward").keep_shape;
  return max_backward(g, indices, in_shape, keep_shape, d);
}

}  // namespace fk
