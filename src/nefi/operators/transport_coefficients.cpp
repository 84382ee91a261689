// The advection-diffusion operator with a coefficient of its stencil as the
// unknown (transport_steps.h), the diffusivity map or the velocity: the
// forward steps a plan built for the field's values, and the gradient runs
// the steps' transposes backward, taking at each factor application the
// derivative of its face fluxes in the faces' diffusivities or velocities.
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "fk/error.h"
#include "fk/parallel.h"
#include "nefi/cuda/transport_cells.h"
#include "nefi/operators/transport_steps.h"

namespace nefi::transport {
namespace {

constexpr const char* kWhere = "nefi::AdvectionDiffusionOperator (diffusivity)";
constexpr const char* kWhereVelocity = "nefi::AdvectionDiffusionOperator (velocity)";

// Steps c through substeps [s0, s1) of interval k (step0: the global index
// of its first substep); before each factor, visit(s, j, c) with the
// factor's input (j its place in the substep).
template <typename Visit>
void step_range(const Plan& p, const StepWeights& M, int64_t k, int64_t step0, int64_t s0,
                int64_t s1, std::vector<double>& c, std::vector<double>& next, Visit&& visit) {
  const size_t nf = p.factors.size();
  for (int64_t s = s0; s < s1; ++s)
    for (size_t j = 0; j < nf; ++j) {
      visit(s, j, c);
      const size_t f = factor_at(step0 + s, j, nf);
      euler_step(M.matrix(f), M.at(f), p.tau[k], 1, c.data(),
                 p.source && j + 1 == nf ? p.release.data() : nullptr, next.data());
      c.swap(next);
    }
}

// Runs the whole schedule; after each interval observe(k, c).
template <typename Observe>
void run(const Plan& p, Observe&& observe) {
  const int64_t n = p.cells;
  std::vector<double> c = p.source ? std::vector<double>(n, 0.0) : p.release, next(n);
  StepWeights M(p.factors, false);
  for (int64_t k = 0, step = 0; k < std::ssize(p.tau); step += p.substeps[k], ++k) {
    M.set(p.tau[k]);
    step_range(p, M, k, step, 0, p.substeps[k], c, next,
               [](int64_t, size_t, const std::vector<double>&) {});
    observe(k, c);
  }
}

// base's sensors, source and release, for a plan of its own flow and steps.
Plan copy_of_release(const Plan& base) {
  Plan p;
  p.sensors = base.sensors;
  p.source = base.source;
  p.release = base.release;
  p.cells = base.cells;
  return p;
}

// The observations of r.plan's release, keeping each interval's start in r.
std::vector<double> observe(CoefficientRun& r, bool keep) {
  const Plan& p = r.plan;
  const int64_t m = p.observed(), K = std::ssize(p.tau);
  std::vector<double> y(static_cast<size_t>(K * m));
  r.start.assign(static_cast<size_t>(keep ? K : 0), {});
  if (keep) r.start[0] = p.source ? std::vector<double>(p.cells, 0.0) : p.release;
  run(p, [&](int64_t k, const std::vector<double>& c) {
    for (int64_t q = 0; q < m; ++q) y[k * m + q] = c[p.sensors.empty() ? q : p.sensors[q]];
    if (keep && k + 1 < K) r.start[k + 1] = c;
  });
  return y;
}

// The steps' transposes walked backward from the cotangent g of the
// observations, calling terms(axis, tau, c, lam') before each factor's
// transpose with the factor's input c and output cotangent lam'. Within an
// interval of S substeps: a state every ceil(sqrt(S)) substeps, then each
// such run's factor inputs recomputed, last run first: memory about
// 3 sqrt(S) states, the forward stepped twice.
template <typename Terms>
void walk_back(const CoefficientRun& kept, const std::vector<double>& g, const char* where,
               Terms&& terms) {
  const Plan& p = kept.plan;
  const std::vector<std::vector<double>>& start = kept.start;
  const int64_t n = p.cells, m = p.observed(), K = std::ssize(p.tau);
  FK_CHECK(std::ssize(g) == K * m && std::ssize(start) == K, where,
           fk::to_text(K * m) + " observed values' gradient and the forward's " + fk::to_text(K) +
               " interval starts",
           fk::to_text(g.size()) + " values and " + fk::to_text(start.size()) + " starts");
  StepWeights M(p.factors, false), Mt(p.factors, true);
  const size_t nf = p.factors.size();
  int64_t step_end = 0;
  for (int64_t s : p.substeps) step_end += s;
  std::vector<double> lam(static_cast<size_t>(n), 0.0), next(static_cast<size_t>(n)), c;
  std::vector<std::vector<double>> marks, inputs;
  for (int64_t k = K - 1; k >= 0; --k) {
    for (int64_t q = 0; q < m; ++q) lam[p.sensors.empty() ? q : p.sensors[q]] += g[k * m + q];
    const int64_t S = p.substeps[k], step0 = step_end - S;
    const int64_t run_len = checkpoint_run(S);
    M.set(p.tau[k]);
    Mt.set(p.tau[k]);
    marks.clear();
    c = start[k];
    for (int64_t s0 = 0; s0 < S; s0 += run_len) {
      marks.push_back(c);
      step_range(p, M, k, step0, s0, std::min(S, s0 + run_len), c, next,
                 [](int64_t, size_t, const std::vector<double>&) {});
    }
    for (int64_t r = std::ssize(marks) - 1; r >= 0; --r) {
      const int64_t s0 = r * run_len, s1 = std::min(S, s0 + run_len);
      inputs.resize(static_cast<size_t>(s1 - s0) * nf);
      c = marks[r];
      step_range(p, M, k, step0, s0, s1, c, next,
                 [&](int64_t s, size_t j, const std::vector<double>& in) {
                   inputs[(s - s0) * nf + j] = in;
                 });
      for (int64_t s = s1 - 1; s >= s0; --s)
        for (size_t j = nf; j-- > 0;) {
          const size_t f = factor_at(step0 + s, j, nf);
          terms(p.factors[f].axis, p.tau[k], inputs[(s - s0) * nf + j], lam);
          euler_step(Mt.matrix(f), Mt.at(f), p.tau[k], 1, lam.data(), nullptr, next.data());
          lam.swap(next);
        }
    }
    step_end = step0;
  }
}

// f(a, line, k) for every line of cells along axis a of the grid (the cells
// [line stride, (line + 1) stride), each at index k = line % n_a along a:
// no division per cell), lines in parallel.
template <typename Line>
void for_each_line(const cuda::TransportGrid& grid, int a, Line&& f) {
  const int64_t stride = grid.stride[a];
  fk::parallel_for(0, grid.cells / stride, std::max<int64_t>(1, 4096 / stride),
                   [&](int64_t lo, int64_t hi) {
                     for (int64_t line = lo; line < hi; ++line) f(line, line % grid.size[a]);
                   });
}

}  // namespace

Plan diffusivity_plan(const Plan& base, const Domain& domain, const AdvectionDiffusionOptions& o,
                      const std::vector<double>& D) {
  FK_CHECK(std::ssize(D) == base.cells, kWhere, fk::to_text(base.cells) + " cells' diffusivity",
           fk::to_text(D.size()) + " values");
  for (size_t i = 0; i < D.size(); ++i)
    FK_CHECK(std::isfinite(D[i]) && D[i] >= 0, kWhere, "a diffusivity >= 0 in every cell",
             fmt::format("{:g} at cell {}", D[i], i));
  Plan p = copy_of_release(base);
  p.flow = base.flow;
  build_steps(p, domain, D, o);
  return p;
}

Plan velocity_plan(const Plan& base, const Domain& domain, const AdvectionDiffusionOptions& o,
                   const std::vector<double>& v) {
  const int nd = domain.shape().size();
  const int64_t n = base.cells;
  FK_CHECK(std::ssize(v) == nd * n, kWhereVelocity,
           fk::to_text(nd) + " velocity components of " + fk::to_text(n) + " cells",
           fk::to_text(v.size()) + " values");
  Plan p = copy_of_release(base);
  for (int a = 0; a < nd; ++a) {
    p.flow.v.emplace_back(v.begin() + a * n, v.begin() + (a + 1) * n);
    for (int64_t i = 0; i < n; ++i)
      FK_CHECK(std::isfinite(p.flow.v[a][i]), kWhereVelocity, "a finite velocity in every cell",
               fmt::format("{:g} in component {} at cell {}", p.flow.v[a][i], a, i));
  }
  build_steps(p, domain, {o.diffusivity}, o);
  return p;
}

int64_t checkpoint_run(int64_t S) {
  return std::max<int64_t>(1, static_cast<int64_t>(std::ceil(std::sqrt(S))));
}

std::vector<double> coefficient_forward(Plan plan, CoefficientRun* keep) {
  CoefficientRun local;
  CoefficientRun& r = keep != nullptr ? *keep : local;
  r.plan = std::move(plan);
  return observe(r, keep != nullptr);
}

std::vector<double> diffusivity_gradient(const CoefficientRun& kept, const Domain& domain,
                                         const AdvectionDiffusionOptions& o,
                                         const std::vector<double>& D,
                                         const std::vector<double>& g) {
  const int64_t n = kept.plan.cells;
  FK_CHECK(std::ssize(D) == n, kWhere, fk::to_text(n) + " cells' diffusivity",
           fk::to_text(D.size()) + " values");
  const std::vector<double> h = domain.spacing();
  // Per axis a, d<lam', c'>/dD_face summed over the factor applications, at
  // the face's lower cell: a factor's face adds tau D_f / h_a^2 (c_j - c_i)
  // to c'_i and takes it from c'_j, at its input c.
  const cuda::TransportGrid grid = transport_grid(domain, o.boundary);
  std::vector<double> dface(static_cast<size_t>(grid.axes * n), 0.0);
  walk_back(
      kept, g, kWhere,
      [&](int axis, double tau, const std::vector<double>& c, const std::vector<double>& lam) {
        for (int a = 0; a < grid.axes; ++a) {
          if (axis >= 0 && a != axis) continue;
          const double w = tau / (h[a] * h[a]);
          double* F = dface.data() + a * n;
          const int64_t na = grid.size[a], stride = grid.stride[a];
          for_each_line(grid, a, [&](int64_t line, int64_t k) {
            for (int64_t i = line * stride; i < (line + 1) * stride; ++i) {
              const int64_t j = cuda::transport_upper_cell(i, k, na, stride, grid.periodic[a]);
              if (j >= 0) F[i] = cuda::face_term(F[i], w, c[i], c[j], lam[i], lam[j]);
            }
          });
        }
      });
  // Each face's sum through the harmonic mean to its two cells.
  std::vector<double> dD(static_cast<size_t>(n));
  fk::parallel_for(0, n, 4096, [&](int64_t lo, int64_t hi) {
    for (int64_t x = lo; x < hi; ++x)
      dD[x] = cuda::diffusivity_gradient_cell(grid, dface.data(), D.data(), x);
  });
  return dD;
}

std::vector<double> velocity_gradient(const CoefficientRun& kept, const Domain& domain,
                                      const AdvectionDiffusionOptions& o,
                                      const std::vector<double>& g) {
  const Plan& p = kept.plan;
  const int64_t n = p.cells;
  // The stencil's geometry pointed at the plan's flow (velocity_terms_at
  // reads the faces' velocities as the stencil does).
  cuda::TransportStencil s = transport_stencil(domain, o.boundary, o.scheme, -1);
  for (int a = 0; a < s.grid.axes; ++a) s.v[a] = p.flow.v[a].data();
  // Per axis, each face's sum at its lower cell, and each open box face's.
  std::vector<double> G(static_cast<size_t>(s.grid.axes * n), 0.0), Gout(G.size(), 0.0);
  walk_back(
      kept, g, kWhereVelocity,
      [&](int axis, double tau, const std::vector<double>& c, const std::vector<double>& lam) {
        for (int a = 0; a < s.grid.axes; ++a) {
          if (axis >= 0 && a != axis) continue;
          const int64_t stride = s.grid.stride[a];
          for_each_line(s.grid, a, [&](int64_t line, int64_t k) {
            for (int64_t i = line * stride; i < (line + 1) * stride; ++i)
              cuda::velocity_terms_at(s, a, i, k, tau, c.data(), lam.data(), G.data(), Gout.data());
          });
        }
      });
  std::vector<double> dv(G.size());
  for (int a = 0; a < s.grid.axes; ++a)
    fk::parallel_for(0, n, 4096, [&](int64_t lo, int64_t hi) {
      for (int64_t x = lo; x < hi; ++x)
        dv[a * n + x] = cuda::velocity_gradient_cell(s, a, G.data(), Gout.data(), x);
    });
  return dv;
}

}  // namespace nefi::transport
