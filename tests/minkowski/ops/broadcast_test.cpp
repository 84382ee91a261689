// Broadcast add / multiply / concatenation of a per-batch-item global feature
// against plain loops (row i takes the glob row of its batch item), with the
// glob pooled at another tensor stride; gradients, f64 gradchecks, half
// types, bit-identical threads and the shape / manager errors.
#include <gtest/gtest.h>

#include "fk/fk.h"
#include "fk/test_util.h"
#include "minkowski/minkowski.h"
#include "minkowski/ops/pooling_reference.h"

namespace minkowski {
namespace {

using namespace conv_ref;
using namespace pool_ref;

// out[i] = x[i] op glob[batch(i)] (op: 0 add, 1 multiply, 2 concatenate).
std::vector<double> reference(const Rows& rows, const std::vector<double>& x, int cx,
                              const std::vector<double>& g, int cg, int op) {
  std::vector<double> r;
  for (size_t i = 0; i < rows.size(); ++i) {
    const int b = rows[i][0];
    if (op == 2) {
      for (int c = 0; c < cx; ++c) r.push_back(x[i * cx + c]);
      for (int c = 0; c < cg; ++c) r.push_back(g[b * cg + c]);
      continue;
    }
    for (int c = 0; c < cx; ++c)
      r.push_back(op == 0 ? x[i * cx + c] + g[b * cg + c] : x[i * cx + c] * g[b * cg + c]);
  }
  return r;
}

SparseTensor apply(int op, const SparseTensor& x, const SparseTensor& g) {
  return op == 0   ? broadcast_add(x, g)
         : op == 1 ? broadcast_multiply(x, g)
                   : broadcast_concatenation(x, g);
}

TEST(MinkowskiBroadcast, EveryOpMatchesPlainLoops) {
  for (int op : {0, 1, 2}) {
    SCOPED_TRACE("op " + std::to_string(op));
    const int n = 60, c = 3, cg = op == 2 ? 2 : 3;
    Rows rows = random_rows(3, n, 4, 1, 2, 50 + op);
    fk::Tensor f = fk::test::random_tensor({n, c}, fk::DType::F64, -1, 1, 1);
    fk::Tensor fg = f.clone().set_requires_grad(true);
    SparseTensor x(fg, to_tensor(rows));
    // the global feature: pooled from a stride-2 tensor of the same manager
    SparseTensor down =
        sum_pooling(SparseTensor(fk::test::random_tensor({n, cg}, fk::DType::F64, -1, 1, 2),
                                 x.key(), x.manager()),
                    KernelRegion::cube({2}), {2});
    SparseTensor glob0 = global_avg_pooling(down);
    fk::Tensor gf = glob0.F().clone().set_requires_grad(true);
    SparseTensor glob(gf, glob0.key(), glob0.manager());
    SparseTensor y = apply(op, x, glob);
    EXPECT_EQ(y.key(), x.key());
    std::vector<double> xv = f.to_vector<double>(), gv = gf.to_vector<double>();
    fk::test::expect_close(y.F(), reference(rows, xv, c, gv, cg, op), 1e-14);
    // gradients against the same loops, differentiated by hand
    fk::Tensor g = fk::test::random_tensor(y.F().shape(), fk::DType::F64, -1, 1, 3);
    std::vector<double> gy = g.to_vector<double>(), want_x(n * c, 0.0), want_g(2 * cg, 0.0);
    const int w = op == 2 ? c + cg : c;
    for (int i = 0; i < n; ++i) {
      const int b = rows[i][0];
      for (int k = 0; k < c; ++k)
        want_x[i * c + k] = op == 1 ? gy[i * w + k] * gv[b * cg + k] : gy[i * w + k];
      for (int k = 0; k < cg; ++k)
        want_g[b * cg + k] += op == 0   ? gy[i * w + k]
                              : op == 1 ? gy[i * w + k] * xv[i * c + k]
                                        : gy[i * w + c + k];
    }
    y.F().backward(g);
    fk::test::expect_close(fg.grad(), want_x, 1e-13);
    fk::test::expect_close(gf.grad(), want_g, 1e-13);
  }
}

TEST(MinkowskiBroadcastGrad, GradcheckEveryOp) {
  Rows rows = random_rows(2, 14, 3, 1, 2, 7);
  auto mgr = std::make_shared<CoordinateManager>(2);
  fk::Tensor f = fk::test::random_tensor({14, 2}, fk::DType::F64, -1, 1, 8);
  SparseTensor base(f, to_tensor(rows), {1}, QuantizationMode::RandomSubsample, mgr);
  SparseTensor glob = global_sum_pooling(base);
  for (int op : {0, 1, 2}) {
    SCOPED_TRACE("op " + std::to_string(op));
    EXPECT_GRADCHECK(
        [&](const std::vector<fk::Tensor>& in) {
          return apply(op, SparseTensor(in[0], base.key(), mgr),
                       SparseTensor(in[1], glob.key(), mgr))
              .F();
        },
        (std::vector<fk::Tensor>{
            f.clone().set_requires_grad(true),
            fk::test::random_tensor({2, 2}, fk::DType::F64, -1, 1, 9).set_requires_grad(true)}));
  }
}

TEST(MinkowskiBroadcast, HalfTypesAndThreads) {
  // f16/bf16: inputs rounded first; one rounding of a sum or product of two
  // values of magnitude <= 1 (f16 2^-11, bf16 2^-8 relative).
  const int n = 6000, c = 16;
  Rows rows = random_rows(3, n, 30, 1, 2, 61);
  std::vector<double> xr = fk::test::random_values(n * c, -1, 1, 62),
                      gr = fk::test::random_values(2 * c, -1, 1, 63);
  fk::Tensor coords = to_tensor(rows);
  for (auto [dt, tol] : {std::pair{fk::DType::F16, 2 * 0.0005}, {fk::DType::BF16, 2 * 0.004}}) {
    SparseTensor x(fk::from_vector(xr, fk::Dims{n, c}).to(dt), coords);
    SparseTensor glob = global_sum_pooling(x);
    SparseTensor g(fk::from_vector(gr, fk::Dims{2, c}).to(dt), glob.key(), x.manager());
    for (int op : {0, 1, 2}) {
      SparseTensor y = apply(op, x, g);
      EXPECT_EQ(y.F().dtype(), dt);
      fk::test::expect_close(y.F(), reference(rows, round_to(xr, dt), c, round_to(gr, dt), c, op),
                             op == 2 ? 0.0 : tol);
    }
  }
  fk::Tensor xf = fk::from_vector(xr, fk::Dims{n, c}).to(fk::DType::F32);
  fk::Tensor gfv = fk::from_vector(gr, fk::Dims{2, c}).to(fk::DType::F32);
  for (int op : {0, 1, 2}) {
    std::vector<fk::Tensor> first;
    at_threads([&](int threads) {
      fk::Tensor a = xf.clone().set_requires_grad(true), b = gfv.clone().set_requires_grad(true);
      SparseTensor x(a, coords);
      SparseTensor y = apply(op, x, SparseTensor(b, global_sum_pooling(x).key(), x.manager()));
      y.F().backward(fk::test::random_tensor(y.F().shape(), fk::DType::F32, -1, 1, 64));
      if (first.empty()) {
        first = {y.F(), a.grad(), b.grad()};
        return;
      }
      EXPECT_TRUE(bitwise_equal(first[0], y.F())) << threads << " threads, forward";
      EXPECT_TRUE(bitwise_equal(first[1], a.grad())) << threads << " threads, features grad";
      EXPECT_TRUE(bitwise_equal(first[2], b.grad())) << threads << " threads, glob grad";
    });
  }
}

TEST(MinkowskiBroadcast, ErrorsNameExpectedAndGiven) {
  Rows rows = random_rows(2, 20, 4, 1, 2, 3);
  SparseTensor x(fk::test::random_tensor({20, 3}, fk::DType::F64, -1, 1, 4), to_tensor(rows));
  SparseTensor glob = global_max_pooling(x);
  auto expect_error = [](const std::function<void()>& f, const std::string& a,
                         const std::string& b) {
    try {
      f();
      ADD_FAILURE() << "no error (expected one naming '" << a << "' and '" << b << "')";
    } catch (const fk::Error& e) {
      EXPECT_NE(std::string(e.what()).find(a), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(b), std::string::npos) << e.what();
    }
  };
  // wrong channel count
  SparseTensor g2(fk::zeros({2, 2}, {fk::DType::F64}), glob.key(), x.manager());
  expect_error([&] { broadcast_add(x, g2); }, "3 channels", "2 channels");
  expect_error([&] { broadcast_multiply(x, g2); }, "3 channels", "2 channels");
  // a glob that is not global (x itself), and one missing a batch item
  expect_error([&] { broadcast_add(x, x); }, "(b, 0, .., 0)", "row 0 at");
  MapKey only0 = x.manager()->insert(to_tensor(Rows{{0, 0, 0}}), {1}, "only0").key;
  SparseTensor g0(fk::zeros({1, 3}, {fk::DType::F64}), only0, x.manager());
  expect_error([&] { broadcast_concatenation(x, g0); }, "every batch item", "batch item 1");
  // a huge batch index is looked up, not tabulated
  MapKey far = x.manager()->insert(to_tensor(Rows{{2000000000, 0, 0}}), {1}, "far").key;
  SparseTensor gfar(fk::zeros({1, 3}, {fk::DType::F64}), far, x.manager());
  expect_error([&] { broadcast_add(x, gfar); }, "every batch item", "no global row for batch item");
  // another manager
  SparseTensor y(x.F(), to_tensor(rows));
  SparseTensor other = global_max_pooling(y);
  EXPECT_THROW(broadcast_add(x, other), fk::Error);
  EXPECT_THROW(broadcast_concatenation(x, other), fk::Error);
  // dtype and empty handles
  SparseTensor g32(glob.F().to(fk::DType::F32), glob.key(), x.manager());
  expect_error([&] { broadcast_add(x, g32); }, "f64", "f32");
  expect_error([&] { broadcast_concatenation(x, g32); }, "f64", "f32");
  EXPECT_THROW(broadcast_add(SparseTensor(), glob), fk::Error);
  // the pure function's shape check
  RowGroups rg = broadcast_groups(x, glob, "test");
  expect_error(
      [&] {
        broadcast_forward(x.F(), fk::zeros({3, 3}, {fk::DType::F64}), rg, BroadcastMode::Add);
      },
      "2 x 3", "[3, 3]");
}

}  // namespace
}  // namespace minkowski
