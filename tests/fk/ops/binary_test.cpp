#include "fk/ops/binary.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "../test_util.h"

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

TEST(Ternary, ValuesAndGradcheck) {
  Tensor s = test::random_tensor({2, 3}, DType::F64, -1, 1, 1).set_requires_grad(true);
  Tensor x = test::random_tensor({3}, DType::F64, 0.5, 2, 2).set_requires_grad(true);
  Tensor y = test::random_tensor({2, 1}, DType::F64, 0.5, 2, 3).set_requires_grad(true);
  auto sv = s.to_vector<double>(), xv = x.to_vector<double>(), yv = y.to_vector<double>();
  auto m = addcmul(s, x, y, 0.5).to_vector<double>();
  auto d = addcdiv(s, x, y, 0.5).to_vector<double>();
  auto l = lerp(s, x, y).to_vector<double>();
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 3; ++j) {
      double S = sv[i * 3 + j], X = xv[j], Y = yv[i];
      EXPECT_NEAR(m[i * 3 + j], S + 0.5 * X * Y, 1e-14);
      EXPECT_NEAR(d[i * 3 + j], S + 0.5 * X / Y, 1e-14);
      EXPECT_NEAR(l[i * 3 + j], S + Y * (X - S), 1e-14);
    }
  }
  std::vector<Tensor> in{s, x, y};
  // Each function also runs on strided views of its (contiguous) inputs: self
  // transposed, the others with stride 2.
  auto strided = [](const std::vector<Tensor>& v) {
    return std::vector<Tensor>{v[0].t().contiguous().t(), test::strided_copy(v[1]),
                               test::strided_copy(v[2])};
  };
  for (const Tensor& v : strided(in)) ASSERT_FALSE(v.is_contiguous());
  std::vector<Fn> fns = {
      [](const std::vector<Tensor>& v) { return addcmul(v[0], v[1], v[2], 0.5); },
      [](const std::vector<Tensor>& v) { return addcdiv(v[0], v[1], v[2], 0.5); },
      [](const std::vector<Tensor>& v) { return lerp(v[0], v[1], v[2]); },
      [](const std::vector<Tensor>& v) {
        return where(gt(v[1], scalar_like(v[1], 1.0)), v[0], v[2]);
      }};
  for (size_t k = 0; k < fns.size(); ++k) {
    EXPECT_GRADCHECK(fns[k], in) << "op " << k;
    Fn on_strided = [f = fns[k], strided](const std::vector<Tensor>& v) { return f(strided(v)); };
    EXPECT_GRADCHECK(on_strided, in) << "op " << k << " on strided views";
  }
}

// where() selects bits (a branch-free blend): every stored dtype, NaN payloads
// and -0.0 kept, condition / branches broadcast from one element (the splat
// path of the ternary loop), against a byte-wise loop.
TEST(Where, EveryDtypeBitExactWithBroadcastOperands) {
  const int64_t n = 1000;
  Tensor c = gt(test::random_tensor({n}, DType::F64, -1, 1, 1), zeros({}, {DType::F64}));
  Tensor c1 = gt(ones({1}), zeros({1}));  // one true element, broadcast
  auto cv = c.to_vector<bool>();
  std::vector<double> av = test::random_values(n, -5, 5, 2), bv = test::random_values(n, -5, 5, 3);
  av[7] = -0.0;
  av[8] = std::nan("");
  bv[9] = -std::nan("0x123");
  for (DType dt :
       {DType::Bool, DType::I32, DType::I64, DType::F32, DType::F64, DType::C64, DType::C128}) {
    Tensor a = from_vector(av).to(dt), b = from_vector(bv).to(dt);
    if (dt == DType::Bool) a = gt(from_vector(av), zeros({}, {DType::F64}));
    const int64_t es = static_cast<int64_t>(a.itemsize());
    auto bytes = [&](const Tensor& t, int64_t i) {
      return static_cast<const char*>(t.data_ptr()) + (t.numel() == 1 ? 0 : i) * es;
    };
    struct Form {
      Tensor cond, x, y;
    };
    Tensor b0 = b.narrow(0, 4, 1);  // one element of b, broadcast
    for (const Form& f : {Form{c, a, b}, Form{c, a, b0}, Form{c, b0, a}, Form{c1, a, b}}) {
      Tensor out = where(f.cond, f.x, f.y);
      ASSERT_EQ(out.dtype(), dt);
      for (int64_t i = 0; i < n; ++i) {
        const bool take_x = f.cond.numel() == 1 ? true : cv[static_cast<size_t>(i)];
        const char* want = take_x ? bytes(f.x, i) : bytes(f.y, i);
        ASSERT_EQ(std::memcmp(bytes(out, i), want, static_cast<size_t>(es)), 0)
            << name(dt) << " at " << i;
      }
    }
  }
}

// Ternary ops with one operand broadcast from a single element (lerp's scalar
// weight, addcmul's scalar factor) on runs long enough for the splat path,
// out of place and in place, against plain loops.
TEST(Ternary, BroadcastScalarOperandsAgainstLoops) {
  const int64_t n = 777;
  Tensor x = test::random_tensor({n}, DType::F64, -1, 1, 4);
  Tensor y = test::random_tensor({n}, DType::F64, 0.5, 2, 5);
  Tensor w = from_vector(std::vector<double>{0.3});
  auto xv = x.to_vector<double>(), yv = y.to_vector<double>();
  std::vector<double> lerp_want(n), cmul_want(n), cdiv_want(n);
  for (int64_t i = 0; i < n; ++i) {
    lerp_want[i] = xv[i] + 0.3 * (yv[i] - xv[i]);
    cmul_want[i] = xv[i] + 2.0 * 0.3 * yv[i];
    cdiv_want[i] = 0.3 + 2.0 * xv[i] / yv[i];
  }
  test::expect_close(lerp(x, y, w), lerp_want, 1e-15);
  test::expect_close(addcmul(x, w, y, 2.0), cmul_want, 1e-15);
  test::expect_close(addcdiv(w, x, y, 2.0), cdiv_want, 1e-15);
  Tensor t = x.clone();
  lerp_(t, y, w);
  EXPECT_EQ(t.to_vector<double>(), lerp(x, y, w).to_vector<double>());
  t = x.clone();
  div_(t, y);
  EXPECT_EQ(t.to_vector<double>(), div(x, y).to_vector<double>());
  Tensor x32 = x.to(DType::F32), y32 = y.to(DType::F32);
  t = x32.clone();
  lerp_(t, y32, 0.3);
  EXPECT_EQ(t.to_vector<float>(), lerp(x32, y32, 0.3).to_vector<float>());
}

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

// In-place ops record no node, so under grad mode every operand (not only
// self) that requires grad is refused before self is written; under no_grad
// they run and match the out-of-place op.
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

TEST(Binary, DeviceAndShapeErrors) {
  try {
    add(ones({2, 3}), ones({4}));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[2, 3] and [4]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(where(ones({2}), ones({2}), ones({2})), Error);  // non-bool condition
}

}  // namespace
}  // namespace fk
