#include "nefi/operators/angular_spectrum.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "fk/factory.h"
#include "fk/random.h"
#include "fk/testing.h"

namespace {

using c128 = std::complex<double>;

nefi::Field2 random_field(int64_t n, uint64_t seed) {
  fk::Generator g(seed);
  const auto re = fk::randn({n}, {fk::DType::F64}, &g).to_vector<double>();
  const auto im = fk::randn({n}, {fk::DType::F64}, &g).to_vector<double>();
  nefi::Field2 f(n);
  for (int64_t i = 0; i < n; ++i) f[i] = {re[i], im[i]};
  return f;
}

c128 inner(const nefi::Field2& a, const nefi::Field2& b) {
  c128 s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += std::conj(a[i]) * b[i];
  return s;
}

// Periodic (pad 1), no band limit, every frequency propagating (lambda < 2
// dx): |H| = 1, so +dz then -dz is the identity to round-off.
TEST(NefiAngularSpectrum, PeriodicRoundTripIsExact) {
  nefi::PropagationOptions o{0.5, false, 1, false};
  const auto u = random_field(2 * 16 * 12, 1);
  const std::vector<double> h{1.0, 1.0};
  const auto v = nefi::propagate(nefi::propagate(u, 2, 16, 12, h, 37.0, o), 2, 16, 12, h, -37.0, o);
  double err = 0;
  for (size_t i = 0; i < u.size(); ++i) err = std::max(err, std::abs(u[i] - v[i]));
  EXPECT_LT(err, 1e-14);
  // Evanescent waves are dropped: with lambda > 2 dx the round trip loses them.
  nefi::PropagationOptions ev{3.0, false, 1, false};
  const auto w = nefi::propagate(nefi::propagate(u, 2, 16, 12, h, 5.0, ev), 2, 16, 12, h, -5.0, ev);
  double lost = 0;
  for (size_t i = 0; i < u.size(); ++i) lost = std::max(lost, std::abs(u[i] - w[i]));
  EXPECT_GT(lost, 0.1);
}

// <P u, v> = <u, P^H v> for the whole pad -> filter -> crop map.
TEST(NefiAngularSpectrum, AdjointDotTest) {
  for (bool edge : {true, false}) {
    nefi::PropagationOptions o{0.5, true, 2, edge};
    const std::vector<double> h{1.0, 0.8};
    const auto u = random_field(9 * 7, 2), v = random_field(9 * 7, 3);
    const c128 lhs = inner(nefi::propagate(u, 1, 9, 7, h, 60.0, o), v);
    const c128 rhs = inner(u, nefi::propagate(v, 1, 9, 7, h, 60.0, o, true));
    EXPECT_NEAR(lhs.real(), rhs.real(), 1e-12 * std::abs(lhs));
    EXPECT_NEAR(lhs.imag(), rhs.imag(), 1e-12 * std::abs(lhs));
  }
}

// The tensor form of propagate on the CPU is the vector form, bit for bit.
TEST(NefiAngularSpectrum, TensorPropagateIsTheVectorOne) {
  const nefi::PropagationOptions o{0.5, true, 2, true};
  const std::vector<double> h{1.0, 0.8};
  const auto u = random_field(2 * 9 * 7, 4);
  for (bool adjoint : {false, true}) {
    const fk::Tensor t = nefi::propagate(fk::from_vector(u, {2, 9, 7}), h, 30.0, o, adjoint);
    EXPECT_EQ(t.shape(), fk::Dims({2, 9, 7}));
    EXPECT_EQ(t.to_vector<c128>(), nefi::propagate(u, 2, 9, 7, h, 30.0, o, adjoint));
  }
  EXPECT_THROW(nefi::propagate(fk::zeros({2, 9, 7}, {fk::DType::F64}), h, 30.0, o), fk::Error);
  EXPECT_THROW(nefi::propagate(fk::from_vector(u, {126}), h, 30.0, o), fk::Error);
}

// transfer_on caches one tensor per (grid, spacing, distance, device).
TEST(NefiHolography, TransferFunctionsAreCached) {
  const nefi::PropagationOptions o{0.5, true, 2, true};
  const nefi::HolographyOperator op(nefi::Domain({6, 5}, {3.0, 2.5}), {10.0}, o);
  const fk::Tensor a = op.transfer_on(10.0, fk::kCPU);
  EXPECT_EQ(a.shape(), fk::Dims({12, 10}));
  EXPECT_EQ(a.to_vector<c128>(), nefi::transfer_function(12, 10, op.domain().spacing(), 10.0, o));
  EXPECT_EQ(op.transfer_on(10.0, fk::kCPU).data_ptr(), a.data_ptr());
  EXPECT_NE(op.transfer_on(11.0, fk::kCPU).data_ptr(), a.data_ptr());
}

// A Gaussian beam exp(-r^2/w0^2) widens as w(z) = w0 sqrt(1 + (z/zR)^2),
// zR = pi w0^2 / lambda: the intensity's second moment is w^2/4 per axis.
TEST(NefiAngularSpectrum, GaussianBeamWidensAsTheParaxialFormula) {
  const int64_t n = 128;
  const double w0 = 6.0, lambda = 0.5, z = 200.0;
  nefi::Field2 u(n * n);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const double x = i - n / 2 + 0.5, y = j - n / 2 + 0.5;
      u[i * n + j] = std::exp(-(x * x + y * y) / (w0 * w0));
    }
  const auto v = nefi::propagate(u, 1, n, n, {1.0, 1.0}, z, {lambda, true, 2, false});
  double m0 = 0, m2 = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const double x = i - n / 2 + 0.5, I = std::norm(v[i * n + j]);
      m0 += I;
      m2 += I * x * x;
    }
  const double zr = std::numbers::pi * w0 * w0 / lambda;
  const double w = w0 * std::sqrt(1 + (z / zr) * (z / zr));
  EXPECT_NEAR(std::sqrt(4 * m2 / m0), w, 1e-3 * w);
}

TEST(NefiHolography, GradcheckBatchAndErrors) {
  nefi::Domain d({6, 5}, {6.0, 5.0});
  nefi::HolographyOperator op(d, {10.0, 25.0}, {0.5, true, 2, true}, 0.1);
  EXPECT_EQ(op.output_shape({6, 5}), fk::Dims({2, 6, 5}));
  fk::Generator g(4);
  fk::Tensor phi = fk::randn({6, 5}, {fk::DType::F64}, &g);
  phi.set_requires_grad(true);
  auto fn = [&](const std::vector<fk::Tensor>& in) { return op.apply(in[0]); };
  EXPECT_EQ(fk::testing::gradcheck(fn, {phi}), "");
  // Intensity of a uniform phase is the unpropagated |t|^2 everywhere (edge padding).
  const auto flat = op.apply(fk::full({6, 5}, 0.3, {fk::DType::F64})).to_vector<double>();
  for (double v : flat) EXPECT_NEAR(v, std::exp(-0.2), 1e-12);
  const fk::Tensor xb = fk::randn({3, 6, 5}, {fk::DType::F64}, &g);
  const auto yb = op.apply(xb).to_vector<double>();
  for (int64_t b = 0; b < 3; ++b) {
    const auto yi = op.apply(xb.select(0, b).contiguous()).to_vector<double>();
    for (size_t p = 0; p < yi.size(); ++p) EXPECT_NEAR(yb[b * yi.size() + p], yi[p], 1e-14);
  }
  EXPECT_THROW(op.apply(fk::zeros({5, 6}, {fk::DType::F64})), fk::Error);
  EXPECT_THROW(nefi::HolographyOperator(d, {10.0}, {-0.5, true, 2, true}), fk::Error);
  EXPECT_THROW(nefi::HolographyOperator(d, {-1.0}, {0.5, true, 2, true}), fk::Error);
  EXPECT_THROW(nefi::HolographyOperator(d, {}, {0.5, true, 2, true}), fk::Error);
  EXPECT_THROW(nefi::HolographyOperator(d, {1.0}, {0.5, true, 0, true}), fk::Error);
  EXPECT_THROW(nefi::HolographyOperator(nefi::Domain({8}), {1.0}, {}), fk::Error);
}

}  // namespace
