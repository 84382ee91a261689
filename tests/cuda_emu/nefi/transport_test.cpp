// transport.cu's advection-diffusion kernels run on the emulated device
// (emulated_device.h): one Euler step of a factor against
// transport::euler_step (operators/transport_steps.cpp) with StepWeights'
// per-substep weights, each batch row alone (a one-row block there), with and
// without a source and a per-substep part; the observation gather, its
// transpose and the source's gradient sum against plain loops; the
// diffusivity unknown's face sums and their chain to the cells against
// loops over grid coordinates (closed and periodic axes, one of two cells);
// its stencils and their transposes built for a D map against the CPU
// plan's (transport_steps.cpp), with the substep bound and D's check; the
// velocity unknown's face and outflow sums and their chain against the CPU's
// loop over the same cell functions (transport_coefficients.cpp).
// Bit for bit (transport_cells.h: separately rounded products and sums in
// the CPU's order), in both thread orders.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "cuda_emu/emulated_device.h"
#include "cuda_emu/emulated_test_util.h"
#include "fk/factory.h"
#include "nefi/cuda/transport_cells.h"
#include "nefi/cuda/transport_kernels.h"
#include "nefi/operators/advection_diffusion.h"
#include "nefi/operators/sparse_rows.h"
#include "nefi/operators/transport_steps.h"

// The emulated launchers this file runs: transport_kernels.h's, in ::emu (a
// signature that drifts from its definition fails to link).
namespace nefi::cuda::emu {
void launch_transport_step(const TransportRows& m, int64_t batch, int64_t cells, double tau,
                           const double* c, const double* s, double* out, void* stream);
void launch_transport_observe(int64_t batch, int64_t cells, int64_t observed, int64_t K, int64_t k,
                              const int64_t* sensors, const double* c, double* y, void* stream);
void launch_transport_inject(int64_t batch, int64_t cells, int64_t observed, int64_t K, int64_t k,
                             const int64_t* sensors, const double* g, double* lam, void* stream);
void launch_transport_accumulate(int64_t n, double tau, const double* v, double* acc, void* stream);
void launch_transport_face_terms(const TransportGrid& grid, int axis, double w, const double* c,
                                 const double* lam, double* dface, void* stream);
void launch_transport_diffusivity_gradient(const TransportGrid& grid, const double* dface,
                                           const double* D, double* dD, void* stream);
void launch_transport_velocity_terms(const TransportStencil& s, int axis, double tau,
                                     const double* c, const double* lam, double* G, double* Gout,
                                     void* stream);
void launch_transport_velocity_gradient(const TransportStencil& s, const double* G,
                                        const double* Gout, double* dv, void* stream);
void launch_transport_stencil(const TransportStencil& s, int64_t width, int32_t* col,
                              double* weight, double* per_tau, double* rate, double* bad,
                              void* stream);
void launch_transport_stencil_transpose(const TransportStencil& s, int64_t width,
                                        const int32_t* col, const double* weight,
                                        const double* per_tau, int32_t* t_col, double* t_weight,
                                        double* t_per_tau, void* stream);
}  // namespace nefi::cuda::emu

namespace nc = nefi::cuda;
using fkemu_test::expect_same_bits;
using fkemu_test::in_both_orders;
using fkemu_test::random_values;

namespace {

size_t at(int64_t i) {
  return static_cast<size_t>(i);
}

// A square stencil-like matrix: 0 to 5 entries a row (some rows empty),
// columns anywhere, weights of both signs.
nefi::SparseRows random_rows(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  nefi::SparseRows m;
  m.n_cols = n;
  for (int64_t r = 0; r < n; ++r) {
    const int entries = rng() % 9 == 0 ? 0 : static_cast<int>(rng() % 5) + 1;
    for (int e = 0; e < entries; ++e) {
      m.col.push_back(static_cast<int32_t>(rng() % n));
      m.weight.push_back(u(rng));
    }
    m.row_start.push_back(static_cast<int64_t>(m.col.size()));
  }
  return m;
}

void check_step(int64_t batch, int64_t n, bool per_tau, bool source) {
  SCOPED_TRACE(std::to_string(batch) + " rows of " + std::to_string(n) + (per_tau ? ", T" : "") +
               (source ? ", source" : ""));
  const nefi::SparseRows m = random_rows(n, static_cast<uint32_t>(n + batch));
  std::vector<double> t;
  if (per_tau) t = random_values<double>(std::ssize(m.weight), 3);
  const double tau = 0.0371;
  const std::vector<double> c = random_values<double>(batch * n, 1);
  const std::vector<double> s =
      source ? random_values<double>(batch * n, 2) : std::vector<double>();
  // The CPU: StepWeights' weights, then each row alone through euler_step.
  std::vector<double> w = m.weight;
  for (size_t e = 0; e < w.size(); ++e)
    if (per_tau) w[e] = m.weight[e] + tau * t[e];
  std::vector<double> want(at(batch * n));
  for (int64_t b = 0; b < batch; ++b)
    nefi::transport::euler_step(m, w.data(), tau, 1, c.data() + b * n,
                                source ? s.data() + b * n : nullptr, want.data() + b * n);
  const nc::TransportRows rows{m.row_start.data(), m.col.data(), m.weight.data(),
                               per_tau ? t.data() : nullptr};
  in_both_orders([&](fkemu::Order) {
    std::vector<double> got(want.size(), -7.0);
    nc::emu::launch_transport_step(rows, batch, n, tau, c.data(), source ? s.data() : nullptr,
                                   got.data(), nullptr);
    expect_same_bits(got, want, "step");
  });
}

TEST(EmulatedTransport, StepEqualsTheCpuEulerStep) {
  check_step(1, 300, false, false);  // two blocks, the second partial
  check_step(3, 70, true, false);
  check_step(2, 90, false, true);
  check_step(4, 41, true, true);
}

TEST(EmulatedTransport, ObserveInjectAndAccumulateEqualTheLoops) {
  const int64_t batch = 3, n = 50, K = 4, k = 2;
  const std::vector<int64_t> sensors{0, 9, 17, 33, 49};
  const std::vector<double> c = random_values<double>(batch * n, 5);
  for (bool all : {true, false}) {
    SCOPED_TRACE(all ? "every cell" : "sensors");
    const int64_t m = all ? n : std::ssize(sensors);
    auto cell = [&](int64_t q) { return all ? q : sensors[at(q)]; };
    const std::vector<double> g = random_values<double>(batch * K * m, 6);
    std::vector<double> want_y(at(batch * K * m), -7.0), want_lam = c;
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t q = 0; q < m; ++q) {
        want_y[at((b * K + k) * m + q)] = c[at(b * n + cell(q))];
        want_lam[at(b * n + cell(q))] += g[at((b * K + k) * m + q)];
      }
    in_both_orders([&](fkemu::Order) {
      std::vector<double> y(want_y.size(), -7.0), lam = c;
      const int64_t* s = all ? nullptr : sensors.data();
      nc::emu::launch_transport_observe(batch, n, m, K, k, s, c.data(), y.data(), nullptr);
      expect_same_bits(y, want_y, "observe");
      nc::emu::launch_transport_inject(batch, n, m, K, k, s, g.data(), lam.data(), nullptr);
      expect_same_bits(lam, want_lam, "inject");
    });
  }
  const double tau = 0.013;
  const std::vector<double> v = random_values<double>(n, 7);
  std::vector<double> want = c;
  for (int64_t i = 0; i < n; ++i) want[at(i)] += tau * v[at(i)];
  in_both_orders([&](fkemu::Order) {
    std::vector<double> acc = c;
    nc::emu::launch_transport_accumulate(n, tau, v.data(), acc.data(), nullptr);
    expect_same_bits(std::vector<double>(acc.begin(), acc.begin() + n),
                     std::vector<double>(want.begin(), want.begin() + n), "accumulate");
    expect_same_bits(std::vector<double>(acc.begin() + n, acc.end()),
                     std::vector<double>(c.begin() + n, c.end()), "past n untouched");
  });
}

// A 5 x 2 x 3 grid, axis 1 periodic over two cells (its two faces join one
// pair) and axis 2 periodic over three; the faces' sums and the chain
// written over coordinates: per cell, axis by axis, the face below it and
// then the face above it, each sum times the harmonic mean's slope.
TEST(EmulatedTransport, FaceTermsAndTheDiffusivityChainEqualCoordinateLoops) {
  const int64_t size[3] = {5, 2, 3};
  const bool periodic[3] = {false, true, true};
  const int64_t n = size[0] * size[1] * size[2];
  nc::TransportGrid grid;
  grid.axes = 3;
  grid.cells = n;
  for (int a = 0; a < 3; ++a) {
    grid.size[a] = size[a];
    grid.stride[a] = a == 0 ? size[1] * size[2] : a == 1 ? size[2] : 1;
    grid.periodic[a] = periodic[a];
  }
  // The cell one step along axis a from (x, y, z), or -1 past a closed face.
  auto neighbour = [&](int64_t cell, int a, int64_t step) -> int64_t {
    int64_t q[3] = {cell / (size[1] * size[2]), (cell / size[2]) % size[1], cell % size[2]};
    q[a] += step;
    if (q[a] < 0 || q[a] >= size[a]) {
      if (!periodic[a] || size[a] == 1) return -1;
      q[a] = (q[a] + size[a]) % size[a];
    }
    return (q[0] * size[1] + q[1]) * size[2] + q[2];
  };
  const std::vector<double> c = random_values<double>(n, 11), lam = random_values<double>(n, 12);
  std::vector<double> D = random_values<double>(n, 13);
  for (double& d : D) d = std::abs(d);
  D[4] = D[1];  // equal neighbours along axis 1 (cells 1 and 4)
  D[7] = 0.0;
  D[8] = 0.0;  // a blocked face with both sides 0 (cells 7 and 8, axis 2)
  const double w[3] = {0.3, 0.7, 1.1};
  const std::vector<double> start = random_values<double>(3 * n, 14);
  std::vector<double> want_faces = start;
  for (int a = 0; a < 3; ++a)
    for (int64_t i = 0; i < n; ++i) {
      const int64_t j = neighbour(i, a, 1);
      if (j >= 0)
        want_faces[at(a * n + i)] += w[a] * (c[at(j)] - c[at(i)]) * (lam[at(i)] - lam[at(j)]);
    }
  // The harmonic mean's slope in its first argument: 2 b^2 / (a + b)^2.
  auto slope = [](double a, double b) {
    if (a == b) return 0.5;
    const double r = b / (a + b);
    return 2 * r * r;
  };
  std::vector<double> want_dD(at(n), 0.0);
  for (int64_t x = 0; x < n; ++x)
    for (int a = 0; a < 3; ++a) {
      const int64_t lo = neighbour(x, a, -1), hi = neighbour(x, a, 1);
      if (lo >= 0) want_dD[at(x)] += want_faces[at(a * n + lo)] * slope(D[at(x)], D[at(lo)]);
      if (hi >= 0) want_dD[at(x)] += want_faces[at(a * n + x)] * slope(D[at(x)], D[at(hi)]);
    }
  in_both_orders([&](fkemu::Order) {
    std::vector<double> faces = start, dD(at(n), -7.0);
    for (int a = 0; a < 3; ++a)
      nc::emu::launch_transport_face_terms(grid, a, w[a], c.data(), lam.data(), faces.data(),
                                           nullptr);
    expect_same_bits(faces, want_faces, "face terms");
    nc::emu::launch_transport_diffusivity_gradient(grid, want_faces.data(), D.data(), dD.data(),
                                                   nullptr);
    expect_same_bits(dD, want_dD, "gradient in D");
  });
}

// Rows of `width` (col -1 padding) packed as SparseRows' columns, weights
// and per-substep parts.
struct Packed {
  std::vector<int32_t> col;
  std::vector<double> weight, per_tau;
};
Packed pack(const std::vector<int32_t>& col, const std::vector<double>& weight,
            const std::vector<double>& per_tau) {
  Packed p;
  for (size_t e = 0; e < col.size(); ++e) {
    if (col[e] < 0) continue;
    p.col.push_back(col[e]);
    p.weight.push_back(weight[e]);
    if (!per_tau.empty()) p.per_tau.push_back(per_tau[e]);
  }
  return p;
}

// An independent reference for a factor's stencil: a walk over the faces
// (axes last to first, each face at its lower cell) adding each flux's
// entries to both cells' rows, each row then stably sorted by column and
// summed per column, its diagonal kept; and the substep bound as a minimum
// over the rows. (The form operators/transport_steps.cpp had before its rows
// were built one at a time.)
struct WalkedStencil {
  Packed rows;
  double stable = std::numeric_limits<double>::infinity();
};
WalkedStencil walked_stencil(const fk::Dims& shape, const std::vector<double>& h,
                             const std::vector<std::vector<double>>& flow,
                             const std::vector<double>& D,
                             const std::vector<nefi::TransportBoundary>& boundary, bool lw,
                             int only) {
  struct Entry {
    int64_t col;
    double w, per_tau;
  };
  const int nd = shape.size();
  const int64_t n = shape.numel();
  std::vector<std::vector<Entry>> rows(at(n));
  auto add = [&](int64_t r, int64_t c, double w, double per_tau = 0) {
    if (w != 0 || per_tau != 0) rows[at(r)].push_back({c, w, per_tau});
  };
  auto v_at = [&](int a, int64_t i) {
    return flow[at(a)].size() == 1 ? flow[at(a)][0] : flow[at(a)][at(i)];
  };
  std::vector<double> speed2(at(n), 0.0);
  int64_t stride = 1;
  for (int a = nd - 1; a >= 0; --a) {
    const int64_t na = shape[a];
    const auto b = boundary.size() == 1 ? boundary[0] : boundary[at(a)];
    for (int64_t i = 0; only < 0 || a == only ? i < n : false; ++i) {
      const int64_t k = (i / stride) % na;
      int64_t j = k + 1 < na ? i + stride : -1;
      if (j < 0 && b == nefi::TransportBoundary::kPeriodic && na > 1) j = i - (na - 1) * stride;
      if (j >= 0) {
        const double Di = D[at(i)], Dj = D[at(j)];
        const double face = Di == Dj ? Di : 2 * Di * (Dj / (Di + Dj));
        const double w = face / (h[at(a)] * h[at(a)]);
        add(i, j, w);
        add(i, i, -w);
        add(j, i, w);
        add(j, j, -w);
        const double v = 0.5 * (v_at(a, i) + v_at(a, j)) / h[at(a)];
        if (lw) {
          add(i, i, -v / 2, -v * v / 2);
          add(i, j, -v / 2, v * v / 2);
          add(j, i, v / 2, v * v / 2);
          add(j, j, v / 2, -v * v / 2);
          speed2[at(i)] = std::max(speed2[at(i)], v * v);
          speed2[at(j)] = std::max(speed2[at(j)], v * v);
        } else if (v > 0) {
          add(i, i, -v);
          add(j, i, v);
        } else if (v < 0) {
          add(i, j, -v);
          add(j, j, v);
        }
      }
      if (b == nefi::TransportBoundary::kOpen) {
        const double v = v_at(a, i) / h[at(a)];
        if ((k + 1 == na && v > 0) || (k == 0 && v < 0)) {
          add(i, i, -std::abs(v));
          if (lw) speed2[at(i)] = std::max(speed2[at(i)], v * v);
        }
      }
    }
    stride *= na;
  }
  WalkedStencil out;
  double max_rate = 0;  // upwind: max_i(-A_ii)
  for (int64_t i = 0; i < n; ++i) {
    std::vector<Entry>& r = rows[at(i)];
    r.push_back({i, 0.0, 0.0});
    std::stable_sort(r.begin(), r.end(),
                     [](const Entry& p, const Entry& q) { return p.col < q.col; });
    const size_t begin = out.rows.col.size();
    for (size_t e = 0; e < r.size(); ++e) {
      if (e > 0 && r[e].col == r[e - 1].col) {
        out.rows.weight.back() += r[e].w;
        if (lw) out.rows.per_tau.back() += r[e].per_tau;
        continue;
      }
      out.rows.col.push_back(static_cast<int32_t>(r[e].col));
      out.rows.weight.push_back(r[e].w);
      if (lw) out.rows.per_tau.push_back(r[e].per_tau);
    }
    for (size_t e = begin; e < out.rows.col.size(); ++e)
      if (out.rows.col[e] == i) max_rate = std::max(max_rate, -out.rows.weight[e]);
  }
  if (!lw) {
    if (max_rate > 0) out.stable = 1 / max_rate;
    return out;
  }
  const double ha = h[at(only < 0 ? 0 : only)];
  const double q = 2 * *std::max_element(D.begin(), D.end()) / (ha * ha);
  for (int64_t i = 0; i < n; ++i)
    if (speed2[at(i)] > 0 || q > 0)
      out.stable = std::min(out.stable, 2 / (q + std::sqrt(q * q + 4 * speed2[at(i)])));
  return out;
}

// Each factor's stencil and transpose built for a D map (zero cells, equal
// neighbours, a face blocked on both sides) on the emulated device equal the
// face walk's and the CPU plan's, bit for bit, over 1-D, 2-D and 3-D grids
// (axes of one and two cells among them), both schemes, closed, open and
// periodic axes, uniform and per-cell flows with zeros; the rates give the
// walk's stable substep; D's check flags negative and non-finite cells.
TEST(EmulatedTransport, StencilsBuiltForADiffusivityEqualTheCpuPlans) {
  using nefi::TransportBoundary;
  int configs = 0;
  for (const fk::Dims& shape :
       {fk::Dims{9}, fk::Dims{2}, fk::Dims{1}, fk::Dims{6, 2}, fk::Dims{5, 4}, fk::Dims{4, 1},
        fk::Dims{4, 3, 5}, fk::Dims{3, 2, 2}, fk::Dims{1, 3, 2}})
    for (bool lw : {false, true})
      for (int bnd = 0; bnd < 4; ++bnd)
        for (bool per_cell : {false, true}) {
          const int nd = shape.size();
          const int64_t n = shape.numel();
          nefi::AdvectionDiffusionOptions o;
          for (int a = 0; a < nd; ++a) {
            std::vector<double> v(per_cell ? n : 1);
            for (size_t i = 0; i < v.size(); ++i)
              v[i] = (a + 1) * 0.7 * std::sin(1.7 * static_cast<double>(i) + a) - 0.1;
            if (per_cell) v[0] = 0.0;
            o.velocity.push_back(fk::from_vector(v, per_cell ? shape : fk::Dims{1}));
          }
          o.scheme = lw ? nefi::TransportScheme::kLaxWendroff : nefi::TransportScheme::kUpwind;
          const TransportBoundary kinds[3] = {TransportBoundary::kClosed, TransportBoundary::kOpen,
                                              TransportBoundary::kPeriodic};
          o.boundary.clear();
          for (int a = 0; a < (bnd < 3 ? 1 : nd); ++a) o.boundary.push_back(kinds[(bnd + a) % 3]);
          o.times = {0.1, 0.3};
          o.unknown = nefi::TransportUnknown::kDiffusivity;
          o.release = fk::ones(shape, {fk::DType::F64});
          std::vector<double> extent;
          for (int a = 0; a < nd; ++a)
            extent.push_back(static_cast<double>(shape[a]) * (0.1 + 0.03 * a));
          const nefi::AdvectionDiffusionOperator op(nefi::Domain(shape, extent), o);
          std::vector<double> D(at(n));
          for (int64_t i = 0; i < n; ++i)
            D[at(i)] = 0.01 * (1.3 + std::cos(2.1 * static_cast<double>(i)));
          D[at(1 % n)] = 0.0;
          if (n > 2) D[2] = 0.0;  // with cell 1: a face blocked on both sides
          if (n > 4) D[4] = D[3];
          const nefi::transport::Plan plan =
              nefi::transport::diffusivity_plan(op.plan(), op.domain(), o, D);
          const std::vector<int> axes = nefi::transport::factor_axes(op.domain(), o);
          ASSERT_EQ(axes.size(), plan.factors.size());
          SCOPED_TRACE("shape " + shape.str() + (lw ? " Lax-Wendroff" : " upwind") +
                       " boundaries " + std::to_string(bnd) + (per_cell ? " flow per cell" : ""));
          double walked = std::numeric_limits<double>::infinity();
          in_both_orders([&](fkemu::Order) {
            double stable = std::numeric_limits<double>::infinity();
            for (size_t f = 0; f < axes.size(); ++f) {
              nc::TransportStencil s =
                  nefi::transport::transport_stencil(op.domain(), o.boundary, o.scheme, axes[f]);
              for (int a = 0; a < nd; ++a) {
                s.v[a] = op.plan().flow.v[a].data();
                s.v_uniform[a] = !per_cell;
              }
              s.D = D.data();
              const int64_t width = nc::transport_stencil_width(s);
              std::vector<int32_t> col(at(n * width), 7), t_col(col);
              std::vector<double> w(at(n * width), -7.0), t_w(w), rate(at(n)), bad(at(n));
              std::vector<double> pt(lw ? w.size() : 0, -7.0), t_pt(pt);
              nc::emu::launch_transport_stencil(s, width, col.data(), w.data(),
                                                lw ? pt.data() : nullptr, rate.data(), bad.data(),
                                                nullptr);
              nc::emu::launch_transport_stencil_transpose(
                  s, width, col.data(), w.data(), lw ? pt.data() : nullptr, t_col.data(),
                  t_w.data(), lw ? t_pt.data() : nullptr, nullptr);
              const WalkedStencil ref = walked_stencil(
                  shape, op.domain().spacing(), op.plan().flow.v, D, o.boundary, lw, axes[f]);
              walked = std::min(walked, ref.stable);
              const nefi::transport::Factor& want = plan.factors[f];
              const Packed fwd = pack(col, w, pt), back = pack(t_col, t_w, t_pt);
              EXPECT_EQ(fwd.col, ref.rows.col) << "factor " << f;
              expect_same_bits(fwd.weight, ref.rows.weight, "weights against the walk");
              expect_same_bits(fwd.per_tau, ref.rows.per_tau, "per-substep parts against the walk");
              EXPECT_EQ(fwd.col, want.L.col) << "factor " << f;
              expect_same_bits(fwd.weight, want.L.weight, "weights");
              expect_same_bits(fwd.per_tau, want.per_tau, "per-substep parts");
              EXPECT_EQ(back.col, want.Lt.col) << "factor " << f;
              expect_same_bits(back.weight, want.Lt.weight, "transposed weights");
              expect_same_bits(back.per_tau, want.per_tau_t, "transposed per-substep parts");
              EXPECT_EQ(bad, std::vector<double>(at(n), 0.0));
              stable = std::min(stable, nefi::transport::stable_substep(
                                            s, *std::max_element(rate.begin(), rate.end()),
                                            *std::max_element(D.begin(), D.end())));
            }
            EXPECT_EQ(stable, walked);
            EXPECT_EQ(o.courant * stable, plan.stable_tau);
          });
          ++configs;
        }
  EXPECT_EQ(configs, 144);
  // D's check: negative and non-finite cells flagged; 0, -0 and large ones not.
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> D{0.1, -1e-9, 0.0, std::nan(""), 1e300, -0.0, inf, -inf};
  const nefi::Domain domain(fk::Dims{std::ssize(D)});
  nc::TransportStencil s = nefi::transport::transport_stencil(domain, {TransportBoundary::kClosed},
                                                              nefi::TransportScheme::kUpwind, -1);
  s.D = D.data();
  std::vector<int32_t> col(D.size() * 3);
  std::vector<double> w(col.size()), rate(D.size()), bad(D.size(), -1.0);
  nc::emu::launch_transport_stencil(s, 3, col.data(), w.data(), nullptr, rate.data(), bad.data(),
                                    nullptr);
  EXPECT_EQ(bad, (std::vector<double>{0, 1, 0, 1, 0, 0, 1, 1}));
}

// The velocity's kernels: every cell's face and outflow terms per axis, and
// each (axis, cell)'s chain, against a plain loop over the cell functions
// as transport_coefficients.cpp runs them; a 4 x 2 x 3 grid (open, periodic
// over two cells, closed), both schemes, a flow per cell with zeros.
TEST(EmulatedTransport, VelocityTermsAndChainEqualTheCpuLoop) {
  const nefi::Domain domain(fk::Dims{4, 2, 3}, {0.8, 0.5, 0.9});
  const int64_t n = 24;
  const std::vector<nefi::TransportBoundary> boundary{nefi::TransportBoundary::kOpen,
                                                      nefi::TransportBoundary::kPeriodic,
                                                      nefi::TransportBoundary::kClosed};
  std::vector<double> v = random_values<double>(3 * n, 21);
  for (int64_t i : {0, 5, 30, 47, 71}) v[at(i)] = 0.0;  // faces and outflows at rest
  const std::vector<double> c = random_values<double>(n, 22), lam = random_values<double>(n, 23);
  const std::vector<double> G0 = random_values<double>(3 * n, 24),
                            Gout0 = random_values<double>(3 * n, 25);
  for (auto scheme : {nefi::TransportScheme::kUpwind, nefi::TransportScheme::kLaxWendroff}) {
    SCOPED_TRACE(scheme == nefi::TransportScheme::kUpwind ? "upwind" : "Lax-Wendroff");
    nc::TransportStencil s = nefi::transport::transport_stencil(domain, boundary, scheme, -1);
    for (int a = 0; a < 3; ++a) s.v[a] = v.data() + a * n;
    const double tau = 0.0173;
    std::vector<double> G = G0, Gout = Gout0, dv(at(3 * n));
    for (int a = 0; a < 3; ++a)
      for (int64_t i = 0; i < n; ++i)
        nc::velocity_terms_at(s, a, i, (i / s.grid.stride[a]) % s.grid.size[a], tau, c.data(),
                              lam.data(), G.data(), Gout.data());
    for (int a = 0; a < 3; ++a)
      for (int64_t x = 0; x < n; ++x)
        dv[at(a * n + x)] = nc::velocity_gradient_cell(s, a, G.data(), Gout.data(), x);
    EXPECT_NE(G, G0);
    EXPECT_NE(Gout, Gout0);  // the open axis's outflow terms
    in_both_orders([&](fkemu::Order) {
      std::vector<double> got_G = G0, got_out = Gout0, got_dv(dv.size(), -7.0);
      for (int a = 0; a < 3; ++a)
        nc::emu::launch_transport_velocity_terms(s, a, tau, c.data(), lam.data(), got_G.data(),
                                                 got_out.data(), nullptr);
      expect_same_bits(got_G, G, "face terms");
      expect_same_bits(got_out, Gout, "outflow terms");
      nc::emu::launch_transport_velocity_gradient(s, G.data(), Gout.data(), got_dv.data(), nullptr);
      expect_same_bits(got_dv, dv, "gradient in v");
    });
  }
}

}  // namespace
