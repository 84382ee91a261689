#include "fk/ops/binary/ternary.h"

#include <bit>
#include <cstdint>
#include <type_traits>

#include "fk/autograd.h"
#include "fk/cuda/kernels.h"
#include "fk/factory.h"
#include "fk/ops/binary/operands.h"
#include "fk/ops/cpu/dispatch.h"
#include "fk/ops/cpu/loops.h"
#include "fk/ops/cuda_dispatch.h"
#include "fk/ops/integral_holds.h"
#include "fk/ops/unary.h"
#include "fk/profile.h"

namespace fk {
namespace {

using detail::check_same_device;
using detail::conj_if_complex;
using detail::grad_for;

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

}  // namespace

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
  // addcmul of integers by a whole value stays integral and exact, as torch's
  // (it went through f32: 2^40 + 1 lost its 1), a whole-valued scalar
  // keeping an integer tensor's dtype as in binary ops; a fraction, a divide
  // (addcdiv) or a weight (lerp) computes in f32.
  if (op == TernaryOp::Addcmul && (rt == DType::I32 || rt == DType::I64) &&
      integral_holds(rt, value))
    return binary_forward(BinaryOp::Add, x_in.to(rt),
                          binary_forward(BinaryOp::Mul, y_in.to(rt), z_in.to(rt)), value);
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

std::array<Tensor, 3> ternary_backward(TernaryOp op, const Tensor& g, const Tensor& x,
                                       const Tensor& y, const Tensor& z,
                                       const std::array<OperandInfo, 3>& info,
                                       const std::array<bool, 3>& need, double value) {
  Tensor out[3];
  switch (op) {
    case TernaryOp::Where: {
      const Tensor& c = x;
      Tensor zero = scalar_like(g, 0.0);
      if (need[1]) out[1] = where(c, g, zero);
      if (need[2]) out[2] = where(c, zero, g);
      break;
    }
    case TernaryOp::Addcmul:
      if (need[0]) out[0] = g;
      if (need[1]) out[1] = mul(mul(g, conj_if_complex(z)), value);
      if (need[2]) out[2] = mul(mul(g, conj_if_complex(y)), value);
      break;
    case TernaryOp::Addcdiv: {
      const Tensor& b = z;
      if (need[0]) out[0] = g;
      Tensor q = mul(div(g, conj_if_complex(b)), value);
      if (need[1]) out[1] = q;
      if (need[2]) out[2] = neg(mul(q, conj_if_complex(div(y, b))));
      break;
    }
    case TernaryOp::Lerp: {
      const Tensor& w = z;
      if (need[0]) out[0] = mul(g, conj_if_complex(sub(scalar_like(w, 1.0), w)));
      if (need[1]) out[1] = mul(g, conj_if_complex(w));
      if (need[2]) out[2] = mul(g, conj_if_complex(sub(y, x)));
      break;
    }
  }
  std::array<Tensor, 3> r;
  for (int i = 0; i < 3; ++i) {
    if (out[i].defined()) r[i] = grad_for(out[i], info[i]);
  }
  return r;
}

namespace {

struct TernaryBackward : autograd::Node {
  TernaryOp op;
  double value = 1.0;
  autograd::SavedTensor x, y, z;
  OperandInfo info[3];
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override {
    const char* n = name();
    std::array<Tensor, 3> g = ternary_backward(
        op, grads[0], x.unpack(n), y.unpack(n), z.unpack(n), {info[0], info[1], info[2]},
        {next[0].fn != nullptr, next[1].fn != nullptr, next[2].fn != nullptr}, value);
    return {g[0], g[1], g[2]};
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
    for (int i = 0; i < 3; ++i) node->info[i] = {in[i]->shape(), in[i]->dtype()};
    autograd::record(node, {x, y, z}, out);
  }
  return out;
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
  return lerp(a, b, scalar_like(a, w));
}

}  // namespace fk
