#include "fk/ops/binary/inplace.h"

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "../../test_util.h"
#include "../backward_check.h"

namespace fk {
namespace {

using Fn = testing::TensorFn;

TEST(InPlace, MatchOutOfPlaceAndBumpVersion) {
  Tensor s = test::random_tensor({2, 3}, DType::F32, -1, 1, 1);
  Tensor x = test::random_tensor({3}, DType::F32, 0.5, 2, 2);
  Tensor y = test::random_tensor({2, 1}, DType::F32, 0.5, 2, 3);
  auto check = [&](auto inplace, Tensor expected) {
    Tensor t = s.clone();
    uint32_t v = t.version();
    inplace(t);
    EXPECT_GT(t.version(), v);
    EXPECT_EQ(t.to_vector<float>(), expected.to_vector<float>());
  };
  check([&](Tensor& t) { add_(t, x, 2.0); }, add(s, x, 2.0));
  check([&](Tensor& t) { sub_(t, x); }, sub(s, x));
  check([&](Tensor& t) { mul_(t, y); }, mul(s, y));
  check([&](Tensor& t) { div_(t, y); }, div(s, y));
  check([&](Tensor& t) { addcmul_(t, x, y, 0.3); }, addcmul(s, x, y, 0.3));
  check([&](Tensor& t) { addcdiv_(t, x, y, 0.3); }, addcdiv(s, x, y, 0.3));
  check([&](Tensor& t) { lerp_(t, x, 0.25); }, lerp(s, x, 0.25));
  // Half self: computed in f32, stored back.
  Tensor h = s.to(DType::F16);
  add_(h, x);
  EXPECT_EQ(h.dtype(), DType::F16);
  // Shapes that would grow self are refused.
  Tensor small = ones({3});
  EXPECT_THROW(add_(small, ones({2, 3})), Error);
  Tensor i = ones({3}, {DType::I32});
  EXPECT_THROW(add_(i, full({3}, 0.5)), Error);
}

// A result is written into a self of a higher kind (bool < integer < floating <
// complex), or of its own kind at any width where that kind rounds (floating,
// complex; as torch's can_cast): f32 and f16 selves follow one rule (f32 refused
// an f64 operand while f16 took a complex one). An integer self takes no wider
// integer (i32 * 3e9 computes in i64, and would wrap when written back).
TEST(InPlace, SelfTakesResultsOfItsKindOrALowerOneAtAnyWidth) {
  Tensor f = ones({3}, {DType::F32});
  add_(f, full({3}, 0.5, {DType::F64}));
  test::expect_close(f, {1.5, 1.5, 1.5}, 0.0);
  EXPECT_EQ(f.dtype(), DType::F32);
  Tensor h = ones({3}, {DType::F16});
  mul_(h, full({3}, 3.0, {DType::F64}));
  test::expect_close(h, {3, 3, 3}, 0.0);
  Tensor i = ones({3}, {DType::I64});
  add_(i, full({3}, 2.0, {DType::I32}));
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{3, 3, 3}));
  Tensor narrow = ones({3}, {DType::I32});
  EXPECT_THROW(add_(narrow, full({3}, 2.0, {DType::I64})), Error);
  EXPECT_THROW(mul_(narrow, 3e9), Error);
  EXPECT_EQ(narrow.to_vector<int32_t>(), (std::vector<int32_t>{1, 1, 1}));
  // scatter_add_ and index_add_ follow the same rule.
  Tensor f32 = zeros({3}, {DType::F32});
  index_add_(f32, 0, from_vector(std::vector<int64_t>{1}), full({1}, 0.5, {DType::F64}));
  scatter_add_(f32, 0, from_vector(std::vector<int64_t>{2}), full({1}, 0.25, {DType::F64}));
  test::expect_close(f32, {0, 0.5, 0.25}, 0.0);
  Tensor f16 = zeros({3}, {DType::F16});
  EXPECT_THROW(index_add_(f16, 0, from_vector(std::vector<int64_t>{1}), test::random_complex({1})),
               Error);
  Tensor c = test::random_complex({3}).to(DType::C64);
  add_(c, full({3}, 1.0, {DType::F64}));
  EXPECT_EQ(c.dtype(), DType::C64);
  for (DType self : {DType::F16, DType::BF16, DType::F32, DType::F64}) {
    Tensor t = ones({3}, {self});
    try {
      add_(t, test::random_complex({3}));
      ADD_FAILURE() << name(self) << ": no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("castable to self's dtype"), std::string::npos)
          << e.what();
    }
  }
  Tensor b = ones({3}, {DType::Bool});
  EXPECT_THROW(add_(b, ones({3}, {DType::I32})), Error);
}

// In-place ops record no node, so under grad mode every operand (not only
// self) that requires grad is refused before self is written; under no_grad
// they run and match the out-of-place op.
// An expanded self repeats elements: every in-place op refuses it under its
// own name, in and out of grad mode (the error once named copy_).
TEST(InPlace, RefuseAnExpandedSelfUnderTheirOwnName) {
  const Tensor x = from_vector(std::vector<double>{1, 2, 3});
  for (bool grad : {true, false}) {
    autograd::set_grad_enabled(grad);
    Tensor e = from_vector(std::vector<double>{1, 2}).reshape({2, 1}).expand({2, 3});
    const std::vector<std::pair<std::string, std::string>> errors = {
        {"add_", test::error_of([&] { add_(e, x); })},
        {"mul_", test::error_of([&] { mul_(e, 2.0); })},
        {"lerp_", test::error_of([&] { lerp_(e, x, 0.5); })},
        {"addcdiv_", test::error_of([&] { addcdiv_(e, x, x); })}};
    for (const auto& [op, what] : errors) {
      EXPECT_EQ(what.rfind(op + ":", 0), 0u) << what;
      EXPECT_NE(what.find("distinct memory"), std::string::npos) << what;
      EXPECT_NE(what.find("strides [1, 0]"), std::string::npos) << what;
    }
  }
  autograd::set_grad_enabled(true);
}

TEST(InPlace, RefuseAnyOperandNeedingGradUnderGradMode) {
  const Tensor s = test::random_tensor({2, 3}, DType::F64, -1, 1, 1);
  const Tensor x = test::random_tensor({3}, DType::F64, 0.5, 2, 2);
  const Tensor y = test::random_tensor({2, 1}, DType::F64, 0.5, 2, 3);
  using InPlaceFn = std::function<void(Tensor&, const Tensor&, const Tensor&)>;
  using OutFn = std::function<Tensor(const Tensor&, const Tensor&, const Tensor&)>;
  struct Case {
    const char* op;
    int operands;  // self plus this many others (x, then y)
    InPlaceFn inplace;
    OutFn reference;
  };
  const std::vector<Case> cases = {
      {"add_", 1, [](Tensor& t, const Tensor& a, const Tensor&) { add_(t, a, 2.0); },
       [](const Tensor& t, const Tensor& a, const Tensor&) { return add(t, a, 2.0); }},
      {"sub_", 1, [](Tensor& t, const Tensor& a, const Tensor&) { sub_(t, a); },
       [](const Tensor& t, const Tensor& a, const Tensor&) { return sub(t, a); }},
      {"mul_", 1, [](Tensor& t, const Tensor& a, const Tensor&) { mul_(t, a); },
       [](const Tensor& t, const Tensor& a, const Tensor&) { return mul(t, a); }},
      {"div_", 1, [](Tensor& t, const Tensor& a, const Tensor&) { div_(t, a); },
       [](const Tensor& t, const Tensor& a, const Tensor&) { return div(t, a); }},
      {"addcmul_", 2, [](Tensor& t, const Tensor& a, const Tensor& b) { addcmul_(t, a, b, 0.3); },
       [](const Tensor& t, const Tensor& a, const Tensor& b) { return addcmul(t, a, b, 0.3); }},
      {"addcdiv_", 2, [](Tensor& t, const Tensor& a, const Tensor& b) { addcdiv_(t, a, b, 0.3); },
       [](const Tensor& t, const Tensor& a, const Tensor& b) { return addcdiv(t, a, b, 0.3); }},
      {"lerp_", 1, [](Tensor& t, const Tensor& a, const Tensor&) { lerp_(t, a, 0.25); },
       [](const Tensor& t, const Tensor& a, const Tensor&) { return lerp(t, a, 0.25); }},
      {"lerp_", 2, [](Tensor& t, const Tensor& a, const Tensor& b) { lerp_(t, a, b); },
       [](const Tensor& t, const Tensor& a, const Tensor& b) { return lerp(t, a, b); }},
  };
  for (const Case& c : cases) {
    for (int tracked = 0; tracked <= c.operands; ++tracked) {
      SCOPED_TRACE(std::string(c.op) + " operand " + std::to_string(tracked));
      Tensor t = s.clone(), a = x.clone(), b = y.clone();
      Tensor* operand[3] = {&t, &a, &b};
      operand[tracked]->set_requires_grad(true);
      try {
        c.inplace(t, a, b);
        ADD_FAILURE() << "no error";
      } catch (const Error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find(c.op), std::string::npos) << what;
        EXPECT_NE(what.find("in-place ops are not recorded by autograd"), std::string::npos)
            << what;
        EXPECT_NE(what.find(tracked == 0 ? "self" : "operand " + std::to_string(tracked)),
                  std::string::npos)
            << what;
      }
      EXPECT_EQ(t.to_vector<double>(), s.to_vector<double>()) << "self written before refusal";
      autograd::NoGradGuard ng;
      c.inplace(t, a, b);
      EXPECT_EQ(t.to_vector<double>(), c.reference(s, x, y).to_vector<double>());
    }
  }
  // A tensor requiring grad may be read by an in-place op on another tensor
  // only under no_grad (the optimizer-style update).
  Tensor w = zeros({3}, {DType::F64});
  Tensor g = ones({3}, {DType::F64, kCPU, true});
  EXPECT_THROW(add_(w, g), Error);
  autograd::NoGradGuard ng;
  add_(w, g, -0.5);
  test::expect_close(w, {-0.5, -0.5, -0.5}, 0.0);
}

}  // namespace
}  // namespace fk
