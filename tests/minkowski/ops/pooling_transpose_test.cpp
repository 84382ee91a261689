// Pooling transpose (unpooling) and generative unpooling against plain loops
// over coordinates (each fine point reduces the coarse points o with
// fine = o + offset_k), the adjoint relation with sum pooling, f64
// gradchecks, half types, bit-identical threads and errors.
#include <gtest/gtest.h>

#include "fk/fk.h"
#include "fk/test_util.h"
#include "minkowski/minkowski.h"
#include "minkowski/ops/pooling_reference.h"

namespace minkowski {
namespace {

using namespace conv_ref;
using namespace pool_ref;

constexpr PoolingMode kModes[] = {PoolingMode::Max, PoolingMode::Average, PoolingMode::Sum};

Mode ref_mode(PoolingMode m) {
  return m == PoolingMode::Max ? Mode::Max : m == PoolingMode::Average ? Mode::Average : Mode::Sum;
}

Offsets negated(Offsets o) {
  for (auto& v : o)
    for (int& x : v) x = -x;
  return o;
}

// The fine rows' lists of coarse rows: coarse = fine - offset_k, k ascending.
std::vector<std::vector<int>> unpool_lists(const Rows& coarse, const Rows& fine,
                                           const Offsets& offs) {
  return pairs_by_out(coarse, fine, negated(offs));
}

TEST(MinkowskiPoolingTranspose, OntoTheEncoderCoordinates) {
  for (int d : {2, 3})
    for (int k : {2, 3}) {
      const int c = 2, n = 80;
      Rows rows = random_rows(d, n, 5, 1, 2, 40 + d + k);
      SparseTensor x(fk::test::random_tensor({n, c}, fk::DType::F64, -1, 1, 1), to_tensor(rows));
      SparseTensor down = avg_pooling(x, KernelRegion::cube({k}), {2});
      Rows coarse = from_tensor(down.C());
      std::vector<double> dv = down.F().to_vector<double>();
      for (PoolingMode mode : kModes) {
        SCOPED_TRACE(std::string(pooling_mode_name(mode)) + " d=" + std::to_string(d) +
                     " k=" + std::to_string(k));
        fk::Tensor dg = down.F().clone().set_requires_grad(true);
        SparseTensor up = pooling_transpose(SparseTensor(dg, down.key(), down.manager()), mode,
                                            KernelRegion::cube({k}), {2});
        EXPECT_EQ(up.key(), x.key());
        EXPECT_EQ(up.tensor_stride(), std::vector<int32_t>(d, 1));
        auto lists = unpool_lists(coarse, rows, cube_offsets(d, k, 1, 1));
        Pooled want = reduce(lists, dv, c, ref_mode(mode));
        fk::test::expect_close(up.F(), want.out, 1e-13);
        fk::Tensor g = fk::test::random_tensor({n, c}, fk::DType::F64, -1, 1, 7);
        up.F().backward(g);
        fk::test::expect_close(dg.grad(),
                               reduce_grad(lists, want, g.to_vector<double>(), c,
                                           static_cast<int>(coarse.size()), ref_mode(mode)),
                               1e-13);
      }
    }
}

TEST(MinkowskiPoolingTranspose, AverageDividesWhereKernelsOverlap) {
  // 1-D-like row: coarse points at x = 0 and 2 (stride 2), kernel 3 reaches
  // x - 1 .. x + 1 of each; the fine point x = 1 is reached by both.
  auto mgr = std::make_shared<CoordinateManager>(2);
  SparseTensor fine(fk::zeros({3, 1}, {fk::DType::F64}),
                    to_tensor(Rows{{0, 0, 0}, {0, 1, 0}, {0, 2, 0}}), {1},
                    QuantizationMode::RandomSubsample, mgr);
  MapKey ck = mgr->stride(fine.key(), {2});
  SparseTensor coarse(fk::from_vector(std::vector<double>{10, 20}, fk::Dims{2, 1}), ck, mgr);
  EXPECT_EQ(from_tensor(coarse.C()), (Rows{{0, 0, 0}, {0, 2, 0}}));
  auto up = [&](PoolingMode m) {
    return pooling_transpose(coarse, m, KernelRegion::cube({3}), {2}).F().to_vector<double>();
  };
  EXPECT_EQ(up(PoolingMode::Sum), (std::vector<double>{10, 30, 20}));
  EXPECT_EQ(up(PoolingMode::Average), (std::vector<double>{10, 15, 20}));
  EXPECT_EQ(up(PoolingMode::Max), (std::vector<double>{10, 20, 20}));
}

TEST(MinkowskiPoolingTranspose, SumIsTheAdjointOfSumPooling) {
  // <pool(a), b> == <a, unpool(b)> for the same kernel and stride.
  Rows rows = random_rows(3, 100, 4, 1, 2, 9);
  fk::Tensor a = fk::test::random_tensor({100, 3}, fk::DType::F64, -1, 1, 10);
  SparseTensor x(a, to_tensor(rows));
  SparseTensor pa = sum_pooling(x, KernelRegion::cube({3}), {2});
  fk::Tensor b = fk::test::random_tensor(pa.F().shape(), fk::DType::F64, -1, 1, 11);
  SparseTensor ub = pooling_transpose(SparseTensor(b, pa.key(), pa.manager()), PoolingMode::Sum,
                                      KernelRegion::cube({3}), {2});
  double lhs = fk::sum(fk::mul(pa.F(), b)).item(), rhs = fk::sum(fk::mul(a, ub.F())).item();
  EXPECT_NEAR(lhs, rhs, 1e-12 * std::max(1.0, std::abs(lhs)));
}

TEST(MinkowskiPoolingTranspose, GenerativeMakesEveryChild) {
  for (int d : {2, 3}) {
    const int c = 2, n = 30, children = 1 << d;
    Rows rows = random_rows(d, n, 4, 2, 2, 60 + d);
    fk::Tensor f = fk::test::random_tensor({n, c}, fk::DType::F64, -1, 1, 2);
    SparseTensor x(f, to_tensor(rows), {2});
    for (PoolingMode mode : kModes) {
      SparseTensor y = generative_pooling_transpose(x, mode, KernelRegion::cube({2}), {2});
      EXPECT_EQ(y.tensor_stride(), std::vector<int32_t>(d, 1));
      EXPECT_EQ(y.size(), n * children);
      EXPECT_NE(y.key(), x.key());
      // each child carries its parent's features, whatever the mode
      Rows out = from_tensor(y.C());
      auto lists = unpool_lists(rows, out, cube_offsets(d, 2, 1, 1));
      fk::test::expect_close(y.F(), reduce(lists, f.to_vector<double>(), c, Mode::Sum).out, 0.0);
      for (const auto& l : lists) EXPECT_EQ(l.size(), 1u);
    }
  }
}

// Kernel size = stride odd (3): the parent's cells o..o+2 are generated and
// each gets its parent's features (generated from the centred window, o-1
// got nothing and o+2 was missing); also when no finer map exists to unpool onto.
TEST(MinkowskiPoolingTranspose, OddKernelEqualToTheStrideGeneratesTheParentsCells) {
  SparseTensor x(
      fk::from_vector(std::vector<double>{5, 7}, fk::Dims{2, 1}),
      fk::from_vector(std::vector<int32_t>{0, 0, 0, 3, 1, -3}, fk::Dims{3, 2}).narrow(0, 0, 2),
      {3});
  for (PoolingMode mode : kModes) {
    for (bool generative : {true, false}) {
      SparseTensor y = generative
                           ? generative_pooling_transpose(x, mode, KernelRegion::cube({3}), {3})
                           : pooling_transpose(x, mode, KernelRegion::cube({3}), {3});
      EXPECT_EQ(y.C().to_vector<int32_t>(),
                (std::vector<int32_t>{0, 0, 0, 1, 0, 2, 0, 3, 0, 4, 0, 5}))
          << generative;
      fk::test::expect_close(y.F(), {5, 5, 5, 7, 7, 7}, 0.0);
    }
  }
}

TEST(MinkowskiPoolingTranspose, OntoGivenCoordinates) {
  Rows rows = random_rows(2, 50, 5, 2, 2, 70);
  SparseTensor x(fk::test::random_tensor({50, 2}, fk::DType::F64, -1, 1, 3), to_tensor(rows), {2});
  Rows target = random_rows(2, 60, 10, 1, 2, 71);
  MapKey tk = x.manager()->insert(to_tensor(target), {1}, "target").key;
  SparseTensor y = pooling_transpose(x, PoolingMode::Average, KernelRegion::cube({3}), {2},
                                     MapRef{x.manager(), tk});
  EXPECT_EQ(y.key(), tk);
  auto lists = unpool_lists(rows, target, cube_offsets(2, 3, 1, 1));
  fk::test::expect_close(y.F(), reduce(lists, x.F().to_vector<double>(), 2, Mode::Average).out,
                         1e-13);
}

TEST(MinkowskiPoolingTransposeGrad, GradcheckEveryMode) {
  Rows rows = random_rows(2, 12, 3, 2, 2, 5);
  auto mgr = std::make_shared<CoordinateManager>(2);
  fk::Tensor f = fk::test::random_tensor({12, 2}, fk::DType::F64, -1, 1, 1);
  SparseTensor base(f, to_tensor(rows), {2}, QuantizationMode::RandomSubsample, mgr);
  for (PoolingMode mode : kModes) {
    SCOPED_TRACE(pooling_mode_name(mode));
    EXPECT_GRADCHECK(
        [&](const std::vector<fk::Tensor>& in) {
          return pooling_transpose(SparseTensor(in[0], base.key(), mgr), mode,
                                   KernelRegion::cube({3}), {2})
              .F();
        },
        (std::vector<fk::Tensor>{f.clone().set_requires_grad(true)}));
    EXPECT_GRADCHECK(
        [&](const std::vector<fk::Tensor>& in) {
          return generative_pooling_transpose(SparseTensor(in[0], base.key(), mgr), mode,
                                              KernelRegion::cube({2}), {2})
              .F();
        },
        (std::vector<fk::Tensor>{f.clone().set_requires_grad(true)}));
  }
}

TEST(MinkowskiPoolingTranspose, HalfTypesAndThreads) {
  // f16/bf16: the coarse features rounded first, so the reference sees the
  // same inputs; the output is rounded once (relative 2^-11 / 2^-8 of sums of
  // at most 8 values of magnitude <= 1 for kernel 3 in 3-D with stride 2).
  const int c = 16, n = 6000;
  Rows rows = random_rows(3, n, 25, 1, 2, 81);
  SparseTensor x(fk::zeros({n, c}, {fk::DType::F64}), to_tensor(rows));
  MapKey ck = x.manager()->stride(x.key(), {2});
  int64_t nc = x.manager()->size(ck);
  std::vector<double> raw = fk::test::random_values(nc * c, -1, 1, 82);
  Rows coarse = from_tensor(x.manager()->coordinates(ck));
  auto lists = unpool_lists(coarse, rows, cube_offsets(3, 3, 1, 1));
  for (auto [dt, tol] : {std::pair{fk::DType::F16, 8 * 0.0005}, {fk::DType::BF16, 8 * 0.004}}) {
    SparseTensor cx(fk::from_vector(raw, fk::Dims{nc, c}).to(dt), ck, x.manager());
    for (PoolingMode mode : kModes) {
      SparseTensor y = pooling_transpose(cx, mode, KernelRegion::cube({3}), {2});
      EXPECT_EQ(y.F().dtype(), dt);
      fk::test::expect_close(y.F(), reduce(lists, round_to(raw, dt), c, ref_mode(mode)).out,
                             mode == PoolingMode::Max ? 0.0 : tol);
    }
  }
  fk::Tensor f32 = fk::from_vector(raw, fk::Dims{nc, c}).to(fk::DType::F32);
  for (PoolingMode mode : kModes) {
    std::vector<fk::Tensor> first;
    at_threads([&](int threads) {
      fk::Tensor fg = f32.clone().set_requires_grad(true);
      SparseTensor y =
          pooling_transpose(SparseTensor(fg, ck, x.manager()), mode, KernelRegion::cube({3}), {2});
      y.F().backward(fk::test::random_tensor(y.F().shape(), fk::DType::F32, -1, 1, 83));
      if (first.empty()) {
        first = {y.F(), fg.grad()};
        return;
      }
      EXPECT_TRUE(bitwise_equal(first[0], y.F())) << threads << " threads, forward";
      EXPECT_TRUE(bitwise_equal(first[1], fg.grad())) << threads << " threads, backward";
    });
  }
}

TEST(MinkowskiPoolingTranspose, ErrorsNameExpectedAndGiven) {
  Rows rows = random_rows(2, 20, 4, 2, 2, 3);
  SparseTensor x(fk::test::random_tensor({20, 3}, fk::DType::F64, -1, 1, 4), to_tensor(rows), {2});
  // another manager's map, even with an equal key
  SparseTensor other(fk::zeros({20, 3}, {fk::DType::F64}),
                     to_tensor(random_rows(2, 20, 4, 1, 2, 5)));
  EXPECT_THROW(
      pooling_transpose(x, PoolingMode::Sum, KernelRegion::cube({2}), {2}, other.map_ref()),
      fk::Error);
  // a map of the wrong tensor stride
  try {
    pooling_transpose(x, PoolingMode::Sum, KernelRegion::cube({2}), {2}, x.map_ref());
    FAIL() << "no error for an output map of tensor stride 2";
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("[1,1]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[2,2]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(pooling_transpose(x, PoolingMode::Sum, KernelRegion::cube({2}), {4}), fk::Error);
  EXPECT_THROW(generative_pooling_transpose(x, PoolingMode::Max, KernelRegion::cube({2}), {3}),
               fk::Error);
  EXPECT_THROW(
      generative_pooling_transpose(SparseTensor(), PoolingMode::Max, KernelRegion::cube({2}), {2}),
      fk::Error);
}

}  // namespace
}  // namespace minkowski
