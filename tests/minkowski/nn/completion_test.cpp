// The completion decoder: occupancy targets against a plain snap-and-compare,
// gradients through the levels (f64), and a small 2-D shape completed from
// its coarse voxels in 200 steps (measured: loss 1.39 -> 0.32, precision
// 1.00, recall 0.69 — the coarse voxels carry one constant feature, so where
// the ring runs inside a 4x4 cell can only come from the neighbours).
#include "minkowski/nn/completion.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "fk/fk.h"
#include "minkowski/nn/loss.h"
#include "minkowski/nn/module_gradcheck.h"
#include "minkowski/nn/optim.h"

namespace minkowski::nn {
namespace {

// A ring of radius 6 around (8, 8) in 2-D, batch 0: N x 3 int32.
fk::Tensor ring() {
  std::set<std::vector<int32_t>> pts;
  for (int a = 0; a < 360; a += 3) {
    const double t = a * M_PI / 180;
    pts.insert({0, static_cast<int32_t>(std::lround(8 + 6 * std::cos(t))),
                static_cast<int32_t>(std::lround(8 + 6 * std::sin(t)))});
  }
  std::vector<int32_t> flat;
  for (const auto& p : pts) flat.insert(flat.end(), p.begin(), p.end());
  return fk::from_vector(flat, {static_cast<int64_t>(pts.size()), 3});
}

// The coarse input: the target's voxels at stride 4, features ones.
SparseTensor coarse(const fk::Tensor& target, int64_t channels, fk::DType dtype) {
  auto c = target.to_vector<int32_t>();
  for (size_t i = 0; i < c.size(); ++i) {
    if (i % 3 != 0) c[i] = c[i] / 4 * 4;
  }
  const fk::Tensor coords = fk::from_vector(c, target.shape());
  const SparseTensor x(fk::ones({target.size(0), channels}, {dtype}), coords, {4});
  return SparseTensor(fk::ones({x.size(), channels}, {dtype}), x.key(), x.manager());
}

TEST(NnCompletion, OccupancyTargetsSnapToTheStride) {
  const fk::Tensor target =
      fk::from_vector(std::vector<int32_t>{0, 1, 1, 0, 5, 2, 1, 0, 0}, {3, 3});
  const fk::Tensor c =
      fk::from_vector(std::vector<int32_t>{0, 0, 0, 0, 4, 0, 0, 4, 4, 1, 0, 0}, {4, 3});
  const SparseTensor x(fk::zeros({4, 1}), c, {4});
  EXPECT_EQ(occupancy_targets(x, target).to_vector<double>(), (std::vector<double>{1, 1, 0, 1}));
  EXPECT_THROW(occupancy_targets(x, fk::zeros({2, 4}, {fk::DType::I32})), fk::Error);
}

TEST(NnCompletion, Gradients) {
  fk::manual_seed(3);
  CompletionDecoder dec({2, {3, 2}, 2, fk::DType::F64});
  const fk::Tensor target = ring();
  const SparseTensor x0 = coarse(target, 2, fk::DType::F64);
  const SparseTensor x(x0.F().clone().set_requires_grad(true), x0.key(), x0.manager());
  std::vector<fk::Tensor> leaves{x.F()};
  for (auto& [name, p] : dec.named_parameters()) {
    if (name == "level1_up.weight" || name == "level2_classify.weight") leaves.push_back(p);
  }
  auto run = [&] {
    const auto out = dec.forward(x, target);
    return fk::cat({out.logits[0], out.logits[1]}, 0);
  };
  EXPECT_EQ(testing::module_gradcheck(run, leaves), "");
}

TEST(NnCompletion, CompletesARingFromItsCoarseVoxels) {
  fk::manual_seed(0);
  CompletionDecoder dec({4, {16, 16}, 2, fk::DType::F32});
  const fk::Tensor target = ring();
  Adam adam(dec.parameters(), {0.01, 0.9, 0.999, 1e-8, 0.0, false});
  double first = 0, last = 0;
  for (int step = 0; step < 200; ++step) {
    adam.zero_grad();
    const auto out = dec.forward(coarse(target, 4, fk::DType::F32), target);
    fk::Tensor loss = fk::add(binary_cross_entropy_with_logits(out.logits[0], out.targets[0]),
                              binary_cross_entropy_with_logits(out.logits[1], out.targets[1]));
    loss.backward();
    adam.step();
    (step == 0 ? first : last) = loss.item();
  }
  dec.eval();
  fk::autograd::NoGradGuard no_grad;
  const auto out = dec.forward(coarse(target, 4, fk::DType::F32), target);
  const double hits = fk::sum(occupancy_targets(out.out, target)).item();
  const double precision = hits / out.out.size(), recall = hits / target.size(0);
  std::printf("loss %.3f -> %.3f; precision %.3f recall %.3f\n", first, last, precision, recall);
  EXPECT_LT(last, 0.3 * first);
  EXPECT_GT(precision, 0.9);
  EXPECT_GT(recall, 0.6);
}

}  // namespace
}  // namespace minkowski::nn
