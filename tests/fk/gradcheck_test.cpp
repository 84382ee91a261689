// fk::testing::gradcheck itself: it finds a wrong gradient whether or not
// the caller marked the inputs (none marked: every f64 input is checked;
// once, a call with none marked checked nothing and passed), checks only the
// marked ones when some are, and names a call that leaves nothing to check.
#include "fk/testing.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "fk/autograd.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/random.h"

namespace {

// y = x * x with a backward of 4 x g (the true one is 2 x g).
struct WrongSquareBackward : fk::autograd::Node {
  fk::Tensor x;
  const char* name() const override { return "WrongSquareBackward"; }
  std::vector<fk::Tensor> apply(std::vector<fk::Tensor>&& grads) override {
    return {fk::mul(fk::mul(grads[0], x), 4.0)};
  }
};

fk::Tensor wrong_square(const fk::Tensor& x) {
  fk::Tensor y;
  {
    fk::autograd::NoGradGuard ng;
    y = fk::mul(x, x);
  }
  if (fk::autograd::needs_grad(x)) {
    auto node = std::make_shared<WrongSquareBackward>();
    node->x = x.detach();
    fk::autograd::record(node, {x}, y);
  }
  return y;
}

TEST(Gradcheck, FindsAWrongGradientOfUnmarkedF64Inputs) {
  fk::Generator gen(1);
  const fk::Tensor x = fk::uniform({4}, 0.5, 1.0, {fk::DType::F64}, &gen);
  ASSERT_FALSE(x.requires_grad());
  const std::string err = fk::testing::gradcheck(
      [](const std::vector<fk::Tensor>& in) { return wrong_square(in[0]); }, {x});
  EXPECT_NE(err.find("analytic"), std::string::npos) << err;
  // The right gradient passes the same way.
  EXPECT_EQ(fk::testing::gradcheck(
                [](const std::vector<fk::Tensor>& in) { return fk::mul(in[0], in[0]); }, {x}),
            "");
}

TEST(Gradcheck, ChecksOnlyTheMarkedInputsWhenSomeAre) {
  fk::Generator gen(2);
  const fk::Tensor a = fk::uniform({3}, 0.5, 1.0, {fk::DType::F64}, &gen);
  const fk::Tensor b = fk::uniform({3}, 0.5, 1.0, {fk::DType::F64, fk::kCPU, true}, &gen);
  auto fn = [](const std::vector<fk::Tensor>& in) {
    return fk::add(wrong_square(in[0]), fk::mul(in[1], in[1]));
  };
  EXPECT_EQ(fk::testing::gradcheck(fn, {a, b}), "");  // a is a constant here
  const fk::Tensor a_marked = a.detach().clone().set_requires_grad(true);
  EXPECT_NE(fk::testing::gradcheck(fn, {a_marked, b}).find("input 0"), std::string::npos);
}

TEST(Gradcheck, NamesACallWithNothingToCheck) {
  const fk::Tensor i = fk::zeros({3}, {fk::DType::I64});
  const std::string err = fk::testing::gradcheck(
      [](const std::vector<fk::Tensor>& in) { return in[0].to(fk::DType::F64); }, {i});
  EXPECT_NE(err.find("no f64 or c128 input to check"), std::string::npos) << err;
}

}  // namespace
