#include "fk/ops/binary/binary.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

#include <fmt/format.h>

#include "fk/autograd.h"
#include "fk/cuda/kernels.h"
#include "fk/factory.h"
#include "fk/half.h"
#include "fk/ops/binary/operands.h"
#include "fk/ops/binary/ternary.h"
#include "fk/ops/cpu/dispatch.h"
#include "fk/ops/cpu/loops.h"
#include "fk/ops/cuda_dispatch.h"
#include "fk/ops/integral_holds.h"
#include "fk/ops/unary.h"
#include "fk/ops/unary_formulas.h"
#include "fk/ops/view.h"
#include "fk/profile.h"

namespace fk {

const char* name(BinaryOp op) {
  static const char* names[] = {"add",   "sub", "mul", "div", "pow", "maximum", "minimum",
                                "atan2", "eq",  "ne",  "lt",  "le",  "gt",      "ge"};
  return names[static_cast<int>(op)];
}

namespace {

using detail::check_same_device;
using detail::conj_if_complex;
using detail::grad_for;

bool is_comparison(BinaryOp op) {
  return op >= BinaryOp::Eq;
}
bool is_complex_op(BinaryOp op) {
  return op == BinaryOp::Add || op == BinaryOp::Sub || op == BinaryOp::Mul || op == BinaryOp::Div ||
         op == BinaryOp::Eq || op == BinaryOp::Ne;
}

// The dtype of `a op b` and the dtype it is computed in.
std::pair<DType, DType> result_types(BinaryOp op, DType a, DType b) {
  // As torch: a bool operand has no - (x - mask took the mask as 0/1; to
  // invert a mask, logical_not).
  FK_CHECK(op != BinaryOp::Sub || (a != DType::Bool && b != DType::Bool), "sub",
           "numeric operands (- of a bool tensor is undefined: logical_not inverts a mask)",
           std::string(name(a)) + " - " + name(b));
  DType rt = promote(a, b);
  if (is_comparison(op)) {
    DType ct = rt == DType::Bool ? DType::I32 : compute_type(rt);
    return {DType::Bool, ct};
  }
  if (rt == DType::Bool) {
    // NumPy's and torch's: + and maximum are or, * and minimum are and (the
    // result of an i64 computation read as bool); - was refused above.
    if (op == BinaryOp::Add || op == BinaryOp::Mul || op == BinaryOp::Maximum ||
        op == BinaryOp::Minimum)
      return {DType::Bool, DType::I64};
    rt = DType::I64;
  }
  // Integer powers stay exact integers (wrapping as torch's); true division
  // and atan2 of integers are f32.
  if (is_integral(rt) && (op == BinaryOp::Div || op == BinaryOp::Atan2)) rt = DType::F32;
  return {rt, compute_type(rt)};
}

template <typename T>
void arith_kernel(BinaryOp op, Tensor& out, const Tensor& a, const Tensor& b, double alpha) {
  auto run = [&](auto f) { cpu::map2<T, T, T>(out, a, b, f); };
  constexpr bool kComplex = std::is_same_v<T, c64> || std::is_same_v<T, c128>;
  const T al = static_cast<T>(alpha);
  switch (op) {
    case BinaryOp::Add:
      if (alpha == 1.0) return run([](T x, T y) { return x + y; });
      return run([al](T x, T y) { return x + al * y; });
    case BinaryOp::Sub:
      if (alpha == 1.0) return run([](T x, T y) { return x - y; });
      return run([al](T x, T y) { return x - al * y; });
    case BinaryOp::Mul:
      return run([](T x, T y) { return x * y; });
    case BinaryOp::Div:
      return run([](T x, T y) { return x / y; });
    default:
      break;
  }
  if constexpr (std::is_integral_v<T>) {
    if (op == BinaryOp::Pow) return run([](T x, T y) { return unary_formulas::integer_pow(x, y); });
  }
  if constexpr (!kComplex) {
    switch (op) {
      case BinaryOp::Pow:
        return run([](T x, T y) { return static_cast<T>(std::pow(x, y)); });
      case BinaryOp::Maximum:
        return run([](T x, T y) { return (x != x || x > y) ? x : y; });  // NaN propagates
      case BinaryOp::Minimum:
        return run([](T x, T y) { return (x != x || x < y) ? x : y; });
      case BinaryOp::Atan2:
        return run([](T y, T x) { return static_cast<T>(std::atan2(y, x)); });
      default:
        break;
    }
  }
  cpu::unsupported(name(op), dtype_of<T>(), "a real dtype");
}

template <typename T>
void compare_kernel(BinaryOp op, Tensor& out, const Tensor& a, const Tensor& b) {
  auto run = [&](auto f) { cpu::map2<bool, T, T>(out, a, b, f); };
  switch (op) {
    case BinaryOp::Eq:
      return run([](T x, T y) { return x == y; });
    case BinaryOp::Ne:
      return run([](T x, T y) { return x != y; });
    default:
      break;
  }
  if constexpr (!std::is_same_v<T, c64> && !std::is_same_v<T, c128>) {
    switch (op) {
      case BinaryOp::Lt:
        return run([](T x, T y) { return x < y; });
      case BinaryOp::Le:
        return run([](T x, T y) { return x <= y; });
      case BinaryOp::Gt:
        return run([](T x, T y) { return x > y; });
      case BinaryOp::Ge:
        return run([](T x, T y) { return x >= y; });
      default:
        break;
    }
  }
  cpu::unsupported(name(op), dtype_of<T>(), "a real dtype");
}

struct BinaryBackward : autograd::Node {
  BinaryOp op;
  double alpha = 1.0;
  autograd::SavedTensor a, b, out;
  Dims a_shape, b_shape;
  DType a_dtype, b_dtype;

  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override {
    const char* n = name();
    BinaryGrads g =
        binary_backward(op, grads[0], a.unpack(n), b.unpack(n), out.unpack(n), {a_shape, a_dtype},
                        {b_shape, b_dtype}, next[0].fn != nullptr, next[1].fn != nullptr, alpha);
    return {g.a, g.b};
  }
  const char* name() const override { return "BinaryBackward"; }
  void for_each_saved(const std::function<void(autograd::SavedTensor&)>& fn) override {
    fn(a);
    fn(b);
    fn(out);
  }
};

Tensor scalar_for(const Tensor& t, double s) {
  DType dt = t.dtype();
  if (dt == DType::Bool) dt = DType::I64;
  // A whole value past i32's range widens an i32 tensor's result to i64
  // (exact); a fraction, an infinity, a NaN or a value past i64's makes an
  // integer tensor's result f32 (i32 + 1e10 wrapped to -2147483641).
  if (dt == DType::I32 && !integral_holds(dt, s) && integral_holds(DType::I64, s)) dt = DType::I64;
  if (is_integral(dt) && !integral_holds(dt, s)) dt = DType::F32;
  // The scalar as the dtype holds it (a value past f16's range is its
  // infinity, as torch's x * 1e5 gives): fill_ refuses such values.
  if (dt == DType::F32) s = static_cast<float>(s);
  if (dt == DType::F16) s = half_to_float(float_to_half(double_to_f32_odd(s)));
  if (dt == DType::BF16) s = bf16_to_float(float_to_bf16(double_to_f32_odd(s)));
  Tensor r = empty(Dims{}, {dt, t.device()});
  fill_(r, s);
  return r;
}

}  // namespace

Tensor scalar_like(const Tensor& t, double s) {
  return scalar_for(t, s);
}

Tensor binary_forward(BinaryOp op, const Tensor& a_given, const Tensor& b_given, double alpha) {
  profile::OpScope scope(name(op));
  check_same_device(a_given, b_given, name(op));
  auto [rt, ct] = result_types(op, a_given.dtype(), b_given.dtype());
  // An operand of another dtype meets a half one as the half nearest it, as
  // torch's (an integer 2049 is f16 2048): rounded to the common dtype before
  // the f32 computation, on every device and for comparisons too.
  const DType common = promote(a_given.dtype(), b_given.dtype());
  const auto rounded = [&](const Tensor& t) {
    return is_half(common) && t.dtype() != common ? t.to(common) : t;
  };
  const Tensor a_in = rounded(a_given), b_in = rounded(b_given);
  // alpha is cast to the computation's type: a fraction or a value past an
  // integer's range would be truncated or wrapped silently.
  FK_CHECK(alpha == 1.0 || !is_integral(ct) || integral_holds(ct, alpha), name(op),
           "an integer alpha (in range) for integer tensors", fmt::format("{}", alpha));
  // Two bools add as or: an alpha would make sub_ (add_ with alpha -1) an
  // exclusive or where - of two bools is refused.
  FK_CHECK(alpha == 1.0 || rt != DType::Bool, name(op), "alpha 1 for two bool tensors",
           fmt::format("{}", alpha));
  if (is_complex(ct)) {
    FK_CHECK(is_complex_op(op), name(op), "real operands", std::string(name(ct)) + " operands");
  }
  if (a_in.device().is_cuda()) {
    // The kernel computes f16/bf16 in f32 itself: operands go in the result dtype.
    // A bool result of arithmetic is computed in i64 and read as bool.
    DType kt = is_comparison(op) || rt == DType::Bool ? ct : rt;
    Tensor a = a_in.dtype() == kt ? a_in : a_in.to(kt);
    Tensor b = b_in.dtype() == kt ? b_in : b_in.to(kt);
    Dims shape = broadcast_shapes(a.shape(), b.shape(), name(op));
    Tensor out = empty(shape, {is_comparison(op) ? DType::Bool : kt, a.device()});
    Dims as = cuda_ops::broadcast_strides(a, shape), bs = cuda_ops::broadcast_strides(b, shape);
    cuda::launch_binary(static_cast<int>(op), static_cast<int>(kt), a.data_ptr(), b.data_ptr(),
                        out.data_ptr(), shape.size(), shape.data(), as.data(), bs.data(),
                        out.strides().data(), alpha, 0.0, cuda_ops::stream_of(a));
    cuda_ops::launched(a);
    return out.dtype() == rt || is_comparison(op) ? out : out.to(rt);
  }
  Tensor a = a_in.dtype() == ct ? a_in : a_in.to(ct);
  Tensor b = b_in.dtype() == ct ? b_in : b_in.to(ct);
  const Dims& shape =
      a.shape() == b.shape() ? a.shape() : broadcast_shapes(a.shape(), b.shape(), name(op));
  Tensor out = empty(shape, {is_comparison(op) ? DType::Bool : ct, a.device()});
  if (is_comparison(op)) {
    cpu::visit_numeric(ct, name(op), [&](auto tag) {
      compare_kernel<typename decltype(tag)::type>(op, out, a, b);
    });
    return out;
  }
  cpu::visit_numeric(ct, name(op), [&](auto tag) {
    arith_kernel<typename decltype(tag)::type>(op, out, a, b, alpha);
  });
  return out.dtype() == rt ? out : out.to(rt);
}

BinaryGrads binary_backward(BinaryOp op, const Tensor& g, const Tensor& a, const Tensor& b,
                            const Tensor& out, const OperandInfo& a_info, const OperandInfo& b_info,
                            bool need_a, bool need_b, double alpha) {
  Tensor ga, gb;
  switch (op) {
    case BinaryOp::Add:
    case BinaryOp::Sub: {
      if (need_a) ga = g;
      double s = op == BinaryOp::Sub ? -alpha : alpha;
      if (need_b) gb = s == 1.0 ? g : mul(g, s);
      break;
    }
    case BinaryOp::Mul: {
      const Tensor& x = a;
      const Tensor& y = b;
      if (need_a) ga = mul(g, conj_if_complex(y));
      if (need_b) gb = mul(g, conj_if_complex(x));
      break;
    }
    case BinaryOp::Div: {
      const Tensor& y = b;
      Tensor q = div(g, conj_if_complex(y));
      if (need_a) ga = q;
      // -g (a / b) / b, not -(g / b)(a / b): g / b overflows to inf for a
      // tiny b, and inf * 0 (a = 0) read NaN where the slope is 0.
      if (need_b) gb = neg(mul(g, conj_if_complex(div(div(a, y), y))));
      break;
    }
    case BinaryOp::Pow: {
      const Tensor& x = a;
      const Tensor& y = b;
      // At a base of 0 the formulas read 0 * inf (NaN): an exponent of 0
      // has no slope in the base (x^0 = 1 everywhere), and a base of 0 none
      // in the exponent (0^y is 0 or 1 whatever y >= 0), as torch has them.
      const Tensor zero = scalar_like(x, 0.0);
      if (need_a) ga = mul(g, where(eq(y, zero), zero, mul(y, pow(x, sub(y, 1.0)))));
      if (need_b)  // a negative exponent at 0 keeps inf * log(0) = -inf, as torch
        gb = mul(g,
                 mul(out, log(where(eq(x, zero), where(ge(y, zero), scalar_like(x, 1.0), x), x))));
      break;
    }
    case BinaryOp::Maximum:
    case BinaryOp::Minimum: {
      const Tensor& x = a;
      const Tensor& y = b;
      // Ties split the gradient evenly; a side loses it only where the other
      // side wins, so a NaN on either side (no order) sends it to both, as
      // torch does.
      const bool max = op == BinaryOp::Maximum;
      const Tensor half = scalar_like(g, 0.5), zero = scalar_like(g, 0.0);
      const Tensor tie = eq(x, y);
      if (need_a) ga = where(tie, mul(g, half), where(max ? lt(x, y) : gt(x, y), zero, g));
      if (need_b) gb = where(tie, mul(g, half), where(max ? gt(x, y) : lt(x, y), zero, g));
      break;
    }
    case BinaryOp::Atan2: {
      const Tensor& y = a;
      const Tensor& x = b;
      Tensor r = div(g, add(mul(x, x), mul(y, y)));
      if (need_a) ga = mul(r, x);
      if (need_b) gb = neg(mul(r, y));
      break;
    }
    default:
      break;  // comparisons have no gradient
  }
  return {ga.defined() ? grad_for(ga, a_info) : Tensor(),
          gb.defined() ? grad_for(gb, b_info) : Tensor()};
}

Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b, double alpha) {
  Tensor out = binary_forward(op, a, b, alpha);
  if (!is_comparison(op) && autograd::needs_grad(a, b)) {
    auto node = std::make_shared<BinaryBackward>();
    node->op = op;
    node->alpha = alpha;
    bool need_a = autograd::tensor_requires_grad(a), need_b = autograd::tensor_requires_grad(b);
    switch (op) {
      case BinaryOp::Add:
      case BinaryOp::Sub:
        break;
      case BinaryOp::Mul:
        if (need_a) node->b = b;
        if (need_b) node->a = a;
        break;
      case BinaryOp::Div:
        node->b = b;
        if (need_b) node->a = a;
        break;
      case BinaryOp::Pow:
        node->a = a;
        node->b = b;
        if (need_b) node->out = out.detach();
        break;
      default:
        node->a = a;
        node->b = b;
    }
    node->a_shape = a.shape();
    node->b_shape = b.shape();
    node->a_dtype = a.dtype();
    node->b_dtype = b.dtype();
    autograd::record(node, {a, b}, out);
  }
  return out;
}

Tensor add(const Tensor& a, double s) {
  return add(a, scalar_for(a, s));
}
Tensor sub(const Tensor& a, double s) {
  return sub(a, scalar_for(a, s));
}
Tensor mul(const Tensor& a, double s) {
  return mul(a, scalar_for(a, s));
}
Tensor div(const Tensor& a, double s) {
  return div(a, scalar_for(a, s));
}
Tensor operator-(const Tensor& a) {
  return neg(a);
}

}  // namespace fk
