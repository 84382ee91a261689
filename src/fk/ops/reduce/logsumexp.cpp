#include "fk/ops/reduce/logsumexp.h"

#include <array>
#include <cmath>
#include <limits>
#include <type_traits>

#include "fk/autograd.h"
#include "fk/cpu_isa.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/cpu/dispatch.h"
#include "fk/ops/cpu/exp_shifted.h"
#include "fk/ops/cpu/extrema.h"
#include "fk/ops/cpu/reduce_block.h"
#include "fk/ops/reduce/extremes.h"
#include "fk/ops/reduce/plan.h"
#include "fk/ops/reduce/sum.h"
#include "fk/ops/unary.h"
#include "fk/profile.h"

namespace fk {
namespace {

using cpu::exp_shifted_lanes;
using cpu::exp_shifted_run;
using cpu::kLaneBlock;
using cpu::reduce_block;
using cpu::step_rows;
using detail::in_inexact_type;
using detail::keep;
using detail::plan_reduce;
using detail::prepare;
using detail::ReducePlan;
using detail::Reduction;

// Online log-sum-exp: keeps the running max m and sum of exp(x - m), rescaled
// when the max grows, so no exp overflows. f32 with `vec` (an AVX2 CPU) takes
// two passes instead, over a run or rows of lanes: the max (NaN noted apart),
// then the f64 sum of the AVX2 exp(x - max) in a fixed order; blocks are
// merged as in the online form.
template <typename T>
struct LogSumExpReducer {
  static constexpr bool kTwoPass = std::is_same_v<T, float>;
  struct Acc {
    double m = -std::numeric_limits<double>::infinity();
    double s = 0;
  };
  T* out;
  bool vec = false;
  Acc init() const { return Acc{}; }
  // The Acc of elements whose max (NaN aside) is m, with `nan` if one was
  // NaN and s the sum of exp(x - m): the online form's special cases.
  static Acc from_max(double m, bool nan, double s) {
    const double inf = std::numeric_limits<double>::infinity();
    const double nan_value = std::numeric_limits<double>::quiet_NaN();
    if (nan) return Acc{nan_value, nan_value};
    if (m == -inf) return Acc{};       // every element -inf (or none): the sum is 0
    if (m == inf) return Acc{inf, 1};  // a +inf: the result is +inf
    return Acc{m, s};
  }
  Acc fold_row(const T* x, int64_t n) const requires kTwoPass {
    if (!vec || n == 0) {
      Acc a = init();
      for (int64_t i = 0; i < n; ++i) step(a, x[i], i);
      return a;
    }
    bool nan = false;
    const float m = cpu::avx2::max_ignoring_nan_run(x, n, &nan);
    if (nan || std::isinf(m)) return from_max(m, nan, 0);
    return from_max(m, false, exp_shifted_run<float, false>(x, nullptr, n, m, true));
  }
  void fold_rows(const T* base, int64_t r0, int64_t r1, int64_t C, int64_t w,
                 Acc* acc) const requires kTwoPass {
    if (!vec) return step_rows(*this, base, r0, r1, C, w, acc);
    std::array<float, kLaneBlock> m, shift{};  // {}: as in softmax_kernel
    std::array<bool, kLaneBlock> nan;
    std::array<double, kLaneBlock> total;
    for (int64_t j = 0; j < w; ++j) m[j] = -std::numeric_limits<float>::infinity(), nan[j] = false;
    for (int64_t r = r0; r < r1; ++r) {
      const T* xr = base + r * C;
      for (int64_t j = 0; j < w; ++j) {
        nan[j] = nan[j] || xr[j] != xr[j];
        m[j] = xr[j] > m[j] ? xr[j] : m[j];
      }
    }
    for (int64_t j = 0; j < w; ++j) {
      shift[j] = std::isinf(m[j]) ? 0.0f : m[j];  // avoids inf - inf; such lanes are special
      total[j] = 0;
    }
    exp_shifted_lanes<float, false>(base + r0 * C, nullptr, r1 - r0, C, w, shift.data(),
                                    total.data(), true);
    for (int64_t j = 0; j < w; ++j) acc[j] = from_max(m[j], nan[j], total[j]);
  }
  void step(Acc& a, T v_in, int64_t) const {
    double v = static_cast<double>(v_in);
    if (v != v) {
      a.m = a.s = v;
      return;
    }
    if (v == -std::numeric_limits<double>::infinity()) return;
    if (v > a.m) {
      a.s = a.s * std::exp(a.m - v) + 1.0;
      a.m = v;
    } else {
      a.s += v == a.m ? 1.0 : std::exp(v - a.m);
    }
  }
  void merge(Acc& a, const Acc& b) const {
    if (a.m != a.m || b.m != b.m) {
      a.m = a.s = std::numeric_limits<double>::quiet_NaN();
      return;
    }
    if (b.s == 0) return;
    if (a.s == 0) {
      a = b;
      return;
    }
    double m = std::max(a.m, b.m);
    a.s = (a.m == m ? a.s : a.s * std::exp(a.m - m)) + (b.m == m ? b.s : b.s * std::exp(b.m - m));
    a.m = m;
  }
  void finish(int64_t o, const Acc& a) const {
    out[o] = a.s == 0 ? -std::numeric_limits<T>::infinity() : static_cast<T>(a.m + std::log(a.s));
  }
};

Tensor logsumexp_forward(const Tensor& t, const Dims& dims, bool keepdim) {
  profile::OpScope scope("logsumexp");
  if (t.device().is_cuda()) {
    // m + log(sum(exp(x - m))) with m the max (0 where it is infinite, so that
    // rows of -inf give -inf and a +inf gives +inf, as on the CPU).
    const ReducePlan plan = plan_reduce(t, dims, keepdim, "logsumexp");
    if (plan.inner == 0) {
      return full(plan.out_shape, -std::numeric_limits<double>::infinity(),
                  {t.dtype(), t.device()});
    }
    Tensor x = t.detach();
    Tensor m = amax(x, dims, true);
    Tensor inf = scalar_like(m, std::numeric_limits<double>::infinity());
    m = where(eq(abs(m), inf), scalar_like(m, 0.0), m);
    Tensor out = add(log(sum(exp(sub(x, m)), dims, true)), m);
    return out.reshape(plan.out_shape);
  }
  Reduction r = prepare(t, dims, keepdim, "logsumexp");
  Tensor out = r.alloc(t.dtype());
  const bool vec = cpu_isa() >= CpuIsa::Avx2;
  cpu::visit_float(t.dtype(), "logsumexp", [&](auto tag) {
    using T = typename decltype(tag)::type;
    reduce_block(r.src.data<T>(), r.A, r.R, r.C, LogSumExpReducer<T>{out.data<T>(), vec});
  });
  return r.result(out);
}

// d lse / dx = exp(x - lse), the softmax.
Tensor logsumexp_backward(const Tensor& g, const Tensor& x, const Tensor& out,
                          const ReducePlan& plan) {
  Tensor w = exp(sub(x, keep(out, plan)));
  return mul(w, keep(g, plan));
}

struct LogSumExpBackward : autograd::Node {
  autograd::SavedTensor x, out;
  ReducePlan plan;
  std::vector<Tensor> apply(std::vector<Tensor>&& g) override {
    return {logsumexp_backward(g[0], x.unpack(name()), out.unpack(name()), plan)};
  }
  const char* name() const override { return "LogSumExpBackward"; }
  void for_each_saved(const std::function<void(autograd::SavedTensor&)>& fn) override {
    fn(x);
    fn(out);
  }
};

}  // namespace

Tensor logsumexp(const Tensor& t, const Dims& dims, bool keepdim) {
  FK_CHECK(!is_complex(t.dtype()), "logsumexp", "a real dtype", name(t.dtype()));
  if (auto r = in_inexact_type(t, [&](const Tensor& c) { return logsumexp(c, dims, keepdim); }))
    return *r;
  Tensor out = logsumexp_forward(t, dims, keepdim);
  if (autograd::needs_grad(t)) {
    auto node = std::make_shared<LogSumExpBackward>();
    node->x = t;
    node->out = out.detach();
    node->plan = plan_reduce(t, dims, keepdim, "logsumexp");
    autograd::record(node, {t}, out);
  }
  return out;
}

Tensor logsumexp_backward(const Tensor& g, const Tensor& x, const Tensor& out, const Dims& dims,
                          bool keepdim) {
  return logsumexp_backward(g, x.detach(), out,
                            plan_reduce(x, dims, keepdim, "logsumexp_backward"));
}

}  // namespace fk
