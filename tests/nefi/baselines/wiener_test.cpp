#include "nefi/baselines/wiener.h"

#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <numbers>
#include <vector>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/random.h"

namespace {

using cplx = std::complex<double>;

const std::vector<double> kSigma{0.12, 0.15, 0.36};

// A separable Gaussian of std kSigma (physical) sampled over the largest odd
// count of cells <= the grid's, unit sum per axis.
nefi::PsfSample sampled_gaussian(const std::vector<double>& h, const std::vector<int64_t>& cells) {
  std::vector<std::vector<double>> axis(3);
  std::vector<int64_t> shape(3);
  for (int a = 0; a < 3; ++a) {
    const int64_t r = (cells[a] - 1) / 2;
    double total = 0;
    for (int64_t t = -r; t <= r; ++t)
      total += axis[a].emplace_back(std::exp(-0.5 * std::pow(t * h[a] / kSigma[a], 2)));
    for (double& w : axis[a]) w /= total;
    shape[a] = 2 * r + 1;
  }
  nefi::PsfSample s;
  s.shape = fk::Dims(shape);
  for (double wx : axis[0])
    for (double wy : axis[1])
      for (double wz : axis[2]) s.values.push_back(wx * wy * wz);
  return s;
}

nefi::PsfFunction psf_over(const std::vector<double>& extent) {
  return [extent](const std::vector<double>& h) {
    std::vector<int64_t> cells(3);
    for (int a = 0; a < 3; ++a) cells[a] = std::llround(extent[a] / h[a]);
    return sampled_gaussian(h, cells);
  };
}

// The DFT along one axis of a C-order complex array of shape m, written out
// (sign -1 forward; the inverse divides by m[axis]).
void dft_axis(std::vector<cplx>& v, const std::vector<int64_t>& m, int axis, bool inverse) {
  int64_t inner = 1, outer = 1;
  for (int a = axis + 1; a < 3; ++a) inner *= m[a];
  for (int a = 0; a < axis; ++a) outer *= m[a];
  const int64_t L = m[axis];
  const double sign = inverse ? 1.0 : -1.0;
  std::vector<cplx> line(L);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < inner; ++j) {
      for (int64_t k = 0; k < L; ++k) {
        cplx acc = 0;
        for (int64_t t = 0; t < L; ++t)
          acc += v[(o * L + t) * inner + j] *
                 std::polar(1.0, sign * 2 * std::numbers::pi * static_cast<double>(k * t) / L);
        line[k] = inverse ? acc / static_cast<double>(L) : acc;
      }
      for (int64_t k = 0; k < L; ++k) v[(o * L + k) * inner + j] = line[k];
    }
}

void dft(std::vector<cplx>& v, const std::vector<int64_t>& m, bool inverse) {
  for (int a = 0; a < 3; ++a) dft_axis(v, m, a, inverse);
}

// Wiener at a fixed SNR written out: y (shape n) mirrored about every face
// into 2n cells per axis when `reflect`, the PSF array placed centred on
// cell 0 of that periodic grid (sampled over the box's cell counts, as
// psf_over does whatever grid it is asked for), X = conj(H) Y / (|H|^2 + 1 / snr) by direct
// DFTs; returns the first n cells per axis of x and, in `rmse`, the rms of
// H X - Y transformed back over those cells.
std::vector<double> plain_wiener(const std::vector<double>& y, const std::vector<int64_t>& n,
                                 const std::vector<double>& extent, double snr, bool reflect,
                                 double& rmse) {
  const int64_t f = reflect ? 2 : 1;
  const std::vector<int64_t> m{f * n[0], f * n[1], f * n[2]};
  const int64_t total = m[0] * m[1] * m[2];
  auto at = [&](int64_t i, int64_t j, int64_t k) { return (i * m[1] + j) * m[2] + k; };
  auto fold = [](int64_t i, int64_t len) { return i < len ? i : 2 * len - 1 - i; };
  std::vector<cplx> Y(total), K(total, 0.0);
  for (int64_t i = 0; i < m[0]; ++i)
    for (int64_t j = 0; j < m[1]; ++j)
      for (int64_t k = 0; k < m[2]; ++k)
        Y[at(i, j, k)] = y[(fold(i, n[0]) * n[1] + fold(j, n[1])) * n[2] + fold(k, n[2])];
  const std::vector<double> h{extent[0] / n[0], extent[1] / n[1], extent[2] / n[2]};
  const nefi::PsfSample p = sampled_gaussian(h, n);  // psf_over(extent): the box's cells
  const std::vector<int64_t> r{p.shape[0] / 2, p.shape[1] / 2, p.shape[2] / 2};
  for (int64_t i = 0; i < p.shape[0]; ++i)
    for (int64_t j = 0; j < p.shape[1]; ++j)
      for (int64_t k = 0; k < p.shape[2]; ++k)
        K[at((i - r[0] + m[0]) % m[0], (j - r[1] + m[1]) % m[1], (k - r[2] + m[2]) % m[2])] +=
            p.values[(i * p.shape[1] + j) * p.shape[2] + k];
  dft(Y, m, false);
  dft(K, m, false);
  std::vector<cplx> X(total), R(total);
  for (int64_t q = 0; q < total; ++q) {
    X[q] = std::conj(K[q]) * Y[q] / (std::norm(K[q]) + 1.0 / snr);
    R[q] = K[q] * X[q] - Y[q];
  }
  dft(X, m, true);
  dft(R, m, true);
  std::vector<double> x;
  double ss = 0;
  for (int64_t i = 0; i < n[0]; ++i)
    for (int64_t j = 0; j < n[1]; ++j)
      for (int64_t k = 0; k < n[2]; ++k) {
        x.push_back(X[at(i, j, k)].real());
        ss += std::norm(R[at(i, j, k)]);
      }
  rmse = std::sqrt(ss / static_cast<double>(x.size()));
  return x;
}

// Both boundaries at a fixed SNR against the filter written out with direct
// DFTs, on an odd-sized anisotropic 3-D grid: the estimate and the residual.
TEST(NefiWiener, MatchesTheFilterWrittenOut) {
  const std::vector<int64_t> n{6, 5, 4};
  const std::vector<double> extent{0.6, 0.5, 0.8};
  fk::Generator g(11);
  const fk::Tensor y = fk::rand({6, 5, 4}, {fk::DType::F64}, &g);
  const nefi::Domain domain(fk::Dims({6, 5, 4}), extent);
  for (const auto boundary : {nefi::WienerBoundary::kPeriodic, nefi::WienerBoundary::kReflect}) {
    const bool reflect = boundary == nefi::WienerBoundary::kReflect;
    const auto w = nefi::wiener_deconvolve(y, psf_over(extent), domain, 0.0, 1.0, 300.0, boundary);
    double rmse = 0;
    const auto want = plain_wiener(y.to_vector<double>(), n, extent, 300.0, reflect, rmse);
    EXPECT_EQ(w.x.shape(), fk::Dims({6, 5, 4}));
    const auto got = w.x.to_vector<double>();
    for (size_t q = 0; q < want.size(); ++q)
      EXPECT_NEAR(got[q], want[q], 1e-10) << q << " reflect " << reflect;
    EXPECT_NEAR(w.residual_rmse, rmse, 1e-12) << reflect;
    EXPECT_EQ(w.snr, 300.0);
  }
}

// The discrepancy principle: the chosen SNR's residual stays at or below
// tau * noise_std and the next grid point (10^0.1 less SNR) would exceed it.
TEST(NefiWiener, DiscrepancyPicksTheLastLambdaWithinTheNoise) {
  const std::vector<double> extent{0.6, 0.5, 0.8};
  fk::Generator g(12);
  const fk::Tensor y = fk::rand({6, 5, 4}, {fk::DType::F64}, &g);
  const nefi::Domain domain(fk::Dims({6, 5, 4}), extent);
  for (const auto boundary : {nefi::WienerBoundary::kPeriodic, nefi::WienerBoundary::kReflect}) {
    const auto w = nefi::wiener_deconvolve(y, psf_over(extent), domain, 0.05, 1.0, 0.0, boundary);
    EXPECT_LE(w.residual_rmse, 0.05);
    const auto next = nefi::wiener_deconvolve(y, psf_over(extent), domain, 0.0, 1.0,
                                              w.snr / std::pow(10.0, 0.1), boundary);
    EXPECT_GT(next.residual_rmse, 0.05);
  }
  EXPECT_THROW(nefi::wiener_deconvolve(y, psf_over(extent), domain, 0.0), fk::Error);
}

}  // namespace
