#include "nefi/baselines/wiener.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <numbers>
#include <utility>
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

// The Gaussian over the box's cell counts (a kernel array as large as the
// box), or over at most `cap` cells per axis.
std::vector<int64_t> kernel_cells(const std::vector<double>& extent, const std::vector<double>& h,
                                  const std::vector<int64_t>& cap) {
  std::vector<int64_t> cells(3);
  for (int a = 0; a < 3; ++a)
    cells[a] = std::min(static_cast<int64_t>(std::llround(extent[a] / h[a])), cap[a]);
  return cells;
}

nefi::PsfFunction psf_over(const std::vector<double>& extent,
                           const std::vector<int64_t>& cap = {99, 99, 99}) {
  return [extent, cap](const std::vector<double>& h) {
    return sampled_gaussian(h, kernel_cells(extent, h, cap));
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

// The instrument written out: the 'same' blur of x (shape n) by the PSF
// array p with zeros outside the box, then the rms of its difference from y
// over the cells the kernel radius from every face; -1 where those are
// fewer than a quarter of the box's.
double plain_instrument_rmse(const std::vector<double>& x, const std::vector<double>& y,
                             const std::vector<int64_t>& n, const nefi::PsfSample& p) {
  const std::vector<int64_t> r{p.shape[0] / 2, p.shape[1] / 2, p.shape[2] / 2};
  auto inside = [&](int64_t i, int64_t j, int64_t k) {
    return i >= r[0] && i < n[0] - r[0] && j >= r[1] && j < n[1] - r[1] && k >= r[2] &&
           k < n[2] - r[2];
  };
  int64_t inner = 0;
  for (int64_t i = 0; i < n[0]; ++i)
    for (int64_t j = 0; j < n[1]; ++j)
      for (int64_t k = 0; k < n[2]; ++k) inner += inside(i, j, k);
  if (4 * inner < n[0] * n[1] * n[2]) return -1;
  double ss = 0, cells = 0;
  for (int64_t i = 0; i < n[0]; ++i)
    for (int64_t j = 0; j < n[1]; ++j)
      for (int64_t k = 0; k < n[2]; ++k) {
        if (!inside(i, j, k)) continue;
        double b = 0;
        for (int64_t a = 0; a < p.shape[0]; ++a)
          for (int64_t c = 0; c < p.shape[1]; ++c)
            for (int64_t e = 0; e < p.shape[2]; ++e) {
              const int64_t u = i - (a - r[0]), v = j - (c - r[1]), w = k - (e - r[2]);
              if (u < 0 || v < 0 || w < 0 || u >= n[0] || v >= n[1] || w >= n[2]) continue;
              b += p.values[(a * p.shape[1] + c) * p.shape[2] + e] * x[(u * n[1] + v) * n[2] + w];
            }
        const double d = b - y[(i * n[1] + j) * n[2] + k];
        ss += d * d;
        cells += 1;
      }
  return std::sqrt(ss / cells);
}

// Wiener at a fixed SNR written out: y (shape n) as it is (periodic),
// mirrored about every face into 2n cells per axis (reflect), or extended to
// n + m - 1 cells per axis (m the PSF array's), each line running linearly
// from its last value back to its first, axis by axis (padded); the PSF
// array placed centred on cell 0 of that periodic grid (sampled over the
// box's cell counts, or at most `cap`, as psf_over does), X = conj(H) Y /
// (|H|^2 + 1 / snr) by direct DFTs; returns the first n cells per axis of x
// and, in `rmse`, the instrument's residual, or where it has too few cells
// the filter's own (H X - Y transformed back) over the box.
std::vector<double> plain_wiener(const std::vector<double>& y, const std::vector<int64_t>& n,
                                 const std::vector<double>& extent, const std::vector<int64_t>& cap,
                                 double snr, nefi::WienerBoundary boundary, double& rmse) {
  const std::vector<double> h{extent[0] / n[0], extent[1] / n[1], extent[2] / n[2]};
  const nefi::PsfSample p = sampled_gaussian(h, kernel_cells(extent, h, cap));
  std::vector<int64_t> m = n;
  for (int a = 0; a < 3; ++a) {
    if (boundary == nefi::WienerBoundary::kReflect) m[a] = 2 * n[a];
    if (boundary == nefi::WienerBoundary::kPadded) m[a] = n[a] + p.shape[a] - 1;
  }
  const int64_t total = m[0] * m[1] * m[2];
  auto at = [&](int64_t i, int64_t j, int64_t k) { return (i * m[1] + j) * m[2] + k; };
  auto fold = [](int64_t i, int64_t len) { return i < len ? i : 2 * len - 1 - i; };
  std::vector<cplx> Y(total), K(total, 0.0);
  if (boundary == nefi::WienerBoundary::kPadded) {
    // Axis by axis over the growing array: a line's cell t >= len of L is
    // (1 - s) last + s first, s = (t - len + 1) / (L - len + 1).
    std::vector<int64_t> cur = n;
    std::vector<double> v = y;
    for (int ax = 0; ax < 3; ++ax) {
      std::vector<int64_t> next = cur;
      next[ax] = m[ax];
      std::vector<double> w(next[0] * next[1] * next[2]);
      for (int64_t i = 0; i < next[0]; ++i)
        for (int64_t j = 0; j < next[1]; ++j)
          for (int64_t k = 0; k < next[2]; ++k) {
            std::vector<int64_t> q{i, j, k};
            auto src = [&](int64_t t) {
              std::vector<int64_t> s2 = q;
              s2[ax] = t;
              return v[(s2[0] * cur[1] + s2[1]) * cur[2] + s2[2]];
            };
            const int64_t t = q[ax], len = cur[ax];
            const double s =
                static_cast<double>(t - len + 1) / static_cast<double>(m[ax] - len + 1);
            w[(i * next[1] + j) * next[2] + k] =
                t < len ? src(t) : (1 - s) * src(len - 1) + s * src(0);
          }
      v = std::move(w);
      cur = next;
    }
    for (int64_t q = 0; q < total; ++q) Y[q] = v[q];
  } else {
    for (int64_t i = 0; i < m[0]; ++i)
      for (int64_t j = 0; j < m[1]; ++j)
        for (int64_t k = 0; k < m[2]; ++k)
          Y[at(i, j, k)] = y[(fold(i, n[0]) * n[1] + fold(j, n[1])) * n[2] + fold(k, n[2])];
  }
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
  double own = 0;
  for (int64_t i = 0; i < n[0]; ++i)
    for (int64_t j = 0; j < n[1]; ++j)
      for (int64_t k = 0; k < n[2]; ++k) {
        x.push_back(X[at(i, j, k)].real());
        own += std::norm(R[at(i, j, k)]);
      }
  rmse = plain_instrument_rmse(x, y, n, p);
  if (rmse < 0) rmse = std::sqrt(own / static_cast<double>(x.size()));
  return x;
}

constexpr nefi::WienerBoundary kBoundaries[] = {
    nefi::WienerBoundary::kPadded, nefi::WienerBoundary::kReflect, nefi::WienerBoundary::kPeriodic};

// Every boundary at a fixed SNR against the filter written out with direct
// DFTs, on odd-sized anisotropic 3-D grids: the estimate and the residual,
// the filter's own (a kernel array as large as the 6 x 5 x 4 box) and the
// instrument's (a 3-cell kernel leaving 120 of 8 x 7 x 6 cells inside).
TEST(NefiWiener, MatchesTheFilterWrittenOut) {
  const std::vector<double> extent{0.6, 0.5, 0.8};
  for (const auto& [n, cap] :
       {std::pair<std::vector<int64_t>, std::vector<int64_t>>{{6, 5, 4}, {99, 99, 99}},
        {{8, 7, 6}, {3, 3, 3}}}) {
    fk::Generator g(11);
    const fk::Dims shape(n);
    const fk::Tensor y = fk::rand(shape, {fk::DType::F64}, &g);
    const nefi::Domain domain(shape, extent);
    for (const auto boundary : kBoundaries) {
      const int b = static_cast<int>(boundary);
      const auto w =
          nefi::wiener_deconvolve(y, psf_over(extent, cap), domain, 0.0, 1.0, 300.0, boundary);
      double rmse = 0;
      const auto want = plain_wiener(y.to_vector<double>(), n, extent, cap, 300.0, boundary, rmse);
      EXPECT_EQ(w.x.shape(), shape);
      const auto got = w.x.to_vector<double>();
      for (size_t q = 0; q < want.size(); ++q)
        EXPECT_NEAR(got[q], want[q], 1e-10) << q << " " << b << " " << shape.str();
      EXPECT_NEAR(w.residual_rmse, rmse, 1e-12) << b << " " << shape.str();
      EXPECT_EQ(w.snr, 300.0);
    }
  }
}

// The discrepancy principle: the chosen SNR's residual stays at or below
// tau * noise_std and the next grid point (10^0.1 less SNR) would exceed it;
// where no SNR meets it, the residual is the smallest on the grid.
TEST(NefiWiener, DiscrepancyPicksTheLastLambdaWithinTheNoise) {
  const std::vector<double> extent{0.6, 0.5, 0.8};
  fk::Generator g(12);
  const fk::Tensor y = fk::rand({6, 5, 4}, {fk::DType::F64}, &g);
  const nefi::Domain domain(fk::Dims({6, 5, 4}), extent);
  for (const auto boundary : kBoundaries) {
    const int b = static_cast<int>(boundary);
    const auto w = nefi::wiener_deconvolve(y, psf_over(extent), domain, 0.05, 1.0, 0.0, boundary);
    EXPECT_LE(w.residual_rmse, 0.05) << b;
    const auto next = nefi::wiener_deconvolve(y, psf_over(extent), domain, 0.0, 1.0,
                                              w.snr / std::pow(10.0, 0.1), boundary);
    EXPECT_GT(next.residual_rmse, 0.05) << b;
    const auto unmet =
        nefi::wiener_deconvolve(y, psf_over(extent), domain, 1e-30, 1.0, 0.0, boundary);
    for (int step = 0; step <= 100; step += 7) {
      const double snr = std::pow(10.0, 10.0 - 0.1 * step);
      EXPECT_LE(unmet.residual_rmse,
                nefi::wiener_deconvolve(y, psf_over(extent), domain, 0.0, 1.0, snr, boundary)
                    .residual_rmse)
          << b << " snr " << snr;
    }
  }
  EXPECT_THROW(nefi::wiener_deconvolve(y, psf_over(extent), domain, 0.0), fk::Error);
}

}  // namespace
