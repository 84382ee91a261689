// BatchNorm and InstanceNorm against plain-loop references (statistics,
// running statistics, eval mode), gradchecks, dtypes, thread invariance and
// bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "fk/test_util.h"
#include "minkowski/ops/feature_ops_util.h"

namespace minkowski {
namespace {

using feature_ops::random_sparse;

// y of rows grouped by group[i]: (x - mean) / sqrt(var + eps) * w + b, with
// the biased variance of each group; also each group's mean and var.
struct RefNorm {
  std::vector<double> y;
  std::map<int, std::vector<double>> mean, var;
  std::map<int, int> count;
};
RefNorm reference_norm(const std::vector<double>& x, int c, const std::vector<int>& group,
                       double eps, const std::vector<double>& w, const std::vector<double>& b) {
  RefNorm r;
  const size_t n = group.size();
  for (size_t i = 0; i < n; ++i) {
    auto& m = r.mean[group[i]];
    m.resize(c, 0.0);
    r.var[group[i]].resize(c, 0.0);
    ++r.count[group[i]];
    for (int ch = 0; ch < c; ++ch) m[ch] += x[i * c + ch];
  }
  for (auto& [g, m] : r.mean)
    for (double& v : m) v /= r.count[g];
  for (size_t i = 0; i < n; ++i)
    for (int ch = 0; ch < c; ++ch) {
      double d = x[i * c + ch] - r.mean[group[i]][ch];
      r.var[group[i]][ch] += d * d / r.count[group[i]];
    }
  r.y.resize(n * c);
  for (size_t i = 0; i < n; ++i)
    for (int ch = 0; ch < c; ++ch)
      r.y[i * c + ch] =
          (x[i * c + ch] - r.mean[group[i]][ch]) / std::sqrt(r.var[group[i]][ch] + eps) * w[ch] +
          b[ch];
  return r;
}

fk::Tensor vec(const std::vector<double>& v, fk::DType t = fk::DType::F64) {
  return fk::from_vector(v, fk::Dims{static_cast<int64_t>(v.size())}).to(t);
}

TEST(MinkowskiBatchNorm, TrainingMatchesReferenceAndTracksRunningStats) {
  auto s = random_sparse(3, 20, 3, 1);
  BatchNorm bn(3, 1e-5, 0.1, true, true, fk::DType::F64);
  std::vector<double> w{1.5, -0.5, 2.0}, b{0.1, 0.2, -0.3};
  bn.weight = vec(w).set_requires_grad(true);
  bn.bias = vec(b).set_requires_grad(true);
  SparseTensor y = bn.forward(s.x);
  EXPECT_EQ(y.key(), s.x.key());
  EXPECT_EQ(y.manager(), s.x.manager());
  auto ref = reference_norm(s.f, 3, std::vector<int>(20, 0), 1e-5, w, b);
  fk::test::expect_close(y.F(), ref.y, 1e-12);
  // running = 0.9 running + 0.1 batch, the variance unbiased (n / (n - 1)).
  std::vector<double> rm(3), rv(3);
  for (int c = 0; c < 3; ++c) {
    rm[c] = 0.1 * ref.mean[0][c];
    rv[c] = 0.9 + 0.1 * ref.var[0][c] * 20.0 / 19.0;
  }
  fk::test::expect_close(bn.running_mean, rm, 1e-14);
  fk::test::expect_close(bn.running_var, rv, 1e-14);
  // A second batch: the update compounds.
  auto s2 = random_sparse(3, 10, 3, 2);
  bn.forward(s2.x);
  auto ref2 = reference_norm(s2.f, 3, std::vector<int>(10, 0), 1e-5, w, b);
  for (int c = 0; c < 3; ++c) {
    rm[c] = 0.9 * rm[c] + 0.1 * ref2.mean[0][c];
    rv[c] = 0.9 * rv[c] + 0.1 * ref2.var[0][c] * 10.0 / 9.0;
  }
  fk::test::expect_close(bn.running_mean, rm, 1e-14);
  fk::test::expect_close(bn.running_var, rv, 1e-14);
  EXPECT_EQ(bn.num_batches_tracked, 2);

  // Eval: the running statistics, an affine map of each point on its own.
  bn.eval();
  SparseTensor e = bn.forward(s.x);
  std::vector<double> want(s.f.size());
  for (size_t i = 0; i < 20; ++i)
    for (int c = 0; c < 3; ++c)
      want[i * 3 + c] = (s.f[i * 3 + c] - rm[c]) / std::sqrt(rv[c] + 1e-5) * w[c] + b[c];
  fk::test::expect_close(e.F(), want, 1e-12);
  fk::test::expect_close(bn.running_mean, rm, 0);  // eval does not update
}

TEST(MinkowskiBatchNorm, NoMomentumIsTheCumulativeAverage) {
  BatchNorm bn(2, 1e-5, std::nullopt, false, true, fk::DType::F64);
  std::vector<double> mean_sum(2, 0.0), var_sum(2, 0.0);
  for (unsigned seed : {11u, 12u, 13u}) {
    auto s = random_sparse(2, 8, 2, seed);
    bn.forward(s.x);
    auto ref = reference_norm(s.f, 2, std::vector<int>(8, 0), 1e-5, {1, 1}, {0, 0});
    for (int c = 0; c < 2; ++c) {
      mean_sum[c] += ref.mean[0][c];
      var_sum[c] += ref.var[0][c] * 8.0 / 7.0;
    }
  }
  fk::test::expect_close(bn.running_mean, {mean_sum[0] / 3, mean_sum[1] / 3}, 1e-15);
  fk::test::expect_close(bn.running_var, {var_sum[0] / 3, var_sum[1] / 3}, 1e-15);
  EXPECT_EQ(bn.num_batches_tracked, 3);
  feature_ops::expect_error([] { BatchNorm(2, 1e-5, 1.5); }, {"momentum in [0, 1]", "1.5"});
}

TEST(MinkowskiBatchNorm, NoAffineNoTrackingAndTensorField) {
  auto s = random_sparse(2, 12, 2, 3);
  BatchNorm bn(2, 1e-3, 0.1, false, false, fk::DType::F64);
  EXPECT_FALSE(bn.weight.defined());
  EXPECT_FALSE(bn.running_mean.defined());
  auto ref = reference_norm(s.f, 2, std::vector<int>(12, 0), 1e-3, {1, 1}, {0, 0});
  fk::test::expect_close(bn.forward(s.x).F(), ref.y, 1e-12);
  bn.eval();  // without running statistics, eval uses the batch's (as torch)
  fk::test::expect_close(bn.forward(s.x).F(), ref.y, 1e-12);
  // On a TensorField: the same points, normalized features.
  TensorField field(s.x.F(), s.x.C().to(fk::DType::F64));
  TensorField out = bn.forward(field);
  EXPECT_TRUE(feature_ops::same_bits(out.C(), field.C()));
  fk::test::expect_close(out.F(), ref.y, 1e-12);
}

TEST(MinkowskiInstanceNorm, NormalizesEachBatchItem) {
  auto s = random_sparse(3, 25, 4, 4);
  InstanceNorm in(4, 1e-5, true, fk::DType::F64);
  std::vector<double> w{1, 2, 3, 4}, b{0, -1, 1, 0.5};
  in.weight = vec(w).set_requires_grad(true);
  in.bias = vec(b).set_requires_grad(true);
  std::vector<int> group;
  for (const auto& r : s.rows) group.push_back(r[0]);
  auto ref = reference_norm(s.f, 4, group, 1e-5, w, b);
  ASSERT_EQ(ref.count.size(), 2u);  // both batch items occur
  SparseTensor y = in.forward(s.x);
  EXPECT_EQ(y.key(), s.x.key());
  fk::test::expect_close(y.F(), ref.y, 1e-12);
  // On a field: the batch column of its points groups them.
  TensorField field(s.x.F(), s.x.C().to(fk::DType::F64));
  fk::test::expect_close(in.forward(field).F(), ref.y, 1e-12);
  // Batch indices need not be 0..B-1: items 3 and -2.
  std::vector<int32_t> c{3, 0, 0, 3, 1, 0, -2, 5, 5, 3, 2, 2, -2, 4, 4};
  std::vector<double> f{1, 2, 4, 8, 16, 32, 0.5, 0.25, 3, 5};
  SparseTensor x(fk::from_vector(f, fk::Dims{5, 2}), fk::from_vector(c, fk::Dims{5, 3}));
  auto r2 = reference_norm(f, 2, {3, 3, -2, 3, -2}, 1e-5, {1, 1}, {0, 0});
  InstanceNorm plain(2, 1e-5, false, fk::DType::F64);
  fk::test::expect_close(plain.forward(x).F(), r2.y, 1e-12);
  // A field's NaN or out-of-int32 batch index is refused (a NaN joined batch
  // 0: it broke the ordering of the map that numbers the items).
  for (double bad : {std::nan(""), 3e9}) {
    std::vector<double> pts{0, 0.5, 0.5, bad, 1.5, 1.5, 0, 2.5, 0.5};
    TensorField f(fk::from_vector(std::vector<double>{1, 2, 3}, fk::Dims{3, 1}),
                  fk::from_vector(pts, fk::Dims{3, 3}));
    EXPECT_NE(fk::test::error_of([&] {
                (void)batch_segments(f);
              }).find("minkowski::batch_segments: expected finite batch indices within int32"),
              std::string::npos)
        << bad;
  }
}

TEST(MinkowskiNormalization, Gradcheck) {
  auto s = random_sparse(2, 9, 2, 5);
  fk::Tensor w = vec({0.7, -1.3}), b = vec({0.2, 0.4});
  Segments one = single_segment(9), items = batch_segments(s.x);
  for (const Segments* seg : {&one, &items}) {
    EXPECT_GRADCHECK(
        [&](const std::vector<fk::Tensor>& in) {
          return normalize(in[0], *seg, 1e-5, in[1], in[2]);
        },
        (std::vector<fk::Tensor>{s.x.F(), w, b}));
  }
  // Without affine parameters, and with fixed statistics (eval).
  EXPECT_GRADCHECK(
      [&](const std::vector<fk::Tensor>& in) {
        return normalize(in[0], items, 1e-5, fk::Tensor(), fk::Tensor());
      },
      (std::vector<fk::Tensor>{s.x.F()}));
  NormStats fixed = fixed_statistics(vec({0.1, -0.2}), vec({1.5, 0.5}), 1e-5);
  EXPECT_GRADCHECK(
      [&](const std::vector<fk::Tensor>& in) {
        return normalize(in[0], one, 1e-5, in[1], in[2], &fixed);
      },
      (std::vector<fk::Tensor>{s.x.F(), w, b}));
}

// single_segment has no per-row entries; it gives the bits of a segment
// list of zeros, forward and backward. A list of the wrong length, or a
// negative row count, is a clear error.
TEST(MinkowskiNormalization, SingleSegmentIsAListOfZerosWithoutTheList) {
  auto s = random_sparse(2, 40, 3, 8);
  Segments none = single_segment(40);
  EXPECT_TRUE(none.of_row.empty());
  EXPECT_EQ(none.count, 1);
  EXPECT_EQ(none.rows, 40);
  Segments zeros;
  zeros.of_row.assign(40, 0);
  const fk::Tensor w = vec({0.7, -1.3, 0.5}), b = vec({0.2, 0.4, -0.1});
  const fk::Tensor probe = fk::test::random_tensor({40, 3}, fk::DType::F64, -1, 1, 3);
  std::vector<std::vector<double>> got;
  for (const Segments* seg : {&none, &zeros}) {
    fk::Tensor x = s.x.F().detach().clone().set_requires_grad(true);
    const fk::Tensor y = normalize(x, *seg, 1e-5, w, b);
    fk::sum(fk::mul(y, probe)).backward();
    got.push_back(y.to_vector<double>());
    got.push_back(x.grad().to_vector<double>());
  }
  EXPECT_EQ(got[0], got[2]);
  EXPECT_EQ(got[1], got[3]);
  Segments short_list;
  short_list.of_row.assign(39, 0);
  feature_ops::expect_error(
      [&] { normalize(s.x.F(), short_list, 1e-5, w, b); },
      {"a segment for each of the 40 rows", "39 segment entries for 1 segments"});
  Segments no_list_of_two;
  no_list_of_two.count = 2;
  feature_ops::expect_error([&] { normalize(s.x.F(), no_list_of_two, 1e-5, w, b); },
                            {"0 segment entries for 2 segments"});
  feature_ops::expect_error([] { single_segment(-1); }, {"a row count >= 0", "-1"});
}

TEST(MinkowskiNormalization, HalfTypesComputeInF32) {
  auto s = random_sparse(3, 40, 3, 6);
  std::vector<int> group;
  for (const auto& r : s.rows) group.push_back(r[0]);
  auto bref = reference_norm(s.f, 3, std::vector<int>(40, 0), 1e-5, {1, 1, 1}, {0, 0, 0});
  auto iref = reference_norm(s.f, 3, group, 1e-5, {1, 1, 1}, {0, 0, 0});
  for (fk::DType t : {fk::DType::F32, fk::DType::F16, fk::DType::BF16}) {
    SparseTensor x = s.x.with_features(s.x.F().to(t));
    BatchNorm bn(3, 1e-5, 0.1, true, true, t);
    SparseTensor y = bn.forward(x);
    EXPECT_EQ(y.F().dtype(), t);
    EXPECT_EQ(bn.running_mean.dtype(), fk::DType::F32);
    // normalized values reach ~2.5: the tolerance of ~1 scaled by 3
    fk::test::expect_close(y.F(), bref.y, 3 * feature_ops::tolerance(t));
    InstanceNorm in(3, 1e-5, true, t);
    fk::test::expect_close(in.forward(x).F(), iref.y, 3 * feature_ops::tolerance(t));
    // Gradients reach the parameters in their dtype.
    fk::sum(fk::mul(y.F(), y.F().detach())).backward();
    EXPECT_EQ(bn.weight.grad().dtype(), t);
  }
}

TEST(MinkowskiNormalization, LargeMeanInF32) {
  // Features 1000 + noise of scale 0.1: centring before scaling keeps f32
  // results at f32 precision of the noise, for the output and the gradient.
  auto s = random_sparse(3, 64, 2, 9);
  std::vector<double> f32v;
  for (double v : s.f) f32v.push_back(static_cast<float>(1000 + 0.1 * v));
  fk::Tensor x = fk::from_vector(f32v, fk::Dims{64, 2});
  auto ref = reference_norm(f32v, 2, std::vector<int>(64, 0), 1e-5, {1, 1}, {0, 0});
  fk::Tensor x32 = x.to(fk::DType::F32).set_requires_grad(true);
  fk::Tensor y = normalize(x32, single_segment(64), 1e-5, {}, {});
  fk::test::expect_close(y, ref.y, 1e-4);
  // d/dx of sum(y * y0): against the f64 op on the same values.
  fk::Tensor x64 = x.clone().set_requires_grad(true);
  fk::Tensor y64 = normalize(x64, single_segment(64), 1e-5, {}, {});
  fk::Tensor probe = fk::test::random_tensor({64, 2}, fk::DType::F64, -1, 1, 10);
  fk::sum(fk::mul(y64, probe)).backward();
  fk::sum(fk::mul(y, probe.to(fk::DType::F32))).backward();
  // gradients are ~invstd = 1 / (0.1 * 0.58) ~ 17 in size
  fk::test::expect_close(x32.grad(), x64.grad().to_vector<double>(), 2e-3);
}

TEST(MinkowskiNormalization, ThreadInvariant) {
  // More rows than one statistics block (1024), so blocks are split over threads.
  auto s = random_sparse(3, 3000, 5, 7, fk::DType::F32, nullptr, 12);
  feature_ops::expect_thread_invariant([&] {
    fk::Tensor f = s.x.F().detach().set_requires_grad(true);
    BatchNorm bn(5);
    fk::Tensor y = bn.forward(s.x.with_features(f)).F();
    InstanceNorm in(5);
    fk::Tensor z = in.forward(s.x.with_features(f)).F();
    fk::sum(fk::mul(fk::add(y, z), y.detach())).backward();
    return std::vector<fk::Tensor>{
        y, z, bn.running_var, f.grad(), bn.weight.grad(), in.bias.grad()};
  });
}

TEST(MinkowskiNormalization, Errors) {
  auto s = random_sparse(2, 6, 3, 8);
  BatchNorm bn(4, 1e-5, 0.1, true, true, fk::DType::F64);
  feature_ops::expect_error([&] { bn.forward(s.x); }, {"N x 4", "[6, 3]"});
  BatchNorm bn3(3, 1e-5, 0.1, true, true, fk::DType::F32);
  feature_ops::expect_error([&] { bn3.forward(s.x); }, {"module's dtype f32", "got f64"});
  BatchNorm one(3, 1e-5, 0.1, true, true, fk::DType::F64);
  feature_ops::expect_error([&] { one.forward(s.x.F().narrow(0, 0, 1)); },
                            {"at least 2 points", "1 point"});
  feature_ops::expect_error([&] { one.forward(s.x.F().narrow(0, 0, 0)); }, {"0 point"});
  InstanceNorm in(2);
  feature_ops::expect_error([&] { in.forward(s.x); }, {"2 channels", "3"});
  feature_ops::expect_error([&] { normalize(s.x.F(), single_segment(5), 1e-5, {}, {}); },
                            {"one segment of the 6 rows", "one segment of 5 rows"});
  // An empty tensor has no batch items to normalize: InstanceNorm returns it.
  SparseTensor empty(fk::zeros({0, 3}, {fk::DType::F64}), fk::zeros({0, 3}, {fk::DType::I32}));
  InstanceNorm in3(3, 1e-5, true, fk::DType::F64);
  EXPECT_EQ(in3.forward(empty).size(), 0);
}

}  // namespace
}  // namespace minkowski
