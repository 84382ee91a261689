// spmm and the channelwise convolution with operands on the GPU, against the
// same ops on CPU operands: outputs and the gradients of every operand to
// 1e-6 (f32; the device adds every sum's terms in the CPU's order with
// products rounded first, so they agree to f32 round-off, in practice
// bitwise), f64 to 1e-10 compared in f64, bf16 to one bf16 step. Two
// device runs are bitwise equal (no atomics). Also the mixed-device errors.
#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <string>
#include <vector>

#include "device_test_util.h"
#include "fk/test_util.h"
#include "minkowski/ops/conv.h"
#include "minkowski/ops/conv_kernel.h"
#include "minkowski/ops/spmm.h"

namespace minkowski {
namespace {

using cuda_test::bitwise_equal;
using cuda_test::expect_close;
using cuda_test::kGpu;
using cuda_test::leaf;
using cuda_test::random_rows;
using cuda_test::random_values;
using fk::test::error_of;

constexpr double kTol = 1e-6;
constexpr double kTol64 = 1e-10;

// f of leaves on the CPU and on the GPU: output, then every leaf's gradient;
// returns the device output.
using Op = std::function<fk::Tensor(const std::vector<fk::Tensor>&)>;
fk::Tensor expect_matches(const std::vector<fk::Tensor>& inputs, const Op& f, double tol,
                          const std::string& what) {
  std::vector<fk::Tensor> xc, xg;
  for (const auto& t : inputs) {
    xc.push_back(leaf(t, fk::kCPU));
    xg.push_back(leaf(t, kGpu));
  }
  const fk::Tensor yc = f(xc), yg = f(xg);
  EXPECT_EQ(yg.device(), kGpu) << what;
  EXPECT_EQ(yg.dtype(), yc.dtype()) << what;
  expect_close(yg, yc, tol, what + " forward");
  const fk::Tensor g = random_values(yc.shape(), 1.0, 31).to(yc.dtype());
  yc.backward(g);
  yg.backward(g.to(kGpu));
  for (size_t i = 0; i < inputs.size(); ++i) {
    EXPECT_EQ(xg[i].grad().device(), kGpu) << what << " grad " << i;
    expect_close(xg[i].grad(), xc[i].grad(), tol, what + " grad " + std::to_string(i));
  }
  return yg.detach();
}

// nnz entries of an m x k list, duplicates included.
struct List {
  fk::Tensor rows, cols;
};
List random_list(int64_t m, int64_t k, int64_t nnz, unsigned seed) {
  std::mt19937 g(seed);
  std::vector<int64_t> r(nnz), c(nnz);
  for (int64_t p = 0; p < nnz; ++p) {
    r[p] = static_cast<int64_t>(g() % m);
    c[p] = static_cast<int64_t>(g() % k);
  }
  return {fk::from_vector(r, fk::Dims{nnz}), fk::from_vector(c, fk::Dims{nnz})};
}

TEST(MinkowskiCudaSpmmDispatch, SpmmMatchesTheCpu) {
  MK_SKIP_WITHOUT_GPU();
  const int64_t m = 300, k = 400, nnz = 3000;
  const List a = random_list(m, k, nnz, 1);
  const fk::Tensor values = random_values({nnz}, 1.0, 2), dense = random_values({k, 7}, 1.0, 3);
  auto op = [&](const std::vector<fk::Tensor>& x) {
    return spmm(a.rows, a.cols, x[0], {m, k}, x[1]);
  };
  const fk::Tensor y = expect_matches({values, dense}, op, kTol, "spmm");
  const fk::Tensor again = spmm(a.rows, a.cols, values.to(kGpu), {m, k}, dense.to(kGpu));
  EXPECT_TRUE(bitwise_equal(again, y)) << "two device runs";
  const fk::Tensor v64 = values.to(fk::DType::F64), d64 = dense.to(fk::DType::F64);
  expect_matches({v64, d64}, op, kTol64, "f64 spmm");
  // bf16 dense with f32 values: computed in f32, rounded to bf16 once.
  expect_matches({values, dense.to(fk::DType::BF16)}, op, 1e-2, "bf16 spmm");
  // Index tensors on the device are read back to the host.
  const fk::Tensor on_device =
      spmm(a.rows.to(kGpu), a.cols.to(kGpu), values.to(kGpu), {m, k}, dense.to(kGpu));
  EXPECT_TRUE(bitwise_equal(on_device, y)) << "device indices";
  expect_matches(
      {dense},
      [&](const std::vector<fk::Tensor>& x) {
        return spmm_average(a.rows, a.cols, {m, k}, x[0]);
      },
      kTol, "spmm_average");
  // An empty list gives zeros, on the device.
  const List none = random_list(m, k, 0, 4);
  const fk::Tensor zero =
      spmm(none.rows, none.cols, fk::zeros({0}, {fk::DType::F32, kGpu}), {m, k}, dense.to(kGpu));
  EXPECT_EQ(zero.device(), kGpu);
  expect_close(zero, fk::zeros({m, 7}), 0, "empty list");
}

TEST(MinkowskiCudaSpmmDispatch, MixedDevicesAreClearErrors) {
  MK_SKIP_WITHOUT_GPU();
  const List a = random_list(5, 6, 20, 5);
  const fk::Tensor values = random_values({20}, 1.0, 6), dense = random_values({6, 2}, 1.0, 7);
  EXPECT_NE(error_of([&] {
              spmm(a.rows, a.cols, values, {5, 6}, dense.to(kGpu));
            }).find("values on cuda:0"),
            std::string::npos);
  const CooList list = coo_list(a.rows, a.cols, {5, 6});
  EXPECT_NE(error_of([&] {
              spmm_backward(fk::ones({5, 2}), list, values.to(kGpu), dense.to(kGpu), true, true);
            }).find("the gradient on cuda:0"),
            std::string::npos);
}

// n points in D = 3 over two batch items, coordinates in [-range, range].
SparseTensor cpu_input(int64_t n, int range, int64_t c, unsigned seed) {
  const std::vector<int32_t> rows = random_rows(3, n, range, 1, 2, seed);
  const fk::Tensor coords = fk::from_vector(rows, fk::Dims{n, 4});
  return SparseTensor(random_values({n, c}, 1.0, seed + 1), coords);
}

TEST(MinkowskiCudaChannelwiseDispatch, ChannelwiseConvolutionMatchesTheCpu) {
  MK_SKIP_WITHOUT_GPU();
  // 6000 rows: the centre offset has more pairs than one weight-gradient block.
  const SparseTensor x = cpu_input(6000, 10, 8, 8);
  struct Case {
    int kernel, stride;
  };
  for (const Case& cs : {Case{3, 1}, Case{2, 2}, Case{3, 2}, Case{1, 1}}) {
    const KernelRegion kernel = KernelRegion::cube({cs.kernel});
    const int64_t volume = kernel.volume(3);
    auto op = [&](const std::vector<fk::Tensor>& in) {
      const SparseTensor xs(in[0], x.key(), x.manager());
      return channelwise_convolution(xs, in[1], in[2], kernel, {cs.stride}).F();
    };
    const std::string what =
        "kernel " + std::to_string(cs.kernel) + ", stride " + std::to_string(cs.stride);
    const fk::Tensor w = random_values({volume, 8}, 0.3, 9), b = random_values({8}, 0.3, 10);
    const fk::Tensor y = expect_matches({x.F(), w, b}, op, kTol, what);
    EXPECT_TRUE(bitwise_equal(op({x.F().to(kGpu), w.to(kGpu), b.to(kGpu)}), y))
        << what << ": two device runs";
    const fk::DType f64 = fk::DType::F64;
    expect_matches({x.F().to(f64), w.to(f64), b.to(f64)}, op, kTol64, "f64 " + what);
  }
  const fk::DType bf16 = fk::DType::BF16;
  const KernelRegion k3 = KernelRegion::cube({3});
  expect_matches(
      {x.F().to(bf16), random_values({27, 8}, 0.3, 11).to(bf16)},
      [&](const std::vector<fk::Tensor>& in) {
        const SparseTensor xs(in[0], x.key(), x.manager());
        return channelwise_convolution(xs, in[1], fk::Tensor(), k3).F();
      },
      1e-2, "bf16");
}

// Strided operands on the device (transposed views, a column of a wider
// matrix): the dispatch makes them contiguous before the kernels read raw
// rows; results equal the CPU's on the contiguous copies, gradients through
// the views included. Zero channels give empty device results.
TEST(MinkowskiCudaChannelwiseDispatch, StridedOperandsMatchTheCpu) {
  MK_SKIP_WITHOUT_GPU();
  const int64_t m = 50, k = 60, nnz = 400;
  const List a = random_list(m, k, nnz, 21);
  // values: column 1 of nnz x 2 (stride 2); dense: the transpose of 5 x k.
  const fk::Tensor wide = random_values({nnz, 2}, 1.0, 22),
                   dense_t = random_values({5, k}, 1.0, 23);
  expect_matches(
      {wide, dense_t},
      [&](const std::vector<fk::Tensor>& x) {
        return spmm(a.rows, a.cols, x[0].select(1, 1), {m, k}, x[1].t());
      },
      kTol, "strided spmm");
  const SparseTensor x = cpu_input(1500, 6, 4, 24);
  const KernelRegion k3 = KernelRegion::cube({3});
  // features: the transpose of 4 x N; weight: the transpose of 4 x 27.
  expect_matches(
      {x.F().t().contiguous(), random_values({4, 27}, 0.3, 25)},
      [&](const std::vector<fk::Tensor>& in) {
        const SparseTensor xs(in[0].t(), x.key(), x.manager());
        return channelwise_convolution(xs, in[1].t(), fk::Tensor(), k3).F();
      },
      kTol, "strided channelwise");
  const SparseTensor none(fk::zeros({x.F().size(0), 0}, {fk::DType::F32, kGpu}), x.key(),
                          x.manager());
  const fk::Tensor y =
      channelwise_convolution(none, fk::zeros({27, 0}, {fk::DType::F32, kGpu}), fk::Tensor(), k3)
          .F();
  EXPECT_EQ(y.device(), kGpu);
  EXPECT_EQ(y.shape(), (fk::Dims{x.F().size(0), 0}));
}

TEST(MinkowskiCudaChannelwiseDispatch, MixedDevicesAreClearErrors) {
  MK_SKIP_WITHOUT_GPU();
  const SparseTensor x = cpu_input(300, 6, 4, 12);
  const SparseTensor xg(x.F().to(kGpu), x.key(), x.manager());
  const KernelRegion k3 = KernelRegion::cube({3});
  EXPECT_NE(error_of([&] {
              channelwise_convolution(xg, random_values({27, 4}, 0.2, 13), fk::Tensor(), k3);
            }).find("the weight on cuda:0"),
            std::string::npos);
  auto map = x.manager()->kernel_map(x.key(), x.key(), k3, false);
  EXPECT_NE(error_of([&] {
              channelwise_backward(fk::ones({300, 4}), xg.F(),
                                   random_values({27, 4}, 0.2, 14).to(kGpu), *map, true, true);
            }).find("the gradient on cuda:0"),
            std::string::npos);
  // The backward's weight too (its kernel read a host weight on the device).
  EXPECT_NE(error_of([&] {
              channelwise_backward(fk::ones({300, 4}).to(kGpu), xg.F(),
                                   random_values({27, 4}, 0.2, 15), *map, true, true);
            }).find("the weight on cuda:0"),
            std::string::npos);
}

}  // namespace
}  // namespace minkowski
