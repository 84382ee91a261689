#include "fk/ops/reduce/sum.h"

#include <algorithm>

#include "fk/autograd.h"
#include "fk/cuda/kernels.h"
#include "fk/ops/binary.h"
#include "fk/ops/cpu/dispatch.h"
#include "fk/ops/cpu/fold_lanes.h"
#include "fk/ops/cpu/reduce_block.h"
#include "fk/ops/reduce/plan.h"
#include "fk/profile.h"

namespace fk {
namespace {

using cpu::check_cpu;
using cpu::kPlus;
using cpu::reduce_block;
using cpu::SumAcc;
using detail::plan_reduce;
using detail::prepare;
using detail::reduce_cuda;
using detail::ReducePlan;
using detail::Reduction;

template <typename T>
struct SumReducer {
  using Acc = typename SumAcc<T>::type;
  T* out;
  Acc init() const { return Acc(0); }
  void step(Acc& a, T v, int64_t) const { a += static_cast<Acc>(v); }
  // f32 runs: 8 f64 partial sums, so the f64 accumulation (error ~ n eps_f64
  // relative to sum |x|) is kept at the speed of the loads.
  Acc fold_row(const T* x, int64_t n) const {
    return cpu::fold_lanes(
        x, n, Acc(0), [](T v) { return static_cast<Acc>(v); }, kPlus);
  }
  void merge(Acc& a, const Acc& b) const { a += b; }
  void finish(int64_t o, const Acc& a) const {
    out[o] = divisor == 1 ? static_cast<T>(a) : static_cast<T>(a / divisor);
  }
  double divisor = 1;  // mean's count: divided before the one rounding to T
};

// The sum over `dims` divided by `divisor` (sum: 1; mean: the count), rounded
// once to the input's dtype; integers are summed in i64, or in f64 where
// `integers_in_f64` (mean: an i64 sum can wrap).
Tensor sum_forward(const Tensor& t_in, const Dims& dims, bool keepdim, double divisor = 1,
                   bool integers_in_f64 = false) {
  profile::OpScope scope(divisor == 1 ? "sum" : "mean");
  if (t_in.device().is_cuda()) return reduce_cuda(t_in, dims, keepdim, cuda::kReduceSum, "sum");
  check_cpu(t_in, "sum");
  DType rt = is_integral(t_in.dtype()) ? (integers_in_f64 ? DType::F64 : DType::I64) : t_in.dtype();
  DType ct = compute_type(rt);
  Reduction r = prepare(t_in.detach().to(ct), dims, keepdim, "sum");
  Tensor out = r.alloc(ct);
  cpu::visit_numeric(ct, "sum", [&](auto tag) {
    using T = typename decltype(tag)::type;
    reduce_block(r.src.data<T>(), r.A, r.R, r.C, SumReducer<T>{out.data<T>(), divisor});
  });
  out = r.result(out);
  return out.dtype() == rt ? out : out.to(rt);
}

struct SumBackward : autograd::Node {
  Dims in_shape, keep_shape;
  std::vector<Tensor> apply(std::vector<Tensor>&& g) override {
    return {g[0].reshape(keep_shape).expand(in_shape).contiguous()};
  }
  const char* name() const override { return "SumBackward"; }
};

struct MeanBackward : autograd::Node {
  Dims in_shape, dims;
  bool keepdim = false;
  std::vector<Tensor> apply(std::vector<Tensor>&& g) override {
    return {mean_backward(g[0], in_shape, dims, keepdim)};
  }
  const char* name() const override { return "MeanBackward"; }
};

}  // namespace

Tensor sum(const Tensor& t, const Dims& dims, bool keepdim) {
  Tensor out = sum_forward(t, dims, keepdim);
  if (autograd::needs_grad(t)) {
    auto node = std::make_shared<SumBackward>();
    node->in_shape = t.shape();
    node->keep_shape = plan_reduce(t, dims, keepdim, "sum").keep_shape;
    autograd::record(node, {t}, out);
  }
  return out;
}

// The mean of no elements is NaN (0 / 0), as torch's: 0 would pass for data.
// On the CPU the f64 (f32: f64-accumulated) sum is divided before its one
// rounding, so an f32 mean of values near the f32 maximum does not overflow;
// integers are summed in f64 (an i64 sum of 2^62 + 2^62 wrapped negative)
// and rounded once to f32.
Tensor mean(const Tensor& t, const Dims& dims, bool keepdim) {
  if (is_half(t.dtype())) return mean(t.to(DType::F32), dims, keepdim).to(t.dtype());
  ReducePlan p = plan_reduce(t, dims, keepdim, "mean");
  const double n = static_cast<double>(p.inner);
  if (t.device().is_cuda()) {
    if (is_integral(t.dtype())) return div(sum(t, dims, keepdim).to(DType::F64), n).to(DType::F32);
    return div(sum(t, dims, keepdim), n);
  }
  if (is_integral(t.dtype())) return sum_forward(t, dims, keepdim, n, true).to(DType::F32);
  Tensor out = sum_forward(t, dims, keepdim, n);
  if (autograd::needs_grad(t)) {
    auto node = std::make_shared<MeanBackward>();
    node->in_shape = t.shape();
    node->dims = dims;
    node->keepdim = keepdim;
    autograd::record(node, {t}, out);
  }
  return out;
}

Tensor sum_backward(const Tensor& g, const Dims& in_shape, const Dims& dims, bool keepdim) {
  const Dims keep_shape = plan_reduce(in_shape, dims, keepdim, "sum_backward").keep_shape;
  return g.reshape(keep_shape).expand(in_shape).contiguous();
}

Tensor mean_backward(const Tensor& g, const Dims& in_shape, const Dims& dims, bool keepdim) {
  const detail::ReducePlan p = plan_reduce(in_shape, dims, keepdim, "mean_backward");
  return div(g.reshape(p.keep_shape).expand(in_shape),
             static_cast<double>(std::max<int64_t>(p.inner, 1)));
}

}  // namespace fk
