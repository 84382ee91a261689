#pragma once
// TV-regularised deconvolution by ADMM. It minimises, over a 2-D grid with N
// cells,
//   J(x) = (1/N) ||H x - y||^2 + (tv/N) sum_i |(D x)_i|,   lo <= x <= hi,
// where H is the instance's blur (FFTConvolution: zero outside the grid,
// 'same' output) and (D x)_i the forward-difference gradient per unit length
// at cell i with no difference across a face (isotropic TV: |.| is the
// 2-norm of the components), the grid baseline's objective, solved to
// optimality instead of by Adam on a smoothed TV. The unknowns live on the
// blur's padded grid (Almeida and Figueiredo 2013): splits s = H x (the data
// fit, a per-cell step since only the cells under the data are fitted),
// z = D x (group soft-thresholding) and w = x (a clip, to zero outside the
// grid) leave the x-update one division in Fourier space. A circular model
// of zero-padded data fitted the jump at the faces with noise (a smooth
// scene: 24.1 dB against the grid baseline's 39.3). The penalty mu is
// balanced against the residuals (Boyd et al. 2011, sec. 3.4.1) unless
// `adaptive` is off, at most `max_adaptations` times, then held: ADMM
// converges only under a penalty that settles. f64 on the host.
#include <limits>
#include <vector>

#include "fk/tensor.h"
#include "nefi/operators/fft_convolution.h"

namespace nefi {

struct AdmmOptions {
  double tv = 1e-4;  // TV weight in J
  double lo = 0.0, hi = std::numeric_limits<double>::infinity();
  double mu = 1.0;  // initial penalty
  int max_iters = 300;
  double tol = 1e-4;  // relative primal and dual residual
  bool adaptive = true;
  int max_adaptations = 30;  // changes of mu at most
};

struct AdmmResult {
  fk::Tensor x;                   // f64, the data's shape; the box projection w
  std::vector<double> objective;  // J(w) after each iteration
  int iterations = 0;
  bool converged = false;
  double mu = 0;  // the final penalty
};

AdmmResult admm_tv_deconvolve(const fk::Tensor& y, const PsfFunction& psf, const Domain& domain,
                              const AdmmOptions& opt);

// J(x) as above (for tests and reports); x and y of the domain's shape.
double admm_tv_objective(const fk::Tensor& x, const fk::Tensor& y, const PsfFunction& psf,
                         const Domain& domain, double tv);

}  // namespace nefi
