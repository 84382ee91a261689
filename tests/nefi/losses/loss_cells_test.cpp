// The loss kernels' per-cell arithmetic (nefi/cuda/loss_cells.h), run on the
// host, against the CPU losses: the same functions the device kernels call,
// so their formulas (the gathered TV gradient, the Laplacian applied twice,
// each cellwise derivative, NormalizedMSE's gradient through its mean) are
// checked without a GPU. All in f64: values to 1e-13 relative, gradients to
// 1e-13 of the largest entry (one sum order against another).
#include "nefi/cuda/loss_cells.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "fk/factory.h"
#include "fk/test_util.h"
#include "nefi/losses/every_loss.h"
#include "nefi/losses/loss.h"

namespace {

using fk::test::max_abs;

using nefi::cuda::CellwiseTerm;
using nefi::cuda::StencilGrid;

StencilGrid grid_of(const fk::Dims& shape, const std::vector<double>& scale,
                    const std::vector<int>& periodic = {}) {
  StencilGrid g;
  g.ndim = shape.size();
  int64_t stride = 1;
  for (int a = g.ndim - 1; a >= 0; --a) {
    g.shape[a] = shape[a];
    g.stride[a] = stride;
    g.scale[a] = scale[a];
    stride *= shape[a];
  }
  for (int a : periodic) g.periodic[a] = true;
  return g;
}

void expect_close(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  const double tol = 1e-13 * max_abs(want);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "cell " << i;
}

// The CPU loss's value and gradient in x (also the prediction).
struct Reference {
  double value;
  std::vector<double> grad;
};
Reference cpu_loss(const nefi::LossPtr& loss, const fk::Tensor& x0, const fk::Tensor& obs,
                   const fk::Tensor& mask, const nefi::Domain& d) {
  fk::Tensor x = x0.detach().set_requires_grad(true);
  nefi::FieldMap fields{{"x", x}};
  nefi::Measurement m;
  m.data = obs;
  m.mask = mask;
  nefi::LossContext c{&fields, x, &m, &d, nullptr, 0, 0, 1.0};
  const fk::Tensor v = loss->forward(c);
  v.backward();
  return {v.item(), x.grad().to_vector<double>()};
}

TEST(NefiLossCells, TotalVariationCellsAreTheCpuTotalVariation) {
  for (const fk::Dims& shape : {fk::Dims{37}, fk::Dims{6, 9}, fk::Dims{4, 1, 5}, fk::Dims{3, 4, 5}})
    for (bool isotropic : {true, false})
      for (bool periodic : {false, true}) {
        SCOPED_TRACE(shape.str() + (isotropic ? " iso" : " aniso") + (periodic ? " periodic" : ""));
        nefi::TVOptions o;
        o.isotropic = isotropic;
        o.eps = 1e-3;
        if (periodic) o.periodic_axes = {0};
        const nefi::Domain d = nefi_test::loss_domain(shape);
        const nefi_test::LossInputs in = nefi_test::loss_inputs(shape, false, 3);
        const Reference ref = cpu_loss(nefi::tv_loss("x", o), in.x, in.obs, {}, d);
        std::vector<double> scale;
        for (double h : d.spacing()) scale.push_back(1.0 / h);
        const StencilGrid g = grid_of(shape, scale, o.periodic_axes);
        const std::vector<double> x = in.x.to_vector<double>();
        const double n = static_cast<double>(x.size());
        double total = 0;
        std::vector<double> grad(x.size());
        for (size_t i = 0; i < x.size(); ++i) {
          total += nefi::cuda::tv_cell_value(x.data(), g, i, isotropic, o.eps * o.eps);
          grad[i] = nefi::cuda::tv_cell_gradient(x.data(), g, i, isotropic, o.eps * o.eps) / n;
        }
        EXPECT_NEAR(total / n, ref.value, 1e-13 * ref.value);
        expect_close(grad, ref.grad);
      }
}

TEST(NefiLossCells, LaplacianCellsAppliedTwiceAreTheCpuGradient) {
  for (const fk::Dims& shape : {fk::Dims{37}, fk::Dims{6, 9}, fk::Dims{4, 1, 5}}) {
    SCOPED_TRACE(shape.str());
    const nefi::Domain d = nefi_test::loss_domain(shape);
    const nefi_test::LossInputs in = nefi_test::loss_inputs(shape, false, 4);
    const Reference ref = cpu_loss(nefi::laplacian_loss("x"), in.x, in.obs, {}, d);
    std::vector<double> scale;
    for (int a = 0; a < shape.size(); ++a)
      scale.push_back(shape[a] >= 2 ? 1.0 / (d.spacing()[a] * d.spacing()[a]) : 0.0);
    const StencilGrid g = grid_of(shape, scale);
    const std::vector<double> x = in.x.to_vector<double>();
    const double n = static_cast<double>(x.size());
    std::vector<double> lap(x.size()), grad(x.size());
    double total = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      lap[i] = nefi::cuda::laplacian_cell(x.data(), g, i);
      total += lap[i] * lap[i];
    }
    for (size_t i = 0; i < x.size(); ++i)
      grad[i] = 2.0 / n * nefi::cuda::laplacian_cell(lap.data(), g, i);
    EXPECT_NEAR(total / n, ref.value, 1e-13 * ref.value);
    expect_close(grad, ref.grad);
  }
}

// mean_w f and w f' / sum w of a cellwise term against the CPU loss it stands for.
void expect_cellwise(const CellwiseTerm& t, const nefi::LossPtr& loss, bool positive, bool masked) {
  SCOPED_TRACE(loss->name() + (masked ? " masked" : ""));
  const fk::Dims shape{6, 9};
  const nefi::Domain d = nefi_test::loss_domain(shape);
  const nefi_test::LossInputs in = nefi_test::loss_inputs(shape, positive, 5);
  const Reference ref = cpu_loss(loss, in.x, in.obs, masked ? in.mask : fk::Tensor(), d);
  const std::vector<double> p = in.x.to_vector<double>(), y = in.obs.to_vector<double>(),
                            w0 = in.mask.to_vector<double>();
  double s = 0, W = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    const double w = masked ? w0[i] : 1.0;
    s += w * nefi::cuda::cell_value(t, p[i], y[i]);
    W += w;
  }
  std::vector<double> grad(p.size());
  for (size_t i = 0; i < p.size(); ++i)
    grad[i] = (masked ? w0[i] : 1.0) * nefi::cuda::cell_derivative(t, p[i], y[i]) / W;
  EXPECT_NEAR(s / W, ref.value, 1e-13 * std::abs(ref.value));
  expect_close(grad, ref.grad);
}

TEST(NefiLossCells, CellwiseTermsAreTheCpuLosses) {
  using namespace nefi::cuda;
  // Regularisers: plain means over the field (the measurement's mask is not theirs).
  expect_cellwise({kCellAbs, 1, 1}, nefi::l1_loss("x"), false, false);
  expect_cellwise({kCellSquare, 1, 1}, nefi::tikhonov_loss("x"), false, false);
  expect_cellwise({kCellRange, -0.5, 0.5}, nefi::range_penalty_loss(-0.5, 0.5, "x"), false, false);
  for (bool masked : {false, true}) {
    expect_cellwise({kCellSquaredError, 1, 1}, nefi::mse_loss(), false, masked);
    expect_cellwise({kCellHuber, 0.5, 1}, nefi::huber_loss(0.5), false, masked);
    expect_cellwise({kCellPoissonNll, 1e-6, 1}, nefi::poisson_nll_loss(1e-6), true, masked);
    // Some p <= 0: the relu branch.
    expect_cellwise({kCellPoissonNll, 1e-6, 1}, nefi::poisson_nll_loss(1e-6), false, masked);
    // LogMSE without normalisation (s = 1): a = 1 / s, b = eps.
    expect_cellwise({kCellLogError, 1.0, 1e-6}, nefi::log_mse_loss("none", 1e-6), true, masked);
  }
}

// NormalizedMSE's device gradient: w_j (2 r_j / mp) / W + w_j / W · dL/dmp,
// dL/dmp = -2 sum_w r p / (W mp^2), r = p / mp - y / ym (normalized_mse_device).
TEST(NefiLossCells, NormalizedMseGradientThroughItsMean) {
  for (bool masked : {false, true}) {
    SCOPED_TRACE(masked ? "masked" : "unmasked");
    const fk::Dims shape{6, 9};
    const nefi::Domain d = nefi_test::loss_domain(shape);
    const nefi_test::LossInputs in = nefi_test::loss_inputs(shape, true, 6);
    const Reference ref =
        cpu_loss(nefi::normalized_mse_loss(), in.x, in.obs, masked ? in.mask : fk::Tensor(), d);
    const std::vector<double> p = in.x.to_vector<double>(), y = in.obs.to_vector<double>(),
                              w0 = in.mask.to_vector<double>();
    auto w = [&](size_t i) { return masked ? w0[i] : 1.0; };
    double W = 0, sp = 0, sy = 0;
    for (size_t i = 0; i < p.size(); ++i) {
      W += w(i);
      sp += w(i) * p[i];
      sy += w(i) * y[i];
    }
    // The constants as the device computes them from its sums.
    const double ps[2] = {sp, W}, ys[2] = {sy, W};
    double c[4];
    nefi::cuda::normalized_constants(ps, ys, c);
    EXPECT_EQ(c[2], W);
    EXPECT_EQ(c[3], sp / W + 1e-12);
    const CellwiseTerm t{nefi::cuda::kCellSquaredError, c[0], c[1]};
    const CellwiseTerm rp{nefi::cuda::kCellResidualTimesP, c[0], c[1]};
    double s = 0, R = 0;
    for (size_t i = 0; i < p.size(); ++i) {
      s += w(i) * nefi::cuda::cell_value(t, p[i], y[i]);
      R += w(i) * nefi::cuda::cell_value(rp, p[i], y[i]);
    }
    nefi::cuda::RowDenominator den;
    den.values = c + 2;  // W, as normalized_mse_device divides
    const double sums[2] = {s, W};
    const double coef = 1 / nefi::cuda::row_denominator(den, sums, 0);
    const double bias = nefi::cuda::normalized_bias_factor(c, R);
    std::vector<double> grad(p.size());
    for (size_t i = 0; i < p.size(); ++i)
      grad[i] = w(i) * (coef * nefi::cuda::cell_derivative(t, p[i], y[i]) + bias);
    EXPECT_NEAR(s / nefi::cuda::row_denominator(den, sums, 0), ref.value, 1e-12 * ref.value);
    expect_close(grad, ref.grad);
  }
}

// A row's denominator, each way the device losses give it: RelativeMSE's
// energies (every other entry of their sums), the cell count of TV and the
// Laplacian, the weight sum times one scale or a scale per row.
TEST(NefiLossCells, RowDenominatorPicksTheRowsDivisor) {
  using nefi::cuda::row_denominator;
  const double sums[6] = {1.5, 4, 2.5, 6, 3.5, 0};  // {sum w f, sum w} of three rows
  const double energy[6] = {8, 3, 9, 3, 10, 3};     // {sum w y^2, sum w}
  nefi::cuda::RowDenominator relative;
  relative.values = energy;
  relative.stride = 2;
  EXPECT_EQ(row_denominator(relative, sums, 1), 9.0);
  EXPECT_EQ(row_denominator(relative, sums, 2), 10.0);
  nefi::cuda::RowDenominator count;
  count.constant = 12;
  EXPECT_EQ(row_denominator(count, sums, 1), 12.0);
  nefi::cuda::RowDenominator scaled;
  scaled.scale = 0.5;
  EXPECT_EQ(row_denominator(scaled, sums, 1), 3.0);
  const double per_row[3] = {2, 3, 4};
  scaled.row_scale = per_row;
  EXPECT_EQ(row_denominator(scaled, sums, 0), 8.0);
  EXPECT_EQ(row_denominator(scaled, sums, 1), 18.0);
  // An all-zero mask: a zero denominator, so the value is not finite (the
  // device reports it through the step's read-back instead of throwing).
  EXPECT_EQ(row_denominator(scaled, sums, 2), 0.0);
  EXPECT_FALSE(std::isfinite(sums[4] / row_denominator(scaled, sums, 2)));
}

}  // namespace
