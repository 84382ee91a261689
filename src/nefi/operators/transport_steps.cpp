#include "nefi/operators/transport_steps.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include <fmt/format.h>

#include "fk/error.h"
#include "fk/parallel.h"

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

// For every face along `only` (-1: every axis), the advective flux (upwind,
// or Lax-Wendroff's central flux and its v^2 tau / 2 diffusion) and the
// central diffusive flux, as entries of the two cells' rows. Lax-Wendroff's
// stencils are of one axis (a split factor, or a 1-D grid's).
Stencil assemble(const Domain& domain, const Flow& flow, const std::vector<double>& D,
                 const std::vector<TransportBoundary>& boundary, TransportScheme scheme, int only) {
  const fk::Dims& shape = domain.shape();
  const int nd = shape.size();
  const int64_t n = shape.numel();
  const std::vector<double> h = domain.spacing();
  const bool lw = scheme == TransportScheme::kLaxWendroff;
  struct Entry {
    int64_t col;
    double w, per_tau;
  };
  std::vector<std::vector<Entry>> rows(static_cast<size_t>(n));
  auto add = [&](int64_t r, int64_t c, double w, double per_tau = 0) {
    if (w != 0 || per_tau != 0) rows[r].push_back({c, w, per_tau});
  };
  // Lax-Wendroff's bound per cell: nu^2 + 2 d <= 1 with nu = tau max|v_f| / h
  // over the cell's faces along the axis, d = tau D / h^2 (the largest D).
  FK_CHECK(!lw || only >= 0 || nd == 1, kWhere, "Lax-Wendroff stencils of one axis",
           std::to_string(nd) + " axes at once");
  std::vector<double> speed2(lw ? n : 0, 0.0);  // max(v_f / h)^2
  auto D_at = [&](int64_t i) { return D.size() == 1 ? D[0] : D[static_cast<size_t>(i)]; };
  int64_t stride = 1;
  for (int a = nd - 1; a >= 0; --a) {
    const int64_t na = shape[a];
    if (only >= 0 && a != only) {
      stride *= na;
      continue;
    }
    const TransportBoundary b = boundary.size() == 1 ? boundary[0] : boundary[a];
    for (int64_t i = 0; i < n; ++i) {
      const int64_t k = (i / stride) % na;
      // The face above cell i along a, to j.
      const int64_t j = upper_neighbour(i, k, na, stride, b);
      if (j >= 0) {
        const double w = face_diffusivity(D_at(i), D_at(j)) / (h[a] * h[a]);
        add(i, j, w);
        add(i, i, -w);
        add(j, i, w);
        add(j, j, -w);
        const double v = 0.5 * (flow.at(a, i) + flow.at(a, j)) / h[a];
        if (lw) {  // v (c_i + c_j) / 2 through the face, and v^2 tau / 2 diffusion
          add(i, i, -v / 2, -v * v / 2);
          add(i, j, -v / 2, v * v / 2);
          add(j, i, v / 2, v * v / 2);
          add(j, j, v / 2, -v * v / 2);
          speed2[i] = std::max(speed2[i], v * v);
          speed2[j] = std::max(speed2[j], v * v);
        } else if (v > 0) {  // c_i flows into j
          add(i, i, -v);
          add(j, i, v);
        } else if (v < 0) {  // c_j flows into i
          add(i, j, -v);
          add(j, j, v);
        }
      }
      if (b == TransportBoundary::kOpen) {  // outflow through the box's faces, upwind
        const double v = flow.at(a, i) / h[a];
        if ((k + 1 == na && v > 0) || (k == 0 && v < 0)) {
          add(i, i, -std::abs(v));
          if (lw) speed2[i] = std::max(speed2[i], v * v);
        }
      }
    }
    stride *= na;
  }
  Stencil st;
  SparseRows& L = st.L;
  L.n_cols = n;
  double max_rate = 0;  // upwind: max_i(-L_ii)
  for (int64_t i = 0; i < n; ++i) {
    auto& r = rows[i];
    r.push_back({i, 0.0, 0.0});  // every row keeps its diagonal (the step bound reads it)
    std::stable_sort(r.begin(), r.end(),
                     [](const Entry& p, const Entry& q) { return p.col < q.col; });
    for (size_t e = 0; e < r.size(); ++e) {
      if (e > 0 && r[e].col == r[e - 1].col) {
        L.weight.back() += r[e].w;
        if (lw) st.per_tau.back() += r[e].per_tau;
        continue;
      }
      L.col.push_back(static_cast<int32_t>(r[e].col));
      L.weight.push_back(r[e].w);
      if (lw) st.per_tau.push_back(r[e].per_tau);
    }
    L.row_start.push_back(static_cast<int64_t>(L.col.size()));
    for (int64_t e = L.row_start[i]; e < L.row_start[i + 1]; ++e)
      if (L.col[e] == i) max_rate = std::max(max_rate, -L.weight[e]);
    std::vector<Entry>().swap(r);
  }
  if (!lw) {
    if (max_rate > 0) st.stable_tau = 1 / max_rate;
    return st;
  }
  const double ha = h[only < 0 ? 0 : only];
  const double q = 2 * *std::max_element(D.begin(), D.end()) / (ha * ha);  // in every cell
  for (int64_t i = 0; i < n; ++i)                                          // tau^2 p + tau q <= 1
    if (speed2[i] > 0 || q > 0)
      st.stable_tau = std::min(st.stable_tau, 2 / (q + std::sqrt(q * q + 4 * speed2[i])));
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

double face_diffusivity(double a, double b, double* d_da, double* d_db) {
  // a == b: exactly a (a uniform D's stencil keeps its bits), slopes 1/2 each;
  // at a = b = 0, where the mean has no derivative, the same 1/2 (the limit
  // along a = b), so a blocked face can still open.
  const double s = a + b;
  const double ra = a == b ? 0.5 : b / s, rb = a == b ? 0.5 : a / s;  // s > 0 when a != b >= 0
  if (d_da != nullptr) *d_da = a == b ? 0.5 : 2 * ra * ra;
  if (d_db != nullptr) *d_db = a == b ? 0.5 : 2 * rb * rb;
  return a == b ? a : 2 * a * ra;
}

int64_t upper_neighbour(int64_t i, int64_t k, int64_t na, int64_t stride, TransportBoundary b) {
  if (k + 1 < na) return i + stride;
  if (b == TransportBoundary::kPeriodic && na > 1) return i - (na - 1) * stride;
  return -1;
}

void build_steps(Plan& plan, const Domain& domain, const std::vector<double>& D,
                 const AdvectionDiffusionOptions& o) {
  const int nd = domain.shape().size();
  // Lax-Wendroff without its cross-derivative terms is unstable in 2-D and
  // 3-D at any step when D = 0 (a diagonal flow's waves grow): its axes are
  // split, each substep one 1-D factor per axis within its own bound.
  const bool split = o.scheme == TransportScheme::kLaxWendroff && nd > 1;
  double stable = std::numeric_limits<double>::infinity();
  plan.factors.clear();
  for (int a = split ? 0 : -1; a < (split ? nd : 0); ++a) {
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
  plan.stable_tau = o.courant * stable;
  plan.substeps.clear();
  plan.tau.clear();
  double total = 0, prev = 0;
  for (double t : o.times) {
    const double steps = std::max(1.0, std::ceil((t - prev) / plan.stable_tau));
    total += steps;
    FK_CHECK(total <= kMaxTransportSubsteps, kWhere,
             "at most " + std::to_string(kMaxTransportSubsteps) +
                 " explicit substeps (check the units of the velocity, diffusivity and times)",
             "more, at a stable substep of " + fmt::format("{:g}", plan.stable_tau) +
                 " up to t = " + fmt::format("{:g}", t));
    plan.substeps.push_back(static_cast<int64_t>(steps));
    plan.tau.push_back((t - prev) / steps);
    prev = t;
  }
}

}  // namespace nefi::transport
