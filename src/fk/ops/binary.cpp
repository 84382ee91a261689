#include "fk/ops/binary.h"

#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <type_traits>

#include "fk/autograd.h"
#include "fk/cuda/kernels.h"
#include "fk/factory.h"
#include "fk/ops/copy.h"
#include "fk/ops/cpu/dispatch.h"
#include "fk/ops/cpu/loops.h"
#include "fk/ops/cuda_dispatch.h"
#include "fk/ops/unary.h"
#include "fk/ops/view.h"
#include "fk/profile.h"

namespace fk {

const char* name(BinaryOp op) {
  static const char* names[] = {"add",   "sub", "mul", "div", "pow", "maximum", "minimum",
                                "atan2", "eq",  "ne",  "lt",  "le",  "gt",      "ge"};
  return names[static_cast<int>(op)];
}

namespace {

bool is_comparison(BinaryOp op) {
  return op >= BinaryOp::Eq;
}
bool is_complex_op(BinaryOp op) {
  return op == BinaryOp::Add || op == BinaryOp::Sub || op == BinaryOp::Mul || op == BinaryOp::Div ||
         op == BinaryOp::Eq || op == BinaryOp::Ne;
}

void check_same_device(const Tensor& a, const Tensor& b, const char* op) {
  FK_CHECK(a.device() == b.device(), op, "operands on one device",
           a.device().str() + " and " + b.device().str());
}

// The dtype of `a op b` and the dtype it is computed in.
std::pair<DType, DType> result_types(BinaryOp op, DType a, DType b) {
  DType rt = promote(a, b);
  if (is_comparison(op)) {
    DType ct = rt == DType::Bool ? DType::I32 : compute_type(rt);
    return {DType::Bool, ct};
  }
  if (rt == DType::Bool) rt = DType::I64;
  if (is_integral(rt) && (op == BinaryOp::Div || op == BinaryOp::Pow || op == BinaryOp::Atan2)) {
    rt = DType::F32;
  }
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

// Reduces a gradient to an input's shape and dtype (real part for real inputs).
Tensor grad_for(const Tensor& g, const Dims& shape, DType dtype) {
  Tensor r = autograd::sum_to(g, shape);
  if (is_complex(r.dtype()) && !is_complex(dtype)) r = real(r);
  return r.dtype() == dtype ? r : r.to(dtype);
}

struct BinaryBackward : autograd::Node {
  BinaryOp op;
  double alpha = 1.0;
  autograd::SavedTensor a, b, out;
  Dims a_shape, b_shape;
  DType a_dtype, b_dtype;

  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override {
    const Tensor& g = grads[0];
    bool need_a = next[0].fn != nullptr, need_b = next[1].fn != nullptr;
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
        const Tensor& x = a.unpack(name());
        const Tensor& y = b.unpack(name());
        if (need_a) ga = mul(g, conj(y));
        if (need_b) gb = mul(g, conj(x));
        break;
      }
      case BinaryOp::Div: {
        const Tensor& y = b.unpack(name());
        Tensor q = div(g, conj(y));
        if (need_a) ga = q;
        if (need_b) gb = neg(mul(q, conj(div(a.unpack(name()), y))));
        break;
      }
      case BinaryOp::Pow: {
        const Tensor& x = a.unpack(name());
        const Tensor& y = b.unpack(name());
        if (need_a) ga = mul(g, mul(y, pow(x, sub(y, 1.0))));
        if (need_b) gb = mul(g, mul(out.unpack(name()), log(x)));
        break;
      }
      case BinaryOp::Maximum:
      case BinaryOp::Minimum: {
        const Tensor& x = a.unpack(name());
        const Tensor& y = b.unpack(name());
        // Ties split the gradient evenly.
        Tensor wa = where(op == BinaryOp::Maximum ? gt(x, y) : lt(x, y), scalar_like(g, 1.0),
                          where(eq(x, y), scalar_like(g, 0.5), scalar_like(g, 0.0)));
        if (need_a) ga = mul(g, wa);
        if (need_b) gb = mul(g, sub(scalar_like(g, 1.0), wa));
        break;
      }
      case BinaryOp::Atan2: {
        const Tensor& y = a.unpack(name());
        const Tensor& x = b.unpack(name());
        Tensor r = div(g, add(mul(x, x), mul(y, y)));
        if (need_a) ga = mul(r, x);
        if (need_b) gb = neg(mul(r, y));
        break;
      }
      default:
        break;  // comparisons have no gradient
    }
    return {ga.defined() ? grad_for(ga, a_shape, a_dtype) : Tensor(),
            gb.defined() ? grad_for(gb, b_shape, b_dtype) : Tensor()};
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
  if (is_integral(dt) && s != std::floor(s)) dt = DType::F32;
  if (dt == DType::Bool) dt = DType::I64;
  Tensor r = empty(Dims{}, {dt, t.device()});
  fill_(r, s);
  return r;
}

}  // namespace

Tensor scalar_like(const Tensor& t, double s) {
  return scalar_for(t, s);
}

Tensor binary_forward(BinaryOp op, const Tensor& a_in, const Tensor& b_in, double alpha) {
  profile::OpScope scope(name(op));
  check_same_device(a_in, b_in, name(op));
  auto [rt, ct] = result_types(op, a_in.dtype(), b_in.dtype());
  if (is_complex(ct)) {
    FK_CHECK(is_complex_op(op), name(op), "real operands", std::string(name(ct)) + " operands");
  }
  if (a_in.device().is_cuda()) {
    // The kernel computes f16/bf16 in f32 itself: operands go in the result dtype.
    DType kt = is_comparison(op) ? ct : rt;
    Tensor a = a_in.dtype() == kt ? a_in : a_in.to(kt);
    Tensor b = b_in.dtype() == kt ? b_in : b_in.to(kt);
    Dims shape = broadcast_shapes(a.shape(), b.shape(), name(op));
    Tensor out = empty(shape, {is_comparison(op) ? DType::Bool : rt, a.device()});
    Dims as = cuda_ops::broadcast_strides(a, shape), bs = cuda_ops::broadcast_strides(b, shape);
    cuda::launch_binary(static_cast<int>(op), static_cast<int>(kt), a.data_ptr(), b.data_ptr(),
                        out.data_ptr(), shape.size(), shape.data(), as.data(), bs.data(),
                        out.strides().data(), alpha, 0.0, cuda_ops::stream_of(a));
    cuda_ops::launched(a);
    return out;
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

// --- ternary ----------------------------------------------------------------

namespace {

enum class TernaryOp { Where, Addcmul, Addcdiv, Lerp };

// c ? a : b without a branch: a random mask mispredicts half its branches
// (where() ran at ~6 ns per element, as slow as glibc's expf); a bit blend
// vectorises. Bit-exact: it moves a's or b's bits unchanged.
template <typename T>
T select(uint8_t c, T a, T b) {  // c: a bool's byte (any nonzero byte is true)
  if constexpr (std::is_arithmetic_v<T> && (sizeof(T) == 1 || sizeof(T) == 4 || sizeof(T) == 8)) {
    using U = std::conditional_t<sizeof(T) == 1, uint8_t,
                                 std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>;
    const U m = static_cast<U>(U(0) - static_cast<U>(c != 0));
    return std::bit_cast<T>(
        static_cast<U>((std::bit_cast<U>(a) & m) | (std::bit_cast<U>(b) & static_cast<U>(~m))));
  } else {
    return c ? a : b;
  }
}

Tensor ternary_forward(TernaryOp op, const Tensor& x_in, const Tensor& y_in, const Tensor& z_in,
                       double value, const char* op_name) {
  profile::OpScope scope(op_name);
  check_same_device(x_in, y_in, op_name);
  check_same_device(x_in, z_in, op_name);
  Dims shape = broadcast_shapes(broadcast_shapes(x_in.shape(), y_in.shape(), op_name), z_in.shape(),
                                op_name);
  if (op == TernaryOp::Where) {
    FK_CHECK(x_in.dtype() == DType::Bool, "where", "a bool condition", name(x_in.dtype()));
    DType rt = promote(y_in.dtype(), z_in.dtype());
    if (x_in.device().is_cuda()) {
      Tensor y = y_in.to(rt), z = z_in.to(rt);
      Tensor out = empty(shape, {rt, x_in.device()});
      Dims cs = cuda_ops::broadcast_strides(x_in, shape),
           ys = cuda_ops::broadcast_strides(y, shape), zs = cuda_ops::broadcast_strides(z, shape);
      cuda::launch_where(static_cast<int>(rt), x_in.data_ptr(), y.data_ptr(), z.data_ptr(),
                         out.data_ptr(), shape.size(), shape.data(), cs.data(), ys.data(),
                         zs.data(), cuda_ops::stream_of(out));
      cuda_ops::launched(out);
      return out;
    }
    DType ct = compute_type(rt);
    Tensor y = y_in.to(ct), z = z_in.to(ct);
    Tensor out = empty(shape, {ct, x_in.device()});
    cpu::visit_stored(ct, "where", [&](auto tag) {
      using T = typename decltype(tag)::type;
      // The condition read as bytes: GCC does not vectorise loads of bool.
      static_assert(sizeof(bool) == 1);
      cpu::map3<T, uint8_t, T, T>(out, x_in, y, z,
                                  [](uint8_t c, T a, T b) { return select(c, a, b); });
    });
    return out.dtype() == rt ? out : out.to(rt);
  }
  DType rt = promote(promote(x_in.dtype(), y_in.dtype()), z_in.dtype());
  if (is_integral(rt)) rt = DType::F32;
  if (x_in.device().is_cuda()) {  // composed from binary kernels until a fused one exists
    Tensor x = x_in.to(rt), y = y_in.to(rt), z = z_in.to(rt);
    switch (op) {
      case TernaryOp::Addcmul:
        return binary_forward(BinaryOp::Add, x, binary_forward(BinaryOp::Mul, y, z), value);
      case TernaryOp::Addcdiv:
        return binary_forward(BinaryOp::Add, x, binary_forward(BinaryOp::Div, y, z), value);
      default:
        return binary_forward(
            BinaryOp::Add, x,
            binary_forward(BinaryOp::Mul, z, binary_forward(BinaryOp::Sub, y, x)));
    }
  }
  DType ct = compute_type(rt);
  Tensor x = x_in.to(ct), y = y_in.to(ct), z = z_in.to(ct);
  Tensor out = empty(shape, {ct, x.device()});
  cpu::visit_inexact(ct, op_name, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T v = static_cast<T>(value);
    switch (op) {
      case TernaryOp::Addcmul:
        cpu::map3<T, T, T, T>(out, x, y, z, [v](T s, T a, T b) { return s + v * a * b; });
        break;
      case TernaryOp::Addcdiv:
        cpu::map3<T, T, T, T>(out, x, y, z, [v](T s, T a, T b) { return s + v * a / b; });
        break;
      default:
        cpu::map3<T, T, T, T>(out, x, y, z, [](T a, T b, T w) { return a + w * (b - a); });
    }
  });
  return out.dtype() == rt ? out : out.to(rt);
}

struct TernaryBackward : autograd::Node {
  TernaryOp op;
  double value = 1.0;
  autograd::SavedTensor x, y, z;
  Dims shapes[3];
  DType dtypes[3];
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override {
    const Tensor& g = grads[0];
    Tensor out[3];
    const char* n = name();
    switch (op) {
      case TernaryOp::Where: {
        const Tensor& c = x.unpack(n);
        Tensor zero = scalar_like(g, 0.0);
        if (next[1].fn) out[1] = where(c, g, zero);
        if (next[2].fn) out[2] = where(c, zero, g);
        break;
      }
      case TernaryOp::Addcmul:
        if (next[0].fn) out[0] = g;
        if (next[1].fn) out[1] = mul(mul(g, conj(z.unpack(n))), value);
        if (next[2].fn) out[2] = mul(mul(g, conj(y.unpack(n))), value);
        break;
      case TernaryOp::Addcdiv: {
        const Tensor& b = z.unpack(n);
        if (next[0].fn) out[0] = g;
        Tensor q = mul(div(g, conj(b)), value);
        if (next[1].fn) out[1] = q;
        if (next[2].fn) out[2] = neg(mul(q, conj(div(y.unpack(n), b))));
        break;
      }
      case TernaryOp::Lerp: {
        const Tensor& w = z.unpack(n);
        if (next[0].fn) out[0] = mul(g, conj(sub(scalar_like(w, 1.0), w)));
        if (next[1].fn) out[1] = mul(g, conj(w));
        if (next[2].fn) out[2] = mul(g, conj(sub(y.unpack(n), x.unpack(n))));
        break;
      }
    }
    std::vector<Tensor> r(3);
    for (int i = 0; i < 3; ++i) {
      if (out[i].defined()) r[i] = grad_for(out[i], shapes[i], dtypes[i]);
    }
    return r;
  }
  const char* name() const override { return "TernaryBackward"; }
  void for_each_saved(const std::function<void(autograd::SavedTensor&)>& fn) override {
    fn(x);
    fn(y);
    fn(z);
  }
};

Tensor ternary(TernaryOp op, const Tensor& x, const Tensor& y, const Tensor& z, double value,
               const char* op_name) {
  Tensor out = ternary_forward(op, x, y, z, value, op_name);
  if (autograd::needs_grad(x, y, z)) {
    auto node = std::make_shared<TernaryBackward>();
    node->op = op;
    node->value = value;
    bool gx = autograd::tensor_requires_grad(x), gy = autograd::tensor_requires_grad(y),
         gz = autograd::tensor_requires_grad(z);
    switch (op) {
      case TernaryOp::Where:
        node->x = x;
        break;
      case TernaryOp::Addcmul:
        if (gy) node->z = z;
        if (gz) node->y = y;
        break;
      case TernaryOp::Addcdiv:
        node->z = z;
        if (gz) node->y = y;
        break;
      case TernaryOp::Lerp:
        if (gx || gy) node->z = z;
        if (gz) {
          node->x = x;
          node->y = y;
        }
        break;
    }
    const Tensor* in[3] = {&x, &y, &z};
    for (int i = 0; i < 3; ++i) {
      node->shapes[i] = in[i]->shape();
      node->dtypes[i] = in[i]->dtype();
    }
    autograd::record(node, {x, y, z}, out);
  }
  return out;
}

// An in-place op writes self without recording a node, so under grad mode no
// operand may need a gradient: self's history would go stale, and another
// operand's gradient would silently be dropped. Under no_grad anything goes.
void check_inplace(const char* op, std::initializer_list<const Tensor*> operands) {
  if (!autograd::grad_enabled()) return;
  int i = 0;
  for (const Tensor* t : operands) {
    FK_CHECK(
        !autograd::tensor_requires_grad(*t), op,
        "operands that do not require grad, or grad mode off (in-place ops are not "
        "recorded by autograd; use the out-of-place op)",
        i == 0 ? std::string("self requiring grad") : fmt::format("operand {} requiring grad", i));
    ++i;
  }
}

// Writes `result` into self (same shape required), bumping self's version.
Tensor& assign(Tensor& self, const Tensor& result, const char* op) {
  FK_CHECK(result.shape() == self.shape(), op,
           "operands broadcasting to self's shape " + self.shape().str(), result.shape().str());
  FK_CHECK(promote(self.dtype(), result.dtype()) == self.dtype() || is_half(self.dtype()), op,
           std::string("a result castable to self's dtype ") + name(self.dtype()),
           name(result.dtype()));
  autograd::NoGradGuard ng;
  self.copy_(result);
  return self;
}

}  // namespace

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  return ternary(TernaryOp::Where, cond, a, b, 0.0, "where");
}
Tensor addcmul(const Tensor& s, const Tensor& t1, const Tensor& t2, double v) {
  return ternary(TernaryOp::Addcmul, s, t1, t2, v, "addcmul");
}
Tensor addcdiv(const Tensor& s, const Tensor& t1, const Tensor& t2, double v) {
  return ternary(TernaryOp::Addcdiv, s, t1, t2, v, "addcdiv");
}
Tensor lerp(const Tensor& a, const Tensor& b, const Tensor& w) {
  return ternary(TernaryOp::Lerp, a, b, w, 0.0, "lerp");
}
Tensor lerp(const Tensor& a, const Tensor& b, double w) {
  return lerp(a, b, scalar_for(a, w));
}

// In-place forms. Same-dtype float operands run one fused kernel writing self;
// anything else computes out of place and copies back.
namespace {
// The fused kernel reads each operand element as it writes self's: an operand
// overlapping self in another layout (a shifted view), or a self whose
// elements share memory (an expanded view), takes the out-of-place path, whose
// copy_ reads the operand as it was and refuses such a self.
template <typename F>
bool fused_inplace(Tensor& self, const std::vector<const Tensor*>& others, const F& kernel) {
  if (!(self.dtype() == DType::F32 || self.dtype() == DType::F64)) return false;
  if (repeats_elements(self)) return false;
  for (auto* o : others) {
    if (o->dtype() != self.dtype() || o->device() != self.device()) return false;
    if (broadcast_shapes(self.shape(), o->shape(), "in-place op") != self.shape()) return false;
    if (overlaps(self, *o) && !same_view(self, *o)) return false;
  }
  if (!self.device().is_cpu()) return false;
  self.bump_version();
  cpu::visit_float(self.dtype(), "in-place op",
                   [&](auto tag) { kernel(typename decltype(tag)::type{}); });
  return true;
}
}  // namespace

Tensor& add_(Tensor& self, const Tensor& other, double alpha) {
  check_inplace("add_", {&self, &other});
  profile::OpScope scope("add_");
  if (fused_inplace(self, {&other}, [&](auto z) {
        using T = decltype(z);
        const T al = static_cast<T>(alpha);
        cpu::map2<T, T, T>(self, self, other, [al](T x, T y) { return x + al * y; });
      })) {
    return self;
  }
  return assign(self, binary_forward(BinaryOp::Add, self, other, alpha), "add_");
}
Tensor& sub_(Tensor& self, const Tensor& other, double alpha) {
  check_inplace("sub_", {&self, &other});
  return add_(self, other, -alpha);
}
Tensor& mul_(Tensor& self, const Tensor& other) {
  check_inplace("mul_", {&self, &other});
  profile::OpScope scope("mul_");
  if (fused_inplace(self, {&other}, [&](auto z) {
        using T = decltype(z);
        cpu::map2<T, T, T>(self, self, other, [](T x, T y) { return x * y; });
      })) {
    return self;
  }
  return assign(self, binary_forward(BinaryOp::Mul, self, other), "mul_");
}
Tensor& div_(Tensor& self, const Tensor& other) {
  check_inplace("div_", {&self, &other});
  profile::OpScope scope("div_");
  if (fused_inplace(self, {&other}, [&](auto z) {
        using T = decltype(z);
        cpu::map2<T, T, T>(self, self, other, [](T x, T y) { return x / y; });
      })) {
    return self;
  }
  return assign(self, binary_forward(BinaryOp::Div, self, other), "div_");
}
Tensor& mul_(Tensor& self, double s) {
  return mul_(self, scalar_for(self, s));
}
Tensor& addcmul_(Tensor& self, const Tensor& t1, const Tensor& t2, double value) {
  check_inplace("addcmul_", {&self, &t1, &t2});
  profile::OpScope scope("addcmul_");
  if (fused_inplace(self, {&t1, &t2}, [&](auto z) {
        using T = decltype(z);
        const T v = static_cast<T>(value);
        cpu::map3<T, T, T, T>(self, self, t1, t2, [v](T s, T a, T b) { return s + v * a * b; });
      })) {
    return self;
  }
  return assign(self, ternary_forward(TernaryOp::Addcmul, self, t1, t2, value, "addcmul_"),
                "addcmul_");
}
Tensor& addcdiv_(Tensor& self, const Tensor& t1, const Tensor& t2, double value) {
  check_inplace("addcdiv_", {&self, &t1, &t2});
  profile::OpScope scope("addcdiv_");
  if (fused_inplace(self, {&t1, &t2}, [&](auto z) {
        using T = decltype(z);
        const T v = static_cast<T>(value);
        cpu::map3<T, T, T, T>(self, self, t1, t2, [v](T s, T a, T b) { return s + v * a / b; });
      })) {
    return self;
  }
  return assign(self, ternary_forward(TernaryOp::Addcdiv, self, t1, t2, value, "addcdiv_"),
                "addcdiv_");
}
Tensor& lerp_(Tensor& self, const Tensor& end, const Tensor& w) {
  check_inplace("lerp_", {&self, &end, &w});
  profile::OpScope scope("lerp_");
  if (fused_inplace(self, {&end, &w}, [&](auto z) {
        using T = decltype(z);
        cpu::map3<T, T, T, T>(self, self, end, w, [](T a, T b, T t) { return a + t * (b - a); });
      })) {
    return self;
  }
  return assign(self, ternary_forward(TernaryOp::Lerp, self, end, w, 0.0, "lerp_"), "lerp_");
}
Tensor& lerp_(Tensor& self, const Tensor& end, double w) {
  return lerp_(self, end, scalar_for(self, w));
}

}  // namespace fk
