#pragma once
// Lippmann-Schwinger: the full scattering solution in the geometry of
// operators/scattering.h, solved iteratively in f64 (a data generator,
// independent of the Born quadrature: no linearisation, an FFT convolution
// in the domain, then the Born quadrature's Hankel sum to the receivers,
// receiver_green, one GEMM over all views).
//   u = u_i + k0^2 G * (chi u)   on the m x m grid over [0, D]^2,
// iterated as u <- (1 - relax) u + relax (u_i + k0^2 G * (chi u)) from u = u_i
// until the relative change is below tol (or max_iter; the Born series, which
// converges for weak contrast). G * f is evaluated on a grid `oversample`
// times larger with the truncated Green's function (Vico-Greengard-Ferrando):
// G_L = G for |x| <= L = sqrt(2) D, 0 beyond, whose Fourier transform is
//   hat G_L(s) = (1 + i pi/2 L (s J1(sL) H0(k0 L) - k0 J0(sL) H1(k0 L))) / (s^2 - k0^2),
// exact on the padded periodic grid (copies of G_L never reach the domain
// once the grid spans >= (1 + sqrt 2) D), so the quadrature is spectrally
// accurate for smooth chi u. That kernel is cut to the offsets the domain
// reaches and the iteration runs on a 2m grid (the same numbers, 4x fewer
// points at oversample 4). Then u_s(x_r) = k0^2 dA sum_j G(x_r - y_j) chi_j u_j.
#include <complex>
#include <cstdint>
#include <vector>

#include "nefi/operators/scattering.h"

namespace nefi {

struct LippmannSchwingerOptions {
  int max_iter = 200;
  double tol = 1e-10;
  double relax = 1.0;
  int oversample = 4;  // grid of the kernel precomputation = oversample * m per axis (>= 3)
};

struct LippmannSchwingerResult {
  std::vector<double> data;  // (2, n_angles, n_receivers): the scattered field (or Rytov phase)
  int max_iterations = 0;    // the most iterations any view took
  double max_change = 0;     // the last relative change of the slowest view
};

// Fourier transform of the truncated Green's function at spatial frequency |s|.
std::complex<double> truncated_green_spectrum(double s, double k0, double L);

// chi: (m, m) point samples at the cell centres of [0, D]^2, C order.
// Throws fk::Error when the iteration does not reach tol (naming max_iter).
LippmannSchwingerResult lippmann_schwinger(const std::vector<double>& chi, int64_t m, double D,
                                           const ScatteringGeometry& g,
                                           const LippmannSchwingerOptions& o);

// The total field inside the domain for one incidence angle theta (m x m).
std::vector<std::complex<double>> lippmann_schwinger_field(
    const std::vector<double>& chi, int64_t m, double D, double k0, double theta,
    const LippmannSchwingerOptions& o, int* iterations = nullptr, double* change = nullptr);

}  // namespace nefi
