// The Poisson DST solve's device path (nefi/cuda/poisson_dst_cells.h) run on
// the host: the solve rebuilt from the cells' index arithmetic (odd
// extension, the CPU FFT, division by extended_inverse_eigenvalues(), the
// inverse FFT, the box's real part) against the CPU operator's dense-DST
// solve, 1-D to 3-D, odd and even sizes, both spectra, batched; the identity
// it rests on (the odd extension's DFT as a phase times the DST-II) checked
// against dst2_matrix written out; and the extension's and the box's index
// maps against each other.
#include "nefi/cuda/poisson_dst_cells.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <numbers>
#include <vector>

#include "fk/factory.h"
#include "fk/ops/fft.h"
#include "fk/random.h"
#include "nefi/operators/poisson_dst.h"

namespace {

using c128 = std::complex<double>;

nefi::cuda::OddExtension extension_of(const fk::Dims& shape, int64_t batch) {
  nefi::cuda::OddExtension g;
  g.ndim = static_cast<int>(shape.size());
  g.batch = batch;
  for (int a = 0; a < g.ndim; ++a) g.n[a] = shape[a];
  return g;
}

// The device solve, each kernel one loop over its outputs, the FFTs the CPU's.
std::vector<double> solve_by_cells(const nefi::PoissonOperator& op, const std::vector<double>& f,
                                   int64_t batch, double* max_imag) {
  const nefi::cuda::OddExtension g = extension_of(op.domain().shape(), batch);
  std::vector<int64_t> shape{batch}, dims;
  for (int a = 0; a < g.ndim; ++a) {
    shape.push_back(2 * g.n[a]);
    dims.push_back(a + 1);
  }
  std::vector<c128> ext(static_cast<size_t>(batch * g.extended_cells()));
  for (int64_t k = 0; k < static_cast<int64_t>(ext.size()); ++k) {
    double sign;
    const int64_t src = nefi::cuda::odd_extension_source(g, k, sign);
    ext[k] = {sign * f[src], 0.0};
  }
  auto spectrum = fk::fftn(fk::from_vector(ext, fk::Dims(shape)), {}, dims).to_vector<c128>();
  const std::vector<double> scale = op.extended_inverse_eigenvalues();
  for (size_t k = 0; k < spectrum.size(); ++k) spectrum[k] *= scale[k % scale.size()];
  const auto back =
      fk::ifftn(fk::from_vector(spectrum, fk::Dims(shape)), {}, dims).to_vector<c128>();
  std::vector<double> u(static_cast<size_t>(batch * g.cells()));
  *max_imag = 0;
  for (int64_t k = 0; k < static_cast<int64_t>(u.size()); ++k) {
    const c128 v = back[nefi::cuda::box_position(g, k)];
    u[k] = v.real();
    // NaN-propagating (std::max(m, NaN) is m): a NaN part fails the bound.
    if (!(std::abs(v.imag()) <= *max_imag)) *max_imag = std::abs(v.imag());
  }
  return u;
}

TEST(NefiPoissonDstCells, FftSolveIsTheCpuSolve) {
  constexpr int64_t kBatch = 2;
  const std::vector<nefi::Domain> domains = {
      nefi::Domain({9}, {1.3}), nefi::Domain({8}, {2.0}), nefi::Domain({7, 10}, {1.0, 1.5}),
      nefi::Domain({6, 5, 4}, {1.0, 0.8, 0.7}), nefi::Domain({1, 3}, {0.5, 1.0})};
  for (const nefi::Domain& d : domains)
    for (auto spectrum :
         {nefi::PoissonSpectrum::kContinuous, nefi::PoissonSpectrum::kFiniteDifference}) {
      const nefi::PoissonOperator op(d, spectrum, 1.7);
      SCOPED_TRACE(d.shape().str() + " " + op.fidelity_tag());
      fk::Generator gen(3);
      const auto f = fk::randn({kBatch * d.numel()}, {fk::DType::F64}, &gen).to_vector<double>();
      const std::vector<double> want = op.solve(f, kBatch);
      double max_imag = 0, scale = 0, worst = 0;
      const std::vector<double> got = solve_by_cells(op, f, kBatch, &max_imag);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i) {
        scale = std::max(scale, std::abs(want[i]));
        if (!(std::abs(got[i] - want[i]) <= worst)) worst = std::abs(got[i] - want[i]);
      }
      EXPECT_LE(worst, 1e-14 * scale);
      EXPECT_LE(max_imag, 1e-14 * scale);
    }
}

// Along one axis: DFT(odd extension of x)_m = -2i e^{i pi m / 2n} X_{m-1} for
// 1 <= m <= n and +2i e^{-i pi (2n-m) / 2n} X_{2n-m-1} above, 0 at m = 0, with
// X = the unnormalised DST-II (dst2_matrix's rows without their scaling).
TEST(NefiPoissonDstCells, OddExtensionSpectrumIsThePhasedDst) {
  for (int64_t n : {1, 4, 7}) {
    SCOPED_TRACE(n);
    const nefi::cuda::OddExtension g = extension_of(fk::Dims({n}), 1);
    fk::Generator gen(5);
    const auto x = fk::randn({n}, {fk::DType::F64}, &gen).to_vector<double>();
    std::vector<c128> ext(2 * n);
    for (int64_t k = 0; k < 2 * n; ++k) {
      double sign;
      const int64_t src = nefi::cuda::odd_extension_source(g, k, sign);
      ext[k] = sign * x[src];
    }
    const auto Y = fk::fft(fk::from_vector(ext, {2 * n})).to_vector<c128>();
    const std::vector<double> S = nefi::dst2_matrix(n);
    std::vector<double> X(n, 0.0);
    for (int64_t k = 0; k < n; ++k) {
      const double row_scale =
          std::sqrt(2.0 / static_cast<double>(n)) * (k == n - 1 ? std::numbers::sqrt2 / 2 : 1.0);
      for (int64_t i = 0; i < n; ++i) X[k] += S[k * n + i] / row_scale * x[i];
    }
    const c128 I(0, 1);
    EXPECT_LT(std::abs(Y[0]), 1e-13);
    EXPECT_EQ(nefi::cuda::extended_mode(g, 0), -1);
    for (int64_t m = 1; m < 2 * n; ++m) {
      const int64_t mode = nefi::cuda::extended_mode(g, m);
      const c128 want =
          m <= n ? -2.0 * I * std::exp(I * (std::numbers::pi * m / (2.0 * n))) * X[m - 1]
                 : 2.0 * I * std::exp(-I * (std::numbers::pi * (2 * n - m) / (2.0 * n))) *
                       X[2 * n - m - 1];
      EXPECT_EQ(mode, m <= n ? m - 1 : 2 * n - m - 1) << m;
      EXPECT_LT(std::abs(Y[m] - want), 1e-13) << m;
    }
  }
}

// A field cell's box position mirrors back to that cell with sign +1; the
// extension's cells mirror onto every field cell 2^d times, half of them
// negated per axis.
TEST(NefiPoissonDstCells, BoxAndExtensionIndexMapsAgree) {
  const nefi::cuda::OddExtension g = extension_of(fk::Dims({3, 4, 2}), 2);
  std::vector<int> hits(static_cast<size_t>(g.batch * g.cells()), 0);
  std::vector<double> sign_sum(hits.size(), 0.0);
  for (int64_t k = 0; k < g.batch * g.extended_cells(); ++k) {
    double sign;
    const int64_t src = nefi::cuda::odd_extension_source(g, k, sign);
    ASSERT_GE(src, 0);
    ASSERT_LT(src, g.batch * g.cells());
    ++hits[src];
    sign_sum[src] += sign;
  }
  for (size_t i = 0; i < hits.size(); ++i) {
    EXPECT_EQ(hits[i], 8) << i;
    EXPECT_EQ(sign_sum[i], 0.0) << i;
  }
  for (int64_t k = 0; k < g.batch * g.cells(); ++k) {
    double sign;
    EXPECT_EQ(nefi::cuda::odd_extension_source(g, nefi::cuda::box_position(g, k), sign), k);
    EXPECT_EQ(sign, 1.0);
  }
  // Cell (b=1, 2, 3, 1): box position ((1 * 6 + 2) * 8 + 3) * 4 + 1.
  EXPECT_EQ(nefi::cuda::box_position(g, ((1 * 3 + 2) * 4 + 3) * 2 + 1),
            ((1 * 6 + 2) * 8 + 3) * 4 + 1);
}

}  // namespace
