// radon.cu's sparse-row gather runs on the emulated device
// (emulated_device.h): as the projection, against RadonOperator::project's
// loop (operators/radon.cpp), and through the transposed matrix as the
// adjoint, against RadonOperator::adjoint's scatter over the original one
// (whose per-pixel order the transpose's ascending rows reproduce). Bit for
// bit (radon_kernels.h: separately rounded products and sums in entry
// order), f32 and f64, batched, 2-D (one slice) and 3-D (z slices), rows
// without entries, in both thread orders.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "cuda_emu/emulated_device.h"
#include "cuda_emu/emulated_test_util.h"
#include "nefi/cuda/radon_kernels.h"

// The emulated launcher this file runs: radon_kernels.h's, in ::emu (a
// signature that drifts from its definition fails to link).
namespace nefi::cuda::emu {
template <typename T>
void launch_sparse_gather(const GatherGeometry& g, const int64_t* row_start, const int32_t* col,
                          const double* weight, const T* src, T* out, void* stream);
}  // namespace nefi::cuda::emu

namespace nc = nefi::cuda;
using fkemu_test::expect_same_bits;
using fkemu_test::in_both_orders;
using fkemu_test::random_values;

namespace {

size_t at(int64_t i) {
  return static_cast<size_t>(i);
}

// A CSR matrix: rows x cols, 0 to 6 entries a row (about one row in eight
// empty), columns in any order and sometimes repeated.
struct Sparse {
  int64_t rows = 0, cols = 0;
  std::vector<int64_t> row_start{0};
  std::vector<int32_t> col;
  std::vector<double> weight;
};

Sparse random_sparse(int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0, 1.5);
  Sparse m;
  m.rows = rows;
  m.cols = cols;
  for (int64_t r = 0; r < rows; ++r) {
    const int entries = rng() % 8 == 0 ? 0 : static_cast<int>(rng() % 6) + 1;
    for (int e = 0; e < entries; ++e) {
      m.col.push_back(static_cast<int32_t>(rng() % cols));
      m.weight.push_back(u(rng));
    }
    m.row_start.push_back(static_cast<int64_t>(m.col.size()));
  }
  return m;
}

// The transpose, each column's entries in ascending row order (a stable
// counting sort, as RadonOperator builds its adjoint matrix).
Sparse transposed(const Sparse& m) {
  Sparse t;
  t.rows = m.cols;
  t.cols = m.rows;
  t.row_start.assign(at(m.cols + 1), 0);
  for (int32_t c : m.col) ++t.row_start[at(c + 1)];
  for (int64_t c = 0; c < m.cols; ++c) t.row_start[at(c + 1)] += t.row_start[at(c)];
  std::vector<int64_t> next(t.row_start.begin(), t.row_start.end() - 1);
  t.col.resize(m.col.size());
  t.weight.resize(m.col.size());
  for (int64_t r = 0; r < m.rows; ++r)
    for (int64_t e = m.row_start[at(r)]; e < m.row_start[at(r + 1)]; ++e) {
      const int64_t p = next[at(m.col[at(e)])]++;
      t.col[at(p)] = static_cast<int32_t>(r);
      t.weight[at(p)] = m.weight[at(e)];
    }
  return t;
}

// RadonOperator::project's loop: y (batch, rows, nz) from x (batch, cols, nz), in f64.
template <typename T>
std::vector<T> project_loop(const Sparse& m, const std::vector<T>& x, int64_t batch, int64_t nz) {
  std::vector<double> y(at(batch * m.rows * nz), 0.0);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t r = 0; r < m.rows; ++r)
      for (int64_t e = m.row_start[at(r)]; e < m.row_start[at(r + 1)]; ++e)
        for (int64_t z = 0; z < nz; ++z)
          y[at((b * m.rows + r) * nz + z)] +=
              m.weight[at(e)] * static_cast<double>(x[at((b * m.cols + m.col[at(e)]) * nz + z)]);
  return std::vector<T>(y.begin(), y.end());
}

// RadonOperator::adjoint's loop: x (batch, cols, nz) scattered from y (batch, rows, nz).
template <typename T>
std::vector<T> adjoint_loop(const Sparse& m, const std::vector<T>& y, int64_t batch, int64_t nz) {
  std::vector<double> x(at(batch * m.cols * nz), 0.0);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t r = 0; r < m.rows; ++r)
      for (int64_t e = m.row_start[at(r)]; e < m.row_start[at(r + 1)]; ++e)
        for (int64_t z = 0; z < nz; ++z)
          x[at((b * m.cols + m.col[at(e)]) * nz + z)] +=
              m.weight[at(e)] * static_cast<double>(y[at((b * m.rows + r) * nz + z)]);
  return std::vector<T>(x.begin(), x.end());
}

template <typename T>
void check_gather(int64_t batch, int64_t rows, int64_t cols, int64_t nz) {
  SCOPED_TRACE(std::to_string(batch) + " x " + std::to_string(rows) + " rows over " +
               std::to_string(cols) + " x " + std::to_string(nz));
  const Sparse m = random_sparse(rows, cols, static_cast<uint32_t>(rows + cols + nz));
  const Sparse t = transposed(m);
  const std::vector<T> image = random_values<T>(batch * cols * nz, 1);
  const std::vector<T> sinogram = random_values<T>(batch * rows * nz, 2);
  const std::vector<T> want_y = project_loop(m, image, batch, nz);
  const std::vector<T> want_x = adjoint_loop(m, sinogram, batch, nz);
  in_both_orders([&](fkemu::Order) {
    std::vector<T> y(want_y.size(), T(-7)), x(want_x.size(), T(-7));
    nc::emu::launch_sparse_gather<T>({batch, rows, cols, nz}, m.row_start.data(), m.col.data(),
                                     m.weight.data(), image.data(), y.data(), nullptr);
    expect_same_bits(y, want_y, "projection");
    nc::emu::launch_sparse_gather<T>({batch, cols, rows, nz}, t.row_start.data(), t.col.data(),
                                     t.weight.data(), sinogram.data(), x.data(), nullptr);
    expect_same_bits(x, want_x, "adjoint");
  });
}

TEST(EmulatedRadon, GatherEqualsTheCpuLoopsF64) {
  check_gather<double>(2, 150, 90, 1);  // 300 outputs: two blocks, the second partial
  check_gather<double>(1, 40, 25, 7);   // 3-D: seven z slices
}

TEST(EmulatedRadon, GatherEqualsTheCpuLoopsF32) {
  check_gather<float>(3, 61, 48, 1);
  check_gather<float>(2, 33, 20, 5);
}

TEST(EmulatedRadon, GatherOfEmptyRowsIsZero) {
  // Three rows, none with entries: zeros, nothing read.
  const std::vector<int64_t> row_start{0, 0, 0, 0};
  std::vector<double> out(6, -1.0);
  nc::emu::launch_sparse_gather<double>({2, 3, 5, 1}, row_start.data(), nullptr, nullptr, nullptr,
                                        out.data(), nullptr);
  EXPECT_EQ(out, std::vector<double>(6, 0.0));
}

}  // namespace
