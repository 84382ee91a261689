// The advection-diffusion operator with the diffusivity map as the unknown
// (transport_steps.h): the forward steps a plan built for the field's D, and
// the gradient runs the steps' transposes backward, taking at each factor the
// derivative of its diffusive face fluxes in the faces' diffusivities.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "fk/error.h"
#include "fk/parallel.h"
#include "nefi/cuda/transport_cells.h"
#include "nefi/operators/transport_steps.h"

namespace nefi::transport {
namespace {

constexpr const char* kWhere = "nefi::AdvectionDiffusionOperator (diffusivity)";

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

}  // namespace

Plan diffusivity_plan(const Plan& base, const Domain& domain, const AdvectionDiffusionOptions& o,
                      const std::vector<double>& D) {
  FK_CHECK(std::ssize(D) == base.cells, kWhere, std::to_string(base.cells) + " cells' diffusivity",
           std::to_string(D.size()) + " values");
  for (size_t i = 0; i < D.size(); ++i)
    FK_CHECK(std::isfinite(D[i]) && D[i] >= 0, kWhere, "a diffusivity >= 0 in every cell",
             fmt::format("{:g} at cell {}", D[i], i));
  Plan p;
  p.flow = base.flow;
  p.sensors = base.sensors;
  p.source = base.source;
  p.release = base.release;
  p.cells = base.cells;
  build_steps(p, domain, D, o);
  return p;
}

int64_t checkpoint_run(int64_t S) {
  return std::max<int64_t>(1, static_cast<int64_t>(std::ceil(std::sqrt(S))));
}

std::vector<double> diffusivity_forward(const Plan& base, const Domain& domain,
                                        const AdvectionDiffusionOptions& o,
                                        const std::vector<double>& D, DiffusivityRun* keep) {
  DiffusivityRun local;
  DiffusivityRun& r = keep != nullptr ? *keep : local;
  r.plan = diffusivity_plan(base, domain, o, D);
  const Plan& p = r.plan;
  const int64_t m = p.observed(), K = std::ssize(p.tau);
  std::vector<double> y(static_cast<size_t>(K * m));
  r.start.assign(static_cast<size_t>(keep != nullptr ? K : 0), {});
  if (keep != nullptr) r.start[0] = p.source ? std::vector<double>(p.cells, 0.0) : p.release;
  run(p, [&](int64_t k, const std::vector<double>& c) {
    for (int64_t q = 0; q < m; ++q) y[k * m + q] = c[p.sensors.empty() ? q : p.sensors[q]];
    if (keep != nullptr && k + 1 < K) r.start[k + 1] = c;
  });
  return y;
}

std::vector<double> diffusivity_gradient(const DiffusivityRun& kept, const Domain& domain,
                                         const AdvectionDiffusionOptions& o,
                                         const std::vector<double>& D,
                                         const std::vector<double>& g) {
  const Plan& p = kept.plan;
  const std::vector<std::vector<double>>& start = kept.start;
  const int64_t n = p.cells, m = p.observed(), K = std::ssize(p.tau);
  FK_CHECK(std::ssize(g) == K * m && std::ssize(start) == K && std::ssize(D) == n, kWhere,
           std::to_string(K * m) + " observed values' gradient and the forward's " +
               std::to_string(K) + " interval starts",
           std::to_string(g.size()) + " values and " + std::to_string(start.size()) + " starts");
  const std::vector<double> h = domain.spacing();
  // Per axis a, d<lam', c'>/dD_face summed over the factor applications, at
  // the face's lower cell: a factor's face adds tau D_f / h_a^2 (c_j - c_i)
  // to c'_i and takes it from c'_j, at its input c.
  const cuda::TransportGrid grid = transport_grid(domain, o.boundary);
  std::vector<double> dface(static_cast<size_t>(grid.axes * n), 0.0);
  auto face_terms = [&](int axis, double tau, const std::vector<double>& c,
                        const std::vector<double>& lam) {
    for (int a = 0; a < grid.axes; ++a) {
      if (axis >= 0 && a != axis) continue;
      const double w = tau / (h[a] * h[a]);
      double* F = dface.data() + a * n;
      // Lines of `stride` cells at one index k along a (no division per cell).
      const int64_t na = grid.size[a], stride = grid.stride[a];
      fk::parallel_for(
          0, n / stride, std::max<int64_t>(1, 4096 / stride), [&](int64_t lo, int64_t hi) {
            for (int64_t line = lo; line < hi; ++line) {
              const int64_t k = line % na;
              for (int64_t i = line * stride; i < (line + 1) * stride; ++i) {
                const int64_t j = cuda::transport_upper_cell(i, k, na, stride, grid.periodic[a]);
                if (j >= 0) F[i] = cuda::face_term(F[i], w, c[i], c[j], lam[i], lam[j]);
              }
            }
          });
    }
  };
  StepWeights M(p.factors, false), Mt(p.factors, true);
  const size_t nf = p.factors.size();
  int64_t step_end = 0;
  for (int64_t s : p.substeps) step_end += s;
  std::vector<double> lam(static_cast<size_t>(n), 0.0), next(static_cast<size_t>(n)), c;
  // Within an interval of S substeps: a state every ceil(sqrt(S)) substeps,
  // then each such run's factor inputs recomputed, last run first: memory
  // about 3 sqrt(S) states, the forward stepped twice.
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
          face_terms(p.factors[f].axis, p.tau[k], inputs[(s - s0) * nf + j], lam);
          euler_step(Mt.matrix(f), Mt.at(f), p.tau[k], 1, lam.data(), nullptr, next.data());
          lam.swap(next);
        }
    }
    step_end = step0;
  }
  // Each face's sum through the harmonic mean to its two cells.
  std::vector<double> dD(static_cast<size_t>(n));
  fk::parallel_for(0, n, 4096, [&](int64_t lo, int64_t hi) {
    for (int64_t x = lo; x < hi; ++x)
      dD[x] = cuda::diffusivity_gradient_cell(grid, dface.data(), D.data(), x);
  });
  return dD;
}

}  // namespace nefi::transport
