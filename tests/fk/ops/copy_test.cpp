#include "fk/ops/copy.h"

#include "fk/ops/binary.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "../test_util.h"
#include "backward_check.h"
#include "fk/thread_count.h"

namespace fk {
namespace {

// Bitwise equality of two tensors' elements in logical order.
bool same_bytes(const Tensor& a, const Tensor& b) {
  Tensor ca = a.contiguous(), cb = b.contiguous();
  return ca.dtype() == cb.dtype() && ca.shape() == cb.shape() &&
         std::memcmp(ca.data_ptr(), cb.data_ptr(), static_cast<size_t>(ca.nbytes())) == 0;
}

// contiguous() of transposed views (the tiled transpose: full 16x16 tiles
// through SSE2 register transposes, ragged edges element by element), for
// every element width, against index arithmetic.
TEST(Copy, TransposedViewsAgainstIndexArithmetic) {
  for (DType dt : {DType::F32, DType::I32, DType::F64, DType::I64, DType::C64, DType::C128}) {
    for (Dims shape : {Dims{64, 48}, Dims{37, 70}, Dims{16, 16}, Dims{3, 33, 20}}) {
      Tensor t = is_complex(dt) ? test::random_complex(shape, 3).to(dt)
                                : test::random_tensor(shape, DType::F64, -100, 100, 3).to(dt);
      const int r = t.dim();
      Tensor v = t.transpose(r - 2, r - 1);  // [.., n1, n0], source runs along dst's dim -2
      Tensor c = v.contiguous();
      ASSERT_TRUE(c.is_contiguous());
      const int64_t nb = r == 3 ? shape[0] : 1, n0 = shape[r - 2], n1 = shape[r - 1];
      const int64_t es = static_cast<int64_t>(t.itemsize());
      const char* src = static_cast<const char*>(t.data_ptr());
      const char* dst = static_cast<const char*>(c.data_ptr());
      for (int64_t b = 0; b < nb; ++b)
        for (int64_t i = 0; i < n1; ++i)
          for (int64_t j = 0; j < n0; ++j)
            ASSERT_EQ(std::memcmp(dst + ((b * n1 + i) * n0 + j) * es,
                                  src + ((b * n0 + j) * n1 + i) * es, static_cast<size_t>(es)),
                      0)
                << name(dt) << " " << shape.str() << " at " << b << "," << i << "," << j;
    }
  }
}

// Contiguous copies of views at every element offset (source and destination
// differently aligned) and of every width, and the transpose, give the same
// bits on 1 and 3 threads.
TEST(Copy, FlatCopiesOfOffsetViewsAndThreadCounts) {
  Tensor t = test::random_tensor({70001}, DType::F64, -1, 1, 4);
  for (DType dt : {DType::Bool, DType::F32, DType::F64, DType::C128}) {
    Tensor src = dt == DType::Bool   ? gt(t, zeros({}, {DType::F64}))
                 : dt == DType::C128 ? test::random_complex({70001}, 5)
                                     : t.to(dt);
    for (int64_t off : {0, 1, 3, 5}) {
      Tensor v = src.narrow(0, off, 70001 - off - 2);
      Tensor dst = empty(v.shape(), {dt});
      dst.copy_(v);
      const int64_t es = static_cast<int64_t>(src.itemsize());
      ASSERT_EQ(std::memcmp(dst.data_ptr(), static_cast<const char*>(src.data_ptr()) + off * es,
                            static_cast<size_t>(dst.nbytes())),
                0)
          << name(dt) << " offset " << off;
    }
  }
  Tensor m = test::random_tensor({300, 257}, DType::F32, -1, 1, 6);
  Tensor one, flat1, three, flat3;
  {
    const test::ThreadCount threads(1);
    one = m.t().contiguous(), flat1 = m.narrow(1, 1, 250).contiguous();
    threads.set(3);
    three = m.t().contiguous(), flat3 = m.narrow(1, 1, 250).contiguous();
  }
  EXPECT_TRUE(same_bytes(one, three));
  EXPECT_TRUE(same_bytes(flat1, flat3));
  EXPECT_TRUE(same_bytes(one.t(), m));
}

// copy_ between overlapping views of one storage reads the source as it was
// before the copy (shifted left and right, a transpose onto itself), against a
// copy made beforehand; the same view onto itself is
// a no-op; and a destination with repeated elements (stride 0) is refused.
TEST(Copy, OverlappingViewsReadTheSourceAsItWas) {
  for (int64_t shift : {1, -1, 7, -7}) {
    Tensor buf = test::random_tensor({1000}, DType::F64, -1, 1, 9);
    const int64_t n = 1000 - 7;
    Tensor dst = buf.narrow(0, shift > 0 ? 0 : 7, n);  // src after dst, then before it
    Tensor src = buf.narrow(0, shift > 0 ? shift : 7 + shift, n);
    Tensor want = src.clone();
    dst.copy_(src);
    EXPECT_TRUE(same_bytes(dst, want)) << "shift " << shift;
  }
  Tensor sq = test::random_tensor({40, 40}, DType::F32, -1, 1, 10);
  Tensor want = sq.t().clone();
  sq.copy_(sq.t());
  EXPECT_TRUE(same_bytes(sq, want));
  Tensor same = sq.clone();
  sq.copy_(sq);
  EXPECT_TRUE(same_bytes(sq, same));
  Tensor e = zeros({3}, {DType::F32}).unsqueeze(0).expand({4, 3});
  try {
    e.copy_(ones({4, 3}, {DType::F32}));
    ADD_FAILURE() << "a stride-0 destination was accepted";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("distinct memory"), std::string::npos) << err.what();
  }
}

// The fused in-place kernels (f32/f64 add_, mul_, addcmul_, ...) read each
// operand as it was, like copy_: an operand that is a shifted view of self
// gives the out-of-place result, and an expanded self is refused (as for every
// dtype).
TEST(Copy, InPlaceOpsOnOverlappingOperandsReadThemAsTheyWere) {
  for (DType dt : {DType::F32, DType::F64, DType::I32}) {
    Tensor x = arange(0, 5, 1, {dt});
    Tensor self = x.narrow(0, 1, 4), other = x.narrow(0, 0, 4);
    add_(self, other);
    EXPECT_EQ(x.to(DType::F64).to_vector<double>(), (std::vector<double>{0, 1, 3, 5, 7}))
        << name(dt);
    if (dt != DType::I32) {
      Tensor y = arange(0, 5, 1, {dt});
      Tensor ahead = y.narrow(0, 1, 4);
      addcmul_(ahead, y.narrow(0, 0, 4), y.narrow(0, 0, 4), 1.0);  // y[i+1] += y[i]^2
      EXPECT_EQ(y.to(DType::F64).to_vector<double>(), (std::vector<double>{0, 1, 3, 7, 13}))
          << name(dt);
    }
    Tensor e = zeros({3}, {dt}).unsqueeze(0).expand({4, 3});
    EXPECT_THROW(add_(e, ones({4, 3}, {dt})), Error) << name(dt);
  }
}

// to(dtype) between real types and from f32 to f64 and back, against casts.
TEST(Copy, DtypeConversionsAgainstCasts) {
  Tensor t = test::random_tensor({5, 7}, DType::F64, -50, 50, 7);
  auto v = t.to_vector<double>();
  auto f = t.to(DType::F32).to_vector<float>();
  auto i = t.to(DType::I32).to_vector<int32_t>();
  for (size_t k = 0; k < v.size(); ++k) {
    EXPECT_EQ(f[k], static_cast<float>(v[k]));
    EXPECT_EQ(i[k], static_cast<int32_t>(v[k]));
  }
  auto back = t.to(DType::F32).t().to(DType::F64).t().to_vector<double>();
  for (size_t k = 0; k < v.size(); ++k) EXPECT_EQ(back[k], static_cast<double>(f[k]));
}

// The value with `p` mantissa bits, exponents in [emin, emax] (subnormals
// below emin), nearest to x, ties to even: x scaled to units of the spacing in
// f64 (exact) and rounded there. An independent reference for f16 (10, -14,
// 15) and bf16 (7, -126, 127).
double rounded_reference(double x, int p, int emin, int emax) {
  if (x == 0) return x;
  const double ax = std::fabs(x);
  int e = 0;
  std::frexp(ax, &e);
  const int exponent = std::max(e - 1, emin);
  const double q = std::ldexp(ax, p - exponent), below = std::floor(q), r = q - below;
  const bool odd = std::fmod(below, 2.0) == 1.0;
  const double v = std::ldexp(r > 0.5 || (r == 0.5 && odd) ? below + 1 : below, exponent - p);
  const double out = v >= std::ldexp(1.0, emax + 1) ? INFINITY : v;
  return x < 0 ? -out : out;
}

// f64, c128, i32 and i64 sources convert to f16/bf16 rounded once, as numpy
// does: through f32 rounded to nearest twice, a value just past a half tie
// fell back to the tie's even side (1 + 2^-11 + 2^-40 became f16 1, the i32
// 2^24 + 2^16 + 1 became bf16 2^24). So do full() and a scalar operand.
TEST(Copy, WiderSourcesRoundOnceToHalf) {
  std::vector<double> d;
  for (int e : {-20, -14, -1, 0, 5, 15, 30, 100})
    for (double k : {1.0, 1.5, 3.0, 1023.0})
      for (double off : {0.5, -0.5, 1.5})
        for (double tiny : {0.0, 0x1p-40, -0x1p-40, 0x1p-30})
          for (int p : {10, 7}) d.push_back(std::ldexp(k * std::ldexp(1.0, p) + off + tiny, e - p));
  d.push_back(1 + 0x1p-11 + 0x1p-40);
  d.push_back(2049 + 0x1p-30);
  d.push_back(65520 - 0x1p-30);  // just below f16's overflow tie
  const Tensor src = from_vector(d, {static_cast<int64_t>(d.size())});
  for (DType half : {DType::F16, DType::BF16}) {
    const int p = half == DType::F16 ? 10 : 7, emin = half == DType::F16 ? -14 : -126;
    const int emax = half == DType::F16 ? 15 : 127;
    const std::vector<double> got = src.to(half).to(DType::F64).to_vector<double>();
    const std::vector<double> via_c128 =
        src.to(DType::C128).to(half).to(DType::F64).to_vector<double>();
    for (size_t i = 0; i < d.size(); ++i) {
      const double want = rounded_reference(d[i], p, emin, emax);
      ASSERT_EQ(got[i], want) << name(half) << " " << std::hexfloat << d[i];
      ASSERT_EQ(via_c128[i], want) << name(half) << " c128 " << std::hexfloat << d[i];
      if (std::abs(d[i]) <= 65504 || half == DType::BF16) {  // fill_ refuses past f16's range
        ASSERT_EQ(full({1}, d[i], {half}).to(DType::F64).item(), want) << std::hexfloat << d[i];
      }
      ASSERT_EQ(add(zeros({1}, {half}), d[i]).to(DType::F64).item(), want) << std::hexfloat << d[i];
    }
  }
  // Integers past f32's 24 bits: {value, f16, bf16}.
  struct Whole {
    int64_t v;
    double f16, bf16;
  };
  const double two60 = std::ldexp(1.0, 60);
  for (const Whole& w :
       {Whole{(1 << 24) + (1 << 16) + 1, INFINITY, 16908288.0},
        Whole{(int64_t{1} << 60) + (int64_t{1} << 52) + 1, INFINITY, two60 + std::ldexp(1.0, 53)},
        Whole{2049, 2048, 2048}, Whole{-2051, -2052, -2048},
        Whole{std::numeric_limits<int64_t>::min(), -INFINITY, -std::ldexp(1.0, 63)}}) {
    const Tensor i64 = from_vector(std::vector<int64_t>{w.v}, {1});
    EXPECT_EQ(i64.to(DType::F16).to(DType::F64).item(), w.f16) << w.v;
    EXPECT_EQ(i64.to(DType::BF16).to(DType::F64).item(), w.bf16) << w.v;
    if (w.v == static_cast<int32_t>(w.v)) {
      const Tensor i32 = i64.to(DType::I32);
      EXPECT_EQ(i32.to(DType::F16).to(DType::F64).item(), w.f16) << w.v;
      EXPECT_EQ(i32.to(DType::BF16).to(DType::F64).item(), w.bf16) << w.v;
    }
  }
}

TEST(Copy, PureBackwardMatchesAutograd) {
  Tensor x = test::random_tensor({2, 3}, DType::F64, -1, 1, 125);
  Tensor g32 = test::random_tensor({2, 3}, DType::F32, -1, 1, 126);
  Tensor got = to_dtype_backward(g32, DType::F64);
  EXPECT_EQ(got.dtype(), DType::F64);
  test::expect_same(
      got, test::autograd_grad([](const Tensor& t) { return to_dtype(t, DType::F32); }, x, g32), 0);
  // A complex gradient of a real input keeps its real part.
  Tensor gz = test::random_complex({2, 3}, 127);
  test::expect_same(to_dtype_backward(gz, DType::F64), real(gz), 0);
  test::expect_same(
      to_dtype_backward(gz, DType::F64),
      test::autograd_grad([](const Tensor& t) { return to_dtype(t, DType::C128); }, x, gz), 0);
  test::expect_same(to_device_backward(g32, Device()), g32, 0);
}

// A complex number is true when either part is non-zero (1i was false).
TEST(Copy, ComplexToBoolReadsBothParts) {
  const Tensor z = from_vector(std::vector<c128>{{0, 1}, {0, 0}, {2, 0}});
  EXPECT_EQ(z.to(DType::Bool).to_vector<bool>(), (std::vector<bool>{true, false, true}));
}

// A conversion to the tensor's own dtype or device is the tensor itself (no
// copy), so marking its result requires_grad marks the source, whose next
// conversion is then recorded (not a leaf). The device tests' CPU-vs-device
// helpers convert one source per dtype: they take detach() first, which gives
// a fresh leaf and leaves the source alone (tests/nefi/cuda/operator_parity.h).
TEST(Copy, ASameDtypeConversionIsTheTensorItselfAndDetachGivesAFreshLeaf) {
  const Tensor x = test::random_tensor({3}, DType::F64, -1, 1, 128);
  Tensor same = x.to(DType::F64).to(kCPU);
  EXPECT_TRUE(same.is_same(x));
  same.set_requires_grad(true);
  EXPECT_TRUE(x.requires_grad());
  EXPECT_NE(test::error_of([&] { x.to(DType::F32).set_requires_grad(true); }).find("a leaf tensor"),
            std::string::npos);
  const Tensor y = test::random_tensor({3}, DType::F64, -1, 1, 129);
  for (DType dt : {DType::F64, DType::F32}) {
    Tensor leaf = y.detach().to(dt);
    EXPECT_EQ(test::error_of([&] { leaf.set_requires_grad(true); }), "") << name(dt);
    EXPECT_FALSE(y.requires_grad()) << name(dt);
  }
}

}  // namespace
}  // namespace fk
