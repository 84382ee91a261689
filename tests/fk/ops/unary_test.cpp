#include "fk/ops/unary.h"

#include <cmath>

#include "../test_util.h"

namespace fk {
namespace {

struct Case {
  UnaryOp op;
  UnaryParams p;
  double lo, hi;  // input domain for the test
  double (*reference)(double, UnaryParams);
};

double ref_sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

const Case kCases[] = {
    {UnaryOp::Neg, {}, -2, 2, [](double x, UnaryParams) { return -x; }},
    {UnaryOp::Abs, {}, -2, 2, [](double x, UnaryParams) { return std::fabs(x); }},
    {UnaryOp::Exp, {}, -2, 2, [](double x, UnaryParams) { return std::exp(x); }},
    {UnaryOp::Log, {}, 0.1, 3, [](double x, UnaryParams) { return std::log(x); }},
    {UnaryOp::Log1p, {}, -0.5, 2, [](double x, UnaryParams) { return std::log1p(x); }},
    {UnaryOp::Expm1, {}, -2, 2, [](double x, UnaryParams) { return std::expm1(x); }},
    {UnaryOp::Sqrt, {}, 0.1, 3, [](double x, UnaryParams) { return std::sqrt(x); }},
    {UnaryOp::Rsqrt, {}, 0.1, 3, [](double x, UnaryParams) { return 1 / std::sqrt(x); }},
    {UnaryOp::Sin, {}, -3, 3, [](double x, UnaryParams) { return std::sin(x); }},
    {UnaryOp::Cos, {}, -3, 3, [](double x, UnaryParams) { return std::cos(x); }},
    {UnaryOp::Tanh, {}, -2, 2, [](double x, UnaryParams) { return std::tanh(x); }},
    {UnaryOp::Sigmoid, {}, -4, 4, [](double x, UnaryParams) { return ref_sigmoid(x); }},
    {UnaryOp::Relu, {}, -2, 2, [](double x, UnaryParams) { return x > 0 ? x : 0; }},
    {UnaryOp::LeakyRelu, {0.1, 0}, -2, 2,
     [](double x, UnaryParams p) { return x > 0 ? x : p.a * x; }},
    {UnaryOp::Elu, {1.5, 0}, -2, 2,
     [](double x, UnaryParams p) { return x > 0 ? x : p.a * (std::exp(x) - 1); }},
    {UnaryOp::Gelu, {}, -3, 3,
     [](double x, UnaryParams) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }},
    {UnaryOp::GeluTanh, {}, -3, 3,
     [](double x, UnaryParams) {
       return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
     }},
    {UnaryOp::Silu, {}, -3, 3, [](double x, UnaryParams) { return x * ref_sigmoid(x); }},
    {UnaryOp::Softplus, {2.0, 20}, -3, 3,
     [](double x, UnaryParams p) { return std::log1p(std::exp(p.a * x)) / p.a; }},
    {UnaryOp::Erf, {}, -2, 2, [](double x, UnaryParams) { return std::erf(x); }},
    {UnaryOp::PowScalar, {2.5, 0}, 0.2, 2,
     [](double x, UnaryParams p) { return std::pow(x, p.a); }},
    {UnaryOp::Clamp, {-0.5, 0.4}, -1, 1,
     [](double x, UnaryParams p) { return std::min(std::max(x, p.a), p.b); }},
    {UnaryOp::Square, {}, -2, 2, [](double x, UnaryParams) { return x * x; }},
    {UnaryOp::Reciprocal, {}, 0.5, 2, [](double x, UnaryParams) { return 1 / x; }},
};

class UnaryTest : public ::testing::TestWithParam<Case> {};

TEST_P(UnaryTest, MatchesReferenceAndGradchecks) {
  const Case& c = GetParam();
  Tensor x = test::random_tensor({3, 4}, DType::F64, c.lo, c.hi);
  Tensor y = unary(c.op, x, c.p);
  auto xv = x.to_vector<double>(), yv = y.to_vector<double>();
  for (size_t i = 0; i < xv.size(); ++i) EXPECT_NEAR(yv[i], c.reference(xv[i], c.p), 1e-12);
  // f32 agrees with f64; a transposed (non-contiguous) input gives the transposed result.
  auto y32 = unary(c.op, x.to(DType::F32), c.p).to_vector<double>();
  for (size_t i = 0; i < xv.size(); ++i) EXPECT_NEAR(y32[i], yv[i], 1e-5 * (1 + std::fabs(yv[i])));
  auto yt = unary(c.op, x.t(), c.p).t().contiguous().to_vector<double>();
  EXPECT_EQ(yt, yv);
  // Half types run in f32 and round once.
  auto yh = unary(c.op, x.to(DType::BF16), c.p).to_vector<double>();
  for (size_t i = 0; i < xv.size(); ++i) EXPECT_NEAR(yh[i], yv[i], 3e-2 * (1 + std::fabs(yv[i])));
  auto f = [&](const std::vector<Tensor>& in) { return unary(c.op, in[0].t(), c.p); };
  EXPECT_GRADCHECK(f, std::vector<Tensor>{x.set_requires_grad(true)});
}

INSTANTIATE_TEST_SUITE_P(AllOps, UnaryTest, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(name(info.param.op)); });

TEST(Unary, ComplexOpsGradcheck) {
  Tensor z = test::random_complex({5}).set_requires_grad(true);
  for (UnaryOp op : {UnaryOp::Neg, UnaryOp::Conj, UnaryOp::Exp, UnaryOp::Square,
                     UnaryOp::Reciprocal, UnaryOp::Log, UnaryOp::Sqrt}) {
    auto f = [op](const std::vector<Tensor>& in) { return unary(op, in[0]); };
    EXPECT_GRADCHECK(f, std::vector<Tensor>{z}) ;
  }
  auto fabs_ = [](const std::vector<Tensor>& in) { return abs(in[0]); };
  EXPECT_GRADCHECK(fabs_, std::vector<Tensor>{z});
  EXPECT_EQ(abs(z).dtype(), DType::F64);
  EXPECT_THROW(sin(z), Error);
}

TEST(Unary, IntegerInputs) {
  Tensor i = from_vector(std::vector<int32_t>{-3, 0, 4});
  EXPECT_EQ(abs(i).dtype(), DType::I32);
  EXPECT_EQ(abs(i).to_vector<int32_t>(), (std::vector<int32_t>{3, 0, 4}));
  EXPECT_EQ(exp(i).dtype(), DType::F32);
  EXPECT_EQ(clamp(i, -1, INFINITY).to_vector<int32_t>(), (std::vector<int32_t>{-1, 0, 4}));
  EXPECT_THROW(clamp(i, 2, 1), Error);
}

TEST(Unary, LargeInputsUseThreadsAndAgree) {
  Tensor x = test::random_tensor({300000}, DType::F32);
  set_num_threads(2);
  auto a = tanh(x).to_vector<float>();
  set_num_threads(1);
  auto b = tanh(x).to_vector<float>();
  set_num_threads(2);
  EXPECT_EQ(a, b);
}

}  // namespace
}  // namespace fk
