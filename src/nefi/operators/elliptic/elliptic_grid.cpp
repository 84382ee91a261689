#include "nefi/operators/elliptic/elliptic_grid.h"

#include <cmath>
#include <sstream>

#include "fk/error.h"

namespace nefi::elliptic {
namespace {

constexpr const char* kWhere = "nefi::elliptic";

Boundary parse_kind(const std::string& s, const std::string& spec) {
  if (s == "dirichlet") return Boundary::kDirichlet;
  if (s == "neumann") return Boundary::kNeumann;
  if (s == "periodic") return Boundary::kPeriodic;
  throw fk::Error("boundary '" + spec + "'",
                  "dirichlet | neumann | periodic (per axis: a,b; per side: low:high)",
                  "'" + s + "'");
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, sep)) out.push_back(part);
  if (!s.empty() && s.back() == sep) out.push_back("");
  return out;
}

// Calls f(i, j) for every face between cell i and its + neighbour j along
// `axis`, the periodic wrap face (i the last cell) included.
template <typename F>
void for_each_face(const EllipticGrid& g, int axis, F&& f) {
  const int64_t n = g.shape[axis], inner = g.stride(axis), outer = g.numel() / (n * inner);
  const bool wrap = g.boundary[axis][0] == Boundary::kPeriodic && n > 1;
  for (int64_t o = 0; o < outer; ++o) {
    const int64_t base = o * n * inner;
    for (int64_t c = 0; c + 1 < n; ++c)
      for (int64_t k = 0; k < inner; ++k) f(base + c * inner + k, base + (c + 1) * inner + k);
    if (wrap)
      for (int64_t k = 0; k < inner; ++k) f(base + (n - 1) * inner + k, base + k);
  }
}

// Calls f(i, side) for every cell i on a Dirichlet side of `axis`.
template <typename F>
void for_each_dirichlet_cell(const EllipticGrid& g, int axis, F&& f) {
  const int64_t n = g.shape[axis], inner = g.stride(axis), outer = g.numel() / (n * inner);
  for (int side = 0; side < 2; ++side) {
    if (g.boundary[axis][side] != Boundary::kDirichlet) continue;
    const int64_t c = side == 0 ? 0 : n - 1;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t k = 0; k < inner; ++k) f(o * n * inner + c * inner + k);
  }
}

template <typename T>
T face_mean(FaceMean m, T a, T b) {
  return m == FaceMean::kHarmonic ? T(2) * a * b / (a + b) : (a + b) / T(2);
}

}  // namespace

bool EllipticGrid::has_dirichlet() const {
  for (const auto& b : boundary)
    if (b[0] == Boundary::kDirichlet || b[1] == Boundary::kDirichlet) return true;
  return false;
}

int64_t EllipticGrid::stride(int axis) const {
  int64_t s = 1;
  for (int a = axis + 1; a < ndim(); ++a) s *= shape[a];
  return s;
}

void EllipticGrid::validate() const {
  FK_CHECK(ndim() >= 1 && ndim() <= 3, kWhere, "a 1-3 D grid", shape.str());
  for (int a = 0; a < ndim(); ++a)
    FK_CHECK(shape[a] >= 1, kWhere, "positive grid sizes", shape.str());
  FK_CHECK(
      static_cast<int>(spacing.size()) == ndim() && static_cast<int>(boundary.size()) == ndim(),
      kWhere, "one spacing and one boundary pair per axis (" + fk::to_text(ndim()) + ")",
      fk::to_text(spacing.size()) + " spacings, " + fk::to_text(boundary.size()) +
          " boundary pairs");
  for (int a = 0; a < ndim(); ++a) {
    FK_CHECK(spacing[a] > 0 && std::isfinite(spacing[a]), kWhere, "spacings > 0",
             fk::to_text(spacing[a]));
    FK_CHECK((boundary[a][0] == Boundary::kPeriodic) == (boundary[a][1] == Boundary::kPeriodic),
             kWhere, "periodic on both sides of an axis or on neither",
             "one periodic side on axis " + fk::to_text(a));
  }
}

std::vector<std::array<Boundary, 2>> parse_boundary(const std::string& spec, int ndim) {
  const std::vector<std::string> axes = split(spec, ',');
  FK_CHECK(axes.size() == 1 || static_cast<int>(axes.size()) == ndim, "boundary '" + spec + "'",
           "one kind for all axes or one per axis (" + fk::to_text(ndim) + ")",
           fk::to_text(axes.size()) + " entries");
  std::vector<std::array<Boundary, 2>> out;
  for (int a = 0; a < ndim; ++a) {
    const std::vector<std::string> sides = split(axes[axes.size() == 1 ? 0 : a], ':');
    FK_CHECK(sides.size() == 1 || sides.size() == 2, "boundary '" + spec + "'",
             "a kind or a low:high pair per axis", axes[a]);
    const Boundary lo = parse_kind(sides[0], spec), hi = parse_kind(sides.back(), spec);
    FK_CHECK((lo == Boundary::kPeriodic) == (hi == Boundary::kPeriodic), "boundary '" + spec + "'",
             "periodic on both sides of an axis or on neither", "one periodic side");
    out.push_back({lo, hi});
  }
  return out;
}

template <typename T>
FaceSystem<T> build_face_system(const EllipticGrid& g, int64_t nb, const T* sigma,
                                bool sigma_batched, const T* kappa, bool kappa_batched) {
  const int64_t n = g.numel(), d = g.ndim();
  for (int64_t i = 0; i < (sigma_batched ? nb : 1) * n; ++i)
    FK_CHECK(sigma[i] > 0 && std::isfinite(static_cast<double>(sigma[i])), kWhere,
             "a conductivity > 0 and finite everywhere",
             fk::to_text(sigma[i]) + " at cell " + fk::to_text(i));
  FaceSystem<T> sys;
  sys.nb = nb;
  sys.faces.assign(nb * d * n, T(0));
  sys.diag.assign(nb * n, T(0));
  for (int64_t b = 0; b < nb; ++b) {
    const T* s = sigma + (sigma_batched ? b * n : 0);
    T* diag = sys.diag.data() + b * n;
    for (int a = 0; a < d; ++a) {
      T* k = sys.faces.data() + (b * d + a) * n;
      const T inv_h2 = T(1.0 / (g.spacing[a] * g.spacing[a]));
      for_each_face(g, a, [&](int64_t i, int64_t j) {
        const T kf = face_mean(g.face_mean, s[i], s[j]) * inv_h2;
        k[i] = kf;
        diag[i] += kf;
        diag[j] += kf;
      });
      for_each_dirichlet_cell(g, a, [&](int64_t i) { diag[i] += T(2) * s[i] * inv_h2; });
    }
    if (kappa) {
      const T* kp = kappa + (kappa_batched ? b * n : 0);
      for (int64_t i = 0; i < n; ++i) diag[i] += kp[i];
    }
  }
  sys.inv_diag.resize(sys.diag.size());
  for (size_t i = 0; i < sys.diag.size(); ++i)
    sys.inv_diag[i] = sys.diag[i] != T(0) ? T(1) / sys.diag[i] : T(0);
  return sys;
}

template <typename T>
void apply_face_system(const EllipticGrid& g, const FaceSystem<T>& sys, int64_t s, const T* u,
                       T* q) {
  const int64_t n = g.numel();
  apply_runs<T>(g, sys.faces.data() + s * g.ndim() * n, sys.diag.data() + s * n, u, q);
}

template <typename T>
void accumulate_sigma_gradient(const EllipticGrid& g, const T* sigma, const T* a, const T* b,
                               double scale, double* grad_sigma) {
  for (int ax = 0; ax < g.ndim(); ++ax) {
    const double inv_h2 = 1.0 / (g.spacing[ax] * g.spacing[ax]);
    for_each_face(g, ax, [&](int64_t i, int64_t j) {
      const double w =
          scale * inv_h2 * (double(a[i]) - double(a[j])) * (double(b[i]) - double(b[j]));
      const double si = sigma[i], sj = sigma[j];
      if (g.face_mean == FaceMean::kHarmonic) {
        const double den = (si + sj) * (si + sj);
        grad_sigma[i] += w * 2 * sj * sj / den;
        grad_sigma[j] += w * 2 * si * si / den;
      } else {
        grad_sigma[i] += 0.5 * w;
        grad_sigma[j] += 0.5 * w;
      }
    });
    for_each_dirichlet_cell(g, ax, [&](int64_t i) {
      grad_sigma[i] += scale * 2 * inv_h2 * double(a[i]) * double(b[i]);
    });
  }
}

template FaceSystem<float> build_face_system(const EllipticGrid&, int64_t, const float*, bool,
                                             const float*, bool);
template FaceSystem<double> build_face_system(const EllipticGrid&, int64_t, const double*, bool,
                                              const double*, bool);
template void apply_face_system(const EllipticGrid&, const FaceSystem<float>&, int64_t,
                                const float*, float*);
template void apply_face_system(const EllipticGrid&, const FaceSystem<double>&, int64_t,
                                const double*, double*);
template void accumulate_sigma_gradient(const EllipticGrid&, const float*, const float*,
                                        const float*, double, double*);
template void accumulate_sigma_gradient(const EllipticGrid&, const double*, const double*,
                                        const double*, double, double*);

}  // namespace nefi::elliptic
