#include "fk/ops/binary/inplace.h"

#include <fmt/format.h>

#include <initializer_list>
#include <string>
#include <vector>

#include "fk/autograd.h"
#include "fk/ops/binary/binary.h"
#include "fk/ops/binary/ternary.h"
#include "fk/ops/copy.h"
#include "fk/ops/cpu/dispatch.h"
#include "fk/ops/cpu/loops.h"
#include "fk/profile.h"

namespace fk {
namespace {

// An in-place op writes self without recording a node, so under grad mode no
// operand may need a gradient: self's history would go stale, and another
// operand's gradient would silently be dropped. Under no_grad anything goes.
// Self's elements must be distinct memory whatever the grad mode.
void check_inplace(const char* op, std::initializer_list<const Tensor*> operands) {
  const Tensor& self = **operands.begin();
  FK_CHECK(!repeats_elements(self), op,
           "a self whose elements are distinct memory (clone() an expanded tensor before "
           "writing to it)",
           "shape " + self.shape().str() + " with strides " + self.strides().str());
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
  FK_CHECK(can_write_into(self.dtype(), result.dtype()), op,
           std::string("a result castable to self's dtype ") + name(self.dtype()),
           name(result.dtype()));
  autograd::NoGradGuard ng;
  self.copy_(result);
  return self;
}

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
  FK_CHECK(self.dtype() != DType::Bool && other.dtype() != DType::Bool, "sub_",
           "numeric operands (- of a bool tensor is undefined: logical_not inverts a mask)",
           std::string(name(self.dtype())) + " - " + name(other.dtype()));
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
  return mul_(self, scalar_like(self, s));
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
// A scalar weight is a constant of the loop rather than a splatted operand:
// the same arithmetic (w rounded to self's dtype first), one stream fewer.
Tensor& lerp_(Tensor& self, const Tensor& end, double w) {
  check_inplace("lerp_", {&self, &end});
  profile::OpScope scope("lerp_");
  if (fused_inplace(self, {&end}, [&](auto z) {
        using T = decltype(z);
        const T t = static_cast<T>(w);
        cpu::map2<T, T, T>(self, self, end, [t](T a, T b) { return a + t * (b - a); });
      })) {
    return self;
  }
  return assign(self,
                ternary_forward(TernaryOp::Lerp, self, end, scalar_like(self, w), 0.0, "lerp_"),
                "lerp_");
}

}  // namespace fk
