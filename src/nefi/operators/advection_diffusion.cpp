#include "nefi/operators/advection_diffusion.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include <fmt/format.h>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/parallel.h"
#include "fk/profile.h"

namespace nefi {
namespace {

// One factor of a substep, c <- c + tau (A + tau T) c: the stencil A, its
// transpose, and (Lax-Wendroff) T's weights on their patterns.
struct Factor {
  SparseRows L, Lt;
  std::vector<double> per_tau, per_tau_t;
};

}  // namespace

struct AdvectionDiffusionOperator::Plan {
  // The factors of a substep: upwind one for all axes, Lax-Wendroff one per
  // axis (stepped in order on even substeps, in reverse on odd ones).
  std::vector<Factor> factors;
  double stable_tau = 0;  // the substep bound, courant included
  std::vector<int64_t> substeps;
  std::vector<double> tau;
  std::vector<int64_t> sensors;  // flat cells observed; empty: all
  bool source = false;
  int64_t cells = 0;
  int64_t observed() const { return sensors.empty() ? cells : std::ssize(sensors); }
};

namespace {

constexpr const char* kWhere = "nefi::AdvectionDiffusionOperator";

// Velocity component a at cell i: one value per cell, or one for all.
struct Flow {
  std::vector<std::vector<double>> v;  // per axis; empty: no flow
  double at(int a, int64_t i) const {
    if (v.empty()) return 0;
    return v[a].size() == 1 ? v[a][0] : v[a][static_cast<size_t>(i)];
  }
};

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
Stencil assemble(const Domain& domain, const Flow& flow, double D,
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
  // over the cell's faces along the axis, d = tau D / h^2.
  FK_CHECK(!lw || only >= 0 || nd == 1, kWhere, "Lax-Wendroff stencils of one axis",
           std::to_string(nd) + " axes at once");
  std::vector<double> speed2(lw ? n : 0, 0.0);  // max(v_f / h)^2
  int64_t stride = 1;
  for (int a = nd - 1; a >= 0; --a) {
    const int64_t na = shape[a];
    if (only >= 0 && a != only) {
      stride *= na;
      continue;
    }
    const TransportBoundary b = boundary.size() == 1 ? boundary[0] : boundary[a];
    const double w = D / (h[a] * h[a]);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t k = (i / stride) % na;
      // The face above cell i along a, to j (wrapping on a periodic axis).
      int64_t j = -1;
      if (k + 1 < na)
        j = i + stride;
      else if (b == TransportBoundary::kPeriodic && na > 1)
        j = i - (na - 1) * stride;
      if (j >= 0) {
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
  const double q = 2 * D / (ha * ha);  // the same in every cell
  for (int64_t i = 0; i < n; ++i)      // tau^2 p + tau q <= 1
    if (speed2[i] > 0 || q > 0)
      st.stable_tau = std::min(st.stable_tau, 2 / (q + std::sqrt(q * q + 4 * speed2[i])));
  return st;
}

// Batch rows stepped together: a block of up to kBlock states is stored
// interleaved (cell i of row b at i B + b), so each substep reads the
// stencil once for the whole block (the stencil is ~4/5 of a single state's
// traffic). Each row's sums run in the same order as alone: a batch row
// gives the bits of its own apply.
constexpr int64_t kBlock = 8;

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

// B rows of x (each n long) into `to`, interleaved.
void interleave(const double* x, int64_t n, int64_t B, double* to) {
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < n; ++i) to[i * B + b] = x[b * n + i];
}

struct AdvectionDiffusionBackward : fk::autograd::Node {
  std::shared_ptr<const AdvectionDiffusionOperator> op;
  fk::Dims in_shape;
  const char* name() const override { return "AdvectionDiffusionBackward"; }
  std::vector<fk::Tensor> apply(std::vector<fk::Tensor>&& grads) override {
    fk::autograd::NoGradGuard ng;
    const fk::Tensor& g = grads[0];
    const int64_t per = static_cast<int64_t>(op->options().times.size()) * op->observed();
    const auto x =
        op->adjoint_rows(g.to(fk::DType::F64).contiguous().to_vector<double>(), g.numel() / per);
    return {fk::from_vector(x, in_shape).to(g.dtype())};
  }
};

}  // namespace

TransportBoundary parse_transport_boundary(const std::string& name) {
  if (name == "closed") return TransportBoundary::kClosed;
  if (name == "open") return TransportBoundary::kOpen;
  FK_CHECK(name == "periodic", kWhere, "a boundary closed, open or periodic", "'" + name + "'");
  return TransportBoundary::kPeriodic;
}

TransportScheme parse_transport_scheme(const std::string& name) {
  if (name == "upwind") return TransportScheme::kUpwind;
  FK_CHECK(name == "lax_wendroff", kWhere, "a scheme upwind or lax_wendroff", "'" + name + "'");
  return TransportScheme::kLaxWendroff;
}

TransportUnknown parse_transport_unknown(const std::string& name) {
  if (name == "initial") return TransportUnknown::kInitial;
  FK_CHECK(name == "source", kWhere, "an unknown initial or source", "'" + name + "'");
  return TransportUnknown::kSource;
}

AdvectionDiffusionOperator::AdvectionDiffusionOperator(Domain domain,
                                                       AdvectionDiffusionOptions options)
    : domain_(std::move(domain)), options_(std::move(options)) {
  const fk::Dims& shape = domain_.shape();
  const int nd = shape.size();
  const AdvectionDiffusionOptions& o = options_;
  FK_CHECK(nd >= 1 && nd <= 3, kWhere, "a 1-, 2- or 3-D domain", shape.str());
  FK_CHECK(o.velocity.empty() || static_cast<int>(o.velocity.size()) == nd, kWhere,
           "no velocity or one component per axis (" + std::to_string(nd) + ")",
           std::to_string(o.velocity.size()) + " components");
  Flow flow;
  for (int a = 0; a < static_cast<int>(o.velocity.size()); ++a) {
    const fk::Tensor& v = o.velocity[a];
    const std::string which = "velocity component " + std::to_string(a);
    FK_CHECK(v.defined() && (v.shape() == shape || v.numel() == 1), kWhere,
             which + " of the grid's shape " + shape.str() + " or a single value",
             v.defined() ? v.shape().str() : "none");
    FK_CHECK(!fk::is_complex(v.dtype()), kWhere, "a real " + which, fk::name(v.dtype()));
    flow.v.push_back(v.to(fk::kCPU).to(fk::DType::F64).contiguous().to_vector<double>());
    for (double x : flow.v.back())
      FK_CHECK(std::isfinite(x), kWhere, "a finite " + which, "a non-finite value");
  }
  FK_CHECK(std::isfinite(o.diffusivity) && o.diffusivity >= 0, kWhere, "a diffusivity >= 0",
           fmt::format("{:g}", o.diffusivity));
  FK_CHECK(!o.times.empty(), kWhere, "at least one observation time", "none");
  for (size_t k = 0; k < o.times.size(); ++k)
    FK_CHECK(std::isfinite(o.times[k]) && o.times[k] > (k ? o.times[k - 1] : 0.0), kWhere,
             "increasing observation times > 0",
             fmt::format("{:g}", o.times[k]) + " after " +
                 (k ? fmt::format("{:g}", o.times[k - 1]) : std::string("t = 0")));
  FK_CHECK(o.boundary.size() == 1 || static_cast<int>(o.boundary.size()) == nd, kWhere,
           "one boundary for every axis or one per axis (" + std::to_string(nd) + ")",
           std::to_string(o.boundary.size()));
  FK_CHECK(o.courant > 0 && o.courant <= 1, kWhere, "courant in (0, 1]",
           fmt::format("{:g}", o.courant));

  auto plan = std::make_shared<Plan>();
  plan->cells = shape.numel();
  plan->source = o.unknown == TransportUnknown::kSource;
  if (o.sensors.defined()) {
    FK_CHECK(o.sensors.shape() == shape && !fk::is_complex(o.sensors.dtype()), kWhere,
             "a real sensor mask of the grid's shape " + shape.str(),
             o.sensors.shape().str() + " " + fk::name(o.sensors.dtype()));
    const auto m = o.sensors.to(fk::kCPU).to(fk::DType::F64).contiguous().to_vector<double>();
    for (size_t i = 0; i < m.size(); ++i) {
      FK_CHECK(std::isfinite(m[i]), kWhere, "a finite sensor mask",
               "a non-finite value at cell " + std::to_string(i));
      if (m[i] > 0) plan->sensors.push_back(static_cast<int64_t>(i));
    }
    FK_CHECK(!plan->sensors.empty(), kWhere, "a sensor mask with at least one cell > 0",
             "none of its " + std::to_string(m.size()) + " cells");
  }
  FK_CHECK(plan->cells <= std::numeric_limits<int32_t>::max(), kWhere,
           "at most 2^31 - 1 cells (the stencil stores int32 columns)", shape.str());
  // Lax-Wendroff without its cross-derivative terms is unstable in 2-D and
  // 3-D at any step when D = 0 (a diagonal flow's waves grow): its axes are
  // split, each substep one 1-D factor per axis within its own bound.
  const bool split = o.scheme == TransportScheme::kLaxWendroff && nd > 1;
  double stable = std::numeric_limits<double>::infinity();
  for (int a = split ? 0 : -1; a < (split ? nd : 0); ++a) {
    Stencil st = assemble(domain_, flow, o.diffusivity, o.boundary, o.scheme, a);
    Factor f;
    f.L = std::move(st.L);
    f.Lt = transpose(f.L);
    f.per_tau = std::move(st.per_tau);
    if (!f.per_tau.empty()) {  // T's transpose on Lt's pattern, in its entry order
      SparseRows T = f.L;
      T.weight = f.per_tau;
      f.per_tau_t = transpose(T).weight;
    }
    stable = std::min(stable, st.stable_tau);
    plan->factors.push_back(std::move(f));
  }
  plan->stable_tau = o.courant * stable;
  double total = 0, prev = 0;
  for (double t : o.times) {
    const double steps = std::max(1.0, std::ceil((t - prev) / plan->stable_tau));
    total += steps;
    FK_CHECK(total <= kMaxTransportSubsteps, kWhere,
             "at most " + std::to_string(kMaxTransportSubsteps) +
                 " explicit substeps (check the units of the velocity, diffusivity and times)",
             "more, at a stable substep of " + fmt::format("{:g}", plan->stable_tau) +
                 " up to t = " + fmt::format("{:g}", t));
    plan->substeps.push_back(static_cast<int64_t>(steps));
    plan->tau.push_back((t - prev) / steps);
    prev = t;
  }
  plan_ = std::move(plan);
}

int AdvectionDiffusionOperator::factor_count() const {
  return static_cast<int>(plan_->factors.size());
}
const SparseRows& AdvectionDiffusionOperator::stencil(int factor) const {
  FK_CHECK(factor >= 0 && factor < factor_count(), std::string(kWhere) + "::stencil",
           "a factor in [0, " + std::to_string(factor_count()) + ")", std::to_string(factor));
  return plan_->factors[factor].L;
}
std::string AdvectionDiffusionOperator::fidelity_tag() const {
  return options_.scheme == TransportScheme::kUpwind ? "upwind-euler" : "lax-wendroff-split-euler";
}
const std::vector<int64_t>& AdvectionDiffusionOperator::substeps() const {
  return plan_->substeps;
}
const std::vector<double>& AdvectionDiffusionOperator::substep_length() const {
  return plan_->tau;
}
double AdvectionDiffusionOperator::stable_substep() const {
  return plan_->stable_tau;
}
int64_t AdvectionDiffusionOperator::observed() const {
  return plan_->observed();
}

namespace {

// Each factor's weights for substeps of tau: A's plus tau T's where T is
// given (a copy set per interval), else A's own. transposed: Lt's.
class StepWeights {
 public:
  StepWeights(const std::vector<Factor>& factors, bool transposed)
      : factors_(factors), transposed_(transposed), scaled_(factors.size()) {}
  StepWeights(const StepWeights&) = delete;
  StepWeights& operator=(const StepWeights&) = delete;
  void set(double tau) {
    for (size_t f = 0; f < factors_.size(); ++f) {
      const std::vector<double>& t = transposed_ ? factors_[f].per_tau_t : factors_[f].per_tau;
      const std::vector<double>& w = matrix(f).weight;
      if (t.empty()) continue;
      scaled_[f].resize(w.size());
      for (size_t e = 0; e < w.size(); ++e) scaled_[f][e] = w[e] + tau * t[e];
    }
  }
  const SparseRows& matrix(size_t f) const { return transposed_ ? factors_[f].Lt : factors_[f].L; }
  const double* at(size_t f) const {
    return scaled_[f].empty() ? matrix(f).weight.data() : scaled_[f].data();
  }

 private:
  const std::vector<Factor>& factors_;
  bool transposed_;
  std::vector<std::vector<double>> scaled_;
};

// The factor applied j-th in substep `step`: in order on even substeps, in
// reverse on odd ones (so that two substeps are a symmetric, second-order
// split).
size_t factor_at(int64_t step, size_t j, size_t count) {
  return step % 2 == 0 ? j : count - 1 - j;
}

}  // namespace

std::vector<double> AdvectionDiffusionOperator::forward_rows(const std::vector<double>& x,
                                                             int64_t rows) const {
  const Plan& p = *plan_;
  const int64_t n = p.cells, m = p.observed(), K = std::ssize(p.tau);
  FK_CHECK(rows >= 0 && std::ssize(x) == rows * n, std::string(kWhere) + "::forward_rows",
           std::to_string(rows) + " rows of " + std::to_string(n) + " cells",
           std::to_string(x.size()) + " values");
  const int64_t block = std::min(rows, kBlock);
  StepWeights M(p.factors, false);
  const size_t nf = p.factors.size();
  std::vector<double> out(static_cast<size_t>(rows * K * m)), c(n * block), next(n * block),
      src(p.source ? n * block : 0);
  for (int64_t r0 = 0; r0 < rows; r0 += kBlock) {
    const int64_t B = std::min(kBlock, rows - r0);
    if (p.source) {
      interleave(x.data() + r0 * n, n, B, src.data());
      std::fill(c.begin(), c.end(), 0.0);
    } else {
      interleave(x.data() + r0 * n, n, B, c.data());
    }
    for (int64_t k = 0, step = 0; k < K; ++k) {
      M.set(p.tau[k]);
      for (int64_t s = 0; s < p.substeps[k]; ++s, ++step)
        for (size_t j = 0; j < nf; ++j) {  // the source enters with the last: c' = P c + tau s
          const size_t f = factor_at(step, j, nf);
          euler_step(M.matrix(f), M.at(f), p.tau[k], B, c.data(),
                     p.source && j + 1 == nf ? src.data() : nullptr, next.data());
          c.swap(next);
        }
      for (int64_t b = 0; b < B; ++b) {
        double* o = out.data() + ((r0 + b) * K + k) * m;
        for (int64_t q = 0; q < m; ++q) o[q] = c[(p.sensors.empty() ? q : p.sensors[q]) * B + b];
      }
    }
  }
  return out;
}

std::vector<double> AdvectionDiffusionOperator::adjoint_rows(const std::vector<double>& g,
                                                             int64_t rows) const {
  const Plan& p = *plan_;
  const int64_t n = p.cells, m = p.observed(), K = std::ssize(p.tau);
  FK_CHECK(rows >= 0 && std::ssize(g) == rows * K * m, std::string(kWhere) + "::adjoint_rows",
           std::to_string(rows) + " rows of " + std::to_string(K * m) + " observed values",
           std::to_string(g.size()) + " values");
  const int64_t block = std::min(rows, kBlock);
  StepWeights M(p.factors, true);
  const size_t nf = p.factors.size();
  int64_t total = 0;  // substeps over all intervals
  for (int64_t n_k : p.substeps) total += n_k;
  std::vector<double> out(static_cast<size_t>(rows * n)), lam(n * block), next(n * block),
      ds(p.source ? n * block : 0);
  for (int64_t r0 = 0; r0 < rows; r0 += kBlock) {
    const int64_t B = std::min(kBlock, rows - r0);
    std::fill(lam.begin(), lam.end(), 0.0);
    std::fill(ds.begin(), ds.end(), 0.0);
    for (int64_t k = K - 1, step = total - 1; k >= 0; --k) {
      for (int64_t b = 0; b < B; ++b) {
        const double* gk = g.data() + ((r0 + b) * K + k) * m;
        for (int64_t q = 0; q < m; ++q)
          lam[(p.sensors.empty() ? q : p.sensors[q]) * B + b] += gk[q];
      }
      M.set(p.tau[k]);
      for (int64_t s = 0; s < p.substeps[k]; ++s, --step)
        for (size_t j = nf; j-- > 0;) {
          // c' = c + tau (M_f c [+ s in the last]): ds += tau lam',
          // lam = (I + tau M_f)^T lam'.
          const size_t f = factor_at(step, j, nf);
          if (p.source && j + 1 == nf)
            for (int64_t i = 0; i < n * B; ++i) ds[i] += p.tau[k] * lam[i];
          euler_step(M.matrix(f), M.at(f), p.tau[k], B, lam.data(), nullptr, next.data());
          lam.swap(next);
        }
    }
    const std::vector<double>& grad = p.source ? ds : lam;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t i = 0; i < n; ++i) out[(r0 + b) * n + i] = grad[i * B + b];
  }
  return out;
}

fk::Tensor AdvectionDiffusionOperator::apply(const fk::Tensor& x) const {
  const fk::Dims& shape = domain_.shape();
  const int lead = x.dim() - shape.size();
  bool fits = lead >= 0;
  for (int a = 0; fits && a < shape.size(); ++a) fits = x.shape()[lead + a] == shape[a];
  FK_CHECK(fits, kWhere, "a field of shape (..., " + shape.str() + ")", x.shape().str());
  FK_CHECK(x.dtype() == fk::DType::F32 || x.dtype() == fk::DType::F64, kWhere,
           "a real f32/f64 field", fk::name(x.dtype()));
  FK_CHECK(x.device().is_cpu(), kWhere, "a field on the CPU", x.device().str());
  fk::Dims out_shape;
  int64_t rows = 1;
  for (int a = 0; a < lead; ++a) {
    out_shape.push_back(x.shape()[a]);
    rows *= x.shape()[a];
  }
  for (int64_t d : output_shape(shape)) out_shape.push_back(d);
  std::vector<double> y;
  {
    fk::profile::OpScope scope("advection_diffusion");
    y = forward_rows(x.detach().to(fk::DType::F64).contiguous().to_vector<double>(), rows);
  }
  fk::Tensor out = fk::from_vector(y, out_shape).to(x.dtype());
  if (fk::autograd::needs_grad(x)) {
    auto node = std::make_shared<AdvectionDiffusionBackward>();
    node->op = std::make_shared<AdvectionDiffusionOperator>(*this);
    node->in_shape = x.shape();
    fk::autograd::record(node, {x}, out);
  }
  return out;
}

void AdvectionDiffusionOperator::check_grid(const fk::Dims& shape, const char* who) const {
  if (shape == domain_.shape()) return;
  bool uniform = !options_.sensors.defined();
  for (const fk::Tensor& v : options_.velocity) uniform = uniform && v.numel() == 1;
  FK_CHECK(uniform && shape.size() == domain_.shape().size(), who,
           "the operator's grid " + domain_.shape().str() +
               (uniform ? std::string(" or another of its axes")
                        : " (a flow or sensors given per cell belong to one grid)"),
           shape.str());
}

std::shared_ptr<Operator> AdvectionDiffusionOperator::at_resolution(const fk::Dims& shape) const {
  check_grid(shape, "nefi::AdvectionDiffusionOperator::at_resolution");
  if (shape == domain_.shape()) return std::make_shared<AdvectionDiffusionOperator>(*this);
  return std::make_shared<AdvectionDiffusionOperator>(domain_.at(shape), options_);
}

fk::Dims AdvectionDiffusionOperator::output_shape(const fk::Dims& shape) const {
  check_grid(shape, kWhere);
  fk::Dims out{static_cast<int64_t>(options_.times.size())};
  if (plan_->sensors.empty())
    for (int64_t d : shape) out.push_back(d);
  else
    out.push_back(plan_->observed());
  return out;
}

std::string AdvectionDiffusionOperator::host_only_reason() const {
  return "the advection-diffusion steps run as sparse products on host vectors (no device "
         "kernel yet)";
}

}  // namespace nefi
