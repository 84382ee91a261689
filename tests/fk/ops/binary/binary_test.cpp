#include "fk/ops/binary/binary.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "../../test_util.h"
#include "../backward_check.h"
#include "fk/ops/binary/inplace.h"

namespace fk {
namespace {

using Fn = testing::TensorFn;

TEST(Binary, BroadcastValues) {
  Tensor a = from_vector(std::vector<double>{1, 2, 3}, {3, 1});
  Tensor b = from_vector(std::vector<double>{10, 20}, {1, 2});
  test::expect_close(add(a, b), {11, 21, 12, 22, 13, 23});
  test::expect_close(sub(a, b, 0.5), {-4, -9, -3, -8, -2, -7});
  test::expect_close(mul(a, b), {10, 20, 20, 40, 30, 60});
  test::expect_close(div(b, a), {10, 20, 5, 10, 10.0 / 3, 20.0 / 3});
  test::expect_close(maximum(a, from_vector(std::vector<double>{2})), {2, 2, 3});
  test::expect_close(minimum(a, from_vector(std::vector<double>{2})), {1, 2, 2});
  test::expect_close(pow(a, from_vector(std::vector<double>{2})), {1, 4, 9});
  test::expect_close(atan2(a, b), {std::atan2(1, 10), std::atan2(1, 20), std::atan2(2, 10),
                                   std::atan2(2, 20), std::atan2(3, 10), std::atan2(3, 20)});
  EXPECT_EQ(lt(a, from_vector(std::vector<double>{2})).to_vector<bool>(),
            (std::vector<bool>{true, false, false}));
  EXPECT_EQ(ge(a, from_vector(std::vector<double>{2})).dtype(), DType::Bool);
  test::expect_close(where(gt(a, from_vector(std::vector<double>{1.5})), a, b),
                     {10, 20, 2, 2, 3, 3});
  test::expect_close(add(a, 1.0), {2, 3, 4});
  test::expect_close(2.0 * a, {2, 4, 6});
}

TEST(Binary, NonContiguousOperands) {
  Tensor m = test::random_tensor({4, 5});
  Tensor mt = m.t();  // [5, 4], strided
  Tensor r1 = add(mt, mt.contiguous());
  test::expect_close(r1, mul(mt.contiguous(), 2.0).to_vector<double>(), 1e-15);
  Tensor s = m.slice(1, 0, 5, 2);  // [4, 3]
  test::expect_close(mul(s, s), mul(s.contiguous(), s.contiguous()).to_vector<double>(), 1e-15);
}

TEST(Binary, GradcheckAllWithBroadcastAndStrides) {
  Tensor a = test::random_tensor({3, 4}, DType::F64, 0.5, 2.0, 1).set_requires_grad(true);
  Tensor b = test::random_tensor({4}, DType::F64, 0.5, 2.0, 2).set_requires_grad(true);
  // gradcheck passes contiguous inputs: the functions make strided views of
  // them (a transposed copy, and test::strided_copy's stride-2 view).
  auto transposed = [](const Tensor& x) { return x.t().contiguous().t(); };
  ASSERT_FALSE(transposed(a).is_contiguous());
  ASSERT_FALSE(test::strided_copy(b).is_contiguous());
  for (BinaryOp op : {BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div, BinaryOp::Pow,
                      BinaryOp::Maximum, BinaryOp::Minimum, BinaryOp::Atan2}) {
    Fn f = [op, transposed](const std::vector<Tensor>& in) {
      return binary(op, transposed(in[0]), in[1].unsqueeze(0), 0.7);
    };
    EXPECT_GRADCHECK(f, (std::vector<Tensor>{a, b})) << name(op);
    Fn g = [op, transposed](const std::vector<Tensor>& in) {
      return binary(op, test::strided_copy(in[1]), transposed(in[0]), 0.7);
    };
    EXPECT_GRADCHECK(g, (std::vector<Tensor>{a, b})) << name(op);
  }
}

TEST(Binary, MaximumTiesSplitGradient) {
  Tensor a = from_vector(std::vector<double>{1, 2}).set_requires_grad(true);
  Tensor b = from_vector(std::vector<double>{1, 3}).set_requires_grad(true);
  sum(maximum(a, b)).backward();
  test::expect_close(a.grad(), {0.5, 0});
  test::expect_close(b.grad(), {0.5, 1});
}

// A NaN has no order: both sides keep the gradient (torch's rule), where the
// other side's 1 - w once took it all from the non-NaN side.
TEST(Binary, MaximumAndMinimumSendANaNsGradientToBothSides) {
  for (BinaryOp op : {BinaryOp::Maximum, BinaryOp::Minimum}) {
    SCOPED_TRACE(name(op));
    Tensor a = from_vector(std::vector<double>{NAN, 1, 2, 5}).set_requires_grad(true);
    Tensor b = from_vector(std::vector<double>{1, NAN, 2, 4}).set_requires_grad(true);
    sum(binary(op, a, b)).backward();
    const double win = op == BinaryOp::Maximum ? 1 : 0;
    test::expect_close(a.grad(), {1, 1, 0.5, win});
    test::expect_close(b.grad(), {1, 1, 0.5, 1 - win});
  }
}

// At a base of 0: no slope in the base for an exponent of 0, none in the
// exponent for a base of 0 (the formulas read 0 * inf: NaN and -inf).
TEST(Binary, PowGradientsAtAZeroBase) {
  Tensor a = from_vector(std::vector<double>{0, 0, 2}).set_requires_grad(true);
  Tensor b = from_vector(std::vector<double>{0, 2, 3}).set_requires_grad(true);
  sum(pow(a, b)).backward();
  test::expect_close(a.grad(), {0, 0, 12});
  test::expect_close(b.grad(), {0, 0, 8 * std::log(2.0)});
  // A negative exponent at 0 is a pole: -inf in the exponent's slope, as torch.
  Tensor c = from_vector(std::vector<double>{0}).set_requires_grad(true);
  Tensor e = from_vector(std::vector<double>{-1}).set_requires_grad(true);
  sum(pow(c, e)).backward();
  EXPECT_EQ(e.grad().item(), -INFINITY);
}

// An integer tensor with a scalar it cannot hold no longer wraps (i32 +
// 1e10 gave -2147483641): a whole one past i32 computes in i64, exactly;
// an infinite one, a fraction or one past i64 in f32.
TEST(Binary, IntegerTensorsWithScalarsTheyCannotHold) {
  const Tensor i = from_vector(std::vector<int32_t>{7});
  EXPECT_EQ(add(i, 1e10).dtype(), DType::I64);
  EXPECT_EQ(add(i, 1e10).item(), 1e10 + 7);
  EXPECT_EQ(add(i, INFINITY).dtype(), DType::F32);
  EXPECT_TRUE(std::isinf(add(i, INFINITY).item()));
  EXPECT_EQ(mul(i, 3e9).dtype(), DType::I64);  // whole, past i32: exact in i64
  EXPECT_EQ(add(i, 2147483648.0).item(), 2147483655.0);
  EXPECT_EQ(add(i, 0.5).dtype(), DType::F32);
  EXPECT_EQ(add(i, 2.0).dtype(), DType::I32);  // one it holds keeps the dtype
  EXPECT_EQ(add(from_vector(std::vector<int64_t>{1}), 1e19).dtype(), DType::F32);
  EXPECT_EQ(add(from_vector(std::vector<int64_t>{1}), 1e18).dtype(), DType::I64);
}

// torch's: alpha must be a whole value the integer type holds (2.5 was
// truncated to 2, 1e10 wrapped).
TEST(Binary, IntegerAlphaMustBeAWholeValueInRange) {
  const Tensor i = from_vector(std::vector<int32_t>{1, 2}),
               j = from_vector(std::vector<int32_t>{3, 4});
  EXPECT_EQ(add(i, j, 2.0).to_vector<int32_t>(), (std::vector<int32_t>{7, 10}));
  EXPECT_NE(test::error_of([&] { add(i, j, 2.5); }).find("an integer alpha"), std::string::npos);
  EXPECT_THROW(sub(i, j, 0.5), Error);
  EXPECT_THROW(add(i, j, 1e10), Error);
  EXPECT_NEAR(add(i.to(DType::F32), j.to(DType::F32), 2.5).to_vector<double>()[0], 8.5, 1e-6);
}

// NumPy's and torch's bool arithmetic: + and maximum are or, * and minimum
// are and, - is refused (all gave i64 counts).
TEST(Binary, BoolArithmeticStaysBool) {
  const Tensor a = gt(from_vector(std::vector<double>{1, 1, 0, 0}), scalar_tensor(0.5));
  const Tensor b = gt(from_vector(std::vector<double>{1, 0, 1, 0}), scalar_tensor(0.5));
  for (BinaryOp op : {BinaryOp::Add, BinaryOp::Mul, BinaryOp::Maximum, BinaryOp::Minimum})
    EXPECT_EQ(binary(op, a, b).dtype(), DType::Bool) << name(op);
  EXPECT_EQ(add(a, b).to_vector<double>(), (std::vector<double>{1, 1, 1, 0}));
  EXPECT_EQ(mul(a, b).to_vector<double>(), (std::vector<double>{1, 0, 0, 0}));
  EXPECT_EQ(maximum(a, b).to_vector<double>(), (std::vector<double>{1, 1, 1, 0}));
  EXPECT_EQ(minimum(a, b).to_vector<double>(), (std::vector<double>{1, 0, 0, 0}));
  EXPECT_THROW(sub(a, b), Error);
  EXPECT_THROW(add(a, b, -1.0), Error);  // sub_'s form: an exclusive or
  Tensor c = a.clone();
  EXPECT_THROW(sub_(c, b), Error);
  EXPECT_EQ(add(a, from_vector(std::vector<int32_t>{1, 1, 1, 1})).dtype(), DType::I32);
  EXPECT_EQ(div(a, b).dtype(), DType::F32);
  // As torch: - with one bool operand is refused too (x - mask took it as 0/1).
  Tensor x = from_vector(std::vector<double>{5, 5, 5, 5});
  EXPECT_THROW(sub(x, a), Error);
  EXPECT_THROW(sub(a, x), Error);
  EXPECT_THROW(sub(a, 1.0), Error);
  EXPECT_THROW(sub_(x, a), Error);
  EXPECT_EQ(x.to_vector<double>(), (std::vector<double>{5, 5, 5, 5}));
}

// Integer powers are exact integers (they went through f32: 3^39 lost its
// low digits, 2^-1 gave 0.5), wrapping past the type as torch's do.
// An integer meets a half tensor as the half nearest it (torch's rounding to
// the common dtype first): the CPU computed with the exact integer in f32
// where the device (and torch) rounded it.
TEST(Binary, AnIntegerMeetsAHalfOperandRoundedToIt) {
  const Tensor i = from_vector(std::vector<int64_t>{2049, 257, 4097});
  const Tensor f = from_vector(std::vector<double>{2048, 256, 4096});
  EXPECT_EQ(sub(i, f.to(DType::F16)).to(DType::F64).to_vector<double>(),
            (std::vector<double>{0, 1, 0}));
  EXPECT_EQ(sub(i, f.to(DType::BF16)).to(DType::F64).to_vector<double>(),
            (std::vector<double>{0, 0, 0}));
  EXPECT_EQ(eq(i, f.to(DType::F16)).to_vector<bool>(), (std::vector<bool>{true, false, true}));
  EXPECT_EQ(eq(f.to(DType::F16), i).to_vector<bool>(), (std::vector<bool>{true, false, true}));
  const Tensor half = full({1}, 0.5, {DType::F16});
  EXPECT_EQ(add(full({1}, 2049.0, {DType::I64}), half).to(DType::F64).item(), 2048.0);
  // f32 with a half operand computes in f32: nothing rounded to half
  EXPECT_EQ(sub(full({1}, 2049.0, {DType::F32}), full({1}, 2048.0, {DType::F16})).item(), 1.0);
}

TEST(Binary, IntegerPowIsExact) {
  const Tensor base = from_vector(std::vector<int64_t>{3, 2, -1, 1, 0, -2, 5});
  const Tensor expo = from_vector(std::vector<int64_t>{39, -1, -3, -2, 0, 3, 1});
  const Tensor p = pow(base, expo);
  EXPECT_EQ(p.dtype(), DType::I64);
  EXPECT_EQ(p.to_vector<int64_t>(),
            (std::vector<int64_t>{4052555153018976267LL, 0, -1, 1, 1, -8, 5}));
  // i32 wraps: 3^40 mod 2^32 read as i32.
  EXPECT_EQ(pow(from_vector(std::vector<int32_t>{3}), from_vector(std::vector<int32_t>{40}))
                .to_vector<int32_t>()[0],
            689956897);
}

// The divisor's slope -g a / b^2 as -g ((a / b) / b): (g / b) overflowed to inf
// for a tiny b and read NaN at a = 0, where the slope is 0.
TEST(Binary, DivisorGradientOfAZeroNumeratorIsZero) {
  Tensor a = from_vector(std::vector<double>{0.0, 1.0});
  Tensor b = from_vector(std::vector<double>{1e-30, 2.0}).set_requires_grad(true);
  div(a, b).backward(from_vector(std::vector<double>{1e10, 1.0}));
  const auto g = b.grad().to_vector<double>();
  EXPECT_EQ(g[0], 0.0);
  EXPECT_DOUBLE_EQ(g[1], -0.25);
}

TEST(Binary, ComplexGradcheck) {
  Tensor a = test::random_complex({3}, 3).set_requires_grad(true);
  Tensor b = test::random_complex({3}, 5).set_requires_grad(true);
  Tensor r = test::random_tensor({3}).set_requires_grad(true);
  for (BinaryOp op : {BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div}) {
    Fn f = [op](const std::vector<Tensor>& in) { return binary(op, in[0], in[1]); };
    EXPECT_GRADCHECK(f, (std::vector<Tensor>{a, b})) << name(op);
    Fn g = [op](const std::vector<Tensor>& in) { return binary(op, in[0], in[2]); };
    EXPECT_GRADCHECK(g, (std::vector<Tensor>{a, b, r})) << name(op) << " complex-real";
  }
  EXPECT_THROW(maximum(a, b), Error);
}

TEST(Binary, DeviceAndShapeErrors) {
  try {
    add(ones({2, 3}), ones({4}));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[2, 3] and [4]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(where(ones({2}), ones({2}), ones({2})), Error);  // non-bool condition
}

// The exposed backward against autograd, for every differentiable op with
// broadcast operands (b's gradient summed over the broadcast dim), and against
// the derivative formulas for mul and div.
TEST(Binary, PureBackwardMatchesAutograd) {
  Tensor a = test::random_tensor({3, 4}, DType::F64, 0.5, 2, 101);
  Tensor b = test::random_tensor({4}, DType::F64, 0.5, 2, 102);
  Tensor g = test::random_tensor({3, 4}, DType::F64, -1, 1, 103);
  for (BinaryOp op : {BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div, BinaryOp::Pow,
                      BinaryOp::Maximum, BinaryOp::Minimum, BinaryOp::Atan2}) {
    SCOPED_TRACE(name(op));
    const double alpha = op == BinaryOp::Add || op == BinaryOp::Sub ? 0.5 : 1.0;
    Tensor out = binary_forward(op, a, b, alpha);
    BinaryGrads got = binary_backward(op, g, a, b, out, {a.shape(), a.dtype()},
                                      {b.shape(), b.dtype()}, true, true, alpha);
    test::expect_same(
        got.a, test::autograd_grad([&](const Tensor& t) { return binary(op, t, b, alpha); }, a, g),
        1e-14);
    test::expect_same(
        got.b, test::autograd_grad([&](const Tensor& t) { return binary(op, a, t, alpha); }, b, g),
        1e-13);
    BinaryGrads only_b = binary_backward(op, g, a, b, out, {a.shape(), a.dtype()},
                                         {b.shape(), b.dtype()}, false, true, alpha);
    EXPECT_FALSE(only_b.a.defined());
    test::expect_same(only_b.b, got.b, 0);
  }
  // d(a b)/da = b, d(a / b)/db = -a / b^2 (summed over the broadcast rows).
  BinaryGrads m = binary_backward(BinaryOp::Mul, g, a, b, Tensor(), {a.shape(), a.dtype()},
                                  {b.shape(), b.dtype()}, true, false);
  test::expect_same(m.a, mul(g, b), 0);
  BinaryGrads d = binary_backward(BinaryOp::Div, g, a, b, Tensor(), {a.shape(), a.dtype()},
                                  {b.shape(), b.dtype()}, false, true);
  test::expect_same(d.b, sum(neg(div(mul(g, a), mul(b, b))), {0}), 1e-14);
  // A real operand of a complex op gets the real part.
  Tensor z = test::random_complex({4}, 104);
  Tensor gz = test::random_complex({3, 4}, 105);
  BinaryGrads c = binary_backward(BinaryOp::Mul, gz, a, z, Tensor(), {a.shape(), a.dtype()},
                                  {z.shape(), z.dtype()}, true, false);
  EXPECT_EQ(c.a.dtype(), DType::F64);
  test::expect_same(c.a, real(mul(gz, conj(z))), 1e-15);
}

}  // namespace
}  // namespace fk
