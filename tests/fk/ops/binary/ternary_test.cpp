#include "fk/ops/binary/ternary.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "../../test_util.h"
#include "../backward_check.h"

namespace fk {
namespace {

using Fn = testing::TensorFn;

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

// addcmul of integers by a whole value is integral and exact, as torch's,
// in place too (it went through f32: 2^40 + 1 lost its 1, and addcmul_ on an
// i64 tensor was refused); a fraction, addcdiv and lerp compute in f32.
TEST(Ternary, IntegerAddcmulStaysExact) {
  const int64_t big = (int64_t{1} << 40) + 1;
  const Tensor s = from_vector(std::vector<int64_t>{big, 3}, {2});
  const Tensor a = from_vector(std::vector<int64_t>{1, 2}, {2});
  const Tensor b32 = from_vector(std::vector<int32_t>{1, -5}, {2});
  const Tensor r = addcmul(s, a, b32, 3.0);
  EXPECT_EQ(r.dtype(), DType::I64);
  EXPECT_EQ(r.to_vector<int64_t>(), (std::vector<int64_t>{big + 3, 3 - 30}));
  const Tensor i32 = from_vector(std::vector<int32_t>{16777217}, {1});
  const Tensor one = from_vector(std::vector<int32_t>{1}, {1});
  EXPECT_EQ(addcmul(i32, one, one).dtype(), DType::I32);
  EXPECT_EQ(addcmul(i32, one, one).to_vector<int32_t>(), std::vector<int32_t>{16777218});
  Tensor t = s.clone();
  addcmul_(t, a, a, -1.0);
  EXPECT_EQ(t.to_vector<int64_t>(), (std::vector<int64_t>{big - 1, -1}));
  EXPECT_EQ(addcmul(i32, one, one, 0.5).dtype(), DType::F32);
  EXPECT_EQ(addcdiv(i32, one, one).dtype(), DType::F32);
}

TEST(Ternary, PureBackwardMatchesAutograd) {
  Tensor cond =
      lt(test::random_tensor({3, 4}, DType::F64, -1, 1, 106), scalar_tensor(0.0, {DType::F64}));
  Tensor x = test::random_tensor({3, 4}, DType::F64, -1, 1, 107);
  Tensor y = test::random_tensor({4}, DType::F64, 0.5, 2, 108);
  Tensor z = test::random_tensor({3, 1}, DType::F64, 0.5, 2, 109);
  Tensor g = test::random_tensor({3, 4}, DType::F64, -1, 1, 110);
  const double value = 0.75;
  for (TernaryOp op : {TernaryOp::Where, TernaryOp::Addcmul, TernaryOp::Addcdiv, TernaryOp::Lerp}) {
    const Tensor& first = op == TernaryOp::Where ? cond : x;
    auto call = [&](const Tensor& p, const Tensor& q, const Tensor& r) {
      switch (op) {
        case TernaryOp::Where:
          return where(p, q, r);
        case TernaryOp::Addcmul:
          return addcmul(p, q, r, value);
        case TernaryOp::Addcdiv:
          return addcdiv(p, q, r, value);
        default:
          return lerp(p, q, r);
      }
    };
    std::array<Tensor, 3> got =
        ternary_backward(op, g, first, y, z,
                         {OperandInfo{first.shape(), first.dtype()},
                          OperandInfo{y.shape(), y.dtype()}, OperandInfo{z.shape(), z.dtype()}},
                         {op != TernaryOp::Where, true, true}, value);
    SCOPED_TRACE(static_cast<int>(op));
    if (op == TernaryOp::Where) {
      EXPECT_FALSE(got[0].defined());
    } else {
      test::expect_same(
          got[0], test::autograd_grad([&](const Tensor& t) { return call(t, y, z); }, first, g),
          1e-14);
    }
    test::expect_same(got[1],
                      test::autograd_grad([&](const Tensor& t) { return call(first, t, z); }, y, g),
                      1e-14);
    test::expect_same(got[2],
                      test::autograd_grad([&](const Tensor& t) { return call(first, y, t); }, z, g),
                      1e-14);
  }
}

}  // namespace
}  // namespace fk
