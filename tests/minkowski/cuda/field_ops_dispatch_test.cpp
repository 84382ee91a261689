// Quantization (SparseTensor from coordinates, sparse_quantize, TensorField's
// sparse and slice), interpolation, splatting, to_sparse and union with
// features on the GPU, against the same ops on CPU features: outputs and
// feature gradients to 1e-6 (f32; the device walks every sum in the CPU's
// order, so they agree to f32 round-off, in practice bitwise), f64 to 1e-10
// compared in f64 (an f64 path computed in f32 would be off by ~1e-8), f16 to one f16 step, gathers
// and arg-max choices (ties included) exactly. The coordinates, points and maps stay on the host
// (device coordinates of fields: tensor_field_device_test.cpp). Also the mixed-device errors, and
// interpolation at device points.
#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <string>
#include <vector>

#include "device_test_util.h"
#include "fk/test_util.h"
#include "minkowski/ops/dense.h"
#include "minkowski/ops/interpolation.h"
#include "minkowski/ops/pooling.h"
#include "minkowski/ops/quantize.h"
#include "minkowski/ops/splat.h"
#include "minkowski/ops/union.h"

namespace minkowski {
namespace {

using cuda_test::expect_close;
using cuda_test::kGpu;
using cuda_test::leaf;
using cuda_test::random_rows;
using cuda_test::random_values;
using fk::test::error_of;

constexpr double kTol = 1e-6;
constexpr double kTol64 = 1e-10;

// n points [batch, x_1..x_3] over 2 batch items, coordinates uniform in
// [-span, span) (integers when `integral`: many duplicates), f64 on the CPU.
fk::Tensor random_points(int64_t n, double span, bool integral, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<double> u(-span, span);
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) {
    v.push_back(static_cast<double>(i % 2));
    for (int a = 0; a < 3; ++a) v.push_back(integral ? std::floor(u(g)) : u(g));
  }
  return fk::from_vector(v, fk::Dims{n, 4});
}

// Values in {-1, -0.5, .., 1}: duplicates meet equal values (max ties).
fk::Tensor tied_values(const fk::Dims& shape, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_int_distribution<int> half_steps(-2, 2);
  std::vector<float> v(static_cast<size_t>(shape.numel()));
  for (float& e : v) e = 0.5f * static_cast<float>(half_steps(g));
  return fk::from_vector(v, shape);
}

// f(leaf on CPU) and f(leaf on GPU): forward to `tol`, then the input's gradient.
void expect_matches(const fk::Tensor& input, const std::function<fk::Tensor(const fk::Tensor&)>& f,
                    double tol, const std::string& what) {
  const fk::Tensor xc = leaf(input, fk::kCPU), xg = leaf(input, kGpu);
  const fk::Tensor yc = f(xc), yg = f(xg);
  ASSERT_EQ(yg.device(), kGpu) << what;
  ASSERT_EQ(yg.dtype(), yc.dtype()) << what;
  expect_close(yg, yc, tol, what + " forward");
  const fk::Tensor g = random_values(yc.shape(), 1.0, 41).to(yc.dtype());
  yc.backward(g);
  yg.backward(g.to(kGpu));
  EXPECT_EQ(xg.grad().device(), kGpu) << what << " grad";
  expect_close(xg.grad(), xc.grad(), tol, what + " grad");
}

const std::vector<std::pair<std::string, QuantizationMode>> kModes = {
    {"random subsample", QuantizationMode::RandomSubsample},
    {"first occurrence", QuantizationMode::FirstOccurrence},
    {"sum", QuantizationMode::UnweightedSum},
    {"average", QuantizationMode::UnweightedAverage},
    {"max", QuantizationMode::MaxPool},
};

TEST(MinkowskiCudaFieldOpsDispatch, QuantizationMatchesTheCpu) {
  MK_SKIP_WITHOUT_GPU();
  // 3000 points on at most 2 x 8^3 voxels: about three per voxel.
  const fk::Tensor coords = random_points(3000, 4, true, 1).to(fk::DType::I32);
  const fk::Tensor f = tied_values({3000, 6}, 2);
  for (const auto& [name, mode] : kModes) {
    auto quantize = [&, mode = mode](const fk::Tensor& x) {
      return SparseTensor(x, coords, {1}, mode).F();
    };
    // Gathers (the max's arg-max rows included) are exact; sums to round-off.
    const bool sums =
        mode == QuantizationMode::UnweightedSum || mode == QuantizationMode::UnweightedAverage;
    expect_matches(f, quantize, sums ? kTol : 0, "quantize " + name);
    if (mode == QuantizationMode::RandomSubsample || mode == QuantizationMode::FirstOccurrence)
      continue;
    expect_matches(random_values({3000, 6}, 1.0, 3).to(fk::DType::F64), quantize, kTol64,
                   "f64 quantize " + name);
    // 16-bit features: compared and summed in f32 on both sides, rounded once.
    expect_matches(f.to(fk::DType::F16), quantize, 1e-3, "f16 quantize " + name);
  }
  // sparse_quantize reduces the features the same way.
  const fk::Tensor real = random_points(3000, 4, false, 4);
  for (QuantizationMode mode : {QuantizationMode::UnweightedAverage, QuantizationMode::MaxPool}) {
    const Quantized qc = sparse_quantize(real, f, {0.5}, mode);
    const Quantized qg = sparse_quantize(real, f.to(kGpu), {0.5}, mode);
    ASSERT_EQ(qg.features.device(), kGpu);
    EXPECT_EQ(qg.coordinates.to_vector<int32_t>(), qc.coordinates.to_vector<int32_t>());
    expect_close(qg.features, qc.features, kTol, "sparse_quantize");
  }
}

TEST(MinkowskiCudaFieldOpsDispatch, TensorFieldSparseAndSliceMatchTheCpu) {
  MK_SKIP_WITHOUT_GPU();
  const fk::Tensor points = random_points(2500, 3, false, 5);
  const KernelRegion k2 = KernelRegion::cube({2});
  // Field -> voxels (average) -> a strided max pooling -> back to the points
  // (slice on another map), with the field's own features appended.
  auto pipeline = [&](const fk::Tensor& f) {
    TensorField field(f, points);
    const SparseTensor s = field.sparse(0.5, QuantizationMode::UnweightedAverage);
    const SparseTensor pooled = max_pooling(s, k2, {2});
    const fk::Tensor own = field.slice(s);
    return pooled.cat_slice(field.with_features(own)).F();
  };
  expect_matches(random_values({2500, 4}, 1.0, 6), pipeline, kTol, "field pipeline");
  expect_matches(random_values({2500, 4}, 1.0, 7).to(fk::DType::F64), pipeline, kTol64,
                 "f64 field pipeline");
}

TEST(MinkowskiCudaFieldOpsDispatch, InterpolationMatchesTheCpu) {
  MK_SKIP_WITHOUT_GPU();
  // Voxels at tensor stride 2 around the origin; points over a wider box, so
  // some have every corner, some a part (renormalized), some none.
  const std::vector<int32_t> rows = random_rows(3, 1500, 6, 2, 2, 8);
  const fk::Tensor coords =
      fk::from_vector(rows, fk::Dims{static_cast<int64_t>(rows.size()) / 4, 4});
  const fk::Tensor points = random_points(2000, 14, false, 9);
  for (InterpolationMode mode : {InterpolationMode::Multilinear, InterpolationMode::Nearest}) {
    const std::string what =
        mode == InterpolationMode::Multilinear ? "multilinear interpolation" : "nearest";
    auto op = [&](const fk::Tensor& f) {
      const SparseTensor x(f, coords, {2});
      return interpolate(x, points, mode);
    };
    expect_matches(random_values({coords.size(0), 5}, 1.0, 10), op, kTol, what);
    expect_matches(random_values({coords.size(0), 5}, 1.0, 11).to(fk::DType::F64), op, kTol64,
                   "f64 " + what);
  }
  // At a field's points, as a field.
  auto at_field = [&](const fk::Tensor& f) {
    const SparseTensor x(f, coords, {2});
    return interpolate(x, TensorField(fk::zeros({points.size(0), 1}), points)).F();
  };
  expect_matches(random_values({coords.size(0), 3}, 1.0, 12), at_field, kTol, "field");
}

TEST(MinkowskiCudaFieldOpsDispatch, SplatMatchesTheCpu) {
  MK_SKIP_WITHOUT_GPU();
  const fk::Tensor points = random_points(1500, 5, false, 13);
  for (int ts : {1, 2}) {
    auto op = [&](const fk::Tensor& f) { return splat(TensorField(f, points), {ts}).F(); };
    const std::string what = "splat at stride " + std::to_string(ts);
    expect_matches(random_values({1500, 4}, 1.0, 14), op, kTol, what);
    expect_matches(random_values({1500, 4}, 1.0, 15).to(fk::DType::F64), op, kTol64, "f64 " + what);
  }
}

TEST(MinkowskiCudaFieldOpsDispatch, ToSparseAndUnionMatchTheCpu) {
  MK_SKIP_WITHOUT_GPU();
  // A 2 x 3 x (6 x 5 x 4) grid, about two cells in three zero in every channel.
  std::vector<float> v = random_values({2, 3, 120}, 1.0, 16).to_vector<float>();
  std::mt19937 g(17);
  for (int b = 0; b < 2; ++b)
    for (int cell = 0; cell < 120; ++cell)
      if (g() % 3 != 0)
        for (int c = 0; c < 3; ++c) v[(b * 3 + c) * 120 + cell] = 0.0f;
  const fk::Tensor dense = fk::from_vector(v, fk::Dims{2, 3, 6, 5, 4});
  for (bool remove_zeros : {true, false}) {
    auto op = [&](const fk::Tensor& d) {
      return to_sparse(d, {2}, nullptr, std::vector<int32_t>{-4, 0, 2}, remove_zeros);
    };
    const SparseTensor sc = op(dense), sg = op(dense.to(kGpu));
    EXPECT_EQ(sg.C().to_vector<int32_t>(), sc.C().to_vector<int32_t>()) << remove_zeros;
    expect_matches(
        dense, [&](const fk::Tensor& d) { return op(d).F(); }, 0, "to_sparse");
  }
  // Union of two tensors of one manager: overlapping rows add up.
  const std::vector<int32_t> ra = random_rows(3, 800, 6, 1, 2, 18);
  const std::vector<int32_t> rb = random_rows(3, 800, 6, 1, 2, 19);
  const fk::Tensor ca = fk::from_vector(ra, fk::Dims{800, 4}), cb = fk::from_vector(rb, {800, 4});
  const fk::Tensor fb = random_values({800, 3}, 1.0, 20);
  expect_matches(
      random_values({800, 3}, 1.0, 21),
      [&](const fk::Tensor& fa) {
        const SparseTensor a(fa, ca);
        const SparseTensor b(fb.to(fa.device()), cb, {1}, QuantizationMode::RandomSubsample,
                             a.manager());
        return sparse_union({a, b}).F();
      },
      kTol, "union");
}

TEST(MinkowskiCudaFieldOpsDispatch, MixedDevicesAreClearErrors) {
  MK_SKIP_WITHOUT_GPU();
  const fk::Tensor points = random_points(200, 3, false, 22);
  const fk::Tensor f = random_values({200, 2}, 1.0, 23);
  // Device coordinates need the features there (tensor_field_device_test.cpp
  // checks the device path itself).
  EXPECT_NE(error_of([&] { TensorField(f, points.to(kGpu)); }).find("coordinates' device"),
            std::string::npos);
  // Union inputs on two devices.
  const SparseTensor a(f.to(kGpu), points.to(fk::DType::I32));
  const SparseTensor b(f, fk::add(points, 1.0).to(fk::DType::I32), {1},
                       QuantizationMode::RandomSubsample, a.manager());
  EXPECT_NE(error_of([&] { sparse_union({a, b}); }).find("cuda:0"), std::string::npos);
  // Interpolation points may be on the device: read once, the same weights.
  expect_close(interpolate(a, points.to(kGpu)), interpolate(a, points), 0,
               "interpolation at device points");
  // cat_slice of voxels on the CPU onto the field on the device they came from.
  TensorField field(f.to(kGpu), points);
  const SparseTensor voxels = field.sparse(0.5);
  const SparseTensor on_cpu(voxels.F().to(fk::kCPU), voxels.key(), voxels.manager());
  EXPECT_NE(error_of([&] { on_cpu.cat_slice(field); }).find("cuda:0"), std::string::npos);
}

}  // namespace
}  // namespace minkowski
