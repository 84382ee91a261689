#include "fk/ops/reduce/sum.h"

#include <algorithm>
#include <type_traits>

#include "fk/autograd.h"
#include "fk/cuda/kernels.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/binary/ternary.h"
#include "fk/ops/cpu/dispatch.h"
#include "fk/ops/cpu/fold_lanes.h"
#include "fk/ops/cpu/reduce_block.h"
#include "fk/ops/reduce/plan.h"
#include "fk/ops/unary.h"
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
    if constexpr (std::is_integral_v<Acc>)
      out[o] = static_cast<T>(a);  // integers are only summed (mean divides their sum itself)
    else
      out[o] = divisor == 1 ? static_cast<T>(a) : static_cast<T>(a / divisor);
  }
  double divisor = 1;  // mean's count: divided before the one rounding to T
};

// The sum over `dims` divided by `divisor` (sum: 1; mean: the count), rounded
// once to the input's dtype (integers: i64). `op` names it in profiles.
Tensor sum_forward(const Tensor& t_in, const Dims& dims, bool keepdim, double divisor = 1,
                   const char* op = "sum") {
  profile::OpScope scope(op);
  if (t_in.device().is_cuda()) return reduce_cuda(t_in, dims, keepdim, cuda::kReduceSum, "sum");
  check_cpu(t_in, "sum");
  DType rt = is_integral(t_in.dtype()) ? DType::I64 : t_in.dtype();
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
// Integers: the exact i64 sum divided in f64 and rounded once to f32, or for
// i64 the f64 sum where the i64 one may have wrapped (2^62 + 2^62 gave a
// negative mean). On the CPU a float sum (f32's accumulated in f64) is
// divided before its one rounding, so an f32 mean of values near the f32
// maximum does not overflow; on CUDA f32 sums in f32 (fk/ops/reduce.h).
Tensor mean(const Tensor& t, const Dims& dims, bool keepdim) {
  if (is_half(t.dtype())) return mean(t.to(DType::F32), dims, keepdim).to(t.dtype());
  ReducePlan p = plan_reduce(t, dims, keepdim, "mean");
  const double n = static_cast<double>(p.inner);
  if (is_integral(t.dtype())) {
    Tensor s = sum(t, dims, keepdim).to(DType::F64);
    if (t.dtype() == DType::I64) {
      const Tensor wide = sum(t.to(DType::F64), dims, keepdim);
      s = where(lt(abs(wide), full({}, 0x1p62, {DType::F64, wide.device()})), s, wide);
    }
    return div(s, n).to(DType::F32);
  }
  if (t.device().is_cuda()) return div(sum(t, dims, keepdim), n);
  Tensor out = sum_forward(t, dims, keepdim, n, "mean");
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
