#include "fk/ops/reduce/norm.h"

#include <cmath>
#include <string>

#include "fk/autograd.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/cpu/dispatch.h"
#include "fk/ops/cpu/fold_lanes.h"
#include "fk/ops/cpu/loops.h"
#include "fk/ops/cpu/reduce_block.h"
#include "fk/ops/reduce/extremes.h"
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

enum class NormKind { One, Two, Inf, General };

// sum |x|, sqrt(sum |x|^2), max |x| or (sum |x|^p)^(1/p); complex T gives real norms.
template <typename T>
struct NormReducer {
  using R = typename RealOf<T>::type;
  using Acc = double;
  R* out;
  NormKind kind;
  double p;
  // |v|^2 in double (std::norm of a float would square in float).
  static double square_mag(T v) {
    if constexpr (kIsComplex<T>) {
      return std::norm(static_cast<c128>(v));
    } else {
      return static_cast<double>(v) * static_cast<double>(v);
    }
  }
  Acc init() const { return 0.0; }
  void step(Acc& a, T v, int64_t) const {
    if (kind == NormKind::Two) {
      a += square_mag(v);
      return;
    }
    double m = static_cast<double>(std::abs(v));
    switch (kind) {
      case NormKind::One:
        a += m;
        break;
      case NormKind::Inf:
        if (m != m || m > a) a = m;
        break;
      default:
        a += std::pow(m, p);
        break;
    }
  }
  // Inf: NaN wins, else the larger (exact, so the lane order cannot show).
  static double max_nan(double a, double b) { return (b != b || b > a) ? b : a; }
  Acc fold_row(const T* x, int64_t n) const {
    auto mag = [](T v) { return static_cast<double>(std::abs(v)); };
    switch (kind) {
      case NormKind::Two:
        return cpu::fold_lanes(x, n, 0.0, square_mag, kPlus);
      case NormKind::One:
        return cpu::fold_lanes(x, n, 0.0, mag, kPlus);
      case NormKind::Inf:
        return cpu::fold_lanes(x, n, 0.0, mag, max_nan);
      case NormKind::General:
        break;
    }
    const double e = p;
    return cpu::fold_lanes(
        x, n, 0.0, [&](T v) { return std::pow(mag(v), e); }, kPlus);
  }
  void merge(Acc& a, const Acc& b) const {
    if (kind != NormKind::Inf) {
      a += b;
    } else if (b != b || b > a) {
      a = b;
    }
  }
  void finish(int64_t o, const Acc& a) const {
    switch (kind) {
      case NormKind::Two:
        out[o] = static_cast<R>(std::sqrt(a));
        break;
      case NormKind::General:
        out[o] = static_cast<R>(std::pow(a, 1.0 / p));
        break;
      default:
        out[o] = static_cast<R>(a);
        break;
    }
  }
};

NormKind norm_kind(double p) {
  if (std::isinf(p)) return NormKind::Inf;
  if (p == 1.0) return NormKind::One;
  if (p == 2.0) return NormKind::Two;
  return NormKind::General;
}

// CUDA: composed from the device's elementwise ops and deterministic
// reductions (|x| summed, squared and summed, or its max), accumulated in the
// input's precision (the CPU accumulates in f64).
Tensor norm_cuda(const Tensor& t, double p, const Dims& dims, bool keepdim) {
  const ReducePlan plan = plan_reduce(t, dims, keepdim, "norm");
  if (plan.inner == 0) return zeros(plan.out_shape, {real_type(t.dtype()), t.device()});
  Tensor m = abs(t.detach());  // real for complex inputs
  switch (norm_kind(p)) {
    case NormKind::One:
      return sum(m, dims, keepdim);
    case NormKind::Two:
      return sqrt(sum(square(m), dims, keepdim));
    case NormKind::Inf:
      return amax(m, dims, keepdim);
    case NormKind::General:
      break;
  }
  return pow(sum(pow(m, p), dims, keepdim), 1.0 / p);
}

Tensor norm_forward(const Tensor& t, double p, const Dims& dims, bool keepdim) {
  profile::OpScope scope("norm");
  if (t.device().is_cuda()) return norm_cuda(t, p, dims, keepdim);
  Reduction r = prepare(t, dims, keepdim, "norm");
  Tensor out = r.alloc(real_type(t.dtype()));
  cpu::visit_inexact(t.dtype(), "norm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using R = typename RealOf<T>::type;
    reduce_block(r.src.data<T>(), r.A, r.R, r.C, NormReducer<T>{out.data<R>(), norm_kind(p), p});
  });
  return r.result(out);
}

// x / |x| (0 at 0): the gradient direction of |x| for real and complex x.
template <typename T>
T unit(T v) {
  if constexpr (kIsComplex<T>) {
    auto m = std::abs(v);
    return m == 0 ? T(0) : v / m;
  } else {
    return static_cast<T>((T(0) < v) - (v < T(0)));
  }
}

// The CUDA form of norm_backward's elementwise step (below), from the
// device's elementwise ops: n is the norm and s the incoming gradient, both
// real with the reduced dims kept as size 1 (s already divided by the count of
// maxima for p = inf).
Tensor norm_backward_cuda(const Tensor& x, const Tensor& n, const Tensor& s, double p) {
  Tensor m = abs(x);
  Tensor zero = scalar_like(x, 0.0);
  Tensor u = is_complex(x.dtype()) ? where(eq(m, scalar_like(m, 0.0)), zero, div(x, m)) : sign(x);
  Tensor n_zero = eq(n, scalar_like(n, 0.0));
  switch (norm_kind(p)) {
    case NormKind::One:
      return mul(u, s);
    case NormKind::Two:
      return where(n_zero, zero, mul(x, div(s, n)));
    case NormKind::Inf:
      return where(eq(m, n), mul(u, s), zero);
    case NormKind::General:
      break;
  }
  Tensor v = mul(u, mul(s, pow(div(m, n), p - 1.0)));
  return where(n_zero, zero, where(eq(m, scalar_like(m, 0.0)), zero, v));
}

// d||x||_p / dx = sgn(x) (|x| / n)^(p-1); at x = 0 or n = 0 the subgradient 0
// is used. For p = inf, `s` is g / (number of elements attaining the max).
Tensor norm_backward(const Tensor& g_in, const Tensor& x, const Tensor& n_in, double p,
                     const ReducePlan& plan) {
  profile::OpScope scope("norm_backward");
  DType rt = real_type(x.dtype());
  Tensor n = keep(n_in, plan).to(rt);
  Tensor s = keep(g_in, plan).to(rt);
  NormKind kind = norm_kind(p);
  if (kind == NormKind::Inf) {
    Tensor count = sum(eq(abs(x), n).to(rt), plan.dims, true);
    s = div(s, count);
  }
  if (x.device().is_cuda()) return norm_backward_cuda(x, n, s, p);
  Tensor gx = empty(x.shape(), {x.dtype(), x.device()});
  cpu::visit_inexact(x.dtype(), "norm_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using R = typename RealOf<T>::type;
    auto run = [&](auto f) { cpu::map3<T, T, R, R>(gx, x, n, s, f); };
    switch (kind) {
      case NormKind::One:
        return run([](T v, R, R sv) { return T(sv) * unit(v); });
      case NormKind::Two:
        return run([](T v, R nv, R sv) { return nv == R(0) ? T(0) : v * T(sv / nv); });
      case NormKind::Inf:
        return run([](T v, R nv, R sv) { return std::abs(v) == nv ? T(sv) * unit(v) : T(0); });
      case NormKind::General: {
        const R e = static_cast<R>(p - 1.0);
        return run([e](T v, R nv, R sv) {
          R m = std::abs(v);
          return (nv == R(0) || m == R(0)) ? T(0) : T(sv * std::pow(m / nv, e)) * unit(v);
        });
      }
    }
  });
  return gx;
}

struct NormBackward : autograd::Node {
  autograd::SavedTensor x, out;
  double p = 2;
  ReducePlan plan;
  std::vector<Tensor> apply(std::vector<Tensor>&& g) override {
    return {norm_backward(g[0], x.unpack(name()), out.unpack(name()), p, plan)};
  }
  const char* name() const override { return "NormBackward"; }
  void for_each_saved(const std::function<void(autograd::SavedTensor&)>& fn) override {
    fn(x);
    fn(out);
  }
};

}  // namespace

Tensor norm(const Tensor& t, double p, const Dims& dims, bool keepdim) {
  FK_CHECK(p > 0, "norm", "p > 0 or inf", fk::to_text(p));
  // The inf norm is a max: of nothing it is undefined (torch refuses it too;
  // 0 passed for a norm of data).
  FK_CHECK(!std::isinf(p) || plan_reduce(t, dims, keepdim, "norm").inner > 0, "norm",
           "a non-empty reduction for the inf norm (the max of |x|)",
           "shape " + t.shape().str() + " reduced over " + dims.str());
  if (auto r = in_inexact_type(t, [&](const Tensor& c) { return norm(c, p, dims, keepdim); }))
    return *r;
  Tensor out = norm_forward(t, p, dims, keepdim);
  if (autograd::needs_grad(t)) {
    auto node = std::make_shared<NormBackward>();
    node->x = t;
    node->out = out.detach();
    node->p = p;
    node->plan = plan_reduce(t, dims, keepdim, "norm");
    autograd::record(node, {t}, out);
  }
  return out;
}

Tensor norm_backward(const Tensor& g, const Tensor& x, const Tensor& out, double p,
                     const Dims& dims, bool keepdim) {
  return norm_backward(g, x.detach(), out, p, plan_reduce(x, dims, keepdim, "norm_backward"));
}

}  // namespace fk
