// The Radon kernels' arithmetic (nefi/cuda/radon_cells.h) and the transposed
// matrix they gather through (transpose() in operators/radon.h), run on the
// host: every output element computed as a device thread computes it equals
// the CPU operator's projection and adjoint to the bit, 2-D and 3-D, batched,
// f64 and f32 (the f32 result is that f64 sum rounded once, as the CPU's
// .to(f32) rounds it). The transpose is checked against the dense matrix
// written out from the rows.
#include "nefi/cuda/radon_cells.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <numbers>
#include <string>
#include <vector>

#include "fk/factory.h"
#include "fk/random.h"
#include "nefi/operators/radon.h"

namespace {

std::vector<double> random_values(int64_t n, uint64_t seed) {
  fk::Generator g(seed);
  return fk::randn({n}, {fk::DType::F64}, &g).to_vector<double>();
}

// The gather kernel: one loop iteration per thread.
template <typename T>
std::vector<T> gather_by_cells(const nefi::SparseRows& m, const nefi::cuda::GatherGeometry& g,
                               const std::vector<T>& src) {
  std::vector<T> out(static_cast<size_t>(g.out_numel()));
  for (int64_t k = 0; k < g.out_numel(); ++k)
    out[k] = static_cast<T>(nefi::cuda::gathered_value(g, m.row_start.data(), m.col.data(),
                                                       m.weight.data(), src.data(), k));
  return out;
}

std::vector<double> dense(const nefi::SparseRows& m) {
  std::vector<double> d(static_cast<size_t>(m.n_rows() * m.n_cols), 0.0);
  for (int64_t r = 0; r < m.n_rows(); ++r)
    for (int64_t e = m.row_start[r]; e < m.row_start[r + 1]; ++e)
      d[r * m.n_cols + m.col[e]] += m.weight[e];
  return d;
}

struct Case {
  std::vector<int64_t> shape;
  nefi::RadonGeometry geometry;
};

const std::vector<Case> kCases = {
    {{9, 9}, {5, std::numbers::pi, 1, 1}},
    {{8, 8}, {4, 2.0, 2, 3}},
    {{7, 7, 3}, {6, std::numbers::pi, 1, 2}},
    {{6, 6, 4}, {3, 1.3, 3, 1}},
};

nefi::Domain domain_of(const Case& c) {
  std::vector<double> extent(c.shape.size(), 1.5);
  return nefi::Domain(fk::Dims(c.shape), extent);
}

TEST(NefiRadonCells, GatherIsTheCpuProjectionAndAdjointToTheBit) {
  constexpr int64_t kBatch = 2;
  for (const Case& c : kCases) {
    const nefi::RadonOperator op(domain_of(c), c.geometry);
    SCOPED_TRACE(op.fidelity_tag() + " " + op.domain().shape().str());
    const int64_t pixels = c.shape[0] * c.shape[1], rays = c.geometry.n_views * op.n_det();
    const int64_t nz = op.n_slices();
    const std::vector<double> x = random_values(kBatch * pixels * nz, 1);
    const std::vector<double> y = random_values(kBatch * rays * nz, 2);

    const nefi::cuda::GatherGeometry fwd{kBatch, rays, pixels, nz};
    const nefi::cuda::GatherGeometry adj{kBatch, pixels, rays, nz};
    const nefi::SparseRows t = nefi::transpose(op.matrix());
    EXPECT_EQ(gather_by_cells(op.matrix(), fwd, x), op.project(x, kBatch));
    EXPECT_EQ(gather_by_cells(t, adj, y), op.adjoint(y, kBatch));

    // f32 operands: the f32 values widened, summed in f64, rounded once.
    const std::vector<float> xf(x.begin(), x.end()), yf(y.begin(), y.end());
    const std::vector<double> xw(xf.begin(), xf.end()), yw(yf.begin(), yf.end());
    const std::vector<double> pw = op.project(xw, kBatch), aw = op.adjoint(yw, kBatch);
    EXPECT_EQ(gather_by_cells(op.matrix(), fwd, xf), std::vector<float>(pw.begin(), pw.end()));
    EXPECT_EQ(gather_by_cells(t, adj, yf), std::vector<float>(aw.begin(), aw.end()));
  }
}

TEST(NefiRadonCells, TransposeIsTheDenseTranspose) {
  for (const Case& c : kCases) {
    const nefi::RadonOperator op(domain_of(c), c.geometry);
    const nefi::SparseRows& m = op.matrix();
    const nefi::SparseRows t = nefi::transpose(m);
    ASSERT_EQ(t.n_rows(), m.n_cols);
    ASSERT_EQ(t.n_cols, m.n_rows());
    ASSERT_EQ(t.col.size(), m.col.size());
    const std::vector<double> a = dense(m), at = dense(t);
    for (int64_t r = 0; r < m.n_rows(); ++r)
      for (int64_t p = 0; p < m.n_cols; ++p)
        ASSERT_EQ(at[p * m.n_rows() + r], a[r * m.n_cols + p]) << "row " << r << " pixel " << p;
    // Each transposed row lists its source rows in ascending order.
    for (int64_t p = 0; p < t.n_rows(); ++p)
      for (int64_t e = t.row_start[p] + 1; e < t.row_start[p + 1]; ++e)
        ASSERT_LE(t.col[e - 1], t.col[e]) << "pixel " << p;
  }
}

// A small matrix written out by hand: two rows over three columns, column 1
// used twice by row 0 (as two samples of one ray can share a pixel).
TEST(NefiRadonCells, TransposeKeepsRepeatedEntriesInOrder) {
  nefi::SparseRows m;
  m.n_cols = 3;
  m.row_start = {0, 3, 5};
  m.col = {1, 0, 1, 2, 1};
  m.weight = {0.5, 2.0, 0.25, 3.0, 4.0};
  const nefi::SparseRows t = nefi::transpose(m);
  EXPECT_EQ(t.n_cols, 2);
  EXPECT_EQ(t.row_start, (std::vector<int64_t>{0, 1, 4, 5}));
  EXPECT_EQ(t.col, (std::vector<int32_t>{0, 0, 0, 1, 1}));
  EXPECT_EQ(t.weight, (std::vector<double>{2.0, 0.5, 0.25, 4.0, 3.0}));
}

}  // namespace
