#include "nefi/baselines/admm.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <complex>
#include <numbers>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/fft.h"

namespace nefi {
namespace {

using Vec = std::vector<double>;

// The periodic grid and its transforms: real fields as flat C-order vectors,
// spectra as rfftn half spectra (n0, n1 / 2 + 1).
struct Grid {
  int64_t n0 = 0, n1 = 0;
  double h0 = 0, h1 = 0;

  explicit Grid(const Domain& d)
      : n0(d.shape()[0]), n1(d.shape()[1]), h0(d.spacing()[0]), h1(d.spacing()[1]) {}
  int64_t size() const { return n0 * n1; }
  std::vector<int64_t> dims() const { return {n0, n1}; }

  fk::Tensor forward(const Vec& v) const {
    return fk::rfftn(fk::from_vector(v, fk::Dims{n0, n1}), dims()).contiguous();
  }
  Vec inverse(const fk::Tensor& V) const { return fk::irfftn(V, dims()).to_vector<double>(); }

  // (D x): forward differences per unit length along each axis, wrapping.
  void gradient(const Vec& x, Vec& g0, Vec& g1) const {
    for (int64_t i = 0; i < n0; ++i)
      for (int64_t j = 0; j < n1; ++j) {
        const double c = x[i * n1 + j];
        g0[i * n1 + j] = (x[((i + 1) % n0) * n1 + j] - c) / h0;
        g1[i * n1 + j] = (x[i * n1 + (j + 1) % n1] - c) / h1;
      }
  }
  // D^T (p0, p1), the adjoint of gradient().
  Vec divergence_adjoint(const Vec& p0, const Vec& p1) const {
    Vec out(size());
    for (int64_t i = 0; i < n0; ++i)
      for (int64_t j = 0; j < n1; ++j) {
        const int64_t c = i * n1 + j;
        out[c] = (p0[((i + n0 - 1) % n0) * n1 + j] - p0[c]) / h0 +
                 (p1[i * n1 + (j + n1 - 1) % n1] - p1[c]) / h1;
      }
    return out;
  }
  // |D|^2 at half-spectrum bin (k0, k1): the symbol of D^T D.
  double laplacian_symbol(int64_t k0, int64_t k1) const {
    const double s0 = std::sin(std::numbers::pi * k0 / n0),
                 s1 = std::sin(std::numbers::pi * k1 / n1);
    return 4 * s0 * s0 / (h0 * h0) + 4 * s1 * s1 / (h1 * h1);
  }
};

double sum_sq(const Vec& a) {
  double s = 0;
  for (double v : a) s += v * v;
  return s;
}

double objective(const Grid& g, const fk::Tensor& H, const Vec& x, const Vec& y, double tv) {
  fk::Tensor X = g.forward(x);
  auto* xp = X.data<fk::c128>();
  const auto* hp = H.data<fk::c128>();
  for (int64_t k = 0; k < X.numel(); ++k) xp[k] *= hp[k];
  const Vec hx = g.inverse(X);
  Vec g0(g.size()), g1(g.size());
  g.gradient(x, g0, g1);
  double fit = 0, reg = 0;
  for (int64_t i = 0; i < g.size(); ++i) {
    fit += (hx[i] - y[i]) * (hx[i] - y[i]);
    reg += std::hypot(g0[i], g1[i]);
  }
  return (fit + tv * reg) / static_cast<double>(g.size());
}

fk::Tensor periodic_spectrum(const PsfFunction& psf, const Domain& domain) {
  return FFTConvolution(psf, domain, /*periodic=*/true).spectrum(fk::DType::F64).contiguous();
}

void check_inputs(const fk::Tensor& y, const Domain& domain, const AdmmOptions& opt) {
  FK_CHECK(domain.shape().size() == 2, "nefi::admm_tv_deconvolve", "a 2-D domain",
           domain.shape().str());
  FK_CHECK(y.shape() == domain.shape(), "nefi::admm_tv_deconvolve",
           "data of shape " + domain.shape().str(), y.shape().str());
  FK_CHECK(opt.tv >= 0, "admm tv", "a weight >= 0", std::to_string(opt.tv));
  FK_CHECK(opt.mu > 0, "admm mu", "a penalty > 0", std::to_string(opt.mu));
  FK_CHECK(opt.max_iters >= 1, "admm iterations", ">= 1", std::to_string(opt.max_iters));
  FK_CHECK(opt.max_adaptations >= 0, "admm max_adaptations", ">= 0",
           std::to_string(opt.max_adaptations));
  FK_CHECK(opt.tol > 0, "admm tol", "a tolerance > 0", std::to_string(opt.tol));
  FK_CHECK(opt.lo < opt.hi, "admm box", "lo < hi",
           std::to_string(opt.lo) + " >= " + std::to_string(opt.hi));
}

}  // namespace

double admm_tv_objective(const fk::Tensor& x, const fk::Tensor& y, const PsfFunction& psf,
                         const Domain& domain, double tv) {
  const Grid g(domain);
  return objective(g, periodic_spectrum(psf, domain), x.to(fk::DType::F64).to_vector<double>(),
                   y.to(fk::DType::F64).to_vector<double>(), tv);
}

namespace {

// The iterates of the scaled-form ADMM for ½||Hx - y||^2 + (tv/2) sum |Dx| +
// box (N/2 times J): x, the splits z = (z0, z1) ~ D x and w ~ x, their scaled
// duals u = (u0, u1) and v.
struct AdmmState {
  const Grid& g;
  Vec x, w, v, z0, z1, u0, u1;

  AdmmState(const Grid& grid, const Vec& y, double lo, double hi)
      : g(grid),
        x(g.size()),
        w(g.size()),
        v(g.size(), 0.0),
        z0(g.size()),
        z1(g.size()),
        u0(g.size(), 0.0),
        u1(g.size(), 0.0) {
    for (int64_t i = 0; i < g.size(); ++i) x[i] = w[i] = std::clamp(y[i], lo, hi);
    g.gradient(x, z0, z1);
  }

  // (H^T H + mu D^T D + mu I) x = H^T y + mu D^T (z - u) + mu (w - v), one
  // division per frequency. H and HtY = conj(H) Y are half spectra.
  void update_x(const fk::Tensor& H, const fk::Tensor& HtY, double mu) {
    const int64_t n = g.size(), m1 = HtY.shape()[1];
    Vec p0(n), p1(n);
    for (int64_t i = 0; i < n; ++i) {
      p0[i] = z0[i] - u0[i];
      p1[i] = z1[i] - u1[i];
    }
    Vec rhs = g.divergence_adjoint(p0, p1);
    for (int64_t i = 0; i < n; ++i) rhs[i] = mu * (rhs[i] + w[i] - v[i]);
    fk::Tensor X = g.forward(rhs);
    auto* xp = X.data<fk::c128>();
    const auto* hp = H.data<fk::c128>();
    const auto* hty = HtY.data<fk::c128>();
    for (int64_t k = 0; k < X.numel(); ++k) {
      const double den = std::norm(hp[k]) + mu * (g.laplacian_symbol(k / m1, k % m1) + 1.0);
      xp[k] = (xp[k] + hty[k]) / den;
    }
    x = g.inverse(X);
  }

  // z: group soft-thresholding of D x + u at lambda / mu; w: the box
  // projection of x + v; then the dual steps. Returns the primal residual r
  // and the dual residual s (Boyd et al. sec. 3.3) with their tolerances.
  std::array<double, 4> update_splits(double lambda, double mu, const AdmmOptions& opt) {
    const int64_t n = g.size();
    Vec d0(n), d1(n);
    g.gradient(x, d0, d1);
    const Vec z0_old = z0, z1_old = z1, w_old = w;
    double r2 = 0, dx2 = 0, zw2 = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double a0 = d0[i] + u0[i], a1 = d1[i] + u1[i], norm = std::hypot(a0, a1);
      const double keep = norm > lambda / mu ? 1.0 - lambda / (mu * norm) : 0.0;
      z0[i] = keep * a0;
      z1[i] = keep * a1;
      w[i] = std::clamp(x[i] + v[i], opt.lo, opt.hi);
      u0[i] += d0[i] - z0[i];
      u1[i] += d1[i] - z1[i];
      v[i] += x[i] - w[i];
      r2 += (d0[i] - z0[i]) * (d0[i] - z0[i]) + (d1[i] - z1[i]) * (d1[i] - z1[i]) +
            (x[i] - w[i]) * (x[i] - w[i]);
      dx2 += d0[i] * d0[i] + d1[i] * d1[i] + x[i] * x[i];
      zw2 += z0[i] * z0[i] + z1[i] * z1[i] + w[i] * w[i];
    }
    // s = mu [D; I]^T ([z; w] - [z_old; w_old]), scaled by mu [D; I]^T [u; v].
    Vec p0(n), p1(n);
    for (int64_t i = 0; i < n; ++i) {
      p0[i] = z0[i] - z0_old[i];
      p1[i] = z1[i] - z1_old[i];
    }
    Vec s_vec = g.divergence_adjoint(p0, p1), dual = g.divergence_adjoint(u0, u1);
    for (int64_t i = 0; i < n; ++i) {
      s_vec[i] += w[i] - w_old[i];
      dual[i] += v[i];
    }
    return {std::sqrt(r2), mu * std::sqrt(sum_sq(s_vec)),
            1e-12 + opt.tol * std::sqrt(std::max(dx2, zw2)),
            1e-12 + opt.tol * mu * std::sqrt(sum_sq(dual))};
  }

  // Residual balancing: the scaled duals move inversely to mu.
  void rescale_duals(double f) {
    for (int64_t i = 0; i < g.size(); ++i) {
      u0[i] /= f;
      u1[i] /= f;
      v[i] /= f;
    }
  }
};

}  // namespace

AdmmResult admm_tv_deconvolve(const fk::Tensor& y_in, const PsfFunction& psf, const Domain& domain,
                              const AdmmOptions& opt) {
  check_inputs(y_in, domain, opt);
  const Grid g(domain);
  const fk::Tensor H = periodic_spectrum(psf, domain);
  const Vec y = y_in.to(fk::DType::F64).to_vector<double>();
  fk::Tensor HtY = g.forward(y);  // conj(H) Y, fixed
  for (int64_t k = 0; k < HtY.numel(); ++k)
    HtY.data<fk::c128>()[k] *= std::conj(H.data<fk::c128>()[k]);
  AdmmState st(g, y, opt.lo, opt.hi);
  double mu = opt.mu;
  int adaptations = 0;
  AdmmResult res;
  for (int it = 1; it <= opt.max_iters; ++it) {
    st.update_x(H, HtY, mu);
    const auto [r, s, eps_pri, eps_dual] = st.update_splits(opt.tv / 2, mu, opt);
    res.objective.push_back(objective(g, H, st.w, y, opt.tv));
    res.iterations = it;
    if (r <= eps_pri && s <= eps_dual) {
      res.converged = true;
      break;
    }
    if (opt.adaptive && adaptations < opt.max_adaptations && (r > 10 * s || s > 10 * r)) {
      ++adaptations;
      const double f = r > 10 * s ? 2.0 : 0.5;
      mu *= f;
      st.rescale_duals(f);
    }
  }
  res.x = fk::from_vector(st.w, domain.shape());
  res.mu = mu;
  return res;
}

}  // namespace nefi
