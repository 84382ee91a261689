#include "fk/ops/reduce.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "../test_util.h"
#include "fk/cpu_isa.h"
#include "fk/knobs.h"
#include "fk/thread_count.h"
#include "reduce/reference.h"

namespace fk {
namespace {

using namespace reduce_ref;

// Checks every reduction's values against the plain loops, for the input `x`
// (any layout) whose row-major elements are `v` with `shape`.
void check_values(const Tensor& x, const std::vector<double>& v, const std::vector<int64_t>& shape,
                  const std::string& label) {
  for (const DimsCase& c : dims_cases()) {
    auto gs = groups(v, shape, c.reduced);
    for (bool keepdim : {false, true}) {
      SCOPED_TRACE(label + " dims " + c.dims.str() + (keepdim ? " keepdim" : ""));
      Dims shp = expected_shape(shape, c.reduced, keepdim);
      Tensor s = sum(x, c.dims, keepdim);
      EXPECT_EQ(s.shape(), shp);
      test::expect_close(s, fold(gs, ref_sum), 1e-12);
      test::expect_close(mean(x, c.dims, keepdim),
                         fold(gs, [](const Group& g) { return ref_sum(g) / g.size(); }), 1e-12);
      test::expect_close(prod(x, c.dims, keepdim), fold(gs, ref_prod), 1e-12);
      Tensor mx = amax(x, c.dims, keepdim);
      EXPECT_EQ(mx.shape(), shp);
      test::expect_close(mx, fold(gs, ref_max), 0);
      test::expect_close(amin(x, c.dims, keepdim), fold(gs, ref_min), 0);
      for (double p : {1.0, 2.0, 3.0, 0.5, std::numeric_limits<double>::infinity()}) {
        Tensor n = norm(x, p, c.dims, keepdim);
        EXPECT_EQ(n.shape(), shp);
        test::expect_close(n, fold(gs, [p](const Group& g) { return ref_norm(g, p); }), 1e-9);
      }
      for (int corr : {0, 1}) {
        test::expect_close(var(x, c.dims, corr, keepdim),
                           fold(gs, [corr](const Group& g) { return ref_var(g, corr); }), 1e-12);
      }
      test::expect_close(fk::std(x, c.dims, 1, keepdim),
                         fold(gs, [](const Group& g) { return std::sqrt(ref_var(g, 1)); }), 1e-12);
      Tensor l = logsumexp(x, c.dims, keepdim);
      EXPECT_EQ(l.shape(), shp);
      test::expect_close(l, fold(gs, ref_lse), 1e-12);
    }
  }
}

TEST(Reduce, ValuesMatchLoopsOn3D) {
  std::vector<int64_t> shape{3, 4, 5};
  Tensor x = test::random_tensor({3, 4, 5}, DType::F64, -1.5, 1.5, 3);
  check_values(x, x.to_vector<double>(), shape, "contiguous");
  // A transposed view (reduced dims become innermost after a free permutation,
  // or a copy) and a sliced one.
  Tensor base = test::random_tensor({5, 4, 3}, DType::F64, -1.5, 1.5, 4);
  Tensor xt = base.permute({2, 1, 0});
  check_values(xt, xt.contiguous().to_vector<double>(), shape, "permuted");
  Tensor big = test::random_tensor({3, 8, 5}, DType::F64, -1.5, 1.5, 5);
  Tensor xs = big.slice(1, 1, 8, 2);
  check_values(xs, xs.contiguous().to_vector<double>(), shape, "sliced");
}

TEST(Reduce, LongRowsAndColumnsAreSplitIntoBlocks) {
  // Longer than one reduction block: per-block partials merged in order.
  const int64_t n = 70001;
  Tensor x = test::random_tensor({n, 3}, DType::F64, -2, 2, 9);
  auto v = x.to_vector<double>();
  for (int64_t c : {0, 1, 2}) {  // ties across blocks: the first occurrence wins
    v[static_cast<size_t>(10 * 3 + c)] = 5.0;
    v[static_cast<size_t>(50000 * 3 + c)] = 5.0;
    v[static_cast<size_t>(20 * 3 + c)] = -5.0;
    v[static_cast<size_t>(69000 * 3 + c)] = -5.0;
  }
  x = from_vector(v, {n, 3});
  std::vector<int64_t> shape{n, 3};
  for (const Tensor& in : {x, x.t().contiguous().t()}) {  // columns in place, then rows
    auto gs = groups(v, shape, {true, false});
    test::expect_close(sum(in, {0}), fold(gs, ref_sum), 1e-9);
    test::expect_close(var(in, {0}), fold(gs, [](const Group& g) { return ref_var(g, 1); }), 1e-9);
    test::expect_close(norm(in, 3.0, {0}), fold(gs, [](const Group& g) { return ref_norm(g, 3); }),
                       1e-9);
    test::expect_close(logsumexp(in, {0}), fold(gs, ref_lse), 1e-9);
    test::expect_close(amax(in, {0}), {5, 5, 5}, 0);
    EXPECT_EQ(argmax(in, 0).to_vector<int64_t>(), (std::vector<int64_t>{10, 10, 10}));
    EXPECT_EQ(argmin(in, 0).to_vector<int64_t>(), (std::vector<int64_t>{20, 20, 20}));
    test::expect_close(sum(softmax(in, 0), {0}), {1, 1, 1}, 1e-12);
  }
}

TEST(Reduce, GradcheckEveryReductionOnStridedInputs) {
  Tensor a = test::random_tensor({5, 4, 3}, DType::F64, -1, 1, 31).set_requires_grad(true);
  Tensor pos = test::random_tensor({5, 4, 3}, DType::F64, 0.3, 1.5, 32).set_requires_grad(true);
  // Transposed to [3, 4, 5] and sliced to [3, 2, 5]: neither is contiguous.
  auto tr = [](const Tensor& t) { return t.transpose(0, 2); };
  auto sl = [](const Tensor& t) { return t.transpose(0, 2).slice(1, 0, 4, 2); };
  using View = std::function<Tensor(const Tensor&)>;
  struct Op {
    std::string name;
    std::function<Tensor(const Tensor&, const Dims&, bool)> f;
    bool positive;
  };
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<Op> ops = {
      {"sum", [](const Tensor& t, const Dims& d, bool k) { return sum(t, d, k); }, false},
      {"mean", [](const Tensor& t, const Dims& d, bool k) { return mean(t, d, k); }, false},
      {"prod", [](const Tensor& t, const Dims& d, bool k) { return prod(t, d, k); }, false},
      {"amax", [](const Tensor& t, const Dims& d, bool k) { return amax(t, d, k); }, false},
      {"amin", [](const Tensor& t, const Dims& d, bool k) { return amin(t, d, k); }, false},
      {"norm1", [](const Tensor& t, const Dims& d, bool k) { return norm(t, 1, d, k); }, false},
      {"norm2", [](const Tensor& t, const Dims& d, bool k) { return norm(t, 2, d, k); }, false},
      {"norm3", [](const Tensor& t, const Dims& d, bool k) { return norm(t, 3, d, k); }, false},
      {"norm0.5", [](const Tensor& t, const Dims& d, bool k) { return norm(t, 0.5, d, k); }, true},
      {"norminf", [inf](const Tensor& t, const Dims& d, bool k) { return norm(t, inf, d, k); },
       false},
      {"var", [](const Tensor& t, const Dims& d, bool k) { return var(t, d, 1, k); }, false},
      {"var0", [](const Tensor& t, const Dims& d, bool k) { return var(t, d, 0, k); }, false},
      {"std", [](const Tensor& t, const Dims& d, bool k) { return fk::std(t, d, 1, k); }, false},
      {"logsumexp", [](const Tensor& t, const Dims& d, bool k) { return logsumexp(t, d, k); },
       false},
  };
  for (const Op& op : ops) {
    for (const View& view : {View(tr), View(sl)}) {
      for (const Dims& dims : {Dims{}, Dims{1}, Dims{0, 2}}) {
        Fn f = [&](const std::vector<Tensor>& in) {
          return op.f(view(in[0]), dims, dims.size() == 1);
        };
        EXPECT_GRADCHECK(f, (std::vector<Tensor>{op.positive ? pos : a}))
            << op.name << " " << dims.str();
      }
    }
  }
  for (int d : {0, 1, -1}) {
    Fn mx = [d](const std::vector<Tensor>& in) { return max(in[0].transpose(0, 2), d).first; };
    Fn mn = [d](const std::vector<Tensor>& in) {
      return min(in[0].transpose(0, 2), d, true).first;
    };
    Fn sm = [d](const std::vector<Tensor>& in) { return softmax(in[0].transpose(0, 2), d); };
    Fn lsm = [d](const std::vector<Tensor>& in) { return log_softmax(in[0].transpose(0, 2), d); };
    for (const Fn& f : {mx, mn, sm, lsm}) EXPECT_GRADCHECK(f, (std::vector<Tensor>{a})) << d;
  }
}

TEST(Reduce, ComplexInputs) {
  Tensor z = test::random_complex({3, 4}, 41);
  auto zv = z.to_vector<c128>();
  std::vector<double> s_re, n2, n1, v1;
  for (int i = 0; i < 3; ++i) {
    c128 s = 0;
    double q = 0, a = 0;
    for (int j = 0; j < 4; ++j) {
      s += zv[i * 4 + j];
      q += std::norm(zv[i * 4 + j]);
      a += std::abs(zv[i * 4 + j]);
    }
    double dev = 0;
    for (int j = 0; j < 4; ++j) dev += std::norm(zv[i * 4 + j] - s / 4.0);
    s_re.push_back(s.real());
    n2.push_back(std::sqrt(q));
    n1.push_back(a);
    v1.push_back(dev / 3);
  }
  test::expect_close(real(sum(z, {1})), s_re, 1e-12);
  Tensor n = norm(z, 2, {1});
  EXPECT_EQ(n.dtype(), DType::F64);
  test::expect_close(n, n2, 1e-12);
  test::expect_close(norm(z.to(DType::C64), 1, {1}), n1, 1e-5);
  Tensor v = var(z, {1});
  EXPECT_EQ(v.dtype(), DType::F64);
  test::expect_close(v, v1, 1e-12);

  Tensor zg = test::random_complex({3, 4}, 43).set_requires_grad(true);
  for (double p : {1.0, 2.0, 3.0, std::numeric_limits<double>::infinity()}) {
    Fn f = [p](const std::vector<Tensor>& in) { return norm(in[0].t(), p, {0}); };
    EXPECT_GRADCHECK(f, (std::vector<Tensor>{zg})) << p;
  }
  EXPECT_GRADCHECK((Fn([](const std::vector<Tensor>& in) { return var(in[0].t(), {1}); })),
                   (std::vector<Tensor>{zg}));
  EXPECT_GRADCHECK((Fn([](const std::vector<Tensor>& in) { return prod(in[0].t(), {0}); })),
                   (std::vector<Tensor>{zg}));
  EXPECT_GRADCHECK((Fn([](const std::vector<Tensor>& in) { return mean(in[0], {1}); })),
                   (std::vector<Tensor>{zg}));
}

TEST(Reduce, ResultsDoNotDependOnThreadCount) {
  Tensor x = test::random_tensor({300000}, DType::F32, -1, 1, 61);
  Tensor m = x.reshape({1000, 300});
  auto run = [&] {
    std::vector<std::vector<float>> r;
    r.push_back(sum(x).to_vector<float>());
    r.push_back(sum(m, {0}).to_vector<float>());
    r.push_back(sum(m, {1}).to_vector<float>());
    r.push_back(var(x).to_vector<float>());
    r.push_back(norm(m, 2, {0}).to_vector<float>());
    r.push_back(logsumexp(x, {0}).to_vector<float>());
    r.push_back(logsumexp(m, {0}).to_vector<float>());
    r.push_back(logsumexp(m, {1}).to_vector<float>());
    r.push_back(softmax(m, 0).to_vector<float>());
    r.push_back(softmax(m, 1).to_vector<float>());
    r.push_back(argmax(m, 0).to(DType::F32).to_vector<float>());
    r.push_back(amin(x).to_vector<float>());
    return r;
  };
  std::vector<std::vector<float>> one, two;
  {
    const test::ThreadCount threads(1);
    one = run();
    threads.set(2);
    two = run();
  }
  ASSERT_EQ(one.size(), two.size());
  for (size_t i = 0; i < one.size(); ++i) EXPECT_EQ(one[i], two[i]) << "result " << i;
  // The f32 sum is accumulated in double: close to the exact value.
  double exact = 0;
  for (double v : x.to_vector<double>()) exact += v;
  EXPECT_NEAR(one[0][0], exact, 1e-3);
}

// prod, norm and var over odd-length rows against plain f64 / long double loops.
TEST(Reduce, RowFoldsOfOddLengthMatchPlainLoops) {
  for (int64_t n : {1, 7, 13, 67, 40001}) {
    SCOPED_TRACE("n = " + std::to_string(n));
    Tensor x = test::random_tensor({2, n}, DType::F32, -2, 2, static_cast<unsigned>(7 * n));
    Tensor pos = test::random_tensor({2, n}, DType::F64, 0.999, 1.001, static_cast<unsigned>(n));
    std::vector<float> xv = x.to_vector<float>();
    std::vector<double> pv = pos.to_vector<double>();
    std::vector<double> l1, l2, linf, l3, v, p;
    for (int64_t r = 0; r < 2; ++r) {
      long double a1 = 0, a2 = 0, a3 = 0, ainf = 0, s = 0, pr = 1;
      for (int64_t i = 0; i < n; ++i) {
        long double e = xv[static_cast<size_t>(r * n + i)];
        a1 += std::fabs(e), a2 += e * e, a3 += std::pow(std::fabs(e), 3.0L), s += e;
        ainf = std::max(ainf, std::fabs(e));
        pr *= pv[static_cast<size_t>(r * n + i)];
      }
      long double mean = s / n, ss = 0;
      for (int64_t i = 0; i < n; ++i) {
        long double d = xv[static_cast<size_t>(r * n + i)] - mean;
        ss += d * d;
      }
      l1.push_back(static_cast<double>(a1));
      l2.push_back(static_cast<double>(std::sqrt(a2)));
      l3.push_back(static_cast<double>(std::cbrt(a3)));
      linf.push_back(static_cast<double>(ainf));
      v.push_back(static_cast<double>(ss / n));
      p.push_back(static_cast<double>(pr));
    }
    // f32 results: within a few f32 ulps of the long double value.
    auto near = [](const Tensor& got, const std::vector<double>& want, double rel) {
      std::vector<double> g = got.to_vector<double>();
      ASSERT_EQ(g.size(), want.size());
      for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], want[i], std::fabs(want[i]) * rel);
    };
    near(norm(x, 1, {1}), l1, 2e-7);
    near(norm(x, 2, {1}), l2, 2e-7);
    near(norm(x, 3, {1}), l3, 2e-7);
    EXPECT_EQ(norm(x, std::numeric_limits<double>::infinity(), {1}).to_vector<double>(), linf);
    near(var(x, {1}, 0), v, 2e-7);
    near(prod(pos, {1}), p, 1e-13);
  }
  // A NaN anywhere in a row (any lane or the tail) gives NaN for norm inf.
  for (int64_t at : {0, 5, 8, 12}) {
    std::vector<double> d(13, 1.0);
    d[static_cast<size_t>(at)] = std::nan("");
    EXPECT_TRUE(std::isnan(norm(from_vector(d), std::numeric_limits<double>::infinity()).item()));
  }
}

TEST(Reduce, IntegerAndHalfDtypes) {
  Tensor i = from_vector(std::vector<int32_t>{1, -2, 3, 4, 5, 6}, {2, 3});
  Tensor s = sum(i, {1});
  EXPECT_EQ(s.dtype(), DType::I64);
  EXPECT_EQ(s.to_vector<int64_t>(), (std::vector<int64_t>{2, 15}));
  Tensor p = prod(i, {0});
  EXPECT_EQ(p.dtype(), DType::I64);
  EXPECT_EQ(p.to_vector<int64_t>(), (std::vector<int64_t>{4, -10, 18}));
  Tensor big = full({40}, 3.0, {DType::I32});  // 3^30 overflows i32, not the i64 result
  EXPECT_EQ(prod(big.narrow(0, 0, 30)).to_vector<int64_t>()[0], 205891132094649LL);
  EXPECT_EQ(sum(ones({4}, {DType::Bool})).dtype(), DType::I64);
  for (DType fdt : {DType::I32, DType::I64}) {
    Tensor t = i.to(fdt);
    EXPECT_EQ(mean(t).dtype(), DType::F32);
    test::expect_close(mean(t, {1}), {2.0 / 3, 5}, 1e-6);
    EXPECT_EQ(var(t).dtype(), DType::F32);
    test::expect_close(var(t, {1}), {19.0 / 3, 1}, 1e-5);
    EXPECT_EQ(fk::std(t).dtype(), DType::F32);
    EXPECT_EQ(norm(t).dtype(), DType::F32);
    test::expect_close(norm(t, 1, {0}), {5, 7, 9}, 1e-6);
    EXPECT_EQ(softmax(t, 1).dtype(), DType::F32);
    EXPECT_EQ(logsumexp(t, {1}).dtype(), DType::F32);
    Tensor mx = amax(t, {1});
    EXPECT_EQ(mx.dtype(), fdt);
    EXPECT_EQ(mx.to_vector<int64_t>(), (std::vector<int64_t>{3, 6}));
    EXPECT_EQ(amin(t).to_vector<int64_t>(), (std::vector<int64_t>{-2}));
    EXPECT_EQ(argmin(t, 1).to_vector<int64_t>(), (std::vector<int64_t>{1, 0}));
    EXPECT_EQ(max(t, 0).first.dtype(), fdt);
  }

  Tensor x = test::random_tensor({3, 4, 5}, DType::F64, -2, 2, 71);
  for (DType h : {DType::F16, DType::BF16}) {
    Tensor xh = x.to(h);
    Tensor x32 = xh.to(DType::F64);  // the values the half tensor holds
    double tol = h == DType::F16 ? 5e-3 : 4e-2;
    auto check = [&](const Tensor& got, const Tensor& want, const char* what) {
      EXPECT_EQ(got.dtype(), h) << what;
      test::expect_close(got, want.to_vector<double>(), tol * 4);
    };
    check(sum(xh, {1}), sum(x32, {1}), "sum");
    check(mean(xh, {0, 2}), mean(x32, {0, 2}), "mean");
    check(amax(xh, {2}), amax(x32, {2}), "amax");
    check(norm(xh, 2, {1}), norm(x32, 2, {1}), "norm");
    check(var(xh, {1}), var(x32, {1}), "var");
    check(softmax(xh, 1), softmax(x32, 1), "softmax");
    check(log_softmax(xh, 0), log_softmax(x32, 0), "log_softmax");
    check(logsumexp(xh, {2}), logsumexp(x32, {2}), "logsumexp");
    check(max(xh, 1).first, max(x32, 1).first, "max");
    EXPECT_EQ(argmax(xh, 2).to_vector<int64_t>(), argmax(x32, 2).to_vector<int64_t>());
    Tensor hg = xh.clone().set_requires_grad(true);
    sum(softmax(hg, 1)).backward();
    EXPECT_EQ(hg.grad().dtype(), h);
  }
}

// Bool reduces as false < true: the first true (max) or false (min), ties
// (all equal) at index 0; max/min values stay bool. A CUDA device follows
// (ReduceOps parity rows *_of_bool).
TEST(Reduce, ArgAndExtremesOfBoolFindTheFirstTrueOrFalse) {
  const Tensor m = gt(from_vector(std::vector<double>{0, 0, 0, 0, 1, 1, 1, 1, 1, 0, 0, 1}, {3, 4}),
                      scalar_tensor(0.5, {DType::F64}));
  ASSERT_EQ(m.dtype(), DType::Bool);
  EXPECT_EQ(argmax(m, 1).to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(argmin(m, 1).to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 1}));
  EXPECT_EQ(argmax(m, 0).to_vector<int64_t>(), (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_EQ(argmin(m, 0).to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 0, 0}));
  const auto [mx, mi] = max(m, 1);
  EXPECT_EQ(mx.dtype(), DType::Bool);
  EXPECT_EQ(mx.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 1}));
  EXPECT_EQ(mi.to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(min(m, 1).first.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 0}));
}

TEST(Reduce, ErrorPaths) {
  Tensor x = ones({2, 3, 4});
  try {
    sum(x, {3});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("got 3"), std::string::npos) << e.what();
  }
  try {
    amax(x, {0, -3});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("distinct"), std::string::npos) << e.what();
  }
  EXPECT_THROW(mean(x, {1, 1}), Error);
  EXPECT_THROW(var(x, {-4}), Error);
  EXPECT_THROW(softmax(x, 3), Error);
  EXPECT_THROW(max(x, -4), Error);
  Tensor z = test::random_complex({3});
  try {
    argmax(z, 0);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("c128"), std::string::npos) << e.what();
  }
  EXPECT_THROW(amax(z), Error);
  EXPECT_THROW(max(z, 0), Error);
  EXPECT_THROW(softmax(z, 0), Error);
  EXPECT_THROW(logsumexp(z, {0}), Error);
  EXPECT_THROW(norm(x, 0.0), Error);
  EXPECT_THROW(norm(x, -1.0), Error);
  EXPECT_THROW(amax(ones({2, 0}), {1}), Error);  // no elements to take the max of
  EXPECT_EQ(sum(ones({2, 0}), {1}).to_vector<double>(), (std::vector<double>{0, 0}));
  EXPECT_EQ(prod(ones({2, 0}), {1}).to_vector<double>(), (std::vector<double>{1, 1}));
}

// The mean and variance of nothing are NaN (0 / 0), as torch's: a 0 would pass
// for a value computed from data.
TEST(Reduce, MeanAndVarianceOfNoElementsAreNan) {
  for (DType dt : {DType::F64, DType::F32, DType::BF16, DType::I32}) {
    const Tensor e = ones({2, 0}, {dt});
    for (const Tensor& r : {mean(e, {1}), var(e, {1}), fk::std(e, {1}), mean(ones({0}, {dt}))}) {
      for (double v : r.to_vector<double>()) EXPECT_TRUE(std::isnan(v)) << name(dt);
    }
    EXPECT_EQ(mean(e, {0}).numel(), 0);
  }
  Tensor x = ones({3, 0}, {DType::F64}).set_requires_grad(true);
  sum(mean(x, {1})).backward();  // the gradient of an empty input is empty, not NaN
  EXPECT_EQ(x.grad().shape(), (Dims{3, 0}));
}

// Integer inputs are reduced exactly and rounded once to the f32 result: the
// values below differ only past f32's 24 bits, which a conversion to f32 first lost.
TEST(Reduce, IntegerMeanAndVarianceKeepDigitsPast2To24) {
  const int64_t b = int64_t{1} << 40;
  const Tensor t = from_vector(std::vector<int64_t>{b + 1, b + 3});
  EXPECT_DOUBLE_EQ(var(t).item(), 2.0);
  EXPECT_DOUBLE_EQ(fk::std(t, {}, 0).item(), 1.0);
  // 2^25 + {2, 2, 3}: f32 holds multiples of 4 there. Rounded first (to 2^25,
  // 2^25, 2^25 + 4) the mean read 2^25 + 1.33 -> 2^25; exactly it is 2^25 +
  // 2.33 -> 2^25 + 4. logsumexp of 2^25 + {1, 2} is 2^25 + 2.31 -> 2^25 + 4
  // (2^25 + 0.69 -> 2^25 from the rounded values).
  const int32_t m = 1 << 25;
  const Tensor i = from_vector(std::vector<int32_t>{m + 2, m + 2, m + 3});
  EXPECT_DOUBLE_EQ(mean(i).item(), m + 4.0);
  EXPECT_DOUBLE_EQ(mean(i.to(DType::I64)).item(), m + 4.0);
  EXPECT_DOUBLE_EQ(var(from_vector(std::vector<int32_t>{m + 1, m + 2}), {}, 0).item(), 0.25);
  EXPECT_DOUBLE_EQ(logsumexp(from_vector(std::vector<int32_t>{m + 1, m + 2}), {}).item(), m + 4.0);
}

// var and std propagate NaN and infinity as every other reduction does
// (a clamp against round-off turned them into 0).
TEST(Reduce, VarianceOfNanOrInfinityIsNan) {
  for (double bad : {NAN, INFINITY}) {
    const Tensor t = from_vector(std::vector<double>{1, bad, 3});
    EXPECT_TRUE(std::isnan(var(t).item())) << bad;
    EXPECT_TRUE(std::isnan(std(t).item())) << bad;
    const Tensor rows = from_vector(std::vector<double>{1, 2, 3, 1, bad, 3}, {2, 3});
    const std::vector<double> v = var(rows, {1}).to_vector<double>();
    EXPECT_DOUBLE_EQ(v[0], 1.0);
    EXPECT_TRUE(std::isnan(v[1]));
  }
  EXPECT_DOUBLE_EQ(var(from_vector(std::vector<double>{1e8, 1e8, 1e8})).item(), 0.0);
}

// std's slope where std is 0 (every deviation 0) is 0, as torch's: through
// sqrt's slope it was g / 0 * 0 = NaN. Elsewhere it stays var's / (2 std).
TEST(Reduce, StdGradientWhereStdIsZeroIsZero) {
  Tensor x = from_vector(std::vector<double>{2, 2, 2, 1, 2, 4}, {2, 3}).set_requires_grad(true);
  sum(fk::std(x, {1})).backward();
  const std::vector<double> g = x.grad().to_vector<double>();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(g[static_cast<size_t>(i)], 0.0) << i;
  const double sd = std::sqrt(7.0 / 3);  // row 1: mean 7/3, var (16/9 + 1/9 + 25/9) / 2
  for (int i = 0; i < 3; ++i) {
    const double xi = std::vector<double>{1, 2, 4}[static_cast<size_t>(i)];
    EXPECT_NEAR(g[static_cast<size_t>(3 + i)], (xi - 7.0 / 3) / (2 * sd), 1e-14) << i;
  }
  test::expect_close(
      std_backward(ones({2}, {DType::F64}), x.detach(), fk::std(x.detach(), {1}), {1}), g, 1e-14);
}

TEST(Reduce, ZeroDimInputs) {
  Tensor s = scalar_tensor(2.5, {DType::F64});
  EXPECT_EQ(sum(s).item(), 2.5);
  EXPECT_EQ(amax(s, {0}).item(), 2.5);
  EXPECT_EQ(softmax(s, 0).item(), 1.0);
  EXPECT_EQ(argmax(s, -1).to_vector<int64_t>()[0], 0);
  EXPECT_EQ(max(s, 0).first.dim(), 0);
}

}  // namespace
}  // namespace fk
