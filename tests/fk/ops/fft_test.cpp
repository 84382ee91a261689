#include "fk/ops/fft.h"

#include <cmath>
#include <functional>
#include <optional>
#include <thread>

#include "../test_util.h"
#include "backward_check.h"

namespace fk {
namespace {

using Fn = testing::TensorFn;
using CVec = std::vector<c128>;
constexpr double kPi = 3.14159265358979323846;
constexpr FFTNorm kNorms[] = {FFTNorm::Backward, FFTNorm::Forward, FFTNorm::Ortho};

// --- independent references: O(n^2) sums over row-major arrays ----------------

int64_t inner_of(const Dims& shape, int dim) {
  int64_t inner = 1;
  for (int a = dim + 1; a < shape.size(); ++a) inner *= shape[a];
  return inner;
}

// Unnormalised DFT along `dim` (sign -1 forward, +1 inverse).
CVec dft_along(const CVec& x, const Dims& shape, int dim, int sign) {
  const int64_t n = shape[dim], inner = inner_of(shape, dim);
  CVec y(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const int64_t k = (static_cast<int64_t>(i) / inner) % n;
    const size_t base = i - static_cast<size_t>(k * inner);
    c128 acc = 0;
    for (int64_t j = 0; j < n; ++j) {
      acc += x[base + static_cast<size_t>(j * inner)] *
             std::polar(1.0, sign * 2 * kPi * static_cast<double>(j * k) / static_cast<double>(n));
    }
    y[i] = acc;
  }
  return y;
}

CVec dftn(CVec x, const Dims& shape, const std::vector<int>& dims, int sign) {
  for (int d : dims) x = dft_along(x, shape, d, sign);
  return x;
}

CVec scaled(CVec x, double s) {
  for (auto& v : x) v *= s;
  return x;
}

double scale_of(FFTNorm norm, bool inverse, double n) {
  if (norm == FFTNorm::Ortho) return 1 / std::sqrt(n);
  return (norm == FFTNorm::Backward) == inverse ? 1 / n : 1.0;
}

// The first `m` entries along the last dim.
CVec keep_last(const CVec& x, const Dims& shape, int64_t m) {
  CVec y;
  const int64_t last = shape.back();
  for (size_t i = 0; i < x.size(); ++i) {
    if (static_cast<int64_t>(i) % last < m) y.push_back(x[i]);
  }
  return y;
}

// numpy's irfft along the last dim of a [rows, m] array into [rows, n]: the
// DC (and even-n Nyquist) bins count once with their real part, the others twice.
std::vector<double> irfft_rows(const CVec& z, int64_t rows, int64_t m, int64_t n) {
  std::vector<double> y(static_cast<size_t>(rows * n));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t k = 0; k <= n / 2; ++k) {
        const c128 v = k < m ? z[static_cast<size_t>(r * m + k)] : c128(0);
        const double w = (k == 0 || 2 * k == n) ? 1.0 : 2.0;
        acc +=
            w * (v * std::polar(1.0, 2 * kPi * static_cast<double>(j * k) / static_cast<double>(n)))
                    .real();
      }
      y[static_cast<size_t>(r * n + j)] = acc;
    }
  }
  return y;
}

CVec values(const Tensor& t) {
  return t.to(DType::C128).to_vector<c128>();
}

CVec to_complex(const std::vector<double>& v) {
  return CVec(v.begin(), v.end());
}

void expect_complex_close(const Tensor& t, const CVec& ref, double tol = 1e-10) {
  CVec v = values(t);
  ASSERT_EQ(v.size(), ref.size());
  for (size_t i = 0; i < v.size(); ++i) {
    EXPECT_NEAR(v[i].real(), ref[i].real(), tol) << "at " << i;
    EXPECT_NEAR(v[i].imag(), ref[i].imag(), tol) << "at " << i;
  }
}

// --- values against the naive DFT --------------------------------------------------

TEST(Fft, OneDimMatchesNaiveEveryNorm) {
  for (int64_t n : {1, 5, 8, 12, 7}) {
    Tensor x = test::random_complex({n}, static_cast<unsigned>(n));
    CVec xv = values(x);
    for (FFTNorm norm : kNorms) {
      expect_complex_close(fft(x, -1, -1, norm),
                           scaled(dftn(xv, {n}, {0}, -1), scale_of(norm, false, n)));
      expect_complex_close(ifft(x, -1, 0, norm),
                           scaled(dftn(xv, {n}, {0}, +1), scale_of(norm, true, n)));
    }
  }
}

TEST(Fft, TwoDimMatchesNaiveEveryNorm) {
  for (Dims shape : {Dims{4, 6}, Dims{5, 3}}) {
    Tensor x = test::random_complex(shape, 3);
    CVec xv = values(x);
    const double n = static_cast<double>(shape.numel());
    for (FFTNorm norm : kNorms) {
      expect_complex_close(fft2(x, {}, {-2, -1}, norm),
                           scaled(dftn(xv, shape, {0, 1}, -1), scale_of(norm, false, n)));
      expect_complex_close(ifftn(x, {}, {}, norm),
                           scaled(dftn(xv, shape, {0, 1}, +1), scale_of(norm, true, n)));
      // One dim of two.
      expect_complex_close(fft(x, -1, 0, norm),
                           scaled(dftn(xv, shape, {0}, -1), scale_of(norm, false, shape[0])));
    }
  }
}

TEST(Fft, RfftMatchesNaive) {
  for (Dims shape : {Dims{3, 8}, Dims{4, 7}}) {
    Tensor x = test::random_tensor(shape, DType::F64, -1, 1, 5);
    CVec xv = to_complex(x.to_vector<double>());
    const int64_t m = shape[1] / 2 + 1;
    for (FFTNorm norm : kNorms) {
      Tensor r = rfft(x, -1, -1, norm);
      EXPECT_EQ(r.shape(), (Dims{shape[0], m}));
      EXPECT_EQ(r.dtype(), DType::C128);
      expect_complex_close(
          r,
          keep_last(scaled(dftn(xv, shape, {1}, -1), scale_of(norm, false, shape[1])), shape, m));
      Tensor r2 = rfftn(x, {}, {}, norm);
      expect_complex_close(
          r2, keep_last(scaled(dftn(xv, shape, {0, 1}, -1), scale_of(norm, false, shape.numel())),
                        shape, m));
    }
  }
}

TEST(Fft, IrfftMatchesNaive) {
  // Arbitrary (non-Hermitian) spectra: numpy's definition decides what counts.
  for (int64_t n : {8, 7}) {
    const int64_t m = n / 2 + 1;
    Tensor z = test::random_complex({3, m}, 9);
    for (FFTNorm norm : kNorms) {
      std::vector<double> ref = irfft_rows(values(z), 3, m, n);
      for (double& v : ref) v *= scale_of(norm, true, n);
      Tensor y = irfft(z, n, -1, norm);
      EXPECT_EQ(y.shape(), (Dims{3, n}));
      EXPECT_EQ(y.dtype(), DType::F64);
      test::expect_close(y, ref, 1e-10);
    }
  }
  // Default n = 2(m-1).
  Tensor z = test::random_complex({5}, 2);
  EXPECT_EQ(irfft(z).shape(), (Dims{8}));
  test::expect_close(irfft(z, -1, -1, FFTNorm::Forward), irfft_rows(values(z), 1, 5, 8), 1e-10);
}

TEST(Fft, IrfftnIsInverseAlongLeadingDimsThenIrfft) {
  for (int64_t n : {6, 5}) {
    const int64_t rows = 4, m = n / 2 + 1;
    Tensor z = test::random_complex({rows, m}, 13);
    CVec lead = dftn(values(z), {rows, m}, {0}, +1);
    std::vector<double> ref = irfft_rows(lead, rows, m, n);
    for (FFTNorm norm : kNorms) {
      std::vector<double> r = ref;
      for (double& v : r) v *= scale_of(norm, true, static_cast<double>(rows * n));
      test::expect_close(irfftn(z, {rows, n}, {}, norm), r, 1e-10);
      test::expect_close(irfft2(z, {rows, n}, {0, 1}, norm), r, 1e-10);
    }
  }
}

// --- round trips, layouts, padding ------------------------------------------------

TEST(Fft, RoundTrips) {
  Tensor x = test::random_complex({3, 5, 4}, 21);
  for (FFTNorm norm : kNorms) {
    expect_complex_close(ifft(fft(x, -1, 1, norm), -1, 1, norm), values(x));
    expect_complex_close(ifftn(fftn(x, {}, {}, norm), {}, {}, norm), values(x));
  }
  Tensor r = test::random_tensor({4, 7}, DType::F64, -1, 1, 22);
  for (FFTNorm norm : kNorms) {
    test::expect_close(irfft(rfft(r, -1, -1, norm), 7, -1, norm), r.to_vector<double>(), 1e-12);
    test::expect_close(irfftn(rfftn(r, {}, {}, norm), {4, 7}, {}, norm), r.to_vector<double>(),
                       1e-12);
    // The halved dim first.
    test::expect_close(irfftn(rfftn(r, {}, {1, 0}, norm), {7, 4}, {1, 0}, norm),
                       r.to_vector<double>(), 1e-12);
  }
}

TEST(Fft, NonContiguousInputs) {
  Tensor base = test::random_complex({6, 5}, 31);
  Tensor t = base.t();                 // [5, 6], strided
  Tensor s = base.slice(0, 0, 6, 2);   // [3, 5], every other row
  Tensor s2 = base.slice(1, 1, 5, 2);  // [6, 2], strided columns, offset start
  for (const Tensor& v : {t, s, s2}) {
    expect_complex_close(fft(v), values(fft(v.contiguous())));
    expect_complex_close(fftn(v), values(fftn(v.contiguous())));
    expect_complex_close(ifft(v, -1, 0), values(ifft(v.contiguous(), -1, 0)));
    expect_complex_close(irfftn(v), values(irfftn(v.contiguous())));
    expect_complex_close(irfft(v, 5, 0), values(irfft(v.contiguous(), 5, 0)));
  }
  Tensor rb = test::random_tensor({6, 5}, DType::F64, -1, 1, 32);
  for (const Tensor& v : {rb.t(), rb.slice(0, 1, 6, 2), rb.slice(1, 1, 5, 1)}) {
    expect_complex_close(rfft(v), values(rfft(v.contiguous())));
    expect_complex_close(rfftn(v), values(rfftn(v.contiguous())));
    expect_complex_close(rfft(v, -1, 0), values(rfft(v.contiguous(), -1, 0)));
  }
  // The input is never modified (complex-to-real transforms destroy theirs).
  CVec before = values(t);
  (void)irfftn(t);
  (void)irfft(t);
  expect_complex_close(t, before, 0);
}

TEST(Fft, BatchDims) {
  Tensor x = test::random_complex({2, 3, 5}, 41);
  CVec xv = values(x);
  expect_complex_close(fft(x, -1, 1), dftn(xv, {2, 3, 5}, {1}, -1));
  expect_complex_close(fftn(x, {}, {0, 2}), dftn(xv, {2, 3, 5}, {0, 2}, -1));
  // Each batch element alone gives the same.
  Tensor y = fft(x, -1, 1);
  for (int64_t b = 0; b < 2; ++b) {
    expect_complex_close(y.select(0, b), values(fft(x.select(0, b).contiguous(), -1, 0)));
  }
  // A broadcast (stride 0) batch dim.
  Tensor row = test::random_complex({1, 5}, 42);
  Tensor e = row.expand({3, 5});
  Tensor ye = fft(e);
  for (int64_t b = 0; b < 3; ++b)
    expect_complex_close(ye.select(0, b), values(fft(row.select(0, 0))));
}

TEST(Fft, PaddingAndTruncation) {
  Tensor x = test::random_complex({2, 5}, 51);
  CVec xv = values(x);
  // n = 8 pads with zeros.
  CVec padded(16, 0);
  for (int r = 0; r < 2; ++r)
    for (int j = 0; j < 5; ++j) padded[r * 8 + j] = xv[r * 5 + j];
  expect_complex_close(fft(x, 8), dftn(padded, {2, 8}, {1}, -1));
  // n = 3 truncates.
  CVec cut;
  for (int r = 0; r < 2; ++r)
    for (int j = 0; j < 3; ++j) cut.push_back(xv[r * 5 + j]);
  expect_complex_close(ifft(x, 3), scaled(dftn(cut, {2, 3}, {1}, +1), 1.0 / 3));
  // s pads one dim and truncates the other.
  CVec mixed(3 * 4, 0);
  for (int r = 0; r < 2; ++r)
    for (int j = 0; j < 4; ++j) mixed[r * 4 + j] = xv[r * 5 + j];
  expect_complex_close(fftn(x, {3, 4}), dftn(mixed, {3, 4}, {0, 1}, -1));
  // rfft with n, irfft with n shorter and longer than 2(m-1).
  Tensor r = test::random_tensor({5}, DType::F64, -1, 1, 52);
  const std::vector<double> rv = r.to_vector<double>();
  CVec rpad(8, 0);
  for (int j = 0; j < 5; ++j) rpad[j] = rv[j];
  expect_complex_close(rfft(r, 8), keep_last(dftn(rpad, {8}, {0}, -1), {8}, 5));
  CVec rcut(rv.begin(), rv.begin() + 3);
  expect_complex_close(rfft(r, 3), keep_last(dftn(rcut, {3}, {0}, -1), {3}, 2));
  Tensor z = test::random_complex({4}, 53);
  // n = 4 keeps 3 bins, n = 11 pads to 6.
  test::expect_close(irfft(z, 4, 0, FFTNorm::Forward), irfft_rows(values(z), 1, 4, 4), 1e-12);
  test::expect_close(irfft(z, 11, 0, FFTNorm::Forward), irfft_rows(values(z), 1, 4, 11), 1e-12);
}

TEST(Fft, DtypesAndPrecision) {
  Tensor x64 = test::random_tensor({6, 10}, DType::F64, -1, 1, 61);
  Tensor x32 = x64.to(DType::F32);
  EXPECT_EQ(fft(x32).dtype(), DType::C64);
  EXPECT_EQ(fft(x64).dtype(), DType::C128);
  EXPECT_EQ(fft(x64.to(DType::F16)).dtype(), DType::C64);
  EXPECT_EQ(rfft(x64.to(DType::BF16)).dtype(), DType::C64);
  EXPECT_EQ(irfft(rfft(x32)).dtype(), DType::F32);
  // Real input to fft is the complex transform of (x + 0i).
  expect_complex_close(fft(x64), values(fft(x64.to(DType::C128))));
  // f32 agrees with f64 to single precision.
  expect_complex_close(fftn(x32), values(fftn(x64)), 1e-4);
  expect_complex_close(rfftn(x32), values(rfftn(x64)), 1e-4);
  Tensor z = test::random_complex({6, 6}, 62);
  test::expect_close(irfftn(z.to(DType::C64)), irfftn(z).to_vector<double>(), 1e-5);
  expect_complex_close(ifft(z.to(DType::C64)), values(ifft(z)), 1e-5);
  // Half input: computed in f32 from the rounded values.
  Tensor h = x64.to(DType::F16);
  expect_complex_close(fft(h), values(fft(h.to(DType::F32))), 0);
}

TEST(Fft, IntegerInputIsComputedInF32) {
  Tensor i = arange(6);
  EXPECT_EQ(fft(i).dtype(), DType::C64);
  expect_complex_close(fft(i), values(fft(i.to(DType::F64))), 1e-5);
  EXPECT_EQ(rfft(i).dtype(), DType::C64);
}

TEST(Fft, ConcurrentCallsPlanSafely) {
  // Plans are made under a lock; executing them needs none.
  fft_clear_plan_cache();
  std::vector<Tensor> inputs;
  std::vector<CVec> expected;
  for (int t = 0; t < 4; ++t) {
    inputs.push_back(test::random_complex({3, 5 + t}, 130 + t));
    expected.push_back(dftn(values(inputs.back()), {3, 5 + t}, {0, 1}, -1));
  }
  std::vector<int> bad(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 20; ++rep) {
        CVec v = values(fftn(inputs[t]));
        for (size_t i = 0; i < v.size(); ++i) bad[t] += std::abs(v[i] - expected[t][i]) > 1e-10;
        (void)irfftn(inputs[(t + rep) % 4]);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad, std::vector<int>(4, 0));
}

TEST(Fft, EmptyBatch) {
  Tensor x = zeros({0, 4}, {DType::C128});
  EXPECT_EQ(fft(x).shape(), (Dims{0, 4}));
  EXPECT_EQ(irfft(x).shape(), (Dims{0, 6}));
}

// --- autograd -----------------------------------------------------------------------

TEST(Fft, GradcheckComplexTransforms) {
  Tensor z = test::random_complex({3, 4}, 71).set_requires_grad(true);
  Tensor r = test::random_tensor({3, 4}, DType::F64, -1, 1, 72).set_requires_grad(true);
  for (FFTNorm norm : kNorms) {
    for (int64_t n : {-1, 3, 6}) {
      Fn f = [=](const std::vector<Tensor>& in) { return fft(in[0], n, -1, norm); };
      EXPECT_GRADCHECK(f, (std::vector<Tensor>{z}));
      EXPECT_GRADCHECK(f, (std::vector<Tensor>{r}));  // real input, complex output
      Fn g = [=](const std::vector<Tensor>& in) { return ifft(in[0].t(), n, 0, norm); };
      EXPECT_GRADCHECK(g, (std::vector<Tensor>{z}));
    }
    Fn fn = [=](const std::vector<Tensor>& in) { return fftn(in[0], {2, 5}, {1, 0}, norm); };
    EXPECT_GRADCHECK(fn, (std::vector<Tensor>{z}));
    Fn ifn = [=](const std::vector<Tensor>& in) { return ifftn(in[0].t(), {}, {}, norm); };
    EXPECT_GRADCHECK(ifn, (std::vector<Tensor>{z}));
    EXPECT_GRADCHECK(ifn, (std::vector<Tensor>{r}));
  }
}

TEST(Fft, GradcheckRfft) {
  Tensor r = test::random_tensor({3, 5}, DType::F64, -1, 1, 81).set_requires_grad(true);
  for (FFTNorm norm : kNorms) {
    for (int64_t n : {-1, 4, 6, 7}) {
      Fn f = [=](const std::vector<Tensor>& in) { return rfft(in[0], n, -1, norm); };
      EXPECT_GRADCHECK(f, (std::vector<Tensor>{r}));
      Fn g = [=](const std::vector<Tensor>& in) { return rfft(in[0].t(), n, 0, norm); };
      EXPECT_GRADCHECK(g, (std::vector<Tensor>{r}));
    }
    for (std::vector<int64_t> s : {std::vector<int64_t>{}, {4, 4}, {2, 7}}) {
      Fn f = [=](const std::vector<Tensor>& in) { return rfftn(in[0], s, {}, norm); };
      EXPECT_GRADCHECK(f, (std::vector<Tensor>{r}));
    }
    Fn f = [=](const std::vector<Tensor>& in) { return rfftn(in[0], {}, {1, 0}, norm); };
    EXPECT_GRADCHECK(f, (std::vector<Tensor>{r}));
  }
}

TEST(Fft, GradcheckIrfft) {
  Tensor z = test::random_complex({3, 4}, 91).set_requires_grad(true);
  for (FFTNorm norm : kNorms) {
    for (int64_t n : {-1, 5, 7, 4, 3, 10}) {
      Fn f = [=](const std::vector<Tensor>& in) { return irfft(in[0], n, -1, norm); };
      EXPECT_GRADCHECK(f, (std::vector<Tensor>{z}));
    }
    Fn g = [=](const std::vector<Tensor>& in) { return irfft(in[0].t(), 5, 0, norm); };
    EXPECT_GRADCHECK(g, (std::vector<Tensor>{z}));
    for (std::vector<int64_t> s : std::vector<std::vector<int64_t>>{{}, {3, 7}, {4, 5}, {2, 4}}) {
      Fn f = [=](const std::vector<Tensor>& in) { return irfftn(in[0], s, {}, norm); };
      EXPECT_GRADCHECK(f, (std::vector<Tensor>{z}));
    }
    Fn f = [=](const std::vector<Tensor>& in) { return irfftn(in[0].t(), {}, {1, 0}, norm); };
    EXPECT_GRADCHECK(f, (std::vector<Tensor>{z}));
  }
}

TEST(Fft, GradcheckThreeDimsWithBatch) {
  Tensor z = test::random_complex({2, 3, 4}, 95).set_requires_grad(true);
  Tensor r = test::random_tensor({2, 3, 4}, DType::F64, -1, 1, 96).set_requires_grad(true);
  Fn a = [](const std::vector<Tensor>& in) { return fftn(in[0], {}, {0, 2}); };
  EXPECT_GRADCHECK(a, (std::vector<Tensor>{z}));
  Fn b = [](const std::vector<Tensor>& in) { return rfftn(in[0], {}, {2, 0}, FFTNorm::Ortho); };
  EXPECT_GRADCHECK(b, (std::vector<Tensor>{r}));
  Fn c = [](const std::vector<Tensor>& in) { return irfftn(in[0], {2, 3, 5}); };
  EXPECT_GRADCHECK(c, (std::vector<Tensor>{z}));
  // A chain through both real transforms.
  Fn d = [](const std::vector<Tensor>& in) { return irfft2(mul(rfft2(in[0]), in[1])); };
  EXPECT_GRADCHECK(
      d, (std::vector<Tensor>{r, test::random_complex({2, 3, 3}, 97).set_requires_grad(true)}));
}

TEST(Fft, SinglePrecisionRealInputGetsRealGradient) {
  // F^H 1 = n * delta: only the first element of x sees the all-ones seed.
  Tensor x = ones({4}, {DType::F32}).set_requires_grad(true);
  fft(x).backward(full({4}, c128(1, 0), {DType::C64}));
  EXPECT_EQ(x.grad().dtype(), DType::F32);
  test::expect_close(x.grad(), {4, 0, 0, 0}, 1e-6);
  Tensor r = ones({6}, {DType::F32}).set_requires_grad(true);
  irfft(rfft(r), 6).backward(ones({6}, {DType::F32}));  // the identity's gradient
  test::expect_close(r.grad(), {1, 1, 1, 1, 1, 1}, 1e-6);
}

// A half input that is not a leaf gets a half gradient (computed in f32, as
// the forward): the node before it saw f32 before.
TEST(Fft, HalfNonLeafInputGetsItsOwnDtype) {
  for (DType dt : {DType::F16, DType::BF16}) {
    Tensor x = ones({8}, {dt}).set_requires_grad(true);
    Tensor y = x * 2.0;  // a non-leaf of dtype dt
    auto loss_of = [](const Tensor& v) {
      return sum(abs(rfft(v))) + sum(dct(v, DctType::II)) + sum(real(fft(v)));
    };
    const Tensor gy = autograd::grad({loss_of(y)}, {Tensor()}, {y}, true)[0];
    EXPECT_EQ(gy.dtype(), dt) << name(dt);
    const Tensor ref = autograd::grad({loss_of(y.to(DType::F32))}, {Tensor()}, {y})[0];
    test::expect_close(gy.to(DType::F32), ref.to(DType::F32).to_vector<double>(),
                       dt == DType::F16 ? 1e-2 : 1e-1);
  }
}

TEST(Fft, AdjointDotTest) {
  // <F x, y> = <x, F^H y>, with F^H y both from the unscaled inverse and from autograd.
  Tensor x = test::random_complex({4, 3, 5}, 101);
  Tensor y = test::random_complex({4, 6, 5}, 102);
  const std::vector<int64_t> s{6, 5}, dims{1, 2};
  auto dot = [](const Tensor& a, const Tensor& b) {
    CVec av = values(a), bv = values(b);
    c128 acc = 0;
    for (size_t i = 0; i < av.size(); ++i) acc += std::conj(av[i]) * bv[i];
    return acc;
  };
  for (FFTNorm norm : kNorms) {
    c128 lhs = dot(fftn(x, s, dims, norm), y);
    // F = c * F_unnorm * pad; F^H = c * N * ifft_backward-normed, then truncate.
    const double c = scale_of(norm, false, 30);
    Tensor fhy = mul(ifftn(y, {}, dims, FFTNorm::Forward), c).narrow(1, 0, 3);
    c128 rhs = dot(x, fhy);
    EXPECT_NEAR(lhs.real(), rhs.real(), 1e-10);
    EXPECT_NEAR(lhs.imag(), rhs.imag(), 1e-10);
    Tensor xg = x.clone().set_requires_grad(true);
    Tensor vjp = autograd::grad({fftn(xg, s, dims, norm)}, {y}, {xg})[0];
    expect_complex_close(vjp, values(fhy));
  }
}

// --- errors, plans, knobs ----------------------------------------------------------

TEST(Fft, Errors) {
  Tensor x = test::random_complex({3, 4}, 1);
  Tensor r = test::random_tensor({3, 4});
  EXPECT_THROW(fft(x, -1, 2), Error);
  EXPECT_THROW(fft(x, -1, -3), Error);
  EXPECT_THROW(rfft(x), Error);
  EXPECT_THROW(rfftn(x), Error);
  EXPECT_THROW(fft(x, 0), Error);
  EXPECT_THROW(ifft(x, -2), Error);
  EXPECT_THROW(fftn(x, {3, 0}), Error);
  EXPECT_THROW(fftn(x, {}, {0, -2}), Error);                 // duplicate dims
  EXPECT_THROW(fftn(x, {3}, {0, 1}), Error);                 // one size for two dims
  EXPECT_THROW(fftn(x, {2, 2, 2}), Error);                   // more sizes than dims
  EXPECT_THROW(irfft(test::random_complex({3, 1})), Error);  // default n = 0
  EXPECT_THROW(fft(scalar_tensor(1.0)), Error);
  EXPECT_THROW(fft(ones({3}, {DType::Bool})), Error);
  try {
    rfft(x);
    FAIL() << "rfft of a complex tensor must throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("c128"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("rfft"), std::string::npos) << e.what();
  }
  try {
    fftn(r, {}, {1, -1});
    FAIL() << "duplicate dims must throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[1, -1]"), std::string::npos) << e.what();
  }
  try {
    fft(r, 0);
    FAIL() << "n = 0 must throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[0]"), std::string::npos) << e.what();
  }
}

TEST(Fft, PlanCacheReusesPlans) {
  Tensor x = test::random_tensor({8, 6}, DType::F32, -1, 1, 111);
  (void)irfftn(rfftn(x));
  const int64_t plans = fft_plan_cache_size();
  const int64_t launches = profile::counters().launches;
  for (int i = 0; i < 3; ++i) (void)irfftn(rfftn(x));
  EXPECT_EQ(fft_plan_cache_size(), plans);
  // One FFTW call per transform.
  EXPECT_EQ(profile::counters().launches - launches, 3 * 2);
  fft_clear_plan_cache();
  EXPECT_EQ(fft_plan_cache_size(), 0);
  test::expect_close(irfftn(rfftn(x)), x.to_vector<double>(), 1e-5);
}

TEST(Fft, MeasurePlannerGivesSameResults) {
  Tensor z = test::random_complex({3, 10}, 121);
  Tensor zs = z.slice(1, 1, 10);  // a view at an offset: another alignment class
  CVec ref = values(fft(zs));
  std::vector<double> ref_r = irfftn(z).to_vector<double>();
  fft_clear_plan_cache();
  {
    KnobOverride measure("FK_FFTW_PLANNER", "measure");
    CVec zv = values(z);
    expect_complex_close(fft(zs), ref);
    test::expect_close(irfftn(z), ref_r, 1e-12);
    expect_complex_close(z, zv, 0);  // measuring planned on scratch, not on z
  }
  // An unknown effort is refused by the knob itself.
  EXPECT_THROW(KnobOverride("FK_FFTW_PLANNER", "fastest"), Error);
  fft_clear_plan_cache();
}

// The exposed backward of each kind against autograd, with padding and
// truncation, a real input to fft and the default lengths.
TEST(Fft, PureBackwardMatchesAutograd) {
  Tensor z = test::random_complex({3, 6}, 111);
  Tensor x = test::random_tensor({3, 6}, DType::F64, -1, 1, 112);
  struct Case {
    FFTKind kind;
    Tensor in;
    std::vector<int64_t> s, dims;
    FFTNorm norm;
  };
  const std::vector<Case> cases = {{FFTKind::Fft, z, {8}, {1}, FFTNorm::Backward},
                                   {FFTKind::Ifft, z, {4}, {0}, FFTNorm::Ortho},
                                   {FFTKind::Fft, x, {}, {}, FFTNorm::Forward},
                                   {FFTKind::Rfft, x, {5}, {-1}, FFTNorm::Ortho},
                                   {FFTKind::Rfft, x, {}, {0, 1}, FFTNorm::Backward},
                                   {FFTKind::Irfft, z, {10}, {1}, FFTNorm::Backward},
                                   {FFTKind::Irfft, z, {}, {0, 1}, FFTNorm::Forward}};
  for (size_t k = 0; k < cases.size(); ++k) {
    const Case& c = cases[k];
    auto f = [&](const Tensor& t) {
      switch (c.kind) {
        case FFTKind::Fft:
          return fftn(t, c.s, c.dims, c.norm);
        case FFTKind::Ifft:
          return ifftn(t, c.s, c.dims, c.norm);
        case FFTKind::Rfft:
          return rfftn(t, c.s, c.dims, c.norm);
        default:
          return irfftn(t, c.s, c.dims, c.norm);
      }
    };
    Tensor out = f(c.in);
    Tensor g = is_complex(out.dtype()) ? test::random_complex(out.shape(), 113)
                                       : test::random_tensor(out.shape(), DType::F64, -1, 1, 113);
    Tensor got = fft_backward(c.kind, g, c.in.shape(), c.in.dtype(), c.s, c.dims, c.norm);
    EXPECT_EQ(got.dtype(), c.in.dtype()) << "case " << k;
    test::expect_same(got, test::autograd_grad(f, c.in, g), 1e-12);
  }
  // The 1-D forms: s = {n}, dims = {dim}; fft's adjoint is n ifft.
  Tensor g = test::random_complex({3, 6}, 114);
  test::expect_same(fft_backward(FFTKind::Fft, g, z.shape(), z.dtype(), {-1}, {1}),
                    mul(ifft(g, -1, 1), 6.0), 1e-13);
  EXPECT_THROW(fft_backward(FFTKind::Rfft, g, z.shape(), z.dtype(), {-1}, {1}), Error);
  // A gradient not of the output's shape is refused (one broadcast to [3, 8]
  // for an [8] input was transformed along dim 0; a short one padded), and the
  // result has x's dtype (an f16 input's came back f32).
  const Tensor g8 = test::random_complex({8}, 115);
  for (const Tensor& bad : {g8.expand({3, 8}), g8.narrow(0, 0, 5)}) {
    try {
      fft_backward(FFTKind::Fft, bad, Dims{8}, DType::C128, {-1}, {0});
      ADD_FAILURE() << bad.shape().str() << ": no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("output's shape [8]"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(fft_backward(FFTKind::Rfft, g8, Dims{8}, DType::F64, {-1}, {0}), Error);
  EXPECT_EQ(
      fft_backward(FFTKind::Rfft, g8.narrow(0, 0, 5).to(DType::C64), Dims{8}, DType::F16, {-1}, {0})
          .dtype(),
      DType::F16);
}

// A 0-d input has no dim to transform: dim 0 / -1, which reductions accept for
// a scalar, read a size the shape does not have (a wrong 0-d result or a crash).
TEST(Fft, ZeroDimInputsAreRefused) {
  const Tensor s = scalar_tensor(1.5, {DType::F64});
  for (const auto& f :
       std::vector<std::function<Tensor()>>{[&] { return fft(s, 4); }, [&] { return rfft(s, 4); },
                                            [&] { return irfft(s, 4); }, [&] { return fft(s); }}) {
    try {
      f();
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("a 0-d input"), std::string::npos) << e.what();
    }
  }
}

// Sizes whose product passes 2^63 bytes are refused where the tensor is made
// ([2^32, 2^32] wrapped to an empty tensor, [2^62] of c128 to a division by 0),
// as is an FFT padded to such a length.
TEST(Fft, ShapesPastTheAddressableBytesAreRefused) {
  EXPECT_THROW(empty({int64_t{1} << 32, int64_t{1} << 32}, {DType::C64}), Error);
  EXPECT_THROW(zeros({int64_t{1} << 62}, {DType::C128}), Error);
  EXPECT_EQ(empty({int64_t{1} << 40, 0}, {DType::C128}).numel(), 0);
  EXPECT_THROW(fft(test::random_complex({8}, 116), int64_t{1} << 62), Error);
}

}  // namespace
}  // namespace fk
