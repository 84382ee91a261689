// The eit flux trace's 1/σ term (eit_flux_term.h) against written-out
// references: the ring is exactly the boundary cells in the stated order,
// the term is the dense C times 1/σ, its gradient −Σ_r g_r C[r, j] / σ_j²,
// and a matrix reaching inside the grid is refused.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <vector>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/random.h"
#include "nefi/instances/eit_flux_term.h"
#include "nefi/instances/eit_model.h"

namespace {

using nefi::eit::boundary_ring;
using nefi::eit::boundary_ring_cells;
using nefi::eit::FluxTerm;

bool on_boundary(int64_t cell, int64_t n) {
  const int64_t i = cell / n, j = cell % n;
  return i == 0 || i == n - 1 || j == 0 || j == n - 1;
}

TEST(NefiEitFluxTerm, RingIsEachBoundaryCellOnceInTheStatedOrder) {
  for (int64_t n : {3, 4, 7}) {
    const std::vector<int64_t> ring = boundary_ring_cells(n);
    ASSERT_EQ(static_cast<int64_t>(ring.size()), 4 * n - 4) << n;
    const std::set<int64_t> unique(ring.begin(), ring.end());
    EXPECT_EQ(unique.size(), ring.size()) << n;
    for (int64_t c : ring) EXPECT_TRUE(on_boundary(c, n)) << n << " cell " << c;
    // Rows 0 and n − 1 first, then (i, 0), (i, n − 1) for each row between.
    EXPECT_EQ(ring[n], (n - 1) * n);
    EXPECT_EQ(ring[2 * n], n);
    EXPECT_EQ(ring[2 * n + 1], 2 * n - 1);
    // The slices take the cells the list names.
    std::vector<double> ids(n * n);
    for (int64_t c = 0; c < n * n; ++c) ids[c] = static_cast<double>(c);
    const std::vector<double> got = boundary_ring(fk::from_vector(ids, {n, n})).to_vector<double>();
    ASSERT_EQ(got.size(), ring.size());
    for (size_t r = 0; r < ring.size(); ++r) EXPECT_EQ(got[r], static_cast<double>(ring[r])) << r;
  }
}

// A random C on the boundary columns, σ in [0.5, 2.5): the term and its
// gradient by plain loops over the dense matrix.
TEST(NefiEitFluxTerm, TermAndGradientAreTheDenseSums) {
  constexpr int64_t n = 6, rows = 5;
  fk::Generator gen(21);
  std::vector<double> c = fk::randn({rows, n * n}, {fk::DType::F64}, &gen).to_vector<double>();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < n * n; ++j)
      if (!on_boundary(j, n)) c[r * n * n + j] = 0;
  const std::vector<double> x =
      (fk::rand({n, n}, {fk::DType::F64}, &gen) * 2.0 + 0.5).to_vector<double>();
  const std::vector<double> g = fk::randn({rows}, {fk::DType::F64}, &gen).to_vector<double>();
  std::vector<double> want(rows, 0.0), want_grad(n * n, 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < n * n; ++j) {
      want[r] += c[r * n * n + j] / x[j];
      want_grad[j] -= g[r] * c[r * n * n + j] / (x[j] * x[j]);
    }
  const FluxTerm term(fk::from_vector(c, {rows, n * n}), n);
  for (fk::DType dt : {fk::DType::F64, fk::DType::F32}) {
    SCOPED_TRACE(fk::name(dt));
    const double tol = dt == fk::DType::F64 ? 1e-12 : 1e-4;
    fk::Tensor xt = fk::from_vector(x, {n, n}).to(dt);
    xt.set_requires_grad(true);
    const fk::Tensor y = term.apply(xt);
    ASSERT_EQ(y.dtype(), dt);
    const std::vector<double> got = y.to(fk::DType::F64).to_vector<double>();
    ASSERT_EQ(got.size(), want.size());
    for (int64_t r = 0; r < rows; ++r) EXPECT_NEAR(got[r], want[r], tol * 10) << r;
    y.backward(fk::from_vector(g, {rows}).to(dt));
    const std::vector<double> grad = xt.grad().to(fk::DType::F64).to_vector<double>();
    for (int64_t j = 0; j < n * n; ++j) {
      if (!on_boundary(j, n)) {
        EXPECT_EQ(grad[j], 0.0) << j;
      }
      EXPECT_NEAR(grad[j], want_grad[j], tol * 20) << j;
    }
  }
}

// eit's own flux matrices (continuum and electrodes) live on the ring and
// keep their values there.
TEST(NefiEitFluxTerm, FluxTraceMatricesLiveOnTheRing) {
  constexpr int64_t n = 10, patterns = 4;
  for (int64_t electrodes : {0, 12}) {
    const nefi::eit::Electrodes el{electrodes, 0.5};
    const auto segments = nefi::eit::observed_segments(5, el);
    const auto m = static_cast<int64_t>(segments.size());
    const std::vector<double> c = nefi::eit::flux_trace_matrix(n, segments, patterns, 1.0, el);
    const FluxTerm term(fk::from_vector(c, {patterns * m, n * n}), n);
    const std::vector<int64_t> ring = boundary_ring_cells(n);
    const std::vector<double> kept = term.ring_columns().to_vector<double>();
    const auto k = static_cast<int64_t>(ring.size());
    ASSERT_EQ(term.ring_columns().shape(), fk::Dims({patterns * m, k}));
    for (int64_t r = 0; r < patterns * m; ++r)
      for (int64_t i = 0; i < k; ++i) EXPECT_EQ(kept[r * k + i], c[r * n * n + ring[i]]);
  }
}

TEST(NefiEitFluxTerm, BadInputsAreErrors) {
  constexpr int64_t n = 5;
  std::vector<double> c(2 * n * n, 0.0);
  c[n * n + 2 * n + 2] = 1.0;  // cell (2, 2): inside the grid
  EXPECT_THROW(FluxTerm(fk::from_vector(c, {2, n * n}), n), fk::Error);
  EXPECT_THROW(FluxTerm(fk::zeros({2, n * n - 1}, {fk::DType::F64}), n), fk::Error);
  const FluxTerm term(fk::zeros({2, n * n}, {fk::DType::F64}), n);
  EXPECT_THROW(term.apply(fk::ones({n, n + 1}, {fk::DType::F64})), fk::Error);
  EXPECT_THROW(boundary_ring(fk::ones({2, 2}, {fk::DType::F64})), fk::Error);
  EXPECT_THROW(boundary_ring_cells(2), fk::Error);
}

}  // namespace
