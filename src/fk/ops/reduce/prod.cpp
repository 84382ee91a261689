#include "fk/ops/reduce/prod.h"

#include <algorithm>

#include "fk/autograd.h"
#include "fk/cuda/kernels.h"
#include "fk/factory.h"
#include "fk/ops/cpu/dispatch.h"
#include "fk/ops/cpu/fold_lanes.h"
#include "fk/ops/cpu/reduce_block.h"
#include "fk/ops/cuda_dispatch.h"
#include "fk/ops/reduce/plan.h"
#include "fk/parallel.h"
#include "fk/profile.h"

namespace fk {
namespace {

using cpu::check_cpu;
using cpu::kIsComplex;
using cpu::kTimes;
using cpu::reduce_block;
using cpu::SumAcc;
using detail::plan_reduce;
using detail::prepare;
using detail::reduce_cuda;
using detail::ReducePlan;
using detail::Reduction;

template <typename T>
struct ProdReducer {
  using Acc = typename SumAcc<T>::type;
  T* out;
  Acc init() const { return Acc(1); }
  void step(Acc& a, T v, int64_t) const { a *= static_cast<Acc>(v); }
  Acc fold_row(const T* x, int64_t n) const {
    return cpu::fold_lanes(
        x, n, Acc(1), [](T v) { return static_cast<Acc>(v); }, kTimes);
  }
  void merge(Acc& a, const Acc& b) const { a *= b; }
  void finish(int64_t o, const Acc& a) const { out[o] = static_cast<T>(a); }
};

// d prod / d x_i = prod_{j != i} x_j, as (product of the elements before i) x
// (product of those after i): exact with zeros in the row, no division.
template <typename T>
void prod_backward_rows(const T* x, const T* g, T* gx, int64_t outer, int64_t inner) {
  int64_t grain = std::max<int64_t>(1, cpu::kElementwiseGrain / std::max<int64_t>(inner, 1));
  parallel_for(0, outer, grain, [&](int64_t lo, int64_t hi) {
    for (int64_t o = lo; o < hi; ++o) {
      const T* row = x + o * inner;
      T* grow = gx + o * inner;
      T before(1);
      for (int64_t i = 0; i < inner; ++i) {
        grow[i] = before;
        before *= row[i];
      }
      T after(1);
      for (int64_t i = inner - 1; i >= 0; --i) {
        T others = grow[i] * after;
        if constexpr (kIsComplex<T>) others = std::conj(others);
        grow[i] = g[o] * others;
        after *= row[i];
      }
    }
  });
}

Tensor prod_backward(const Tensor& g, const Tensor& x_in, const ReducePlan& p) {
  profile::OpScope scope("prod_backward");
  Tensor x = x_in.permute(p.order).contiguous();
  Tensor gc = g.to(x.dtype()).contiguous();
  Tensor gx = empty(x.shape(), {x.dtype(), x.device()});
  if (x.device().is_cuda()) {
    cuda::launch_prod_backward_lastdim(static_cast<int>(x.dtype()), x.data_ptr(), gc.data_ptr(),
                                       gx.data_ptr(), p.outer, p.inner, cuda_ops::stream_of(x));
    cuda_ops::launched(x);
  } else {
    cpu::visit_inexact(x.dtype(), "prod_backward", [&](auto tag) {
      using T = typename decltype(tag)::type;
      prod_backward_rows(x.data<T>(), gc.data<T>(), gx.data<T>(), p.outer, p.inner);
    });
  }
  Dims inverse = Dims::filled(p.order.size(), 0);
  for (int i = 0; i < p.order.size(); ++i) inverse[static_cast<int>(p.order[i])] = i;
  return gx.permute(inverse).contiguous();
}

struct ProdBackward : autograd::Node {
  autograd::SavedTensor x;
  ReducePlan plan;
  std::vector<Tensor> apply(std::vector<Tensor>&& g) override {
    return {prod_backward(g[0], x.unpack(name()), plan)};
  }
  const char* name() const override { return "ProdBackward"; }
  void for_each_saved(const std::function<void(autograd::SavedTensor&)>& fn) override { fn(x); }
};

}  // namespace

Tensor prod(const Tensor& t, const Dims& dims, bool keepdim) {
  if (is_half(t.dtype())) return prod(t.to(DType::F32), dims, keepdim).to(t.dtype());
  profile::OpScope scope("prod");
  Tensor out;
  if (t.device().is_cuda()) {
    out = reduce_cuda(t, dims, keepdim, cuda::kReduceProd, "prod");
  } else {
    check_cpu(t, "prod");
    DType ct = is_integral(t.dtype()) ? DType::I64 : t.dtype();
    Reduction r = prepare(t.detach().to(ct), dims, keepdim, "prod");
    out = r.alloc(ct);
    cpu::visit_numeric(ct, "prod", [&](auto tag) {
      using T = typename decltype(tag)::type;
      reduce_block(r.src.data<T>(), r.A, r.R, r.C, ProdReducer<T>{out.data<T>()});
    });
    out = r.result(out);
  }
  if (autograd::needs_grad(t)) {
    auto node = std::make_shared<ProdBackward>();
    node->x = t;
    node->plan = plan_reduce(t, dims, keepdim, "prod");
    autograd::record(node, {t}, out);
  }
  return out;
}

Tensor prod_backward(const Tensor& g, const Tensor& x, const Dims& dims, bool keepdim) {
  return prod_backward(g, x.detach(), plan_reduce(x, dims, keepdim, "prod_backward"));
}

}  // namespace fk
