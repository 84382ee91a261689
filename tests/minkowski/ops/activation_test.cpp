// Pointwise nonlinearities on sparse tensors and fields: values against the
// formulas written out here, the map kept, gradchecks, dtypes, thread
// invariance.
#include <gtest/gtest.h>

#include <cmath>

#include "minkowski/ops/feature_ops_util.h"

namespace minkowski {
namespace {

using feature_ops::random_sparse;

struct Case {
  const char* name;
  std::function<SparseTensor(const SparseTensor&)> op;
  std::function<double(double)> ref;  // per element (softmax handled apart)
};

std::vector<Case> cases() {
  const double pi = 3.14159265358979323846;
  return {
      {"relu", [](const SparseTensor& x) { return relu(x); },
       [](double v) { return v > 0 ? v : 0.0; }},
      {"leaky_relu", [](const SparseTensor& x) { return leaky_relu(x, 0.2); },
       [](double v) { return v > 0 ? v : 0.2 * v; }},
      {"elu", [](const SparseTensor& x) { return elu(x, 1.5); },
       [](double v) { return v > 0 ? v : 1.5 * (std::exp(v) - 1); }},
      {"gelu", [](const SparseTensor& x) { return gelu(x); },
       [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }},
      {"gelu_tanh", [](const SparseTensor& x) { return gelu(x, true); },
       [pi](double v) {
         return 0.5 * v * (1 + std::tanh(std::sqrt(2 / pi) * (v + 0.044715 * v * v * v)));
       }},
      {"silu", [](const SparseTensor& x) { return silu(x); },
       [](double v) { return v / (1 + std::exp(-v)); }},
      {"sigmoid", [](const SparseTensor& x) { return sigmoid(x); },
       [](double v) { return 1 / (1 + std::exp(-v)); }},
      {"tanh", [](const SparseTensor& x) { return tanh(x); },
       [](double v) { return std::tanh(v); }},
  };
}

TEST(MinkowskiActivation, ValuesKeepTheMap) {
  auto s = random_sparse(3, 15, 4, 1);
  for (const auto& c : cases()) {
    for (fk::DType t : {fk::DType::F64, fk::DType::F32, fk::DType::F16, fk::DType::BF16}) {
      SparseTensor x = s.x.with_features(s.x.F().to(t));
      SparseTensor y = c.op(x);
      EXPECT_EQ(y.key(), s.x.key()) << c.name;
      EXPECT_EQ(y.manager(), s.x.manager()) << c.name;
      EXPECT_EQ(y.F().dtype(), t) << c.name;
      std::vector<double> want;
      for (double v : s.f) want.push_back(c.ref(v));
      SCOPED_TRACE(std::string(c.name) + " " + fk::name(t));
      fk::test::expect_close(y.F(), want, feature_ops::tolerance(t));
    }
  }
}

TEST(MinkowskiActivation, SoftmaxOverChannelsPerPoint) {
  auto s = random_sparse(2, 10, 3, 2);
  SparseTensor y = softmax(s.x);
  std::vector<double> want(s.f.size());
  for (size_t i = 0; i < 10; ++i) {
    double z = 0;
    for (int c = 0; c < 3; ++c) z += std::exp(s.f[i * 3 + c]);
    for (int c = 0; c < 3; ++c) want[i * 3 + c] = std::exp(s.f[i * 3 + c]) / z;
  }
  fk::test::expect_close(y.F(), want, 1e-14);
  EXPECT_EQ(y.key(), s.x.key());
  fk::test::expect_close(softmax(s.x.with_features(s.x.F().to(fk::DType::BF16))).F(), want,
                         feature_ops::tolerance(fk::DType::BF16));
}

TEST(MinkowskiActivation, TensorFieldKeepsPointsAndQuantization) {
  auto s = random_sparse(2, 8, 2, 3);
  TensorField field(s.x.F(), s.x.C().to(fk::DType::F64));
  SparseTensor q = field.sparse();
  TensorField y = relu(field);
  EXPECT_TRUE(y.C().is_same(field.C()));
  EXPECT_EQ(y.inverse_mapping(), field.inverse_mapping());
  std::vector<double> want;
  for (double v : s.f) want.push_back(v > 0 ? v : 0);
  fk::test::expect_close(y.F(), want, 0);
  fk::test::expect_close(y.slice(q), s.f, 0);  // the record still slices q
}

TEST(MinkowskiActivation, Gradcheck) {
  auto s = random_sparse(2, 7, 3, 4);
  // relu and leaky_relu are checked away from their kink (|x| > 0.05 here).
  for (const auto& c : cases()) {
    SCOPED_TRACE(c.name);
    EXPECT_GRADCHECK(
        [&](const std::vector<fk::Tensor>& in) { return c.op(s.x.with_features(in[0])).F(); },
        (std::vector<fk::Tensor>{s.x.F()}));
  }
  EXPECT_GRADCHECK(
      [&](const std::vector<fk::Tensor>& in) { return softmax(s.x.with_features(in[0])).F(); },
      (std::vector<fk::Tensor>{s.x.F()}));
}

TEST(MinkowskiActivation, ThreadInvariant) {
  auto s = random_sparse(3, 3000, 8, 5, fk::DType::F32, nullptr, 12);
  feature_ops::expect_thread_invariant([&] {
    std::vector<fk::Tensor> r;
    for (const auto& c : cases()) r.push_back(c.op(s.x).F());
    r.push_back(softmax(s.x).F());
    return r;
  });
}

TEST(MinkowskiActivation, BadFeatures) {
  auto s = random_sparse(2, 5, 2, 6);
  feature_ops::expect_error(
      [&] {
        s.x.with_features(fk::zeros({4, 2}, {fk::DType::F64}));
      },
      {"5 feature rows", "got 4"});
  feature_ops::expect_error(
      [&] {
        s.x.with_features(fk::zeros({5, 2}, {fk::DType::I32}));
      },
      {"f32, f64, f16 or bf16", "i32"});
}

}  // namespace
}  // namespace minkowski
