// The Born/Rytov device formulation (nefi/cuda/scattering_cells.h: the
// per-element passes of the kernels around the complex GEMM) run on the host
// with fk::gemm in place of cuBLAS: the forward and the adjoint equal the CPU
// operator's project / adjoint (operators/scattering.cpp) to 1e-14 in f64,
// batched, Born and Rytov, with and without the quarter-turn Green's table;
// f32 inputs give the f64 result rounded once; and the composed passes pass
// the adjoint dot test on their own.
#include "nefi/cuda/scattering_cells.h"

#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <string>
#include <vector>

#include "fk/blas.h"
#include "fk/factory.h"
#include "fk/random.h"
#include "fk/test_util.h"
#include "nefi/operators/scattering.h"

namespace {

using fk::test::max_abs;

using nefi::cuda::ScatteringDims;

const double* interleaved(const std::vector<std::complex<double>>& v) {
  return reinterpret_cast<const double*>(v.data());
}

std::vector<double> random_values(int64_t n, uint64_t seed) {
  fk::Generator g(seed);
  return fk::randn({n}, {fk::DType::F64}, &g).to_vector<double>();
}

ScatteringDims dims_of(const nefi::BornOperator& op, int64_t batch) {
  return {batch, op.geometry().n_angles, op.domain().numel(), op.geometry().n_receivers,
          op.geometry().rytov};
}

// The device forward: modulate kernel, zgemm, receive kernel, one loop
// iteration per thread.
template <typename T>
std::vector<T> forward_by_cells(const nefi::BornOperator& op, const std::vector<T>& x,
                                int64_t batch) {
  const ScatteringDims d = dims_of(op, batch);
  const nefi::ScatteringTables& t = op.tables();
  std::vector<double> q(2 * d.batch * d.views * d.cells), u(2 * d.batch * d.views * d.receivers);
  for (int64_t k = 0; k < d.batch * d.views * d.cells; ++k)
    nefi::cuda::modulated_cell(d, interleaved(t.phase), x.data(), k, q.data());
  fk::gemm(fk::DType::C128, false, true, d.batch * d.views, d.receivers, d.cells, 1.0, q.data(),
           d.cells, interleaved(t.green), d.cells, 0.0, u.data(), d.receivers);
  std::vector<T> out(2 * d.batch * d.views * d.receivers);
  for (int64_t k = 0; k < static_cast<int64_t>(out.size()); ++k)
    out[k] = static_cast<T>(nefi::cuda::received_value(d, u.data(), interleaved(t.rotation), k));
  return out;
}

// The device adjoint: conjugate kernel, zgemm, demodulate kernel.
template <typename T>
std::vector<T> adjoint_by_cells(const nefi::BornOperator& op, const std::vector<T>& data,
                                int64_t batch) {
  const ScatteringDims d = dims_of(op, batch);
  const nefi::ScatteringTables& t = op.tables();
  std::vector<double> c(2 * d.batch * d.views * d.receivers), p(2 * d.batch * d.views * d.cells);
  for (int64_t k = 0; k < d.batch * d.views * d.receivers; ++k)
    nefi::cuda::conjugated_datum(d, data.data(), interleaved(t.rotation), k, c.data());
  fk::gemm(fk::DType::C128, false, false, d.batch * d.views, d.cells, d.receivers, 1.0, c.data(),
           d.receivers, interleaved(t.green), d.cells, 0.0, p.data(), d.cells);
  std::vector<T> out(d.batch * d.cells);
  for (int64_t k = 0; k < d.batch * d.cells; ++k)
    out[k] = static_cast<T>(nefi::cuda::demodulated_cell(d, interleaved(t.phase), p.data(), k));
  return out;
}

void expect_close(const std::vector<double>& got, const std::vector<double>& want,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  const double tol = 1e-14 * max_abs(want);
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], tol) << what << " at " << i;
}

struct Case {
  int64_t n;
  nefi::ScatteringGeometry geometry;
};

// R = 7 evaluates every receiver; R = 8 the quarter ring and its rotations.
const std::vector<Case> kCases = {
    {6, {1.0, 1.0, 5, 7, 2.0, false}},
    {6, {1.0, 1.0, 5, 7, 2.0, true}},
    {5, {0.7, 1.3, 3, 8, 2.5, false}},
    {5, {0.7, 1.3, 3, 8, 2.5, true}},
};

nefi::BornOperator op_for(const Case& c) {
  return nefi::BornOperator(nefi::Domain({c.n, c.n}, {2.0, 2.0}), c.geometry);
}

TEST(NefiScatteringCells, ForwardAndAdjointEqualTheCpuOperatorInF64) {
  const int64_t batch = 3;
  for (const Case& c : kCases) {
    const nefi::BornOperator op = op_for(c);
    SCOPED_TRACE(op.fidelity_tag() + " R=" + std::to_string(c.geometry.n_receivers));
    const auto x = random_values(batch * op.domain().numel(), 1);
    const auto g = random_values(batch * 2 * c.geometry.n_angles * c.geometry.n_receivers, 2);
    expect_close(forward_by_cells(op, x, batch), op.project(x, batch), "forward");
    expect_close(adjoint_by_cells(op, g, batch), op.adjoint(g, batch), "adjoint");
  }
}

TEST(NefiScatteringCells, F32InputsGiveTheF64ResultRoundedOnce) {
  const int64_t batch = 2;
  for (const Case& c : kCases) {
    const nefi::BornOperator op = op_for(c);
    SCOPED_TRACE(op.fidelity_tag());
    std::vector<float> xf, gf;
    for (double v : random_values(batch * op.domain().numel(), 3))
      xf.push_back(static_cast<float>(v));
    for (double v : random_values(batch * 2 * c.geometry.n_angles * c.geometry.n_receivers, 4))
      gf.push_back(static_cast<float>(v));
    const auto y = forward_by_cells(op, xf, batch);
    const auto want_y = op.project(std::vector<double>(xf.begin(), xf.end()), batch);
    for (size_t i = 0; i < y.size(); ++i) ASSERT_FLOAT_EQ(y[i], static_cast<float>(want_y[i])) << i;
    const auto a = adjoint_by_cells(op, gf, batch);
    const auto want_a = op.adjoint(std::vector<double>(gf.begin(), gf.end()), batch);
    for (size_t i = 0; i < a.size(); ++i) ASSERT_FLOAT_EQ(a[i], static_cast<float>(want_a[i])) << i;
  }
}

// <A x, y> = <x, A^T y> with both sides from the device formulation alone.
TEST(NefiScatteringCells, ThePassesAreAnExactAdjointPair) {
  const int64_t batch = 2;
  for (const Case& c : kCases) {
    const nefi::BornOperator op = op_for(c);
    const auto x = random_values(batch * op.domain().numel(), 5);
    const auto y = random_values(batch * 2 * c.geometry.n_angles * c.geometry.n_receivers, 6);
    const auto ax = forward_by_cells(op, x, batch), aty = adjoint_by_cells(op, y, batch);
    double lhs = 0, rhs = 0;
    for (size_t i = 0; i < y.size(); ++i) lhs += ax[i] * y[i];
    for (size_t i = 0; i < x.size(); ++i) rhs += x[i] * aty[i];
    EXPECT_NEAR(lhs, rhs, 1e-13 * (1 + std::abs(lhs))) << op.fidelity_tag();
  }
}

}  // namespace
