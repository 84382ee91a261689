#include "nefi/operators/transport_steps.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/parallel.h"
#include "nefi/cuda/transport_cells.h"

namespace nefi::transport {
namespace {

constexpr const char* kWhere = "nefi::AdvectionDiffusionOperator";

// The stencil of dc/dt = (L + tau T) c, T's weights on L's pattern (empty
// for upwind), and the largest stable substep before the courant factor.
struct Stencil {
  SparseRows L;
  std::vector<double> per_tau;
  double stable_tau = std::numeric_limits<double>::infinity();
};

// The stencil of factor `only` (-1: every axis) for diffusivity D (one
// value, or one per cell): each row from cuda::transport_stencil_row (the
// arithmetic a device build repeats), rows in parallel into a table of the
// factor's width, then packed. Lax-Wendroff's stencils are of one axis (a
// split factor, or a 1-D grid's).
Stencil assemble(const Domain& domain, const Flow& flow, const std::vector<double>& D,
                 const std::vector<TransportBoundary>& boundary, TransportScheme scheme, int only) {
  const bool lw = scheme == TransportScheme::kLaxWendroff;
  FK_CHECK(!lw || only >= 0 || domain.shape().size() == 1, kWhere,
           "Lax-Wendroff stencils of one axis",
           fk::to_text(domain.shape().size()) + " axes at once");
  cuda::TransportStencil s = transport_stencil(domain, boundary, scheme, only);
  for (int a = 0; a < static_cast<int>(flow.v.size()); ++a) {
    s.v[a] = flow.v[a].data();
    s.v_uniform[a] = flow.v[a].size() == 1;
  }
  s.D = D.data();
  s.D_uniform = D.size() == 1;
  const int64_t n = s.grid.cells, width = cuda::transport_stencil_width(s);
  // Left uninitialised (a row's unused slots are never read): zeroing it cost
  // as much as filling it.
  const std::unique_ptr<cuda::StencilEntry[]> table(new cuda::StencilEntry[n * width]);
  std::vector<int64_t> count(static_cast<size_t>(n));
  // Upwind: each row's -A_ii; Lax-Wendroff: its largest (v_f / h)^2.
  std::vector<double> rate(static_cast<size_t>(n));
  fk::parallel_for(0, n, 1024, [&](int64_t lo, int64_t hi) {
    cuda::StencilEntry row[cuda::kMaxStencilColumns];
    for (int64_t i = lo; i < hi; ++i) {
      double speed2 = 0;
      const int m = cuda::transport_stencil_row(s, i, row, &speed2);
      count[i] = m;
      rate[i] = speed2;
      for (int e = 0; e < m; ++e) {
        table[i * width + e] = row[e];
        if (!lw && row[e].col == i) rate[i] = -row[e].w;
      }
    }
  });
  Stencil st;
  SparseRows& L = st.L;
  L.n_cols = n;
  L.row_start.resize(static_cast<size_t>(n) + 1);
  for (int64_t i = 0; i < n; ++i) L.row_start[i + 1] = L.row_start[i] + count[i];
  L.col.resize(static_cast<size_t>(L.row_start[n]));
  L.weight.resize(L.col.size());
  if (lw) st.per_tau.resize(L.col.size());
  fk::parallel_for(0, n, 4096, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i)
      for (int64_t e = 0; e < count[i]; ++e) {
        const cuda::StencilEntry& x = table[i * width + e];
        L.col[L.row_start[i] + e] = static_cast<int32_t>(x.col);
        L.weight[L.row_start[i] + e] = x.w;
        if (lw) st.per_tau[L.row_start[i] + e] = x.per_tau;
      }
  });
  const double top = *std::max_element(rate.begin(), rate.end());
  st.stable_tau = stable_substep(s, top, *std::max_element(D.begin(), D.end()));
  return st;
}

// Batch rows are stepped together so that each substep reads the stencil
// once for the whole block (the stencil is ~4/5 of a single state's
// traffic). Each row's sums run in the same order as alone: a batch row
// gives the bits of its own apply.

// out = c + tau (M c + s) for B interleaved states (s may be null), cells in
// parallel, with M's pattern and the weights `weight`. B is a template argument
// so that the loops over the block unroll (a run-time B made one row 5x
// slower).
template <int64_t B>
void euler_step_block(const SparseRows& M, const double* weight, double tau, const double* c,
                      const double* s, double* out) {
  fk::parallel_for(0, M.n_rows(), 8192 / B, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      double acc[B];
      for (int64_t b = 0; b < B; ++b) acc[b] = s ? s[i * B + b] : 0.0;
      for (int64_t e = M.row_start[i]; e < M.row_start[i + 1]; ++e) {
        const double w = weight[e];
        const double* cj = c + static_cast<int64_t>(M.col[e]) * B;
        for (int64_t b = 0; b < B; ++b) acc[b] += w * cj[b];
      }
      for (int64_t b = 0; b < B; ++b) out[i * B + b] = c[i * B + b] + tau * acc[b];
    }
  });
}

}  // namespace

void euler_step(const SparseRows& M, const double* w, double tau, int64_t B, const double* c,
                const double* s, double* out) {
  switch (B) {
    case 1:
      return euler_step_block<1>(M, w, tau, c, s, out);
    case 2:
      return euler_step_block<2>(M, w, tau, c, s, out);
    case 3:
      return euler_step_block<3>(M, w, tau, c, s, out);
    case 4:
      return euler_step_block<4>(M, w, tau, c, s, out);
    case 5:
      return euler_step_block<5>(M, w, tau, c, s, out);
    case 6:
      return euler_step_block<6>(M, w, tau, c, s, out);
    case 7:
      return euler_step_block<7>(M, w, tau, c, s, out);
    default:
      return euler_step_block<kBlock>(M, w, tau, c, s, out);
  }
}

void interleave(const double* x, int64_t n, int64_t B, double* to) {
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < n; ++i) to[i * B + b] = x[b * n + i];
}

void StepWeights::set(double tau) {
  for (size_t f = 0; f < factors_.size(); ++f) {
    const std::vector<double>& t = transposed_ ? factors_[f].per_tau_t : factors_[f].per_tau;
    const std::vector<double>& w = matrix(f).weight;
    if (t.empty()) continue;
    scaled_[f].resize(w.size());
    for (size_t e = 0; e < w.size(); ++e) scaled_[f][e] = w[e] + tau * t[e];
  }
}

cuda::TransportGrid transport_grid(const Domain& domain,
                                   const std::vector<TransportBoundary>& boundary) {
  const fk::Dims& shape = domain.shape();
  cuda::TransportGrid g;
  g.axes = shape.size();
  g.cells = shape.numel();
  int64_t stride = 1;
  for (int a = g.axes - 1; a >= 0; --a) {
    g.size[a] = shape[a];
    g.stride[a] = stride;
    g.periodic[a] =
        (boundary.size() == 1 ? boundary[0] : boundary[a]) == TransportBoundary::kPeriodic;
    stride *= shape[a];
  }
  return g;
}

cuda::TransportStencil transport_stencil(const Domain& domain,
                                         const std::vector<TransportBoundary>& boundary,
                                         TransportScheme scheme, int axis) {
  cuda::TransportStencil s;
  s.grid = transport_grid(domain, boundary);
  const std::vector<double> h = domain.spacing();
  for (int a = 0; a < s.grid.axes; ++a) {
    s.h[a] = h[a];
    s.open[a] = (boundary.size() == 1 ? boundary[0] : boundary[a]) == TransportBoundary::kOpen;
  }
  s.lax_wendroff = scheme == TransportScheme::kLaxWendroff;
  s.axis = axis;
  return s;
}

double stable_substep(const cuda::TransportStencil& s, double top_rate, double top_D) {
  const double inf = std::numeric_limits<double>::infinity();
  if (!s.lax_wendroff) return top_rate > 0 ? 1 / top_rate : inf;  // tau max(-A_ii) <= 1
  // tau^2 p + tau q <= 1 in every cell, p its (v_f / h)^2, q = 2 D / h^2 at
  // the largest D: its root falls as p grows, so the largest p binds.
  const double ha = s.h[s.axis < 0 ? 0 : s.axis];
  const double q = 2 * top_D / (ha * ha);
  if (top_rate <= 0 && q <= 0) return inf;
  return 2 / (q + std::sqrt(q * q + 4 * top_rate));
}

std::vector<TransportTablesOnDevice::Rows> factor_rows_on(const Plan& plan, bool transposed,
                                                          fk::Device device) {
  auto upload = [&](const auto& v) {
    return fk::from_vector(v, {static_cast<int64_t>(v.size())}, device);
  };
  std::vector<TransportTablesOnDevice::Rows> out;
  for (const Factor& f : plan.factors) {
    const SparseRows& m = transposed ? f.Lt : f.L;
    const std::vector<double>& t = transposed ? f.per_tau_t : f.per_tau;
    out.push_back({upload(m.row_start), upload(m.col), upload(m.weight),
                   t.empty() ? fk::Tensor() : upload(t)});
  }
  return out;
}

std::vector<int> factor_axes(const Domain& domain, const AdvectionDiffusionOptions& o) {
  const int nd = domain.shape().size();
  // Lax-Wendroff without its cross-derivative terms is unstable in 2-D and
  // 3-D at any step when D = 0 (a diagonal flow's waves grow): its axes are
  // split, each substep one 1-D factor per axis within its own bound.
  if (o.scheme != TransportScheme::kLaxWendroff || nd == 1) return {-1};
  std::vector<int> axes(static_cast<size_t>(nd));
  for (int a = 0; a < nd; ++a) axes[a] = a;
  return axes;
}

void build_steps(Plan& plan, const Domain& domain, const std::vector<double>& D,
                 const AdvectionDiffusionOptions& o) {
  double stable = std::numeric_limits<double>::infinity();
  plan.factors.clear();
  for (int a : factor_axes(domain, o)) {
    Stencil st = assemble(domain, plan.flow, D, o.boundary, o.scheme, a);
    Factor f;
    f.L = std::move(st.L);
    f.Lt = transpose(f.L);
    f.per_tau = std::move(st.per_tau);
    f.axis = a;
    if (!f.per_tau.empty()) {  // T's transpose on Lt's pattern, in its entry order
      SparseRows T = f.L;
      T.weight = f.per_tau;
      f.per_tau_t = transpose(T).weight;
    }
    stable = std::min(stable, st.stable_tau);
    plan.factors.push_back(std::move(f));
  }
  schedule_steps(plan, stable, o);
}

void schedule_steps(Plan& plan, double stable, const AdvectionDiffusionOptions& o) {
  plan.stable_tau = o.courant * stable;
  plan.substeps.clear();
  plan.tau.clear();
  double total = 0, prev = 0;
  for (double t : o.times) {
    const double steps = std::max(1.0, std::ceil((t - prev) / plan.stable_tau));
    total += steps;
    FK_CHECK(total <= kMaxTransportSubsteps, kWhere,
             "at most " + fk::to_text(kMaxTransportSubsteps) +
                 " explicit substeps (check the units of the velocity, diffusivity and times)",
             "more, at a stable substep of " + fmt::format("{:g}", plan.stable_tau) +
                 " up to t = " + fmt::format("{:g}", t));
    plan.substeps.push_back(static_cast<int64_t>(steps));
    plan.tau.push_back((t - prev) / steps);
    prev = t;
  }
}

}  // namespace nefi::transport
