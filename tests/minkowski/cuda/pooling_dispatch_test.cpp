// Local pooling, pooling transposes, global pooling and broadcast with
// features on the GPU: the same SparseTensor (its maps on the host) pooled
// from CPU operands and from device operands through the public API and
// autograd; outputs and gradients equal to 1e-6 (f32), arg-max rows exactly
// (ties included). Also the mixed-device errors.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "device_test_util.h"
#include "fk/test_util.h"
#include "minkowski/ops/broadcast.h"
#include "minkowski/ops/global_pooling.h"
#include "minkowski/ops/pooling.h"
#include "minkowski/ops/pooling_transpose.h"

namespace minkowski {
namespace {

using cuda_test::expect_close;
using cuda_test::expect_same_map;
using cuda_test::kGpu;
using cuda_test::random_rows;
using cuda_test::random_values;
using fk::test::error_of;

constexpr double kTol = 1e-6;

// n points in D = 3 over `batches` items; features with values in
// {-1, -0.5, .., 1} when `ties` (so max pooling meets equal values), else
// uniform.
SparseTensor cpu_input(int64_t n, int64_t c, int batches, uint64_t seed, bool ties = false) {
  const std::vector<int32_t> rows = random_rows(3, n, 8, 1, batches, static_cast<unsigned>(seed));
  const fk::Tensor coords =
      fk::from_vector(rows, fk::Dims{static_cast<int64_t>(rows.size()) / 4, 4});
  fk::Tensor f = random_values({coords.size(0), c}, 1.0, seed + 1);
  if (ties) {
    std::mt19937 gen(static_cast<unsigned>(seed));
    std::uniform_int_distribution<int> half_steps(-2, 2);
    std::vector<float> v(static_cast<size_t>(f.numel()));
    for (float& e : v) e = 0.5f * static_cast<float>(half_steps(gen));
    f = fk::from_vector(v, f.shape());
  }
  return SparseTensor(f, coords);
}

SparseTensor on(const SparseTensor& x, fk::Device device) {
  fk::Tensor f = x.F().detach().clone().to(device);
  f.set_requires_grad(true);
  return SparseTensor(f, x.key(), x.manager());
}

using Unary = std::function<SparseTensor(const SparseTensor&)>;

// op on CPU and on GPU features: output, then the features' gradient.
void expect_unary_matches(const SparseTensor& x, const Unary& op, const std::string& what) {
  const SparseTensor xc = on(x, fk::kCPU), xg = on(x, kGpu);
  const SparseTensor yc = op(xc), yg = op(xg);
  expect_same_map(yc, yg, what);
  ASSERT_EQ(yg.F().device(), kGpu) << what;
  expect_close(yg.F(), yc.F(), kTol, what + " forward");
  const fk::Tensor g = random_values(yc.F().shape(), 1.0, 77);
  yc.F().backward(g);
  yg.F().backward(g.to(kGpu));
  expect_close(xg.F().grad(), xc.F().grad(), kTol, what + " grad features");
}

TEST(MinkowskiCudaPoolingDispatch, LocalPoolingMatchesTheCpu) {
  MK_SKIP_WITHOUT_GPU();
  const SparseTensor x = cpu_input(2000, 8, 2, 3);
  const KernelRegion k2 = KernelRegion::cube({2}), k3 = KernelRegion::cube({3});
  for (PoolingMode mode : {PoolingMode::Max, PoolingMode::Average, PoolingMode::Sum}) {
    const std::string m = pooling_mode_name(mode);
    expect_unary_matches(
        x, [&](const SparseTensor& s) { return local_pooling(s, mode, k2, {2}); },
        m + " kernel 2 stride 2");
    expect_unary_matches(
        x, [&](const SparseTensor& s) { return local_pooling(s, mode, k3, {1}); },
        m + " kernel 3 stride 1");
    // A region without the zero offset: outputs no input reaches get 0.
    const KernelRegion shifted = KernelRegion::custom({1, 0, 0, 0, 2, 0}, 3);
    expect_unary_matches(
        x, [&](const SparseTensor& s) { return local_pooling(s, mode, shifted, {1}); },
        m + " custom region without zero");
  }
}

TEST(MinkowskiCudaPoolingDispatch, PoolingTransposesMatchTheCpu) {
  MK_SKIP_WITHOUT_GPU();
  const SparseTensor x = cpu_input(2000, 8, 2, 5);
  const KernelRegion k2 = KernelRegion::cube({2}), k3 = KernelRegion::cube({3});
  const SparseTensor down = sum_pooling(x, k2, {2});
  const SparseTensor mid(down.F().detach(), down.key(), down.manager());
  for (PoolingMode mode : {PoolingMode::Max, PoolingMode::Average, PoolingMode::Sum}) {
    const std::string m = pooling_mode_name(mode);
    expect_unary_matches(
        mid, [&](const SparseTensor& s) { return pooling_transpose(s, mode, k2, {2}); },
        m + " transpose 2");
    expect_unary_matches(
        mid, [&](const SparseTensor& s) { return generative_pooling_transpose(s, mode, k3, {2}); },
        m + " generative transpose 3");
  }
}

TEST(MinkowskiCudaPoolingDispatch, MaxTiesPickTheCpusArgmax) {
  MK_SKIP_WITHOUT_GPU();
  const SparseTensor x = cpu_input(1500, 6, 2, 7, /*ties=*/true);
  auto map = x.manager()->kernel_map(x.key(), x.manager()->stride(x.key(), {2, 2, 2}),
                                     KernelRegion::cube({3}), false);
  const PoolingResult c = pool_forward(x.F(), *map, PoolingMode::Max);
  const PoolingResult g = pool_forward(x.F().to(kGpu), *map, PoolingMode::Max);
  EXPECT_EQ(g.argmax.device(), kGpu);
  EXPECT_EQ(g.argmax.to_vector<int32_t>(), c.argmax.to_vector<int32_t>());
  EXPECT_TRUE(cuda_test::bitwise_equal(g.out, c.out));
  const fk::Tensor grad = random_values(c.out.shape(), 1.0, 8);
  expect_close(pool_backward(grad.to(kGpu), *map, PoolingMode::Max, g.argmax),
               pool_backward(grad, *map, PoolingMode::Max, c.argmax), kTol, "max backward");
  // Global max over the same tied values.
  const RowGroups rg = batch_groups(*x.manager()->map(x.key()), "test");
  const GlobalPoolingResult gc = global_pool_forward(x.F(), rg, PoolingMode::Max);
  const GlobalPoolingResult gg = global_pool_forward(x.F().to(kGpu), rg, PoolingMode::Max);
  EXPECT_EQ(gg.argmax.to_vector<int32_t>(), gc.argmax.to_vector<int32_t>());
}

// NaNs in later rows: the device keeps max_order.h's order as the CPU does
// (a NaN wins, the first one holds the arg-max), local, global and the
// MaxPool quantization.
TEST(MinkowskiCudaPoolingDispatch, MaxNaNsPickTheCpusArgmax) {
  MK_SKIP_WITHOUT_GPU();
  const SparseTensor x = cpu_input(1500, 6, 2, 7);
  std::vector<double> v = x.F().to(fk::DType::F64).to_vector<double>();
  for (size_t i = 5; i < v.size(); i += 37) v[i] = NAN;
  const fk::Tensor f = fk::from_vector(v, x.F().shape()).to(x.F().dtype());
  auto map = x.manager()->kernel_map(x.key(), x.manager()->stride(x.key(), {2, 2, 2}),
                                     KernelRegion::cube({3}), false);
  const PoolingResult c = pool_forward(f, *map, PoolingMode::Max);
  const PoolingResult g = pool_forward(f.to(kGpu), *map, PoolingMode::Max);
  EXPECT_EQ(g.argmax.to_vector<int32_t>(), c.argmax.to_vector<int32_t>());
  EXPECT_TRUE(cuda_test::bitwise_equal(g.out, c.out));
  const RowGroups rg = batch_groups(*x.manager()->map(x.key()), "test");
  const GlobalPoolingResult gc = global_pool_forward(f, rg, PoolingMode::Max);
  const GlobalPoolingResult gg = global_pool_forward(f.to(kGpu), rg, PoolingMode::Max);
  EXPECT_EQ(gg.argmax.to_vector<int32_t>(), gc.argmax.to_vector<int32_t>());
  EXPECT_TRUE(cuda_test::bitwise_equal(gg.out, gc.out));
  // Every row twice: the MaxPool quantization's groups hold a row and its copy.
  const fk::Tensor twice = fk::cat({x.C(), x.C()}, 0);
  const fk::Tensor f2 = fk::cat({fk::mul(f, 0.5), f}, 0);
  const SparseTensor qc(f2, twice, {1}, QuantizationMode::MaxPool);
  const SparseTensor qg(f2.to(kGpu), twice.to(kGpu), {1}, QuantizationMode::MaxPool);
  EXPECT_TRUE(cuda_test::bitwise_equal(qg.F(), qc.F()));
}

TEST(MinkowskiCudaPoolingDispatch, OtherDtypesFollowTheCpu) {
  MK_SKIP_WITHOUT_GPU();
  const SparseTensor x = cpu_input(800, 4, 2, 9);
  auto map = x.manager()->kernel_map(x.key(), x.manager()->stride(x.key(), {2, 2, 2}),
                                     KernelRegion::cube({2}), false);
  for (fk::DType d : {fk::DType::F64, fk::DType::BF16}) {
    const fk::Tensor f = x.F().to(d);
    const PoolingResult c = pool_forward(f, *map, PoolingMode::Average);
    const PoolingResult g = pool_forward(f.to(kGpu), *map, PoolingMode::Average);
    EXPECT_EQ(g.out.dtype(), d);
    // bf16: computed in f32 on both, one rounding each (within one bf16 step)
    expect_close(g.out.to(fk::DType::F32), c.out.to(fk::DType::F32),
                 d == fk::DType::F64 ? 1e-12 : 1e-2, std::string("average ") + fk::name(d));
  }
}

TEST(MinkowskiCudaPoolingDispatch, GlobalPoolingMatchesTheCpu) {
  MK_SKIP_WITHOUT_GPU();
  // ~2500 rows per item: more than one kGlobalBlock of partials each.
  const SparseTensor x = cpu_input(5000, 8, 2, 11);
  for (PoolingMode mode : {PoolingMode::Max, PoolingMode::Average, PoolingMode::Sum})
    expect_unary_matches(
        x, [&](const SparseTensor& s) { return global_pooling(s, mode); },
        std::string("global ") + pooling_mode_name(mode));
}

// Batch items 1 and 4 only (items 0, 2 and 3 without points): two rows, as
// on the CPU, and the glob broadcasts back on the device.
TEST(MinkowskiCudaPoolingDispatch, ItemsWithoutPointsGetNoRowOnTheDevice) {
  MK_SKIP_WITHOUT_GPU();
  std::vector<int32_t> rows = random_rows(3, 600, 8, 1, 2, 17);
  for (size_t i = 0; i < rows.size(); i += 4) rows[i] = rows[i] == 0 ? 1 : 4;
  const fk::Tensor coords = fk::from_vector(rows, fk::Dims{600, 4});
  const SparseTensor x(random_values({600, 5}, 1.0, 18), coords);
  for (PoolingMode mode : {PoolingMode::Max, PoolingMode::Average, PoolingMode::Sum}) {
    const std::string what = std::string("global ") + pooling_mode_name(mode);
    expect_unary_matches(
        x, [&](const SparseTensor& s) { return global_pooling(s, mode); }, what);
    EXPECT_EQ(global_pooling(on(x, kGpu), mode).C().to_vector<int32_t>(),
              (std::vector<int32_t>{1, 0, 0, 0, 4, 0, 0, 0}))
        << what;
  }
  expect_unary_matches(
      x, [](const SparseTensor& s) { return broadcast_multiply(s, global_avg_pooling(s)); },
      "broadcast of the glob");
}

TEST(MinkowskiCudaPoolingDispatch, BroadcastMatchesTheCpu) {
  MK_SKIP_WITHOUT_GPU();
  const SparseTensor x = cpu_input(3000, 6, 3, 13);
  const SparseTensor pooled = global_avg_pooling(x);
  using Binary = std::function<SparseTensor(const SparseTensor&, const SparseTensor&)>;
  const std::vector<std::pair<std::string, Binary>> ops = {
      {"add", [](const SparseTensor& a, const SparseTensor& b) { return broadcast_add(a, b); }},
      {"multiply",
       [](const SparseTensor& a, const SparseTensor& b) { return broadcast_multiply(a, b); }},
      {"concatenation",
       [](const SparseTensor& a, const SparseTensor& b) { return broadcast_concatenation(a, b); }},
  };
  for (const auto& [name, op] : ops) {
    const SparseTensor xc = on(x, fk::kCPU), xg = on(x, kGpu);
    const SparseTensor gc = on(pooled, fk::kCPU), gg = on(pooled, kGpu);
    const SparseTensor yc = op(xc, gc), yg = op(xg, gg);
    ASSERT_EQ(yg.F().device(), kGpu) << name;
    expect_close(yg.F(), yc.F(), kTol, name + " forward");
    const fk::Tensor g = random_values(yc.F().shape(), 1.0, 15);
    yc.F().backward(g);
    yg.F().backward(g.to(kGpu));
    expect_close(xg.F().grad(), xc.F().grad(), kTol, name + " grad features");
    expect_close(gg.F().grad(), gc.F().grad(), kTol, name + " grad glob");
  }
}

// The device paths take strided views (a transpose: column stride 1 absent)
// and zero channels: the dispatch makes operands contiguous before handing
// raw pointers to the kernels, and a launch of no elements returns early.
// Local and global pooling of a transposed view equal the CPU's on the
// contiguous copy, arg-max rows included; zero channels give empty outputs
// on the device.
TEST(MinkowskiCudaPoolingDispatch, StridedAndChannellessFeaturesMatchTheCpu) {
  MK_SKIP_WITHOUT_GPU();
  const SparseTensor x = cpu_input(1200, 5, 2, 19);
  auto map = x.manager()->kernel_map(x.key(), x.manager()->stride(x.key(), {2, 2, 2}),
                                     KernelRegion::cube({3}), false);
  const RowGroups rg = batch_groups(*x.manager()->map(x.key()), "test");
  // N x C with strides (1, N): a view of a C x N tensor on the device.
  const fk::Tensor view = x.F().t().contiguous().to(kGpu).t();
  ASSERT_FALSE(view.is_contiguous());
  for (PoolingMode mode : {PoolingMode::Max, PoolingMode::Average, PoolingMode::Sum}) {
    const std::string m = pooling_mode_name(mode);
    const PoolingResult c = pool_forward(x.F(), *map, mode);
    const PoolingResult g = pool_forward(view, *map, mode);
    expect_close(g.out, c.out, kTol, m + " strided local");
    if (mode == PoolingMode::Max) {
      EXPECT_EQ(g.argmax.to_vector<int32_t>(), c.argmax.to_vector<int32_t>()) << m;
    }
    // The output gradient as a strided view too.
    const fk::Tensor grad = random_values(c.out.shape(), 1.0, 20);
    const fk::Tensor grad_view = grad.t().contiguous().to(kGpu).t();
    expect_close(pool_backward(grad_view, *map, mode, g.argmax),
                 pool_backward(grad, *map, mode, c.argmax), kTol, m + " strided local backward");
    const GlobalPoolingResult gc = global_pool_forward(x.F(), rg, mode);
    const GlobalPoolingResult gg = global_pool_forward(view, rg, mode);
    expect_close(gg.out, gc.out, kTol, m + " strided global");
    const fk::Tensor ggrad = random_values(gc.out.shape(), 1.0, 21);
    expect_close(global_pool_backward(ggrad.t().contiguous().to(kGpu).t(), rg, mode, gg.argmax),
                 global_pool_backward(ggrad, rg, mode, gc.argmax), kTol,
                 m + " strided global backward");
    // Zero channels: (rows x 0) results on the device, nothing launched.
    const fk::Tensor none = fk::zeros({x.F().size(0), 0}, {fk::DType::F32, kGpu});
    const PoolingResult z = pool_forward(none, *map, mode);
    EXPECT_EQ(z.out.device(), kGpu) << m;
    EXPECT_EQ(z.out.shape(), (fk::Dims{map->out_size, 0})) << m;
    const GlobalPoolingResult zg = global_pool_forward(none, rg, mode);
    EXPECT_EQ(zg.out.shape(), (fk::Dims{rg.groups, 0})) << m;
    EXPECT_EQ(global_pool_backward(zg.out, rg, mode, zg.argmax).shape(),
              (fk::Dims{x.F().size(0), 0}))
        << m;
  }
}

TEST(MinkowskiCudaPoolingDispatch, MixedDevicesAreClearErrors) {
  MK_SKIP_WITHOUT_GPU();
  const SparseTensor x = cpu_input(400, 4, 2, 17);
  const SparseTensor xg(x.F().to(kGpu), x.key(), x.manager());
  auto map = x.manager()->kernel_map(x.key(), x.key(), KernelRegion::cube({3}), false);
  const PoolingResult r = pool_forward(x.F(), *map, PoolingMode::Max);  // arg-max on the CPU
  EXPECT_NE(error_of([&] {
              pool_backward(x.F().to(kGpu), *map, PoolingMode::Max, r.argmax);
            }).find("arg-max rows on cuda:0"),
            std::string::npos);
  const RowGroups rg = batch_groups(*x.manager()->map(x.key()), "test");
  const GlobalPoolingResult gr = global_pool_forward(x.F(), rg, PoolingMode::Max);
  EXPECT_NE(error_of([&] {
              global_pool_backward(gr.out.to(kGpu), rg, PoolingMode::Max, gr.argmax);
            }).find("arg-max rows on cuda:0"),
            std::string::npos);
  EXPECT_NE(error_of([&] { group_sum_of_products(x.F().to(kGpu), x.F(), rg); }).find("cuda:0"),
            std::string::npos);
  const SparseTensor glob = global_sum_pooling(x);  // on the CPU
  EXPECT_NE(error_of([&] { broadcast_add(xg, glob); }).find("the global feature on cuda:0"),
            std::string::npos);
}

}  // namespace
}  // namespace minkowski
