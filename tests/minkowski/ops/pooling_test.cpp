// Local pooling (max / average / sum) against plain loops over coordinates:
// values, arg-max rows and gradients for cube, cross and custom regions with
// strides and dilation (negative coordinates, two batch items); f64
// gradchecks; half types; bit-identical results at 1, 2 and 3 threads; errors.
#include <gtest/gtest.h>

#include <cmath>

#include "fk/fk.h"
#include "fk/test_util.h"
#include "minkowski/minkowski.h"
#include "minkowski/ops/pooling_reference.h"

namespace minkowski {
namespace {

using namespace conv_ref;
using namespace pool_ref;

Mode ref_mode(PoolingMode m) {
  return m == PoolingMode::Max ? Mode::Max : m == PoolingMode::Average ? Mode::Average : Mode::Sum;
}

constexpr PoolingMode kModes[] = {PoolingMode::Max, PoolingMode::Average, PoolingMode::Sum};

// Pools a random tensor and checks values, arg-max rows, output coordinates
// and the features' gradient against the references.
void check_pool(int d, int ts, const KernelRegion& region, const Offsets& offs, int stride,
                unsigned seed) {
  const int c = 3, n = 70;
  Rows rows = random_rows(d, n, 5, ts, 2, seed);
  fk::Tensor f = fk::test::random_tensor({n, c}, fk::DType::F64, -1, 1, seed + 1);
  std::vector<double> fv = f.to_vector<double>();
  for (PoolingMode mode : kModes) {
    SCOPED_TRACE(std::string(pooling_mode_name(mode)) + " d=" + std::to_string(d) +
                 " stride=" + std::to_string(stride) + " region=" + region.str(d));
    fk::Tensor fg = f.clone().set_requires_grad(true);
    SparseTensor x(fg, to_tensor(rows), {ts});
    SparseTensor y = local_pooling(x, mode, region, {stride});
    EXPECT_EQ(y.tensor_stride(), std::vector<int32_t>(d, ts * stride));
    EXPECT_EQ(y.manager(), x.manager());
    Rows out = from_tensor(y.C());
    EXPECT_EQ(std::set<std::vector<int32_t>>(out.begin(), out.end()),
              strided_set(rows, ts * stride));
    EXPECT_EQ(out.size(), strided_set(rows, ts * stride).size());
    auto lists = pairs_by_out(rows, out, offs);
    Pooled want = reduce(lists, fv, c, ref_mode(mode));
    fk::test::expect_close(y.F(), want.out, 1e-13);
    if (mode == PoolingMode::Max) {
      auto kmap =
          x.manager()->kernel_map(x.key(), y.key(), pooling_region(region, {stride}, d), false);
      EXPECT_EQ(pool_forward(f, *kmap, mode).argmax.to_vector<int32_t>(),
                std::vector<int32_t>(want.argmax.begin(), want.argmax.end()));
    }
    fk::Tensor g = fk::test::random_tensor({y.size(), c}, fk::DType::F64, -1, 1, seed + 2);
    y.F().backward(g);
    fk::test::expect_close(
        fg.grad(), reduce_grad(lists, want, g.to_vector<double>(), c, n, ref_mode(mode)), 1e-13);
  }
}

TEST(MinkowskiPooling, CubeStridedMatchesPlainLoops) {
  check_pool(2, 1, KernelRegion::cube({2}), cube_offsets(2, 2, 1, 1), 2, 11);
  check_pool(3, 1, KernelRegion::cube({2}), cube_offsets(3, 2, 1, 1), 2, 12);
  check_pool(2, 1, KernelRegion::cube({3}), cube_offsets(2, 3, 1, 1), 2, 13);
  check_pool(3, 2, KernelRegion::cube({3}), cube_offsets(3, 3, 1, 2), 2, 14);  // ts 2 -> 4
  check_pool(2, 1, KernelRegion::cube({4}), cube_offsets(2, 4, 1, 1), 3, 15);
}

TEST(MinkowskiPooling, DilatedAndStrideOne) {
  check_pool(2, 1, KernelRegion::cube({3}, {2}), cube_offsets(2, 3, 2, 1), 1, 21);
  check_pool(3, 1, KernelRegion::cube({3}), cube_offsets(3, 3, 1, 1), 1, 22);
}

TEST(MinkowskiPooling, CrossAndCustomRegions) {
  check_pool(2, 1, KernelRegion::cross({3}), cross_offsets(2, 3, 1), 1, 31);
  check_pool(3, 1, KernelRegion::cross({5}), cross_offsets(3, 5, 1), 2, 32);
  // Custom offsets without the zero offset: some outputs have no input (0,
  // no gradient), and the order given is the tie order.
  std::vector<int32_t> custom{1, 0, 0, -1, 2, 2};
  check_pool(2, 1, KernelRegion::custom(custom, 2), Offsets{{1, 0}, {0, -1}, {2, 2}}, 1, 33);
  check_pool(2, 2, KernelRegion::custom(custom, 2), Offsets{{2, 0}, {0, -2}, {4, 4}}, 2, 34);
}

// Every offset of 0..s-1 per axis (axis 0 fastest), scaled by ts: each input's
// floor-strided parent reaches it.
Offsets parent_offsets(int d, int s, int ts) {
  Offsets r;
  std::vector<int> at(d, 0);
  while (true) {
    std::vector<int> o(d);
    for (int a = 0; a < d; ++a) o[a] = at[a] * ts;
    r.push_back(o);
    int a = 0;
    while (a < d && ++at[a] == s) at[a++] = 0;
    if (a == d) break;
  }
  return r;
}

// Kernel size = stride: MinkowskiEngine's stride map, each input pooled into
// its floor-strided parent, whatever the region's type or dilation. k = s = 3
// pooled the centred window o-1..o+1, and inputs at o+2 reached no output.
TEST(MinkowskiPooling, KernelSizeEqualToStrideIsTheStrideMap) {
  check_pool(2, 1, KernelRegion::cube({3}), parent_offsets(2, 3, 1), 3, 42);
  check_pool(3, 2, KernelRegion::cube({3}), parent_offsets(3, 3, 2), 3, 43);
  check_pool(2, 1, KernelRegion::cube({2}, {2}), parent_offsets(2, 2, 1), 2, 44);  // dilation too
  check_pool(2, 1, KernelRegion::cross({3}), parent_offsets(2, 3, 1), 3, 45);
  // An even size without dilation is the stride map already: the region as given.
  const KernelRegion two = KernelRegion::cube({2});
  EXPECT_EQ(pooling_region(two, {2}, 3).str(3), two.str(3));
  EXPECT_EQ(pooling_region(KernelRegion::cube({3}), {2}, 3).str(3),
            KernelRegion::cube({3}).str(3));  // k != s: the centred window stays
}

// The 1-D case by hand: inputs at 0..5 with features 1, 2, 4, ..., 32 pool
// (k = s = 3) to 1+2+4 at 0 and 8+16+32 at 3; unpooling copies each back to
// its three children.
TEST(MinkowskiPooling, OddKernelEqualToStrideByHand) {
  SparseTensor x(fk::from_vector(std::vector<double>{1, 2, 4, 8, 16, 32}, {6, 1}),
                 to_tensor(Rows{{0, 0}, {0, 1}, {0, 2}, {0, 3}, {0, 4}, {0, 5}}), {1});
  SparseTensor y = sum_pooling(x, KernelRegion::cube({3}), {3});
  EXPECT_EQ(y.F().to_vector<double>(), (std::vector<double>{7, 56}));
  EXPECT_EQ(max_pooling(x, KernelRegion::cube({3}), {3}).F().to_vector<double>(),
            (std::vector<double>{4, 32}));
  SparseTensor up = pooling_transpose(y, PoolingMode::Sum, KernelRegion::cube({3}), {3},
                                      MapRef{x.manager(), x.key()});
  EXPECT_EQ(up.F().to_vector<double>(), (std::vector<double>{7, 7, 7, 56, 56, 56}));
}

TEST(MinkowskiPooling, AverageDividesByInputsPresent) {
  // One 2x2 window holding 3 of its 4 sites: the average is their mean, not
  // the sum over 4.
  fk::Tensor coords = to_tensor(Rows{{0, -2, -2}, {0, -1, -2}, {0, -2, -1}, {1, 5, 5}});
  fk::Tensor f = fk::from_vector(std::vector<double>{1, 2, 6, 7}, fk::Dims{4, 1});
  SparseTensor y = avg_pooling(SparseTensor(f, coords), KernelRegion::cube({2}), {2});
  EXPECT_EQ(from_tensor(y.C()), (Rows{{0, -2, -2}, {1, 4, 4}}));
  EXPECT_EQ(y.F().to_vector<double>(), (std::vector<double>{3, 7}));
}

TEST(MinkowskiPooling, MaxTiesGoToTheFirstOffset) {
  // All four sites of a 2x2 window equal in channel 0: offset order is
  // (0,0), (1,0), (0,1), (1,1) (axis 0 fastest), so the first present one
  // wins; channel 1 has a strict maximum.
  Rows rows{{0, 1, 1}, {0, 0, 1}, {0, 1, 0}};
  fk::Tensor f = fk::from_vector(std::vector<double>{4, 1, 4, 9, 4, 2}, fk::Dims{3, 2});
  fk::Tensor fg = f.clone().set_requires_grad(true);
  SparseTensor x(fg, to_tensor(rows));
  SparseTensor y = max_pooling(x, KernelRegion::cube({2}), {2});
  EXPECT_EQ(y.F().to_vector<double>(), (std::vector<double>{4, 9}));
  auto kmap = x.manager()->kernel_map(x.key(), y.key(), KernelRegion::cube({2}), false);
  // ties: rows at offsets (1,0) -> row 2, (0,1) -> row 1, (1,1) -> row 0
  EXPECT_EQ(pool_forward(f, *kmap, PoolingMode::Max).argmax.to_vector<int32_t>(),
            (std::vector<int32_t>{2, 1}));
  y.F().backward(fk::from_vector(std::vector<double>{10, 20}, fk::Dims{1, 2}));
  EXPECT_EQ(fg.grad().to_vector<double>(), (std::vector<double>{0, 0, 0, 20, 10, 0}));
}

// A NaN anywhere in a window is its max (torch's max_pool), the first NaN
// holding the arg-max; `>` alone kept a NaN only in the first offset's row.
// Offset order as above: row 2, row 1, row 0.
TEST(MinkowskiPooling, MaxNaNWinsWhereverItSits) {
  Rows rows{{0, 1, 1}, {0, 0, 1}, {0, 1, 0}};
  for (fk::DType dt : {fk::DType::F64, fk::DType::F32}) {
    SCOPED_TRACE(fk::name(dt));
    const fk::Tensor f =
        fk::from_vector(std::vector<double>{5, NAN, NAN, 9, 1, NAN}, fk::Dims{3, 2}).to(dt);
    SparseTensor x(f, to_tensor(rows));
    const auto y = max_pooling(x, KernelRegion::cube({2}), {2}).F().to_vector<double>();
    EXPECT_TRUE(std::isnan(y[0]) && std::isnan(y[1]));
    auto kmap = x.manager()->kernel_map(x.key(), x.manager()->stride(x.key(), {2, 2}),
                                        KernelRegion::cube({2}), false);
    EXPECT_EQ(pool_forward(f, *kmap, PoolingMode::Max).argmax.to_vector<int32_t>(),
              (std::vector<int32_t>{1, 2}));
  }
}

TEST(MinkowskiPoolingGrad, GradcheckEveryMode) {
  Rows rows = random_rows(2, 14, 3, 1, 2, 5);
  fk::Tensor coords = to_tensor(rows);
  auto mgr = std::make_shared<CoordinateManager>(2);
  fk::Tensor f = fk::test::random_tensor({14, 2}, fk::DType::F64, -1, 1, 1);
  SparseTensor base(f, coords, {1}, QuantizationMode::RandomSubsample, mgr);
  for (PoolingMode mode : kModes)
    for (int k : {2, 3}) {
      SCOPED_TRACE(pooling_mode_name(mode));
      EXPECT_GRADCHECK(
          [&](const std::vector<fk::Tensor>& in) {
            return local_pooling(SparseTensor(in[0], base.key(), mgr), mode,
                                 KernelRegion::cube({k}), {2})
                .F();
          },
          (std::vector<fk::Tensor>{f.clone().set_requires_grad(true)}));
    }
}

TEST(MinkowskiPooling, HalfTypesWithinStatedTolerance) {
  // Inputs rounded to 16 bits first, so the reference sees the same inputs;
  // what remains is the output's one rounding (f16 2^-11, bf16 2^-8 relative;
  // sums of up to 27 values of magnitude <= 1 stay below 27) of sums computed
  // in f32. Max selects a value exactly.
  const int c = 4, n = 120;
  Rows rows = random_rows(3, n, 4, 1, 2, 77);
  std::vector<double> raw = fk::test::random_values(n * c, -1, 1, 78);
  struct Tol {
    fk::DType dt;
    double tol;
  };
  for (Tol t : {Tol{fk::DType::F16, 27 * 0.0005}, Tol{fk::DType::BF16, 27 * 0.004}}) {
    std::vector<double> fv = round_to(raw, t.dt);
    fk::Tensor f = fk::from_vector(raw, fk::Dims{n, c}).to(t.dt);
    SparseTensor x(f, to_tensor(rows));
    for (PoolingMode mode : kModes) {
      SparseTensor y = local_pooling(x, mode, KernelRegion::cube({3}), {2});
      EXPECT_EQ(y.F().dtype(), t.dt);
      auto lists = pairs_by_out(rows, from_tensor(y.C()), cube_offsets(3, 3, 1, 1));
      Pooled want = reduce(lists, fv, c, ref_mode(mode));
      fk::test::expect_close(y.F(), want.out, mode == PoolingMode::Max ? 0.0 : t.tol);
    }
  }
}

TEST(MinkowskiPooling, BitIdenticalAtOneTwoThreeThreads) {
  // Large enough for the parallel path (rows handed out in blocks on demand).
  const int c = 16, n = 8000;
  Rows rows = random_rows(3, n, 30, 1, 2, 91);
  fk::Tensor coords = to_tensor(rows);
  for (fk::DType dt : {fk::DType::F32, fk::DType::F64}) {
    fk::Tensor f = fk::test::random_tensor({n, c}, dt, -1, 1, 92);
    for (PoolingMode mode : kModes)
      for (int k : {2, 3}) {
        std::vector<fk::Tensor> first;
        at_threads([&](int threads) {
          fk::Tensor fg = f.clone().set_requires_grad(true);
          SparseTensor y =
              local_pooling(SparseTensor(fg, coords), mode, KernelRegion::cube({k}), {2});
          y.F().backward(fk::test::random_tensor(y.F().shape(), dt, -1, 1, 93));
          if (first.empty()) {
            first = {y.F(), fg.grad()};
            return;
          }
          EXPECT_TRUE(bitwise_equal(first[0], y.F())) << threads << " threads, forward";
          EXPECT_TRUE(bitwise_equal(first[1], fg.grad())) << threads << " threads, backward";
        });
      }
  }
}

TEST(MinkowskiPooling, EmptyTensorPoolsToEmpty) {
  SparseTensor x(fk::zeros({0, 2}, {fk::DType::F64}), fk::zeros({0, 3}, {fk::DType::I32}));
  for (PoolingMode mode : kModes) {
    fk::Tensor f = x.F().clone().set_requires_grad(true);
    SparseTensor y =
        local_pooling(SparseTensor(f, x.key(), x.manager()), mode, KernelRegion::cube({2}), {2});
    EXPECT_EQ(y.F().shape(), (fk::Dims{0, 2}));
    y.F().backward(fk::zeros({0, 2}, {fk::DType::F64}));
    EXPECT_EQ(f.grad().shape(), (fk::Dims{0, 2}));
  }
}

TEST(MinkowskiPooling, ErrorsNameExpectedAndGiven) {
  Rows rows = random_rows(2, 20, 4, 1, 2, 3);
  fk::Tensor f = fk::test::random_tensor({20, 3}, fk::DType::F64, -1, 1, 4);
  SparseTensor x(f, to_tensor(rows));
  auto kmap = x.manager()->kernel_map(x.key(), x.manager()->stride(x.key(), {2}),
                                      KernelRegion::cube({2}), false);
  try {
    pool_forward(fk::zeros({19, 3}, {fk::DType::F64}), *kmap, PoolingMode::Sum);
    FAIL() << "no error for features of the wrong row count";
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("20 x C"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("19"), std::string::npos) << e.what();
  }
  EXPECT_THROW(pool_forward(fk::zeros({20, 3}, {fk::DType::I32}), *kmap, PoolingMode::Sum),
               fk::Error);
  PoolingResult r = pool_forward(f, *kmap, PoolingMode::Max);
  EXPECT_THROW(pool_backward(fk::zeros({kmap->out_size, 2}, {fk::DType::F64}), *kmap,
                             PoolingMode::Max, r.argmax),
               fk::Error);
  EXPECT_THROW(pool_backward(r.out, *kmap, PoolingMode::Max, fk::Tensor()), fk::Error);
  EXPECT_THROW(max_pooling(x, KernelRegion::cube({2}), {2, 2, 2}), fk::Error);  // D = 2
  EXPECT_THROW(max_pooling(x, KernelRegion::cube({2}), {0}), fk::Error);
  EXPECT_THROW(max_pooling(x, KernelRegion::cross({2}), {1}), fk::Error);  // even cross
  EXPECT_THROW(max_pooling(SparseTensor(), KernelRegion::cube({2}), {2}), fk::Error);
}

}  // namespace
}  // namespace minkowski
