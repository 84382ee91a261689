#include "fk/ops/reduce/var.h"

#include <algorithm>
#include <type_traits>

#include "fk/autograd.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/cpu/dispatch.h"
#include "fk/ops/cpu/fold_lanes.h"
#include "fk/ops/cpu/reduce_block.h"
#include "fk/ops/index/mask.h"
#include "fk/ops/reduce/plan.h"
#include "fk/ops/reduce/sum.h"
#include "fk/ops/unary.h"
#include "fk/profile.h"

namespace fk {
namespace {

using cpu::kIsComplex;
using cpu::kPlus;
using cpu::RealOf;
using cpu::reduce_block;
using detail::in_inexact_type;
using detail::keep;
using detail::plan_reduce;
using detail::prepare;
using detail::ReducePlan;
using detail::Reduction;

// Re(conj(d) * e): the real inner product used for |.|^2 of complex deviations.
template <typename M>
double real_dot(const M& d, const M& e) {
  if constexpr (std::is_same_v<M, c128>) {
    return d.real() * e.real() + d.imag() * e.imag();
  } else {
    return d * e;
  }
}

// Shifted sums: each lane keeps K = its first value (a contiguous real run:
// its mean; 0 where var_forward centred the input first), sum(x - K) and
// sum |x - K|^2, so the update is two adds (no division) and the deviations
// stay small whatever the offset of the data; m2 = s2 - |s1|^2 / n. Blocks are
// combined with Chan et al.'s pairwise formula. Complex T gives real variances.
template <typename T>
struct VarReducer {
  using R = typename RealOf<T>::type;
  using M = std::conditional_t<kIsComplex<T>, c128, double>;
  struct Acc {
    double n = 0;
    M shift{}, s1{};
    double s2 = 0;
    M mean() const { return shift + s1 / n; }
    double m2() const {  // >= 0 against round-off; a NaN stays NaN (std::max made it 0)
      const double v = s2 - real_dot(s1, s1) / n;
      return v < 0 ? 0.0 : v;
    }
  };
  R* out;
  double correction;
  bool centred = false;  // the input minus its mean: no shift (K = 0)
  Acc init() const { return Acc{}; }
  void step(Acc& a, T v, int64_t) const {
    M x = static_cast<M>(v);
    if (a.n == 0 && !centred) a.shift = x;
    M d = x - a.shift;
    a.s1 += d;
    a.s2 += real_dot(d, d);
    a.n += 1;
  }
  // Real runs, two passes over 8 partial sums each: K = the run's mean
  // (scaled before the sum: 1e308s do not overflow), then the shifted sums
  // s1, s2 from it together, s1 correcting K's round-off. K = x[0]
  // cancelled when x[0] was far from the rest (0 among 1e8 + N(0, 1): 3e-11
  // relative error; now a few ulp).
  Acc fold_row(const T* x, int64_t n) const requires(!kIsComplex<T>) {
    Acc a;
    if (n == 0) return a;
    a.n = static_cast<double>(n);
    const double inv = 1 / a.n;
    const double k = cpu::fold_lanes(
        x, n, 0.0, [inv](T v) { return static_cast<double>(v) * inv; }, kPlus);
    struct Sums {
      double s1, s2;
    };
    const Sums sums = cpu::fold_lanes(
        x, n, Sums{0, 0},
        [k](T v) {
          const double d = static_cast<double>(v) - k;
          return Sums{d, d * d};
        },
        [](const Sums& p, const Sums& q) {
          return Sums{p.s1 + q.s1, p.s2 + q.s2};
        });
    a.shift = k;
    a.s1 = sums.s1;
    a.s2 = sums.s2;
    return a;
  }
  void merge(Acc& a, const Acc& b) const {
    if (b.n == 0) return;
    if (a.n == 0) {
      a = b;
      return;
    }
    double n = a.n + b.n;
    M ma = a.mean(), d = b.mean() - ma;
    double m2 = a.m2() + b.m2() + real_dot(d, d) * (a.n * b.n / n);
    a = Acc{n, ma + d * (b.n / n), M{}, m2};
  }
  void finish(int64_t o, const Acc& a) const {
    double m2 = a.n > 0 ? a.m2() : 0.0;
    out[o] = static_cast<R>(m2 / std::max(0.0, a.n - correction));
  }
};

Tensor var_forward(const Tensor& t, const Dims& dims, int64_t correction, bool keepdim) {
  profile::OpScope scope("var");
  if (t.device().is_cuda()) {
    // Two passes on the device: the mean, then the summed squared deviations.
    const ReducePlan plan = plan_reduce(t, dims, keepdim, "var");
    Tensor x = t.detach();
    Tensor dev = sub(x, mean(x, dims, true));
    Tensor sq = is_complex(dev.dtype()) ? square(abs(dev)) : square(dev);
    const double divisor = std::max(0.0, static_cast<double>(plan.inner - correction));
    return div(sum(sq, dims, keepdim), divisor);
  }
  Reduction r = prepare(t, dims, keepdim, "var");
  // Lanes over a leading dim and complex runs would shift by their first
  // value, which cancels when it lies far from the rest: they read the input
  // centred by its mean instead (a copy), unshifted; contiguous real runs
  // shift by their own mean.
  const bool centred = r.C > 1 || is_complex(t.dtype());
  if (centred) {
    // The mean of values scaled first (mean() sums first: 1.5e308s overflowed);
    // K need only lie near the mean, s1 corrects the rest.
    const Tensor x = t.detach();
    const double n = static_cast<double>(plan_reduce(t, dims, keepdim, "var").inner);
    r = prepare(sub(x, sum(mul(x, 1 / std::max(n, 1.0)), dims, true)), dims, keepdim, "var");
  }
  Tensor out = r.alloc(real_type(t.dtype()));
  cpu::visit_inexact(t.dtype(), "var", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using R = typename RealOf<T>::type;
    reduce_block(r.src.data<T>(), r.A, r.R, r.C,
                 VarReducer<T>{out.data<R>(), static_cast<double>(correction), centred});
  });
  return r.result(out);
}

// d var / dx = 2 (x - mean) / (N - correction); the mean's own dependence on x
// cancels because the deviations sum to zero.
Tensor var_backward(const Tensor& g, const Tensor& x, const ReducePlan& plan, double divisor) {
  Tensor dev = sub(x, mean(x, plan.dims, true));
  Tensor scale = mul(keep(g, plan).to(real_type(x.dtype())), 2.0 / divisor);
  return mul(dev, scale);
}

// N - correction, at least 0.
double var_divisor(const ReducePlan& plan, int64_t correction) {
  return std::max<double>(0.0, static_cast<double>(plan.inner - correction));
}

struct VarBackward : autograd::Node {
  autograd::SavedTensor x;
  ReducePlan plan;
  double divisor = 1;
  std::vector<Tensor> apply(std::vector<Tensor>&& g) override {
    return {var_backward(g[0], x.unpack(name()), plan, divisor)};
  }
  const char* name() const override { return "VarBackward"; }
  void for_each_saved(const std::function<void(autograd::SavedTensor&)>& fn) override { fn(x); }
};

// d std = d var / (2 std), 0 where std is 0 (every deviation is 0 there: the
// limit along them, and torch's convention); sqrt's own slope gave g / 0 * 0 = NaN.
Tensor std_scale(const Tensor& g, const Tensor& out) {
  return masked_fill(div(g, mul(out, 2.0)), eq(out, zeros_like(out)), 0.0);
}

struct StdBackward : autograd::Node {
  autograd::SavedTensor x, out;
  ReducePlan plan;
  double divisor = 1;
  std::vector<Tensor> apply(std::vector<Tensor>&& g) override {
    return {var_backward(std_scale(g[0], out.unpack(name())), x.unpack(name()), plan, divisor)};
  }
  const char* name() const override { return "StdBackward"; }
  void for_each_saved(const std::function<void(autograd::SavedTensor&)>& fn) override {
    fn(x);
    fn(out);
  }
};

}  // namespace

Tensor var(const Tensor& t, const Dims& dims, int64_t correction, bool keepdim) {
  if (auto r =
          in_inexact_type(t, [&](const Tensor& c) { return var(c, dims, correction, keepdim); }))
    return *r;
  Tensor out = var_forward(t, dims, correction, keepdim);
  if (autograd::needs_grad(t)) {
    auto node = std::make_shared<VarBackward>();
    node->x = t;
    node->plan = plan_reduce(t, dims, keepdim, "var");
    node->divisor = var_divisor(node->plan, correction);
    autograd::record(node, {t}, out);
  }
  return out;
}

Tensor std(const Tensor& t, const Dims& dims, int64_t correction, bool keepdim) {
  if (auto r = in_inexact_type(
          t, [&](const Tensor& c) { return fk::std(c, dims, correction, keepdim); }))
    return *r;
  Tensor out = sqrt(var_forward(t, dims, correction, keepdim));
  if (autograd::needs_grad(t)) {
    auto node = std::make_shared<StdBackward>();
    node->x = t;
    node->out = out.detach();  // shares out's version: an in-place change is caught
    node->plan = plan_reduce(t, dims, keepdim, "std");
    node->divisor = var_divisor(node->plan, correction);
    autograd::record(node, {t}, out);
  }
  return out;
}

Tensor var_backward(const Tensor& g, const Tensor& x, const Dims& dims, int64_t correction,
                    bool keepdim) {
  const ReducePlan plan = plan_reduce(x, dims, keepdim, "var_backward");
  return var_backward(g, x.detach(), plan, var_divisor(plan, correction));
}

Tensor std_backward(const Tensor& g, const Tensor& x, const Tensor& out, const Dims& dims,
                    int64_t correction, bool keepdim) {
  return var_backward(std_scale(g, out), x, dims, correction, keepdim);
}

}  // namespace fk
