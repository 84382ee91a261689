// Gradchecks on the device in f64: the gradients autograd computes with the
// device kernels (features and parameters on the GPU) against central finite
// differences of the device forward (fk::testing::gradcheck), for the
// convolution (submanifold, strided, transposed: cuBLAS DGEMM), average and
// sum pooling, instance normalization (affine) and broadcast multiplication.
// Small problems: every output element costs one backward and every input
// element two forwards.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "device_test_util.h"
#include "fk/testing.h"
#include "minkowski/ops/broadcast.h"
#include "minkowski/ops/global_pooling.h"
#include "minkowski/ops/normalization.h"
#include "minkowski/ops/pooling.h"

namespace minkowski {
namespace {

using cuda_test::kGpu;
using cuda_test::random_rows;
using cuda_test::random_values;

// An f64 leaf on the GPU with values uniform in [-scale, scale).
fk::Tensor device_leaf(const fk::Dims& shape, double scale, uint64_t seed) {
  return cuda_test::leaf(random_values(shape, scale, seed).to(fk::DType::F64), kGpu);
}

// n points of D = 3 in [-2, 2]^3 (dense enough for neighbours) over
// `batches` items; the features are the gradchecked inputs.
SparseTensor coordinates_only(int64_t n, int batches, unsigned seed) {
  const std::vector<int32_t> rows = random_rows(3, n, 2, 1, batches, seed);
  const fk::Tensor coords =
      fk::from_vector(rows, fk::Dims{static_cast<int64_t>(rows.size()) / 4, 4});
  return SparseTensor(fk::zeros({coords.size(0), 1}, {fk::DType::F64}), coords);
}

SparseTensor with_features(const SparseTensor& x, const fk::Tensor& f) {
  return SparseTensor(f, x.key(), x.manager());
}

TEST(MinkowskiCudaGradcheckF64, Convolutions) {
  MK_SKIP_WITHOUT_GPU();
  const SparseTensor x = coordinates_only(30, 1, 81);
  const KernelRegion k3 = KernelRegion::cube({3}), k2 = KernelRegion::cube({2});
  const fk::Tensor f = device_leaf({30, 2}, 1.0, 82);
  const std::string sub = fk::testing::gradcheck(
      [&](const std::vector<fk::Tensor>& in) {
        return convolution(with_features(x, in[0]), in[1], {}, k3).F();
      },
      {f, device_leaf({27, 2, 3}, 0.5, 83)});
  EXPECT_EQ(sub, "") << "submanifold 3^3";
  const std::string strided = fk::testing::gradcheck(
      [&](const std::vector<fk::Tensor>& in) {
        return convolution(with_features(x, in[0]), in[1], {}, k2, {2}).F();
      },
      {f, device_leaf({8, 2, 3}, 0.5, 84)});
  EXPECT_EQ(strided, "") << "strided 2^3, stride 2";
  // The transpose back onto x's map from its stride-2 map.
  const SparseTensor down =
      convolution(with_features(x, f.detach()),
                  random_values({8, 2, 2}, 0.5, 85).to(fk::DType::F64).to(kGpu), {}, k2, {2});
  const std::string transposed = fk::testing::gradcheck(
      [&](const std::vector<fk::Tensor>& in) {
        return convolution_transpose(with_features(down, in[0]), in[1], {}, k2, {2}).F();
      },
      {cuda_test::leaf(down.F(), kGpu), device_leaf({8, 2, 3}, 0.5, 86)});
  EXPECT_EQ(transposed, "") << "transposed 2^3, stride 2";
}

TEST(MinkowskiCudaGradcheckF64, AverageAndSumPooling) {
  MK_SKIP_WITHOUT_GPU();
  const SparseTensor x = coordinates_only(30, 1, 87);
  const fk::Tensor f = device_leaf({30, 3}, 1.0, 88);
  for (PoolingMode mode : {PoolingMode::Average, PoolingMode::Sum}) {
    const std::string r = fk::testing::gradcheck(
        [&](const std::vector<fk::Tensor>& in) {
          return local_pooling(with_features(x, in[0]), mode, KernelRegion::cube({2}), {2}).F();
        },
        {f});
    EXPECT_EQ(r, "") << pooling_mode_name(mode) << " pooling 2^3, stride 2";
  }
  const std::string global = fk::testing::gradcheck(
      [&](const std::vector<fk::Tensor>& in) {
        return global_avg_pooling(with_features(x, in[0])).F();
      },
      {f});
  EXPECT_EQ(global, "") << "global average pooling";
}

// Batch statistics: the gradient flows through the mean and the variance.
TEST(MinkowskiCudaGradcheckF64, AffineInstanceNormalization) {
  MK_SKIP_WITHOUT_GPU();
  const SparseTensor x = coordinates_only(24, 2, 89);
  const Segments seg = batch_segments(x);
  const std::string r = fk::testing::gradcheck(
      [&](const std::vector<fk::Tensor>& in) { return normalize(in[0], seg, 1e-5, in[1], in[2]); },
      {device_leaf({24, 3}, 1.0, 90), device_leaf({3}, 1.0, 91), device_leaf({3}, 1.0, 92)});
  EXPECT_EQ(r, "");
}

TEST(MinkowskiCudaGradcheckF64, BroadcastMultiply) {
  MK_SKIP_WITHOUT_GPU();
  const SparseTensor x = coordinates_only(20, 2, 93);
  const SparseTensor glob = global_avg_pooling(with_features(x, device_leaf({20, 3}, 1.0, 94)));
  const std::string r = fk::testing::gradcheck(
      [&](const std::vector<fk::Tensor>& in) {
        return broadcast_multiply(with_features(x, in[0]), with_features(glob, in[1])).F();
      },
      {device_leaf({20, 3}, 1.0, 95), cuda_test::leaf(glob.F(), kGpu)});
  EXPECT_EQ(r, "");
}

}  // namespace
}  // namespace minkowski
