// Global pooling (max / average / sum per batch item) against plain loops
// over the rows of each item: output coordinates and tensor stride, values,
// arg-max rows, gradients, f64 gradchecks, half types, bit-identical threads
// and the errors (empty item, empty tensor).
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

constexpr PoolingMode kModes[] = {PoolingMode::Max, PoolingMode::Average, PoolingMode::Sum};

Mode ref_mode(PoolingMode m) {
  return m == PoolingMode::Max ? Mode::Max : m == PoolingMode::Average ? Mode::Average : Mode::Sum;
}

// Rows of each batch item 0 .. batches-1, in row order.
std::vector<std::vector<int>> item_lists(const Rows& rows, int batches) {
  std::vector<std::vector<int>> l(batches);
  for (size_t i = 0; i < rows.size(); ++i) l[rows[i][0]].push_back(static_cast<int>(i));
  return l;
}

TEST(MinkowskiGlobalPooling, PerBatchItemMatchesPlainLoops) {
  for (int d : {2, 3})
    for (int batches : {1, 3}) {
      const int c = 3, n = 90;
      Rows rows = random_rows(d, n, 5, 2, batches, 20 + d + batches);
      fk::Tensor f = fk::test::random_tensor({n, c}, fk::DType::F64, -1, 1, 3);
      auto lists = item_lists(rows, batches);
      for (PoolingMode mode : kModes) {
        SCOPED_TRACE(std::string(pooling_mode_name(mode)) + " d=" + std::to_string(d));
        fk::Tensor fg = f.clone().set_requires_grad(true);
        SparseTensor x(fg, to_tensor(rows), {2});
        SparseTensor y = global_pooling(x, mode);
        Rows want_coords;
        for (int b = 0; b < batches; ++b) {
          want_coords.push_back(std::vector<int32_t>(d + 1, 0));
          want_coords.back()[0] = b;
        }
        EXPECT_EQ(from_tensor(y.C()), want_coords);
        EXPECT_EQ(y.tensor_stride(), x.tensor_stride());
        EXPECT_EQ(y.manager(), x.manager());
        Pooled want = reduce(lists, f.to_vector<double>(), c, ref_mode(mode));
        fk::test::expect_close(y.F(), want.out, 1e-13);
        if (mode == PoolingMode::Max) {
          auto groups = batch_groups(*x.manager()->map(x.key()), "test");
          EXPECT_EQ(global_pool_forward(f, groups, mode).argmax.to_vector<int32_t>(),
                    std::vector<int32_t>(want.argmax.begin(), want.argmax.end()));
        }
        fk::Tensor g = fk::test::random_tensor({batches, c}, fk::DType::F64, -1, 1, 4);
        y.F().backward(g);
        fk::test::expect_close(
            fg.grad(), reduce_grad(lists, want, g.to_vector<double>(), c, n, ref_mode(mode)),
            1e-13);
        // the origin map is made once per input map
        EXPECT_EQ(global_pooling(x, mode).key(), y.key());
      }
    }
}

TEST(MinkowskiGlobalPooling, MaxTiesGoToTheFirstRow) {
  Rows rows{{0, 3, 3}, {1, 0, 0}, {0, -1, 2}, {0, 5, -5}};
  fk::Tensor f = fk::from_vector(std::vector<double>{2, 7, 2, 2}, fk::Dims{4, 1});
  fk::Tensor fg = f.clone().set_requires_grad(true);
  SparseTensor y = global_max_pooling(SparseTensor(fg, to_tensor(rows)));
  EXPECT_EQ(y.F().to_vector<double>(), (std::vector<double>{2, 7}));
  y.F().backward(fk::from_vector(std::vector<double>{1, 5}, fk::Dims{2, 1}));
  EXPECT_EQ(fg.grad().to_vector<double>(), (std::vector<double>{1, 5, 0, 0}));
}

// A NaN anywhere in a batch item is its max (torch's max: the reference's
// default global max), also past the first 2048-row block, the first NaN
// holding the arg-max; `>` alone kept a NaN only in an item's first row.
TEST(MinkowskiGlobalPooling, MaxNaNWinsWhereverItSits) {
  for (fk::DType dt : {fk::DType::F64, fk::DType::F32}) {
    SCOPED_TRACE(fk::name(dt));
    Rows rows{{0, 3, 3}, {1, 0, 0}, {0, -1, 2}, {0, 5, -5}, {1, 1, 0}};
    const fk::Tensor f =
        fk::from_vector(std::vector<double>{2, 7, NAN, 4, NAN}, fk::Dims{5, 1}).to(dt);
    const SparseTensor x(f, to_tensor(rows));
    const auto y = global_max_pooling(x).F().to_vector<double>();
    EXPECT_TRUE(std::isnan(y[0]) && std::isnan(y[1]));
    const RowGroups rg = batch_groups(*x.manager()->map(x.key()), "test");
    EXPECT_EQ(global_pool_forward(f, rg, PoolingMode::Max).argmax.to_vector<int32_t>(),
              (std::vector<int32_t>{2, 4}));
    // One item of 5000 rows: the NaN sits in the second block.
    Rows many;
    for (int i = 0; i < 5000; ++i) many.push_back({0, i, 0});
    std::vector<double> v(5000, 1.0);
    v[3000] = NAN;
    v[4000] = 2.0;
    const auto big = global_max_pooling(SparseTensor(fk::from_vector(v, fk::Dims{5000, 1}).to(dt),
                                                     to_tensor(many)))
                         .F()
                         .to_vector<double>();
    EXPECT_TRUE(std::isnan(big[0]));
  }
}

TEST(MinkowskiGlobalPoolingGrad, GradcheckEveryMode) {
  Rows rows = random_rows(3, 12, 3, 1, 2, 7);
  auto mgr = std::make_shared<CoordinateManager>(3);
  fk::Tensor f = fk::test::random_tensor({12, 2}, fk::DType::F64, -1, 1, 8);
  SparseTensor base(f, to_tensor(rows), {1}, QuantizationMode::RandomSubsample, mgr);
  for (PoolingMode mode : kModes) {
    SCOPED_TRACE(pooling_mode_name(mode));
    EXPECT_GRADCHECK(
        [&](const std::vector<fk::Tensor>& in) {
          return global_pooling(SparseTensor(in[0], base.key(), mgr), mode).F();
        },
        (std::vector<fk::Tensor>{f.clone().set_requires_grad(true)}));
  }
}

TEST(MinkowskiGlobalPooling, HalfTypesAndThreads) {
  // Large items (several blocks of rows each). f16/bf16: inputs rounded
  // first; the f32 sums are exact to ~n 2^-24 relative, the output rounded
  // once: f16 2^-11, bf16 2^-8 relative to |sum| (here at most ~150, means
  // and maxima at most 1).
  const int c = 8, n = 12000;
  Rows rows = random_rows(3, n, 30, 1, 2, 31);
  std::vector<double> raw = fk::test::random_values(n * c, -1, 1, 32);
  auto lists = item_lists(rows, 2);
  for (auto [dt, rel] : {std::pair{fk::DType::F16, 0.0005}, {fk::DType::BF16, 0.004}}) {
    SparseTensor x(fk::from_vector(raw, fk::Dims{n, c}).to(dt), to_tensor(rows));
    for (PoolingMode mode : kModes) {
      SparseTensor y = global_pooling(x, mode);
      EXPECT_EQ(y.F().dtype(), dt);
      Pooled want = reduce(lists, round_to(raw, dt), c, ref_mode(mode));
      auto got = y.F().to_vector<double>();
      for (size_t i = 0; i < got.size(); ++i)
        EXPECT_NEAR(got[i], want.out[i],
                    mode == PoolingMode::Max ? 0.0 : rel * std::abs(want.out[i]) + 1e-3)
            << pooling_mode_name(mode) << " at " << i;
    }
  }
  fk::Tensor coords = to_tensor(rows);
  fk::Tensor f = fk::from_vector(raw, fk::Dims{n, c}).to(fk::DType::F32);
  for (PoolingMode mode : kModes) {
    std::vector<fk::Tensor> first;
    at_threads([&](int threads) {
      fk::Tensor fg = f.clone().set_requires_grad(true);
      SparseTensor y = global_pooling(SparseTensor(fg, coords), mode);
      y.F().backward(fk::test::random_tensor(y.F().shape(), fk::DType::F32, -1, 1, 33));
      if (first.empty()) {
        first = {y.F(), fg.grad()};
        return;
      }
      EXPECT_TRUE(bitwise_equal(first[0], y.F())) << threads << " threads, forward";
      EXPECT_TRUE(bitwise_equal(first[1], fg.grad())) << threads << " threads, backward";
    });
  }
}

// Batch items without points get no row (the reference's origin map holds
// the items present): the output's rows are the present items in ascending
// order at (b, 0, .., 0), each the reduction of its own rows, never a NaN,
// and a huge batch index sizes nothing by it.
TEST(MinkowskiGlobalPooling, ItemsWithoutPointsGetNoRow) {
  Rows rows{{2, 0, 0}, {0, 1, 1}, {2, 3, 1}, {7, 1, 0}};
  fk::Tensor f = fk::from_vector(std::vector<double>{1, 2, 5, 4}, fk::Dims{4, 1});
  for (PoolingMode mode : kModes) {
    SCOPED_TRACE(pooling_mode_name(mode));
    fk::Tensor fg = f.clone().set_requires_grad(true);
    SparseTensor y = global_pooling(SparseTensor(fg, to_tensor(rows)), mode);
    EXPECT_EQ(from_tensor(y.C()), (Rows{{0, 0, 0}, {2, 0, 0}, {7, 0, 0}}));
    const std::vector<double> want = mode == PoolingMode::Max       ? std::vector<double>{2, 5, 4}
                                     : mode == PoolingMode::Average ? std::vector<double>{2, 3, 4}
                                                                    : std::vector<double>{2, 6, 4};
    EXPECT_EQ(y.F().to_vector<double>(), want);
    y.F().backward(fk::from_vector(std::vector<double>{1, 10, 100}, fk::Dims{3, 1}));
    const std::vector<double> grad = mode == PoolingMode::Max ? std::vector<double>{0, 1, 10, 100}
                                     : mode == PoolingMode::Average
                                         ? std::vector<double>{5, 1, 5, 100}
                                         : std::vector<double>{10, 1, 10, 100};
    EXPECT_EQ(fg.grad().to_vector<double>(), grad);
  }
  // and the glob broadcasts back onto the items it came from
  const SparseTensor x(f, to_tensor(rows));
  EXPECT_EQ(broadcast_add(x, global_sum_pooling(x)).F().to_vector<double>(),
            (std::vector<double>{1 + 6, 2 + 2, 5 + 6, 4 + 4}));
  SparseTensor far(fk::ones({2, 1}, {fk::DType::F64}),
                   to_tensor(Rows{{0, 0, 0}, {2000000000, 0, 0}}));
  EXPECT_EQ(from_tensor(global_sum_pooling(far).C()), (Rows{{0, 0, 0}, {2000000000, 0, 0}}));
  SparseTensor neg(fk::ones({1, 1}, {fk::DType::F64}), to_tensor(Rows{{-1, 0, 0}}));
  EXPECT_THROW(global_sum_pooling(neg), fk::Error);
  // An empty tensor (a generative net pruned to nothing) pools to no item,
  // as every other op passes it through, and broadcasts back to nothing.
  fk::Tensor ef = fk::zeros({0, 2}, {fk::DType::F64}).set_requires_grad(true);
  SparseTensor empty(ef, fk::zeros({0, 3}, {fk::DType::I32}));
  for (auto pool : {global_max_pooling, global_avg_pooling, global_sum_pooling}) {
    const SparseTensor g = pool(empty);
    EXPECT_EQ(g.F().shape(), (fk::Dims{0, 2}));
    EXPECT_EQ(g.C().shape(), (fk::Dims{0, 3}));
  }
  const SparseTensor back = broadcast_add(empty, global_avg_pooling(empty));
  EXPECT_EQ(back.F().shape(), (fk::Dims{0, 2}));
  back.F().backward(fk::zeros({0, 2}, {fk::DType::F64}));
  EXPECT_EQ(ef.grad().shape(), (fk::Dims{0, 2}));
  EXPECT_THROW(global_max_pooling(SparseTensor()), fk::Error);
  RowGroups g = group_by({0, 1, 0}, 2);
  EXPECT_THROW(global_pool_forward(fk::zeros({2, 1}, {fk::DType::F64}), g, PoolingMode::Sum),
               fk::Error);
  EXPECT_THROW(
      global_pool_backward(fk::zeros({3, 1}, {fk::DType::F64}), g, PoolingMode::Sum, fk::Tensor()),
      fk::Error);
}

// The overload on batch indices (a TensorField's points, in any order)
// groups as the map version does (the items present, ascending) and refuses
// the same inputs.
TEST(MinkowskiGlobalPooling, BatchGroupsFromIndices) {
  RowGroups g = batch_groups(std::vector<int32_t>{1, 0, 2, 1, 0}, "test");
  EXPECT_EQ(g.groups, 3);
  EXPECT_EQ(g.begin, (std::vector<int64_t>{0, 2, 4, 5}));
  EXPECT_EQ(g.rows, (std::vector<int32_t>{1, 4, 0, 3, 2}));
  auto message = [](std::vector<int32_t> batch) {
    return fk::test::error_of([&] { batch_groups(std::move(batch), "test"); });
  };
  EXPECT_EQ(g.items, (std::vector<int32_t>{0, 1, 2}));
  RowGroups gap = batch_groups(std::vector<int32_t>{9, 3, 9, 2000000000}, "test");
  EXPECT_EQ(gap.groups, 3);
  EXPECT_EQ(gap.items, (std::vector<int32_t>{3, 9, 2000000000}));
  EXPECT_EQ(gap.group, (std::vector<int32_t>{1, 0, 1, 2}));
  // the same when the largest index is below the row count (a table, not a sort)
  RowGroups dense_gap = batch_groups(std::vector<int32_t>{4, 0, 4, 0, 4, 0}, "test");
  EXPECT_EQ(dense_gap.items, (std::vector<int32_t>{0, 4}));
  EXPECT_EQ(dense_gap.group, (std::vector<int32_t>{1, 0, 1, 0, 1, 0}));
  EXPECT_NE(message({0, -1}).find("batch indices >= 0"), std::string::npos);
  const RowGroups none = batch_groups(std::vector<int32_t>{}, "test");
  EXPECT_EQ(none.groups, 0);
  EXPECT_TRUE(none.items.empty() && none.rows.empty());
}

}  // namespace
}  // namespace minkowski
