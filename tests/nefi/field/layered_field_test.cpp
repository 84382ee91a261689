// LayeredField: the values are the written-out sum of steps at interfaces
// bent by the lateral cosines, the cosines are orthonormal on the cell
// centres and open degree by degree, gradients match finite differences in
// f64 in 1-3 D, the layers stack along the axis asked for, the field starts
// at the heads' value on every grid, and bad configurations are refused by
// name.
#include "nefi/field/layered_field.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "fk/factory.h"
#include "fk/random.h"
#include "fk/test_util.h"
#include "fk/testing.h"

namespace {

constexpr double kPi = std::numbers::pi;

std::vector<nefi::HeadPtr> one_head(double init = 0.0) {
  return {nefi::identity_head("x", init)};
}

double sigmoid(double t) {
  return 1 / (1 + std::exp(-t));
}

TEST(NefiLayeredValues, AreTheWrittenOutSteps) {
  // 2 interfaces on a 5 x 4 grid (layers along axis 0), degree 2: modes
  // k = 1, 2 of the one lateral axis.
  const int64_t n = 5, m = 4;
  const fk::Tensor phi = nefi::layered_modes({m}, 2, 1.0, fk::DType::F64);
  ASSERT_EQ(phi.shape(), fk::Dims({m, 2}));
  std::vector<double> z(n);
  for (int64_t i = 0; i < n; ++i) z[i] = (2.0 * i + 1) / n - 1;
  const fk::Tensor base = fk::from_vector(std::vector<double>{0.3}, {1});
  const fk::Tensor jumps = fk::from_vector(std::vector<double>{0.7, -0.4}, {1, 2});
  const fk::Tensor depths = fk::from_vector(std::vector<double>{-0.3, 0.4}, {1, 2});
  const fk::Tensor modes = fk::from_vector(std::vector<double>{0.1, -0.05, 0.0, 0.2}, {1, 2, 2});
  const double eps = 0.1;
  const auto got =
      nefi::layered_values(fk::from_vector(z, {n}), phi, base, jumps, depths, modes, eps)
          .to_vector<double>();  // (n, m, 1)
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j) {
      auto cosine = [&](int k) { return std::sqrt(2.0) * std::cos(kPi * k * (j + 0.5) / m); };
      const double z1 = -0.3 + 0.1 * cosine(1) - 0.05 * cosine(2);
      const double z2 = 0.4 + 0.2 * cosine(2);
      const double want = 0.3 + 0.7 * sigmoid((z[i] - z1) / eps) - 0.4 * sigmoid((z[i] - z2) / eps);
      EXPECT_NEAR(got[i * m + j], want, 1e-14) << i << " " << j;
    }
}

// On the cell centres the cosines are exactly orthonormal (mean square 1):
// a discrete cosine transform's rows. Degree l opens between progress
// (l - 1) / D and l / D.
TEST(NefiLayeredModes, AreOrthonormalOnTheCellsAndOpenByDegree) {
  const fk::Dims lateral{6, 5};
  const int D = 3, M = nefi::layered_mode_count(2, D);
  EXPECT_EQ(M, 15);
  EXPECT_EQ(nefi::layered_mode_count(1, D), 3);
  EXPECT_EQ(nefi::layered_mode_count(0, D), 0);
  const auto phi = nefi::layered_modes(lateral, D, 1.0, fk::DType::F64).to_vector<double>();
  for (int a = 0; a < M; ++a)
    for (int b = 0; b < M; ++b) {
      double g = 0;
      for (int64_t c = 0; c < 30; ++c) g += phi[c * M + a] * phi[c * M + b];
      EXPECT_NEAR(g / 30, a == b ? 1.0 : 0.0, 1e-12) << a << " " << b;
    }
  // At progress 1/2 of D = 3: degree 1 open, degree 2 half, degree 3 shut.
  const auto half = nefi::layered_modes({8}, 3, 0.5, fk::DType::F64).to_vector<double>();
  const auto full = nefi::layered_modes({8}, 3, 1.0, fk::DType::F64).to_vector<double>();
  for (int64_t c = 0; c < 8; ++c) {
    EXPECT_DOUBLE_EQ(half[c * 3], full[c * 3]);
    EXPECT_NEAR(half[c * 3 + 1], 0.5 * full[c * 3 + 1], 1e-15);
    EXPECT_EQ(half[c * 3 + 2], 0.0);
  }
}

TEST(NefiLayeredValues, GradientsMatchFiniteDifferences) {
  for (int d = 1; d <= 3; ++d) {
    fk::Generator gen(70 + d);
    const fk::Dims lateral = d == 1 ? fk::Dims{} : d == 2 ? fk::Dims{4} : fk::Dims{3, 2};
    const fk::Tensor phi = nefi::layered_modes(lateral, 2, 0.8, fk::DType::F64);
    const int64_t C = 2, I = 2, M = phi.size(1);
    const fk::Tensor z = fk::uniform({5}, -1, 1, {fk::DType::F64}, &gen);
    fk::Tensor base = fk::uniform({C}, -1, 1, {fk::DType::F64}, &gen);
    fk::Tensor jumps = fk::uniform({C, I}, -1, 1, {fk::DType::F64}, &gen);
    fk::Tensor depths = fk::uniform({C, I}, -0.8, 0.8, {fk::DType::F64}, &gen);
    fk::Tensor modes =
        fk::uniform({C, I, std::max<int64_t>(M, 1)}, -0.2, 0.2, {fk::DType::F64}, &gen);
    std::vector<fk::Tensor> in = {base, jumps, depths};
    if (M > 0) in.push_back(modes);
    for (fk::Tensor& t : in) t.set_requires_grad(true);
    const std::string err = fk::testing::gradcheck(
        [&](const std::vector<fk::Tensor>& p) {
          return nefi::layered_values(z, phi, p[0], p[1], p[2], M > 0 ? p[3] : fk::Tensor(), 0.3);
        },
        in);
    EXPECT_EQ(err, "") << d << "-D";
  }
}

TEST(NefiLayeredField, StartsAtTheHeadsValueAndStacksAlongItsAxis) {
  nefi::LayeredConfig cfg;
  cfg.layers = 3;
  cfg.modes = 2;
  nefi::LayeredField f({6, 5}, one_head(-0.4), cfg);
  EXPECT_EQ(f.kind(), "layers");
  EXPECT_EQ(f.n_parameters(), 1 + 2 * (2 + 2));
  for (double v : f.forward(nefi::Domain({6, 5}), 0.0).at("x").to_vector<double>())
    EXPECT_NEAR(v, -0.4, 1e-6);
  for (double v : f.forward(nefi::Domain({12, 10}), 1.0).at("x").to_vector<double>())
    EXPECT_NEAR(v, -0.4, 1e-6);
  // Jumps of +1 and +2 at the interfaces -1/3 and 1/3, flat: along axis 0
  // the rows step up; the same field along axis 1 is its transpose.
  auto with_steps = [](nefi::LayeredField& g) {
    fk::Tensor jumps = g.params().raw(1);
    jumps.copy_(fk::from_vector(std::vector<double>{1.0, 2.0}, {1, 2}).to(fk::DType::F32));
    g.params().flat().bump_version();
  };
  with_steps(f);
  const auto rows = f.forward(nefi::Domain({6, 5}), 1.0).at("x").to_vector<double>();
  for (int64_t j = 0; j < 5; ++j) {
    EXPECT_NEAR(rows[0 * 5 + j], -0.4, 1e-3);
    EXPECT_NEAR(rows[2 * 5 + j], 0.6, 1e-3);
    EXPECT_NEAR(rows[5 * 5 + j], 2.6, 1e-3);
  }
  cfg.axis = 1;
  nefi::LayeredField g({5, 6}, one_head(-0.4), cfg);
  with_steps(g);
  const auto cols = g.forward(nefi::Domain({5, 6}), 1.0).at("x").to_vector<double>();
  for (int64_t i = 0; i < 6; ++i)
    for (int64_t j = 0; j < 5; ++j) EXPECT_NEAR(cols[j * 6 + i], rows[i * 5 + j], 1e-6);
  // 1-D (flat layers of a profile) and 3-D along each axis: flat
  // interfaces give values that read only the coordinate along the axis.
  for (const fk::Dims& shape : {fk::Dims{9}, fk::Dims{3, 4, 6}})
    for (int axis = 0; axis < shape.size(); ++axis) {
      cfg.axis = axis;
      nefi::LayeredField h(shape, one_head(-0.4), cfg);
      EXPECT_EQ(h.n_parameters(), 1 + 2 * (2 + (shape.size() == 3 ? 8 : 0)));
      with_steps(h);
      const auto v = h.forward(nefi::Domain(shape), 1.0).at("x").to_vector<double>();
      const double eps = h.eps(1.0);
      for (int64_t cell = 0; cell < shape.numel(); ++cell) {
        int64_t at = cell;
        for (int b = shape.size() - 1; b > axis; --b) at /= shape[b];
        at %= shape[axis];
        const double z = (2.0 * at + 1) / shape[axis] - 1;
        const double want = -0.4 + sigmoid((z + 1.0 / 3) / eps) + 2 * sigmoid((z - 1.0 / 3) / eps);
        EXPECT_NEAR(v[cell], want, 1e-5) << shape.str() << " axis " << axis << " cell " << cell;
      }
    }
}

TEST(NefiLayeredField, RefusesBadConfigurationsByName) {
  auto with = [](int layers, int axis, int modes, double eps_end, const fk::Dims& shape) {
    nefi::LayeredConfig cfg;
    cfg.layers = layers;
    cfg.axis = axis;
    cfg.modes = modes;
    cfg.eps_end = eps_end;
    return fk::test::error_of([&] { nefi::LayeredField(shape, one_head(), cfg); });
  };
  EXPECT_NE(with(1, 0, 2, 0.01, {8, 8}).find("layer count in [2, 64]"), std::string::npos);
  EXPECT_NE(with(3, 2, 2, 0.01, {8, 8}).find("layer axis in [0, 2)"), std::string::npos);
  EXPECT_NE(with(3, 0, -1, 0.01, {8, 8}).find("interface mode degree"), std::string::npos);
  EXPECT_NE(with(3, 0, 2, 0.0, {8, 8}).find("widths eps > 0"), std::string::npos);
  EXPECT_NE(with(3, 0, 2, 0.01, {2, 2, 2, 2}).find("1-, 2- or 3-D"), std::string::npos);
  nefi::LayeredField f({8, 8}, one_head());
  EXPECT_NE(fk::test::error_of([&] { f.forward(nefi::Domain({8}), 1.0); }).find("2-D domain"),
            std::string::npos);
  const fk::Tensor one = fk::zeros({1}, {fk::DType::F64});
  EXPECT_NE(fk::test::error_of([&] {
              nefi::layered_values(fk::zeros({4}, {fk::DType::F64}),
                                   nefi::layered_modes({3}, 1, 1.0, fk::DType::F64), one,
                                   fk::zeros({1, 2}, {fk::DType::F64}),
                                   fk::zeros({1, 2}, {fk::DType::F64}),
                                   fk::zeros({1, 2, 2}, {fk::DType::F64}), 0.1);
            }).find("modes (C, K - 1, M) = [1, 2, 1]"),
            std::string::npos);
}

}  // namespace
