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

namespace fk {
namespace {

using Fn = testing::TensorFn;
using Group = std::vector<double>;

// Plain reference: the elements of a row-major array grouped by output
// position (kept coordinates, row-major), each group in increasing order of
// the reduced coordinates.
std::vector<Group> groups(const std::vector<double>& v, const std::vector<int64_t>& shape,
                          const std::vector<bool>& reduced) {
  int64_t outputs = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!reduced[d]) outputs *= shape[d];
  }
  std::vector<Group> out(static_cast<size_t>(outputs));
  for (size_t i = 0; i < v.size(); ++i) {
    int64_t rem = static_cast<int64_t>(i), o = 0, scale = 1;
    for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
      int64_t c = rem % shape[d];
      rem /= shape[d];
      if (!reduced[d]) {
        o += c * scale;
        scale *= shape[d];
      }
    }
    out[static_cast<size_t>(o)].push_back(v[i]);
  }
  return out;
}

std::vector<double> fold(const std::vector<Group>& gs,
                         const std::function<double(const Group&)>& f) {
  std::vector<double> r;
  for (const Group& g : gs) r.push_back(f(g));
  return r;
}

double ref_sum(const Group& g) {
  double s = 0;
  for (double v : g) s += v;
  return s;
}
double ref_prod(const Group& g) {
  double s = 1;
  for (double v : g) s *= v;
  return s;
}
double ref_max(const Group& g) {
  return *std::max_element(g.begin(), g.end());
}
double ref_min(const Group& g) {
  return *std::min_element(g.begin(), g.end());
}
double ref_var(const Group& g, int correction) {
  double m = ref_sum(g) / static_cast<double>(g.size()), s = 0;
  for (double v : g) s += (v - m) * (v - m);
  return s / static_cast<double>(static_cast<int>(g.size()) - correction);
}
double ref_norm(const Group& g, double p) {
  double s = 0;
  for (double v : g) {
    if (std::isinf(p)) {
      s = std::max(s, std::abs(v));
    } else {
      s += std::pow(std::abs(v), p);
    }
  }
  return std::isinf(p) ? s : std::pow(s, 1.0 / p);
}
double ref_lse(const Group& g) {
  double s = 0;
  for (double v : g) s += std::exp(v);
  return std::log(s);
}

Dims expected_shape(const std::vector<int64_t>& shape, const std::vector<bool>& reduced,
                    bool keepdim) {
  Dims s;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!reduced[d]) {
      s.push_back(shape[d]);
    } else if (keepdim) {
      s.push_back(1);
    }
  }
  return s;
}

struct DimsCase {
  Dims dims;
  std::vector<bool> reduced;
};

const std::vector<DimsCase>& dims_cases() {
  static const std::vector<DimsCase> cases = {
      {{}, {true, true, true}},      {{0}, {true, false, false}},   {{1}, {false, true, false}},
      {{-1}, {false, false, true}},  {{0, 2}, {true, false, true}}, {{1, 0}, {true, true, false}},
      {{-2, 2}, {false, true, true}}};
  return cases;
}

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

TEST(Reduce, VarIsAccurateWithLargeOffsets) {
  // E[x^2] - E[x]^2 would lose every digit here (x^2 ~ 1e18 in f64).
  for (int64_t n : {1000, 70000}) {
    Tensor x = add(test::random_tensor({2, n}, DType::F64, -1, 1, 13), 1e9);
    auto v = x.to_vector<double>();
    std::vector<double> want;
    for (int i = 0; i < 2; ++i) {
      Group g(v.begin() + i * n, v.begin() + (i + 1) * n);
      want.push_back(ref_var(g, 1));
    }
    test::expect_close(var(x, {1}), want, 1e-9);
    test::expect_close(var(x.t(), {0}), want, 1e-9);
  }
}

TEST(Reduce, MaxMinAlongDimGiveFirstIndexAndRouteGradient) {
  Tensor x = from_vector(std::vector<double>{1, 3, 3, 2, 7, 0, 7, 7, -1, -1, 4, -1}, {3, 4})
                 .set_requires_grad(true);
  auto [v, i] = max(x, 1);
  test::expect_close(v, {3, 7, 4}, 0);
  EXPECT_EQ(i.dtype(), DType::I64);
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 2}));
  sum(mul(v, from_vector(std::vector<double>{1, 2, 3}))).backward();
  test::expect_close(x.grad(), {0, 1, 0, 0, 2, 0, 0, 0, 0, 0, 3, 0}, 0);

  auto [mv, mi] = min(x, 0, true);
  EXPECT_EQ(mv.shape(), (Dims{1, 4}));
  test::expect_close(mv, {-1, -1, 3, -1}, 0);
  EXPECT_EQ(mi.to_vector<int64_t>(), (std::vector<int64_t>{2, 2, 0, 2}));
  EXPECT_EQ(min(x, 1).second.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 0}));
  EXPECT_EQ(argmax(x, -1).to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 2}));
  EXPECT_EQ(argmin(x, 0, true).shape(), (Dims{1, 4}));
  EXPECT_EQ(argmin(x, 0).to_vector<int64_t>(), (std::vector<int64_t>{2, 2, 0, 2}));

  // Against a loop on a random 3-D input, every dim.
  Tensor r = test::random_tensor({3, 4, 5}, DType::F64, -1, 1, 21);
  auto rv = r.to_vector<double>();
  for (int d = 0; d < 3; ++d) {
    std::vector<bool> red(3, false);
    red[d] = true;
    auto gs = groups(rv, {3, 4, 5}, red);
    std::vector<double> want_i, want_v;
    for (const Group& g : gs) {
      auto it = std::max_element(g.begin(), g.end());
      want_v.push_back(*it);
      want_i.push_back(static_cast<double>(it - g.begin()));
    }
    auto [vals, idx] = max(r, d);
    test::expect_close(vals, want_v, 0);
    test::expect_close(idx, want_i, 0);
  }
}

TEST(Reduce, AmaxTiesSplitTheGradient) {
  Tensor x =
      from_vector(std::vector<double>{1, 3, 3, 2, 4, 4, 4, 0}, {2, 4}).set_requires_grad(true);
  sum(amax(x, {1})).backward();
  test::expect_close(x.grad(), {0, 0.5, 0.5, 0, 1.0 / 3, 1.0 / 3, 1.0 / 3, 0}, 1e-15);
  Tensor y = from_vector(std::vector<double>{2, 1, 1, 5}).set_requires_grad(true);
  amin(y).backward();
  test::expect_close(y.grad(), {0, 0.5, 0.5, 0}, 1e-15);
  // The inf-norm shares the rule, on |x|.
  Tensor z = from_vector(std::vector<double>{-3, 1, 3}).set_requires_grad(true);
  norm(z, std::numeric_limits<double>::infinity()).backward();
  test::expect_close(z.grad(), {-0.5, 0, 0.5}, 1e-15);
}

TEST(Reduce, ProdWithZerosHasExactGradient) {
  Tensor x =
      from_vector(std::vector<double>{2, 0, 3, 4, 0, 0, 5, 6, 1}, {3, 3}).set_requires_grad(true);
  Tensor p = prod(x, {1});
  test::expect_close(p, {0, 0, 30}, 0);
  sum(p).backward();
  // Row 0 has one zero: only it gets a gradient (2 * 3); row 1 has two: none.
  test::expect_close(x.grad(), {0, 6, 0, 0, 0, 0, 6, 5, 30}, 0);
  Tensor z = from_vector(std::vector<double>{1.5, 0, -2, 0.5}).set_requires_grad(true);
  EXPECT_GRADCHECK((Fn([](const std::vector<Tensor>& in) { return prod(in[0]); })),
                   (std::vector<Tensor>{z}));
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

TEST(Reduce, NormGradientAtZeroIsFinite) {
  Tensor x = zeros({3}, {DType::F64}).set_requires_grad(true);
  norm(x).backward();
  test::expect_close(x.grad(), {0, 0, 0}, 0);
  Tensor y = from_vector(std::vector<double>{0, 2}).set_requires_grad(true);
  norm(y, 0.5).backward();
  auto g = y.grad().to_vector<double>();
  EXPECT_EQ(g[0], 0.0);
  EXPECT_TRUE(std::isfinite(g[1]));
}

TEST(Reduce, SoftmaxSumsToOneAndIsStable) {
  Tensor x = test::random_tensor({4, 6}, DType::F64, -3, 3, 51);
  auto xv = x.to_vector<double>();
  for (int d : {0, 1}) {
    Tensor y = softmax(x, d);
    test::expect_close(sum(y, {d}), std::vector<double>(d == 0 ? 6 : 4, 1.0), 1e-12);
    test::expect_close(exp(log_softmax(x, d)), y.to_vector<double>(), 1e-12);
  }
  std::vector<double> want;
  for (int i = 0; i < 4; ++i) {
    double s = 0;
    for (int j = 0; j < 6; ++j) s += std::exp(xv[i * 6 + j]);
    for (int j = 0; j < 6; ++j) want.push_back(std::exp(xv[i * 6 + j]) / s);
  }
  test::expect_close(softmax(x, -1), want, 1e-12);

  // exp(1000) overflows; the shifted forms do not.
  for (DType dt : {DType::F32, DType::F64}) {
    Tensor big = from_vector(std::vector<double>{1000, 1001, 1002, -1000}).to(dt);
    double e0 = std::exp(-2.0), e1 = std::exp(-1.0), s = e0 + e1 + 1.0;
    test::expect_close(softmax(big, 0), {e0 / s, e1 / s, 1 / s, 0}, 1e-6);
    test::expect_close(log_softmax(big, 0),
                       {-2 - std::log(s), -1 - std::log(s), -std::log(s), -2002 - std::log(s)},
                       1e-4);
    test::expect_close(logsumexp(big, {0}), {1002 + std::log(s)}, 1e-4);
    test::expect_close(logsumexp(neg(big), {0}), {1000}, 1e-4);
  }
}

TEST(Reduce, SoftmaxF32VectorExpMatchesGenericAndF64) {
  // The AVX2 exp path (last dim: one lane's run; dim 0: rows of lanes) and
  // the generic std::exp path, against f64 on the same values.
  Tensor x64 = test::random_tensor({37, 300}, DType::F64, -20, 20, 52);
  Tensor x = x64.to(DType::F32);
  Knob& isa = mutable_knob("FK_CPU_ISA");
  for (int d : {0, 1}) {
    std::vector<double> want = softmax(x.to(DType::F64), d).to_vector<double>();
    std::vector<double> want_log = log_softmax(x.to(DType::F64), d).to_vector<double>();
    for (const char* v : {"auto", "generic"}) {
      isa.set_override(v);
      test::expect_close(softmax(x, d), want, 1e-6);
      test::expect_close(log_softmax(x, d), want_log, 1e-5);
    }
  }
  isa.set_override(std::nullopt);
}

TEST(Reduce, ResultsDoNotDependOnThreadCount) {
  Tensor x = test::random_tensor({300000}, DType::F32, -1, 1, 61);
  Tensor m = x.reshape({1000, 300});
  int before = get_num_threads();
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
  set_num_threads(1);
  auto one = run();
  set_num_threads(2);
  auto two = run();
  set_num_threads(before);
  ASSERT_EQ(one.size(), two.size());
  for (size_t i = 0; i < one.size(); ++i) EXPECT_EQ(one[i], two[i]) << "result " << i;
  // The f32 sum is accumulated in double: close to the exact value.
  double exact = 0;
  for (double v : x.to_vector<double>()) exact += v;
  EXPECT_NEAR(one[0][0], exact, 1e-3);
}

// The documented order of a contiguous f64 run (cpu/fold_lanes.h): 8 lanes
// over full groups of 8, combined as a tree, then the tail; runs longer than
// 32768 (reduce.cpp's block) folded per block, blocks added in order.
double documented_sum(const double* x, int64_t n) {
  double total = 0;
  for (int64_t b0 = 0; b0 < n; b0 += 32768) {
    const int64_t len = std::min<int64_t>(32768, n - b0);
    double l[8] = {};
    int64_t i = 0;
    for (; i + 8 <= len; i += 8) {
      for (int k = 0; k < 8; ++k) l[k] += x[b0 + i + k];
    }
    double a = ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
    for (; i < len; ++i) a += x[b0 + i];
    total = b0 == 0 ? a : total + a;
  }
  return total;
}

TEST(Reduce, SumOfRunsNotAMultipleOfTheVectorWidth) {
  const std::vector<int64_t> sizes = {1,  2,  3,  5,  7,    8,     9,     15,        17,
                                      31, 33, 63, 65, 1001, 32767, 32769, 65536 + 3, 100003};
  int before = get_num_threads();
  for (int64_t n : sizes) {
    SCOPED_TRACE("n = " + std::to_string(n));
    // Values of both signs and mixed magnitudes, so the order of the adds shows.
    Tensor x64 =
        mul(test::random_tensor({n}, DType::F64, -1, 1, static_cast<unsigned>(n)),
            exp(test::random_tensor({n}, DType::F64, -8, 8, static_cast<unsigned>(n + 1))));
    std::vector<double> v = x64.to_vector<double>();
    long double exact = 0, abs_total = 0;
    for (double e : v) exact += e, abs_total += std::fabs(e);
    for (int threads : {1, 2}) {
      set_num_threads(threads);
      // f64: exactly the documented order, and within its error bound of the
      // long double sum ((n / 8 + 4) eps sum |x|).
      const double s64 = sum(x64).item();
      EXPECT_EQ(s64, documented_sum(v.data(), n));
      EXPECT_NEAR(s64, static_cast<double>(exact),
                  static_cast<double>(abs_total) * (n / 8.0 + 4) * 0x1p-53);
      // f32: accumulated in f64, so the result is the exact sum rounded to f32
      // (up to the f64 error, far below half an f32 ulp).
      Tensor x32 = x64.to(DType::F32);
      long double exact32 = 0, abs32 = 0;
      for (float e : x32.to_vector<float>()) exact32 += e, abs32 += std::fabs(e);
      const double s32 = sum(x32).item();
      EXPECT_NEAR(s32, static_cast<double>(exact32),
                  std::fabs(static_cast<double>(exact32)) * 0x1p-24 +
                      static_cast<double>(abs32) * (n / 8.0 + 4) * 0x1p-53);
      // Rows of this length (last dim) of a 3-row matrix: the same order.
      Tensor m = x64.reshape({1, n}).expand({3, n}).contiguous();
      std::vector<double> rows = sum(m, {1}).to_vector<double>();
      for (double r : rows) EXPECT_EQ(r, s64);
      // Columns are accumulated lane by lane in increasing row order (the
      // lanes are the vector): within n eps sum |x| of the exact sum.
      for (double c : sum(m.t().contiguous(), {0}).to_vector<double>()) {
        EXPECT_NEAR(c, static_cast<double>(exact), static_cast<double>(abs_total) * n * 0x1p-53);
      }
    }
  }
  set_num_threads(before);
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

TEST(Reduce, NaNPropagatesThroughExtremes) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor x = from_vector(std::vector<double>{1, nan, 3, 2});
  EXPECT_TRUE(std::isnan(amax(x).item()));
  EXPECT_TRUE(std::isnan(amin(x).item()));
  EXPECT_EQ(argmax(x, 0).to_vector<int64_t>()[0], 1);
  EXPECT_TRUE(std::isnan(logsumexp(x, {0}).item()));
}

// Runs f once per CPU ISA path (FK_CPU_ISA=generic, then avx2: the CPU's
// best, which is generic again on a CPU without AVX2), naming the path.
void on_both_isa_paths(const std::function<void(const char*)>& f) {
  Knob& isa = mutable_knob("FK_CPU_ISA");
  for (const char* v : {"generic", "avx2"}) {
    isa.set_override(v);
    SCOPED_TRACE(std::string("FK_CPU_ISA=") + v + " (" + cpu_isa_name(cpu_isa()) + ")");
    f(v);
  }
  isa.set_override(std::nullopt);
}

template <typename T>
bool same_bits(T a, T b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

// Values drawn from a small palette so that ties are common, with -0 and +0
// (equal), +-inf and two NaNs of different payloads (and signs) at the rate
// `nan_rate`: the value a max returns must be the element itself.
template <typename T>
std::vector<T> palette_values(int64_t n, double nan_rate, unsigned seed) {
  const T inf = std::numeric_limits<T>::infinity();
  T nan_a = std::numeric_limits<T>::quiet_NaN(), nan_b = -std::numeric_limits<T>::quiet_NaN();
  if constexpr (sizeof(T) == 4) {
    uint32_t bits = 0x7fc00123u;
    std::memcpy(&nan_b, &bits, 4);
  } else {
    uint64_t bits = 0xfff8000000000abcull;
    std::memcpy(&nan_b, &bits, 8);
  }
  const T pal[] = {-inf, T(-2), T(-0.0), T(0), T(0.5), T(1), T(3), inf};
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> pick(0, 7);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<T> v(static_cast<size_t>(n));
  for (T& x : v) {
    double r = u(gen);
    x = r < nan_rate / 2 ? nan_a : r < nan_rate ? nan_b : pal[pick(gen)];
  }
  return v;
}

// The first NaN, else the first largest (std::max_element) or smallest.
template <typename T>
size_t ref_extreme(const std::vector<T>& g, bool want_max) {
  auto nan = std::find_if(g.begin(), g.end(), [](T v) { return v != v; });
  if (nan != g.end()) return static_cast<size_t>(nan - g.begin());
  auto it = want_max ? std::max_element(g.begin(), g.end()) : std::min_element(g.begin(), g.end());
  return static_cast<size_t>(it - g.begin());
}

// max/min/argmax/argmin/amax/amin of [A, R, C] along dim 1, against the loop:
// the same index and bitwise the same value (the element at that index).
template <typename T>
void check_extremes(const std::vector<T>& v, int64_t A, int64_t R, int64_t C) {
  Tensor x = from_vector(v, {A, R, C});
  for (bool want_max : {true, false}) {
    SCOPED_TRACE(want_max ? "max" : "min");
    std::vector<int64_t> want_i;
    std::vector<T> want_v;
    for (int64_t a = 0; a < A; ++a) {
      for (int64_t c = 0; c < C; ++c) {
        std::vector<T> g;
        for (int64_t r = 0; r < R; ++r) g.push_back(v[static_cast<size_t>((a * R + r) * C + c)]);
        size_t i = ref_extreme(g, want_max);
        want_i.push_back(static_cast<int64_t>(i));
        want_v.push_back(g[i]);
      }
    }
    auto [vals, idx] = want_max ? max(x, 1) : min(x, 1);
    EXPECT_EQ(idx.template to_vector<int64_t>(), want_i);
    EXPECT_EQ((want_max ? argmax(x, 1) : argmin(x, 1)).template to_vector<int64_t>(), want_i);
    for (const Tensor& got : {vals, want_max ? amax(x, {1}) : amin(x, {1})}) {
      std::vector<T> gv = got.template to_vector<T>();
      ASSERT_EQ(gv.size(), want_v.size());
      for (size_t k = 0; k < gv.size(); ++k) {
        EXPECT_TRUE(same_bits(gv[k], want_v[k]))
            << "output " << k << ": " << gv[k] << " vs " << want_v[k] << " at " << want_i[k];
      }
    }
  }
}

// Runs (C == 1) of lengths around the AVX2 kernel's vector widths and chain
// counts, rows of lanes (C > 1) around them and beyond kLaneBlock, and rows
// longer than one reduction block, for f32 and f64 on both ISA paths.
TEST(Reduce, ExtremesMatchPlainLoopsOnBothIsaPaths) {
  struct Shape {
    int64_t A, R, C;
  };
  const std::vector<Shape> shapes = {
      {3, 1, 1},  {3, 3, 1},  {3, 7, 1},  {2, 8, 1},   {2, 9, 1},    {2, 31, 1},    {2, 32, 1},
      {2, 33, 1}, {2, 63, 1}, {2, 65, 1}, {2, 100, 1}, {2, 257, 1},  {1, 40001, 1}, {1, 5, 3},
      {2, 9, 8},  {1, 7, 13}, {2, 5, 40}, {1, 6, 300}, {1, 40001, 9}};
  on_both_isa_paths([&](const char*) {
    for (const Shape& s : shapes) {
      for (double nan_rate : {0.0, 0.02}) {
        SCOPED_TRACE("shape " + std::to_string(s.A) + "x" + std::to_string(s.R) + "x" +
                     std::to_string(s.C) + " nan rate " + std::to_string(nan_rate));
        const int64_t n = s.A * s.R * s.C;
        const auto seed = static_cast<unsigned>(n + 1000 * nan_rate);
        check_extremes(palette_values<float>(n, nan_rate, seed), s.A, s.R, s.C);
        check_extremes(palette_values<double>(n, nan_rate, seed + 1), s.A, s.R, s.C);
      }
    }
  });
}

// Hand-made rows for the documented rules: ties go to the first, -0 and +0
// tie, the first NaN wins, +-inf are ordinary extremes.
TEST(Reduce, ExtremeTiesZerosInfsAndNaNs) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  struct Row {
    std::vector<double> v;
    int64_t argmax, argmin;
  };
  const std::vector<Row> rows = {
      {{-0.0, 0.0, -0.0, 0.0, -0.0, 0.0, -0.0, 0.0, 0.0}, 0, 0},
      {{0.0, -0.0, -0.0, -0.0, -0.0, -0.0, -0.0, -0.0, -0.0}, 0, 0},
      {{1, 2, 3, 3, 2, 3, 1, 1, 1}, 2, 0},
      {{inf, 1, inf, -inf, -inf, 0, 0, 0, inf}, 0, 3},
      {{-inf, -inf, -inf, -inf, -inf, -inf, -inf, -inf, -inf}, 0, 0},
      {{1, 2, 3, 4, 5, 6, 7, 8, nan}, 8, 8},
      {{nan, 2, nan, 4, 5, 6, 7, inf, -inf}, 0, 0},
      {{1, inf, 3, nan, 5, nan, 7, 8, -inf}, 3, 3},
  };
  on_both_isa_paths([&](const char*) {
    for (DType dt : {DType::F32, DType::F64}) {
      for (bool by_lanes : {false, true}) {  // rows as runs, or as columns
        std::vector<double> flat;
        for (const Row& r : rows) flat.insert(flat.end(), r.v.begin(), r.v.end());
        Tensor x = from_vector(flat, {static_cast<int64_t>(rows.size()), 9}).to(dt);
        if (by_lanes) x = x.t().contiguous();
        const int d = by_lanes ? 0 : 1;
        std::vector<int64_t> want_max, want_min;
        for (const Row& r : rows) want_max.push_back(r.argmax), want_min.push_back(r.argmin);
        EXPECT_EQ(argmax(x, d).to_vector<int64_t>(), want_max) << name(dt) << " " << d;
        EXPECT_EQ(argmin(x, d).to_vector<int64_t>(), want_min) << name(dt) << " " << d;
        // The zero rows' results keep the first element's sign.
        std::vector<double> mx = amax(x, {d}).to_vector<double>();
        EXPECT_TRUE(std::signbit(mx[0]) && !std::signbit(mx[1])) << name(dt) << " " << d;
        EXPECT_TRUE(std::isnan(mx[5]) && std::isnan(mx[6]) && std::isnan(mx[7]));
        EXPECT_EQ(mx[3], inf);
        EXPECT_EQ(amin(x, {d}).to_vector<double>()[3], -inf);
      }
    }
  });
}

// f64 logsumexp by plain loops: NaN if there is one, -inf for all -inf, +inf
// if there is a +inf, else m + log(sum exp(x - m)) in long double.
double ref_lse_f64(const std::vector<double>& g) {
  const double inf = std::numeric_limits<double>::infinity();
  double m = -inf;
  for (double v : g) {
    if (v != v) return v;
    m = std::max(m, v);
  }
  if (std::isinf(m)) return m;
  long double s = 0;
  for (double v : g) s += std::exp(static_cast<long double>(v) - m);
  return static_cast<double>(m + std::log(s));
}

// f32 logsumexp (AVX2: two passes, the vector exp; generic: the online form in
// f64) against the f64 loop, along the last dim (runs, and runs cut into
// blocks) and dim 0 (rows of lanes), with rows holding -inf, +inf and NaN.
// Bound: 2^-23 |result| + 5e-7, i.e. the result's rounding to f32 (up to 2^-24
// |result|, at most 0.72 of that observed on both paths) plus log(sum)'s error
// from the f32 exp (1 ulp) and x - m rounded to f32 (each ~6e-8 relative to a sum
// >= 1), with margin.
TEST(Reduce, LogsumexpF32MatchesF64OnBothIsaPaths) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  for (int64_t n : {1, 5, 8, 13, 256, 300, 40001}) {
    SCOPED_TRACE("n = " + std::to_string(n));
    const int64_t rows = 9;
    // Shifted by -log(n) so that most results are O(1) and the f32 rounding
    // of the result does not hide the error of the sum.
    const double shift = -std::log(static_cast<double>(n));
    std::vector<double> base =
        test::random_values(rows * n, shift - 4, shift + 4, static_cast<unsigned>(n));
    std::vector<float> v(base.begin(), base.end());
    auto at = [&](int64_t r, int64_t i) -> float& { return v[static_cast<size_t>(r * n + i)]; };
    for (int64_t i = 0; i < n; ++i) at(0, i) *= 8;                    // a wide spread of exponents
    for (int64_t i = 0; i < n; ++i) at(1, i) = -inf;                  // all -inf
    for (int64_t i = 0; i < n; i += 2) at(2, i) = -inf;               // some -inf
    at(3, n / 2) = inf;                                               // a +inf
    at(4, n - 1) = nan;                                               // a NaN last
    at(5, 0) = inf, at(5, n - 1) = -inf;                              // +inf and -inf
    at(6, n / 3) = nan, at(6, n - 1) = inf;                           // NaN and +inf
    for (int64_t i = 0; i < n; ++i) at(7, i) = 87.0f + at(7, i) / 4;  // exp(x) overflows f32
    for (int64_t i = 0; i < n; ++i) at(8, i) = -100.0f + at(8, i) / 4;  // exp(x) underflows
    Tensor x = from_vector(v, {rows, n});
    for (int d : {1, 0}) {
      Tensor xd = d == 1 ? x : x.t().contiguous();  // rows as runs, or as lanes
      std::vector<double> want;
      for (int64_t r = 0; r < rows; ++r) {
        want.push_back(
            ref_lse_f64(std::vector<double>(v.begin() + r * n, v.begin() + (r + 1) * n)));
      }
      on_both_isa_paths([&](const char*) {
        std::vector<double> got = logsumexp(xd, {d}).to_vector<double>();
        ASSERT_EQ(got.size(), want.size());
        for (size_t r = 0; r < got.size(); ++r) {
          if (std::isnan(want[r]) || std::isinf(want[r])) {
            EXPECT_TRUE(same_bits(got[r], want[r]) || (std::isnan(got[r]) && std::isnan(want[r])))
                << "row " << r << " dim " << d << ": " << got[r] << " vs " << want[r];
          } else {
            EXPECT_NEAR(got[r], want[r], std::fabs(want[r]) * 0x1p-23 + 5e-7)
                << "row " << r << " dim " << d;
          }
        }
      });
    }
  }
}

// Softmax over the last dim sums exp(x - max) over 8 lanes in the order of
// cpu/fold_lanes.h (tail last), in f64: the results are exactly e_i / total
// and x_i - (max + log total) with total that documented sum of the e_i, on
// both ISA paths, for f64 and f32. The e_i come from fk::exp on the same ISA
// path (for f32 on AVX2, the vector exp that softmax also uses). The f64 case
// pins the order; in f32 a different order of the f64 sum rarely survives the
// rounding to f32, so that case pins the exps and the rest of the formula.
template <typename T>
void check_softmax_sum_order(int64_t n) {
  std::vector<double> v64 = test::random_values(2 * n, -20, 20, static_cast<unsigned>(3 * n));
  std::vector<T> v(v64.begin(), v64.end());
  Tensor x = from_vector(v, {2, n});
  on_both_isa_paths([&](const char*) {
    std::vector<T> want, want_log;
    for (int64_t r = 0; r < 2; ++r) {
      const T* row = v.data() + r * n;
      const T m = *std::max_element(row, row + n);
      std::vector<T> d(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) d[static_cast<size_t>(i)] = row[i] - m;
      std::vector<T> e = exp(from_vector(d)).template to_vector<T>();
      std::vector<double> e64(e.begin(), e.end());
      const double total = documented_sum(e64.data(), n);
      const T k = static_cast<T>(1.0 / total), shift = m + static_cast<T>(std::log(total));
      for (int64_t i = 0; i < n; ++i) want.push_back(e[static_cast<size_t>(i)] * k);
      for (int64_t i = 0; i < n; ++i) want_log.push_back(row[i] - shift);
    }
    EXPECT_EQ(softmax(x, 1).template to_vector<T>(), want);
    EXPECT_EQ(log_softmax(x, 1).template to_vector<T>(), want_log);
  });
}

TEST(Reduce, SoftmaxLastDimSumsInTheDocumentedOrder) {
  for (int64_t n : {5, 8, 21, 300}) {
    SCOPED_TRACE("n = " + std::to_string(n));
    check_softmax_sum_order<double>(n);
    check_softmax_sum_order<float>(n);
  }
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
