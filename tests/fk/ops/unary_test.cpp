#include "fk/ops/unary.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

#include "fk/cpu_isa.h"
#include "fk/knobs.h"
#include "fk/ops/cpu/vec_math.h"
#include "fk/thread_count.h"

#include "../test_util.h"
#include "backward_check.h"

namespace fk {
namespace {

struct Case {
  UnaryOp op;
  UnaryParams p;
  double lo, hi;  // input domain for the test
  double (*reference)(double, UnaryParams);
};

double ref_sigmoid(double x) {
  return 1 / (1 + std::exp(-x));
}

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
    {UnaryOp::LeakyRelu,
     {0.1, 0},
     -2,
     2,
     [](double x, UnaryParams p) { return x > 0 ? x : p.a * x; }},
    {UnaryOp::Elu,
     {1.5, 0},
     -2,
     2,
     [](double x, UnaryParams p) { return x > 0 ? x : p.a * (std::exp(x) - 1); }},
    {UnaryOp::Gelu,
     {},
     -3,
     3,
     [](double x, UnaryParams) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }},
    {UnaryOp::GeluTanh,
     {},
     -3,
     3,
     [](double x, UnaryParams) {
       return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
     }},
    {UnaryOp::Silu, {}, -3, 3, [](double x, UnaryParams) { return x * ref_sigmoid(x); }},
    {UnaryOp::Softplus,
     {2.0, 20},
     -3,
     3,
     [](double x, UnaryParams p) { return std::log1p(std::exp(p.a * x)) / p.a; }},
    {UnaryOp::Erf, {}, -2, 2, [](double x, UnaryParams) { return std::erf(x); }},
    {UnaryOp::PowScalar,
     {2.5, 0},
     0.2,
     2,
     [](double x, UnaryParams p) { return std::pow(x, p.a); }},
    {UnaryOp::Clamp,
     {-0.5, 0.4},
     -1,
     1,
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

// The exposed pure backward against the tape's gradient for the same seed.
TEST_P(UnaryTest, PureBackwardMatchesAutograd) {
  const Case& c = GetParam();
  Tensor x = test::random_tensor({3, 4}, DType::F64, c.lo, c.hi, 161);
  Tensor g = test::random_tensor({3, 4}, DType::F64, -1, 1, 162);
  Tensor out = unary_forward(c.op, x, c.p);
  test::expect_same(unary_backward(c.op, g, x, out, c.p),
                    test::autograd_grad([&](const Tensor& t) { return unary(c.op, t, c.p); }, x, g),
                    0);
}

INSTANTIATE_TEST_SUITE_P(AllOps, UnaryTest, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(name(info.param.op)); });

TEST(Unary, ComplexOpsGradcheck) {
  Tensor z = test::random_complex({5}).set_requires_grad(true);
  for (UnaryOp op : {UnaryOp::Neg, UnaryOp::Conj, UnaryOp::Exp, UnaryOp::Square,
                     UnaryOp::Reciprocal, UnaryOp::Log, UnaryOp::Sqrt}) {
    auto f = [op](const std::vector<Tensor>& in) { return unary(op, in[0]); };
    EXPECT_GRADCHECK(f, std::vector<Tensor>{z});
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

// A fractional bound clamps an integer tensor in f32 (torch's promotion; it
// was truncated), a NaN bound is refused (it let values through on its side).
TEST(Unary, ClampBoundsAgainstTheDtype) {
  Tensor i = from_vector(std::vector<int32_t>{1, 2, 3});
  const Tensor c = clamp(i, 0.5, 2.5);
  EXPECT_EQ(c.dtype(), DType::F32);
  EXPECT_EQ(c.to_vector<double>(), (std::vector<double>{1, 2, 2.5}));
  EXPECT_EQ(clamp(i, 2, INFINITY).dtype(), DType::I32);
  Tensor x = from_vector(std::vector<double>{-INFINITY, 0.5, INFINITY});
  EXPECT_NE(test::error_of([&] { clamp(x, NAN, 1); }).find("min nan"), std::string::npos);
  EXPECT_THROW(clamp(x, 0, NAN), Error);
}

// abs of -0 is +0 (torch's fabs), f64 and f32, one element and a long run.
TEST(Unary, AbsOfNegativeZeroIsPositive) {
  for (DType dt : {DType::F64, DType::F32}) {
    for (size_t n : {size_t{1}, size_t{1037}}) {
      const auto v = abs(from_vector(std::vector<double>(n, -0.0)).to(dt)).to_vector<double>();
      EXPECT_TRUE(std::none_of(v.begin(), v.end(), [](double e) { return std::signbit(e); }))
          << name(dt) << " " << n;
    }
  }
}

// relu keeps a NaN (torch's max(x, 0)) in every floating dtype, split over
// threads; its gradient there is 0, as nefi's fused layers have it (torch's
// threshold_backward passes g; the loss is NaN either way, so is every
// weight's gradient behind it).
TEST(Unary, ReluKeepsNaN) {
  const test::ThreadCount threads(2);
  for (DType dt : {DType::F64, DType::F32, DType::F16, DType::BF16}) {
    SCOPED_TRACE(name(dt));
    std::vector<double> v(70001, -1.0);
    for (size_t i = 0; i < v.size(); i += 7) v[i] = NAN;
    for (size_t i = 3; i < v.size(); i += 7) v[i] = 2.0;
    Tensor x = from_vector(v).to(dt).set_requires_grad(true);
    Tensor y = relu(x);
    const std::vector<double> got = y.to(DType::F64).to_vector<double>();
    for (size_t i = 0; i < v.size(); ++i) {
      if (std::isnan(v[i])) {
        EXPECT_TRUE(std::isnan(got[i])) << i;
      } else {
        EXPECT_EQ(got[i], std::max(v[i], 0.0)) << i;
      }
    }
    y.backward(ones_like(y));
    const std::vector<double> g = x.grad().to(DType::F64).to_vector<double>();
    for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(g[i], v[i] > 0 ? 1.0 : 0.0) << i;
  }
}

// Bool inputs take torch's result dtypes: sign and conj stay bool (conj was
// refused), square and clamp give i64 (both gave f32), neg, abs and relu are
// refused, exp is f32.
TEST(Unary, BoolInputsTakeTorchsResultDtypes) {
  const Tensor b = from_vector(std::vector<double>{1, 0, 1}).to(DType::Bool);
  EXPECT_EQ(sign(b).dtype(), DType::Bool);
  EXPECT_EQ(conj(b).dtype(), DType::Bool);
  EXPECT_EQ(conj(b).to_vector<double>(), (std::vector<double>{1, 0, 1}));
  EXPECT_EQ(sign(b).to_vector<double>(), (std::vector<double>{1, 0, 1}));
  EXPECT_EQ(square(b).dtype(), DType::I64);
  EXPECT_EQ(square(b).to_vector<double>(), (std::vector<double>{1, 0, 1}));
  EXPECT_EQ(clamp(b, 0, 1).dtype(), DType::I64);
  EXPECT_EQ(exp(b).dtype(), DType::F32);
  for (auto f : {+[](const Tensor& t) { return neg(t); }, +[](const Tensor& t) { return abs(t); },
                 +[](const Tensor& t) { return relu(t); }}) {
    const std::string what = test::error_of([&] { f(b); });
    EXPECT_NE(what.find("expected a numeric dtype, got bool"), std::string::npos) << what;
  }
}

TEST(Unary, LargeInputsUseThreadsAndAgree) {
  Tensor x = test::random_tensor({300000}, DType::F32);
  const test::ThreadCount threads(2);
  auto a = tanh(x).to_vector<float>();
  threads.set(1);
  auto b = tanh(x).to_vector<float>();
  EXPECT_EQ(a, b);
}

// --- f32 exp, log, tanh, sigmoid against the correctly rounded result ------------
//
// Inputs: every 4099th f32 bit pattern (all exponents, both signs, NaNs, infs,
// subnormals) plus the special values; the reference is the f64 function
// rounded to f32. Bounds (max ulp): exp 1, log 1, tanh 2, sigmoid 2, silu 3,
// softplus 3 (sigmoid, silu, softplus only where the result is normal, silu
// for x >= -87.3; elsewhere the result must be tiny, of the right sign).
// Both the AVX2 kernels (cpu/vec_math.h, where the CPU has AVX2) and the op as
// dispatched (AVX2 or the generic glibc build, per FK_CPU_ISA) must hold them.

std::vector<float> wide_f32_inputs() {
  std::vector<float> v;
  for (uint64_t b = 0; b < (uint64_t{1} << 32); b += 4099) {
    uint32_t u = static_cast<uint32_t>(b);
    float f;
    std::memcpy(&f, &u, 4);
    v.push_back(f);
  }
  const float inf = std::numeric_limits<float>::infinity();
  for (float f : {0.0f,
                  -0.0f,
                  inf,
                  -inf,
                  std::numeric_limits<float>::quiet_NaN(),
                  std::numeric_limits<float>::min(),
                  std::numeric_limits<float>::denorm_min(),
                  std::numeric_limits<float>::max(),
                  -std::numeric_limits<float>::max(),
                  1.0f,
                  -1.0f,
                  0.5f,
                  -0.5f,
                  0.49999997f,
                  88.72283f,
                  88.72284f,
                  -87.33654f,
                  -103.97208f,
                  -104.0f,
                  1e-30f,
                  -1e-30f,
                  9.0f,
                  -9.0f,
                  1.41421356f,
                  0.70710678f})
    v.push_back(f);
  return v;
}

int64_t ordered(float f) {
  int32_t i;
  std::memcpy(&i, &f, 4);
  return i < 0 ? int64_t{INT32_MIN} - i : i;
}

struct UlpFn {
  const char* name;
  double (*reference)(double);
  int64_t max_ulp;
  bool normal_results_only;
  float min_x;  // below it only the sign and tininess (|y| <= 1e-35) are checked
};

constexpr float kLowest = -std::numeric_limits<float>::infinity();
const UlpFn kUlpFns[] = {
    {"exp", [](double x) { return std::exp(x); }, 1, false, kLowest},
    {"log", [](double x) { return std::log(x); }, 1, false, kLowest},
    {"tanh", [](double x) { return std::tanh(x); }, 2, false, kLowest},
    {"sigmoid", [](double x) { return 1 / (1 + std::exp(-x)); }, 2, true, kLowest},
    {"silu", [](double x) { return x / (1 + std::exp(-x)); }, 3, true, -87.3f},
    {"softplus", [](double x) { return x > 20 ? x : std::log1p(std::exp(x)); }, 3, true, kLowest},
};

// The worst ulp error of `got` over `xs` (a NaN where NaN is due counts 0, any
// other mismatch with NaN or inf a huge error); reports the worst input.
int64_t max_ulp_error(const UlpFn& fn, const std::vector<float>& xs, const std::vector<float>& got,
                      float* worst_x) {
  int64_t worst = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const float want = static_cast<float>(fn.reference(static_cast<double>(xs[i])));
    int64_t err;
    if (std::isnan(want) || std::isnan(got[i])) {
      err = std::isnan(want) && std::isnan(got[i]) ? 0 : INT32_MAX;
    } else if (xs[i] < fn.min_x ||
               (fn.normal_results_only && std::fabs(want) < std::numeric_limits<float>::min())) {
      // Tiny: below FLT_MIN, or (below min_x) no larger than the true value's bound.
      const float limit = xs[i] < fn.min_x ? 1e-35f : std::numeric_limits<float>::min();
      const bool tiny = std::fabs(got[i]) <= limit;
      err = tiny && (got[i] == 0.0f || std::signbit(got[i]) == std::signbit(want)) ? 0 : INT32_MAX;
    } else {
      err = std::llabs(ordered(want) - ordered(got[i]));
    }
    if (err > worst) {
      worst = err;
      *worst_x = xs[i];
    }
  }
  return worst;
}

TEST(VecMath, Avx2KernelsWithinUlpBounds) {
  if (cpu_isa_detected() < CpuIsa::Avx2) GTEST_SKIP() << "no AVX2 on this CPU";
  const std::vector<float> xs = wide_f32_inputs();
  using cpu::avx2::VecFn;
  const VecFn fns[] = {VecFn::Exp,     VecFn::Log,  VecFn::Tanh,
                       VecFn::Sigmoid, VecFn::Silu, VecFn::Softplus};
  for (int k = 0; k < 6; ++k) {
    std::vector<float> got(xs.size());
    cpu::avx2::apply_f32(fns[k], xs.data(), got.data(), static_cast<int64_t>(xs.size()));
    float wx = 0;
    const int64_t e = max_ulp_error(kUlpFns[k], xs, got, &wx);
    EXPECT_LE(e, kUlpFns[k].max_ulp) << kUlpFns[k].name << " at x = " << wx;
  }
}

void ops_within_ulp_bounds_and_special_values() {
  const std::vector<float> xs = wide_f32_inputs();
  Tensor x = from_vector(std::vector<double>(xs.begin(), xs.end())).to(DType::F32);
  const Tensor ys[] = {exp(x), log(x), tanh(x), sigmoid(x), silu(x), softplus(x)};
  for (int k = 0; k < 6; ++k) {
    float wx = 0;
    const int64_t e = max_ulp_error(kUlpFns[k], xs, ys[k].to_vector<float>(), &wx);
    EXPECT_LE(e, kUlpFns[k].max_ulp)
        << kUlpFns[k].name << " (" << cpu_isa_name(cpu_isa()) << ") at x = " << wx;
  }
  // softplus's beta and threshold reach the kernel.
  const UlpFn sp2{"softplus(beta 2, threshold 5)",
                  [](double v) { return 2 * v > 5 ? v : std::log1p(std::exp(2 * v)) / 2; }, 3, true,
                  kLowest};
  float wx = 0;
  EXPECT_LE(max_ulp_error(sp2, xs, softplus(x, 2.0, 5.0).to_vector<float>(), &wx), 3)
      << "at x = " << wx;
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  Tensor s = from_vector(std::vector<double>{inf, -inf, 0.0, -0.0, nan, -1.0}).to(DType::F32);
  auto e = exp(s).to_vector<float>(), l = log(s).to_vector<float>(), t = tanh(s).to_vector<float>(),
       g = sigmoid(s).to_vector<float>();
  EXPECT_EQ(e[0], inf);
  EXPECT_EQ(e[1], 0.0f);
  EXPECT_EQ(e[2], 1.0f);
  EXPECT_TRUE(std::isnan(e[4]));
  EXPECT_EQ(l[0], inf);
  EXPECT_EQ(l[2], -inf);
  EXPECT_EQ(l[3], -inf);
  EXPECT_TRUE(std::isnan(l[4]) && std::isnan(l[5]));
  EXPECT_EQ(t[0], 1.0f);
  EXPECT_EQ(t[1], -1.0f);
  EXPECT_TRUE(t[3] == 0.0f && std::signbit(t[3]));  // tanh(-0) = -0
  EXPECT_TRUE(std::isnan(t[4]));
  EXPECT_EQ(g[0], 1.0f);
  EXPECT_EQ(g[1], 0.0f);
  EXPECT_EQ(g[2], 0.5f);
  EXPECT_TRUE(std::isnan(g[4]));
}

// Both builds: the AVX2 kernels and the generic (glibc) path.
TEST(VecMath, OpsWithinUlpBoundsAndSpecialValues) {
  for (const char* isa : {"auto", "generic"}) {
    KnobOverride cap("FK_CPU_ISA", isa);
    ops_within_ulp_bounds_and_special_values();
  }
}

// sqrt and rsqrt run vectorised (SSE2) and must give std::sqrt's correctly
// rounded bits, 1 / std::sqrt for rsqrt, in f32 and f64, strided or not.
TEST(VecMath, SqrtBitwiseStdSqrt) {
  const std::vector<float> xs = wide_f32_inputs();
  Tensor x = from_vector(std::vector<double>(xs.begin(), xs.end())).to(DType::F32);
  auto s = sqrt(x).to_vector<float>(), r = rsqrt(x).to_vector<float>();
  auto st = sqrt(x.reshape({-1, 2}).t()).t().contiguous().to_vector<float>();
  for (size_t i = 0; i < xs.size(); ++i) {
    const float ws = std::sqrt(xs[i]), wr = 1.0f / std::sqrt(xs[i]);
    ASSERT_TRUE(std::memcmp(&s[i], &ws, 4) == 0 || (std::isnan(ws) && std::isnan(s[i]))) << xs[i];
    ASSERT_TRUE(std::memcmp(&r[i], &wr, 4) == 0 || (std::isnan(wr) && std::isnan(r[i]))) << xs[i];
    ASSERT_TRUE(std::memcmp(&st[i], &s[i], 4) == 0 || std::isnan(s[i])) << xs[i];
  }
  std::vector<double> xd = test::random_values(1001, 0, 1e6, 8);
  xd[0] = -1.0;
  xd[1] = -0.0;
  xd[2] = std::numeric_limits<double>::denorm_min();
  xd[3] = std::numeric_limits<double>::infinity();
  auto sd = sqrt(from_vector(xd)).to_vector<double>();
  auto rd = rsqrt(from_vector(xd)).to_vector<double>();
  for (size_t i = 0; i < xd.size(); ++i) {
    if (std::isnan(std::sqrt(xd[i]))) {
      EXPECT_TRUE(std::isnan(sd[i]) && std::isnan(rd[i]));
      continue;
    }
    EXPECT_EQ(sd[i], std::sqrt(xd[i]));
    EXPECT_EQ(rd[i], 1.0 / std::sqrt(xd[i]));
  }
  EXPECT_TRUE(std::signbit(sd[1]));  // sqrt(-0) = -0
}

// Same values in any layout, any run length and on any thread count, bitwise.
TEST(VecMath, LayoutAndThreadIndependent) {
  Tensor x = test::random_tensor({301, 333}, DType::F32, -12, 12, 5);  // 100,233: above the grain
  const test::ThreadCount threads(1);
  for (UnaryOp op : {UnaryOp::Exp, UnaryOp::Log, UnaryOp::Tanh, UnaryOp::Sigmoid, UnaryOp::Silu,
                     UnaryOp::Softplus, UnaryOp::Sqrt}) {
    Tensor in = op == UnaryOp::Log || op == UnaryOp::Sqrt ? abs(x) : x;
    threads.set(1);
    auto one = unary(op, in).to_vector<float>();
    threads.set(3);
    auto three = unary(op, in).to_vector<float>();
    auto strided = unary(op, in.t()).t().contiguous().to_vector<float>();
    auto tail = unary(op, in.reshape({in.numel()}).narrow(0, 3, 13)).to_vector<float>();
    EXPECT_EQ(std::memcmp(one.data(), three.data(), one.size() * 4), 0) << name(op);
    EXPECT_EQ(std::memcmp(one.data(), strided.data(), one.size() * 4), 0) << name(op);
    EXPECT_EQ(std::memcmp(one.data() + 3, tail.data(), 13 * 4), 0) << name(op);
  }
}

// The host-array forms give the tensor ops' bits, forward and backward, at
// a length that is no multiple of any vector width (the AVX2 kernels' tail).
TEST(Unary, HostArrayFormsGiveTheTensorOpsBits) {
  const Tensor x = test::random_tensor({37}, DType::F32, -3, 3, 9);
  const Tensor g = test::random_tensor({37}, DType::F32, -1, 1, 10);
  const std::vector<float> xv = x.to_vector<float>(), gv = g.to_vector<float>();
  struct OpCase {
    UnaryOp op;
    UnaryParams p;
  };
  for (const OpCase c :
       {OpCase{UnaryOp::Tanh, {}}, OpCase{UnaryOp::Relu, {}}, OpCase{UnaryOp::Gelu, {}},
        OpCase{UnaryOp::Silu, {}}, OpCase{UnaryOp::Softplus, {1.0, 20.0}}, OpCase{UnaryOp::Sin, {}},
        OpCase{UnaryOp::Exp, {}}, OpCase{UnaryOp::Sigmoid, {}}}) {
    SCOPED_TRACE(name(c.op));
    const Tensor y = unary_forward(c.op, x, c.p);
    std::vector<float> yh(37), gh(37);
    unary_forward_host(c.op, xv.data(), yh.data(), 37, c.p);
    EXPECT_EQ(std::memcmp(yh.data(), y.to_vector<float>().data(), 37 * sizeof(float)), 0);
    const Tensor gx = unary_backward(c.op, g, x, y, c.p);
    unary_backward_host(c.op, gv.data(), xv.data(), yh.data(), gh.data(), 37, c.p);
    EXPECT_EQ(std::memcmp(gh.data(), gx.to_vector<float>().data(), 37 * sizeof(float)), 0);
  }
}

}  // namespace
}  // namespace fk
