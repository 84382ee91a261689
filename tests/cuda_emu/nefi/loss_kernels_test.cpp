// loss_kernels.cu's kernels run on the emulated device (emulated_device.h).
// The value passes document their sum order (loss_kernels.h: a fixed strided
// walk per thread, a halving tree per block of 256, one block per row over
// the partials, all f64), so their partials and row sums are checked bit for
// bit against a host loop in that order, and loosely against a plain sum;
// the gradient, row-value and stencil passes bit for bit against host loops
// (the cell arithmetic is loss_cells.h's, itself checked against the CPU
// losses in tests/nefi/losses/loss_cells_test.cpp). Every pass in both thread
// orders, f32 and f64, rows of cells not a multiple of the block.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "cuda_emu/emulated_device.h"
#include "cuda_emu/emulated_test_util.h"
#include "nefi/cuda/loss_cells.h"
#include "nefi/cuda/loss_kernels.h"

// The emulated launchers this file runs: loss_kernels.h's, in ::emu (a
// signature that drifts from its definition fails to link).
namespace nefi::cuda::emu {
int64_t loss_sum_blocks(int64_t n);
template <typename T>
void launch_cellwise_sums(CellwiseTerm term, const double* ab, const T* p, const T* y,
                          const T* mask, int64_t rows, int64_t n, double* partials, double* sums,
                          void* stream);
template <typename T>
void launch_cellwise_grad(CellwiseTerm term, const double* ab, const T* p, const T* y,
                          const T* mask, int64_t rows, int64_t n, const double* coef,
                          const double* bias, T* out, void* stream);
template <typename T>
void launch_row_values(const double* sums, int64_t rows, const RowDenominator& den, T* value,
                       double* inv_den, void* stream);
void launch_normalized_constants(const double* p_sums, const double* y_sums, double* c,
                                 void* stream);
void launch_normalized_bias_factor(const double* c, const double* rp, double* factor, void* stream);
template <typename T>
void launch_tv_sums(const T* x, int64_t rows, const StencilGrid& g, bool isotropic, double eps,
                    double* partials, double* sums, void* stream);
template <typename T>
void launch_tv_grad(const T* x, int64_t rows, const StencilGrid& g, bool isotropic, double eps,
                    const double* coef, T* out, void* stream);
template <typename In, typename Out>
void launch_laplacian(const In* x, int64_t rows, const StencilGrid& g, const double* coef, Out* out,
                      void* stream);
}  // namespace nefi::cuda::emu

namespace nc = nefi::cuda;
using fkemu_test::expect_same_bits;
using fkemu_test::in_both_orders;
using fkemu_test::random_values;

namespace {

constexpr int64_t kBlock = 256;
constexpr double kPoison = -12345.0;

size_t at(int64_t i) {
  return static_cast<size_t>(i);
}

// Blocks per row: one per 256 cells (at least one), at most 256.
int64_t blocks_per_row(int64_t n) {
  return std::clamp<int64_t>((n + kBlock - 1) / kBlock, 1, 256);
}

// block_sum2's halving tree over a block's 256 thread sums.
double tree_sum(std::vector<double> v) {
  for (size_t stride = v.size() / 2; stride > 0; stride /= 2)
    for (size_t t = 0; t < stride; ++t) v[t] += v[t + stride];
  return v[0];
}

// One row's pair sums in the kernels' order: partials (blocks x 2) and the
// row's totals. cell(i, a, b) adds cell i's two terms to a and b.
struct RowSums {
  std::vector<double> partials;
  double total[2] = {0, 0};
};
template <typename Cell>
RowSums fixed_order_sums(int64_t n, Cell cell) {
  const int64_t blocks = blocks_per_row(n);
  RowSums out;
  out.partials.resize(at(2 * blocks));
  for (int64_t b = 0; b < blocks; ++b) {
    std::vector<double> a(kBlock, 0.0), c(kBlock, 0.0);
    for (int64_t t = 0; t < kBlock; ++t)
      for (int64_t i = b * kBlock + t; i < n; i += blocks * kBlock) cell(i, a[at(t)], c[at(t)]);
    out.partials[at(2 * b)] = tree_sum(a);
    out.partials[at(2 * b + 1)] = tree_sum(c);
  }
  std::vector<double> a(kBlock, 0.0), c(kBlock, 0.0);
  for (int64_t t = 0; t < kBlock; ++t)
    for (int64_t i = t; i < blocks; i += kBlock) {
      a[at(t)] += out.partials[at(2 * i)];
      c[at(t)] += out.partials[at(2 * i + 1)];
    }
  out.total[0] = tree_sum(a);
  out.total[1] = tree_sum(c);
  return out;
}

// Every cellwise kind with the a, b it is used with.
std::vector<nc::CellwiseTerm> every_term() {
  return {{nc::kCellIdentity, 1, 1},
          {nc::kCellAbs, 1, 1},
          {nc::kCellSquare, 1, 1},
          {nc::kCellRange, -0.5, 0.7},
          {nc::kCellSquaredError, 1.3, 0.8},
          {nc::kCellHuber, 0.6, 1},
          {nc::kCellPoissonNll, 1e-3, 1},
          {nc::kCellLogError, 2, 1},
          {nc::kCellResidualTimesP, 1.1, 0.9}};
}

// rows x n predictions in [-2, 2] with exact zeros and the Range bounds among
// them (the kinks whose derivative is pinned to 0), data in [-0.5, 3], a
// mask of 0, 1 and 0.5.
template <typename T>
struct Cells {
  std::vector<T> p, y, mask;
};
template <typename T>
Cells<T> random_cells(int64_t rows, int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> up(-2, 2), uy(-0.5, 3);
  Cells<T> c;
  for (int64_t i = 0; i < rows * n; ++i) {
    const int pick = static_cast<int>(rng() % 16);
    c.p.push_back(static_cast<T>(pick == 0 ? 0.0 : pick == 1 ? -0.5 : pick == 2 ? 0.7 : up(rng)));
    c.y.push_back(static_cast<T>(pick == 3 ? c.p.back() : uy(rng)));
    c.mask.push_back(static_cast<T>(rng() % 3 == 0 ? 0.0 : rng() % 4 == 0 ? 0.5 : 1.0));
  }
  return c;
}

// A few kinds for the rows of several blocks (every kind runs on the rows
// of one block: a kind changes only each cell's term, not the order).
std::vector<nc::CellwiseTerm> some_terms() {
  return {{nc::kCellSquaredError, 1.3, 0.8}, {nc::kCellHuber, 0.6, 1}, {nc::kCellLogError, 2, 1}};
}

template <typename T>
void check_cellwise_sums(const std::vector<nc::CellwiseTerm>& terms, int64_t rows, int64_t n,
                         bool with_y, bool with_mask, bool ab_on_device) {
  const Cells<T> c = random_cells<T>(rows, n, static_cast<uint32_t>(rows * 7919 + n));
  const T* y = with_y ? c.y.data() : nullptr;
  const T* mask = with_mask ? c.mask.data() : nullptr;
  const int64_t blocks = blocks_per_row(n);
  ASSERT_EQ(nc::emu::loss_sum_blocks(n), blocks);
  for (const nc::CellwiseTerm& term : terms) {
    SCOPED_TRACE("kind " + std::to_string(term.kind));
    std::vector<double> want_partials, want_sums;
    for (int64_t r = 0; r < rows; ++r) {
      const RowSums s = fixed_order_sums(n, [&](int64_t i, double& a, double& b) {
        const int64_t k = r * n + i;
        const double w = mask ? static_cast<double>(mask[k]) : 1.0;
        a += w * nc::cell_value(term, static_cast<double>(c.p[at(k)]),
                                y ? static_cast<double>(y[k]) : 0.0);
        b += w;
      });
      want_partials.insert(want_partials.end(), s.partials.begin(), s.partials.end());
      want_sums.insert(want_sums.end(), {s.total[0], s.total[1]});
    }
    // A device-side a, b replaces the term's own (here nonsense).
    const double ab[2] = {term.a, term.b};
    nc::CellwiseTerm passed = term;
    if (ab_on_device) passed.a = passed.b = 99;
    in_both_orders([&](fkemu::Order) {
      std::vector<double> partials(at(rows * blocks * 2), kPoison), sums(at(2 * rows), kPoison);
      nc::emu::launch_cellwise_sums<T>(passed, ab_on_device ? ab : nullptr, c.p.data(), y, mask,
                                       rows, n, partials.data(), sums.data(), nullptr);
      expect_same_bits(partials, want_partials, "partials");
      expect_same_bits(sums, want_sums, "sums");
    });
  }
}

TEST(EmulatedLossKernels, CellwiseSumsFollowTheFixedOrderF64) {
  // Three blocks a row, the last partial; then one partial block, no mask, ab on device.
  check_cellwise_sums<double>(some_terms(), 3, 700, true, true, false);
  check_cellwise_sums<double>(every_term(), 2, 97, true, false, true);
}

TEST(EmulatedLossKernels, CellwiseSumsFollowTheFixedOrderF32) {
  // A block of one cell at the end; then no data (y unused: 0).
  check_cellwise_sums<float>(some_terms(), 2, 513, true, true, true);
  check_cellwise_sums<float>(every_term(), 4, 31, false, true, false);
}

TEST(EmulatedLossKernels, CellwiseSumsAgreeWithAPlainSum) {
  // Squared error and L1 against the textbook sums (no order: f64 rounding).
  const int64_t rows = 2, n = 1000;
  const Cells<double> c = random_cells<double>(rows, n, 5);
  const int64_t blocks = blocks_per_row(n);
  std::vector<double> partials(at(rows * blocks * 2)), sums(at(2 * rows));
  nc::emu::launch_cellwise_sums<double>({nc::kCellSquaredError, 1, 1}, nullptr, c.p.data(),
                                        c.y.data(), c.mask.data(), rows, n, partials.data(),
                                        sums.data(), nullptr);
  for (int64_t r = 0; r < rows; ++r) {
    double se = 0, w = 0;
    for (int64_t i = r * n; i < (r + 1) * n; ++i) {
      se += c.mask[at(i)] * (c.p[at(i)] - c.y[at(i)]) * (c.p[at(i)] - c.y[at(i)]);
      w += c.mask[at(i)];
    }
    EXPECT_NEAR(sums[at(2 * r)], se, 1e-12 * se);
    EXPECT_EQ(sums[at(2 * r + 1)], w);  // sums of 0, 0.5 and 1: exact
  }
  nc::emu::launch_cellwise_sums<double>({nc::kCellAbs, 1, 1}, nullptr, c.p.data(), nullptr, nullptr,
                                        rows, n, partials.data(), sums.data(), nullptr);
  for (int64_t r = 0; r < rows; ++r) {
    double l1 = 0;
    for (int64_t i = r * n; i < (r + 1) * n; ++i) l1 += std::abs(c.p[at(i)]);
    EXPECT_NEAR(sums[at(2 * r)], l1, 1e-12 * l1);
    EXPECT_EQ(sums[at(2 * r + 1)], static_cast<double>(n));
  }
}

TEST(EmulatedLossKernels, CellwiseSumsOfManyBlocksCapAtTwoHundredFiftySix) {
  // 65,536 + 300 cells: 256 blocks, the first 300 threads of the grid walk two cells. One
  // thread order only (65,536 threads a launch: the slowest test otherwise); the tests above
  // run the same kernels' barriers in both.
  const int64_t n = 256 * 256 + 300;
  ASSERT_EQ(nc::emu::loss_sum_blocks(n), 256);
  std::vector<float> p(at(n));
  std::mt19937 rng(6);
  std::uniform_real_distribution<float> u(-1, 1);
  for (float& v : p) v = u(rng);
  const nc::CellwiseTerm term{nc::kCellSquare, 1, 1};
  const RowSums want = fixed_order_sums(n, [&](int64_t i, double& a, double& b) {
    a += 1.0 * nc::cell_value(term, static_cast<double>(p[at(i)]), 0.0);
    b += 1.0;
  });
  fkemu::set_order(fkemu::Order::kDescending);
  {
    std::vector<double> partials(2 * 256, kPoison), sums(2, kPoison);
    nc::emu::launch_cellwise_sums<float>(term, nullptr, p.data(), nullptr, nullptr, 1, n,
                                         partials.data(), sums.data(), nullptr);
    expect_same_bits(partials, want.partials, "partials");
    expect_same_bits(sums, std::vector<double>{want.total[0], want.total[1]}, "sums");
  }
  fkemu::set_order(fkemu::starting_order());
}

TEST(EmulatedLossKernels, CellwiseSumsOfEmptyRowsAndNoRows) {
  // Rows of no cells: one block each, sums 0. No rows: nothing launched, nothing written.
  std::vector<double> partials(6, kPoison), sums(6, kPoison);
  nc::emu::launch_cellwise_sums<float>({}, nullptr, nullptr, nullptr, nullptr, 3, 0,
                                       partials.data(), sums.data(), nullptr);
  EXPECT_EQ(sums, std::vector<double>(6, 0.0));
  std::vector<double> untouched(4, kPoison);
  nc::emu::launch_cellwise_sums<double>({}, nullptr, nullptr, nullptr, nullptr, 0, 10,
                                        untouched.data(), untouched.data(), nullptr);
  EXPECT_EQ(untouched, std::vector<double>(4, kPoison));
}

template <typename T>
void check_cellwise_grad(int64_t rows, int64_t n, bool with_y, bool with_mask, bool with_bias,
                         bool ab_on_device) {
  const Cells<T> c = random_cells<T>(rows, n, static_cast<uint32_t>(rows * 31 + n));
  const T* y = with_y ? c.y.data() : nullptr;
  const T* mask = with_mask ? c.mask.data() : nullptr;
  std::vector<double> coef;
  for (int64_t r = 0; r < rows; ++r) coef.push_back(0.75 - 0.3 * static_cast<double>(r));
  const double bias[1] = {-0.125};
  for (const nc::CellwiseTerm& term : every_term()) {
    SCOPED_TRACE("kind " + std::to_string(term.kind));
    std::vector<T> want(at(rows * n));
    for (int64_t k = 0; k < rows * n; ++k) {
      const double w = mask ? static_cast<double>(mask[k]) : 1.0;
      const double d = nc::cell_derivative(term, static_cast<double>(c.p[at(k)]),
                                           y ? static_cast<double>(y[k]) : 0.0);
      want[at(k)] = static_cast<T>(w * (coef[at(k / n)] * d + (with_bias ? bias[0] : 0.0)));
    }
    const double ab[2] = {term.a, term.b};
    nc::CellwiseTerm passed = term;
    if (ab_on_device) passed.a = passed.b = 99;
    in_both_orders([&](fkemu::Order) {
      std::vector<T> got(at(rows * n), static_cast<T>(kPoison));
      nc::emu::launch_cellwise_grad<T>(passed, ab_on_device ? ab : nullptr, c.p.data(), y, mask,
                                       rows, n, coef.data(), with_bias ? bias : nullptr, got.data(),
                                       nullptr);
      expect_same_bits(got, want, "gradient");
    });
  }
}

TEST(EmulatedLossKernels, CellwiseGradientPerCell) {
  check_cellwise_grad<double>(3, 190, true, true, true, false);  // rows straddle blocks
  check_cellwise_grad<double>(1, 300, true, false, false, true);
  check_cellwise_grad<float>(2, 333, true, true, false, true);
  check_cellwise_grad<float>(5, 17, false, false, true, false);
}

TEST(EmulatedLossKernels, CellwiseGradientPinsKinksToZero) {
  // |p|' at 0, Range's relu' at its bounds, LogError at p <= 0: 0 (fk's backward).
  const std::vector<double> p{0.0, -0.5, 0.7, -1.0, 0.0};
  const std::vector<double> y{1.0, 1.0, 1.0, 1.0, 0.0};
  const double coef[1] = {1.0};
  std::vector<double> got(5);
  nc::emu::launch_cellwise_grad<double>({nc::kCellAbs, 1, 1}, nullptr, p.data(), y.data(), nullptr,
                                        1, 5, coef, nullptr, got.data(), nullptr);
  EXPECT_EQ(got, (std::vector<double>{0, -1, 1, -1, 0}));
  nc::emu::launch_cellwise_grad<double>({nc::kCellRange, -0.5, 0.7}, nullptr, p.data(), y.data(),
                                        nullptr, 1, 5, coef, nullptr, got.data(), nullptr);
  EXPECT_EQ(got, (std::vector<double>{0, 0, 0, -1, 0}));
  nc::emu::launch_cellwise_grad<double>({nc::kCellLogError, 2, 1}, nullptr, p.data(), y.data(),
                                        nullptr, 1, 5, coef, nullptr, got.data(), nullptr);
  EXPECT_EQ(got[0], 0.0);
  EXPECT_EQ(got[3], 0.0);
  EXPECT_NE(got[2], 0.0);
}

template <typename T>
void check_row_values() {
  // 300 rows: two blocks, the second partial. Every denominator source.
  const int64_t rows = 300;
  std::vector<double> sums(at(2 * rows)), values(at(3 * rows)), scale(at(rows));
  for (int64_t r = 0; r < rows; ++r) {
    sums[at(2 * r)] = std::sin(0.1 * static_cast<double>(r)) * 10;
    sums[at(2 * r + 1)] = r % 50 == 7 ? 0.0 : static_cast<double>(r % 13 + 1);
    values[at(3 * r)] = 0.5 + static_cast<double>(r);
    scale[at(r)] = 1.0 / (1 + static_cast<double>(r % 5));
  }
  struct Case {
    const char* name;
    nc::RowDenominator den;
  };
  const Case cases[] = {{"values, stride 3", {values.data(), 3, 0, nullptr, 1}},
                        {"constant", {nullptr, 1, 4.5, nullptr, 1}},
                        {"weight sum times scale", {nullptr, 1, 0, nullptr, 2.5}},
                        {"weight sum times row scale", {nullptr, 1, 0, scale.data(), 2.5}}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<T> want(at(rows));
    std::vector<double> want_inv(at(rows));
    for (int64_t r = 0; r < rows; ++r) {
      const nc::RowDenominator& d = c.den;
      const double den = d.values ? d.values[r * d.stride]
                         : d.constant > 0
                             ? d.constant
                             : sums[at(2 * r + 1)] * (d.row_scale ? d.row_scale[r] : d.scale);
      want[at(r)] = static_cast<T>(sums[at(2 * r)] / den);
      want_inv[at(r)] = 1.0 / den;
    }
    in_both_orders([&](fkemu::Order) {
      std::vector<T> got(at(rows), static_cast<T>(kPoison));
      std::vector<double> inv(at(rows), kPoison);
      nc::emu::launch_row_values<T>(sums.data(), rows, c.den, got.data(), inv.data(), nullptr);
      expect_same_bits(got, want, "value");
      expect_same_bits(inv, want_inv, "1 / denominator");
      nc::emu::launch_row_values<T>(sums.data(), rows, c.den, got.data(), nullptr, nullptr);
      expect_same_bits(got, want, "value without 1 / denominator");
    });
  }
}

TEST(EmulatedLossKernels, RowValuesF64) {
  check_row_values<double>();
}

TEST(EmulatedLossKernels, RowValuesF32) {
  check_row_values<float>();
}

TEST(EmulatedLossKernels, RowValuesOfAZeroWeightSumAreNotFinite) {
  const std::vector<double> sums{1.0, 0.0, 0.0, 0.0};
  std::vector<float> value(2);
  nc::emu::launch_row_values<float>(sums.data(), 2, {}, value.data(), nullptr, nullptr);
  EXPECT_TRUE(std::isinf(value[0]));
  EXPECT_TRUE(std::isnan(value[1]));
}

TEST(EmulatedLossKernels, NormalizedConstantsAndBiasFactor) {
  const double ps[2] = {7.5, 3.0}, ys[2] = {4.5, 3.0}, rp[1] = {-0.8};
  double c[4] = {kPoison, kPoison, kPoison, kPoison}, factor[1] = {kPoison};
  nc::emu::launch_normalized_constants(ps, ys, c, nullptr);
  const double mp = 7.5 / 3.0 + 1e-12;
  EXPECT_EQ(c[0], 1 / mp);
  EXPECT_EQ(c[1], 1 / (4.5 / 3.0));
  EXPECT_EQ(c[2], 3.0);
  EXPECT_EQ(c[3], mp);
  nc::emu::launch_normalized_bias_factor(c, rp, factor, nullptr);
  EXPECT_EQ(factor[0], -2 * -0.8 / (3.0 * 3.0 * mp * mp));
}

// A C-order grid of the given shape; TV scales 1 / h, Laplacian 1 / h^2.
nc::StencilGrid grid(std::vector<int64_t> shape, std::vector<bool> periodic,
                     std::vector<double> scale) {
  nc::StencilGrid g;
  g.ndim = static_cast<int>(shape.size());
  int64_t stride = 1;
  for (int a = g.ndim - 1; a >= 0; --a) {
    g.shape[a] = shape[at(a)];
    g.stride[a] = stride;
    g.periodic[a] = periodic[at(a)];
    g.scale[a] = scale[at(a)];
    stride *= shape[at(a)];
  }
  return g;
}

int64_t cells_of(const nc::StencilGrid& g) {
  int64_t n = 1;
  for (int a = 0; a < g.ndim; ++a) n *= g.shape[a];
  return n;
}

// Cell i's coordinates in g, and the cell at coordinates c.
std::vector<int64_t> coords_of(const nc::StencilGrid& g, int64_t i) {
  std::vector<int64_t> c(at(g.ndim));
  for (int a = g.ndim - 1; a >= 0; --a) {
    c[at(a)] = i % g.shape[a];
    i /= g.shape[a];
  }
  return c;
}
int64_t cell_at(const nc::StencilGrid& g, const std::vector<int64_t>& c) {
  int64_t i = 0;
  for (int a = 0; a < g.ndim; ++a) i = i * g.shape[a] + c[at(a)];
  return i;
}

// The forward neighbour of cell i along a from its coordinates (periodic
// axes wrap), or -1: independent of loss_cells.h's stride arithmetic.
int64_t neighbour(const nc::StencilGrid& g, int64_t i, int a) {
  std::vector<int64_t> c = coords_of(g, i);
  if (++c[at(a)] == g.shape[a]) {
    if (!g.periodic[a]) return -1;
    c[at(a)] = 0;
  }
  return cell_at(g, c);
}

// TV of one row and its gradient by scatter (each cell's terms added to the
// two cells they differ): the textbook form the kernel's gather must equal.
template <typename T>
void tv_by_scatter(const T* x, const nc::StencilGrid& g, bool isotropic, double eps, double& value,
                   std::vector<double>& grad) {
  const int64_t n = cells_of(g);
  value = 0;
  grad.assign(at(n), 0.0);
  for (int64_t i = 0; i < n; ++i) {
    std::vector<double> d(at(g.ndim), 0.0);
    double q = 0;
    for (int a = 0; a < g.ndim; ++a) {
      const int64_t j = neighbour(g, i, a);
      if (j >= 0) d[at(a)] = (static_cast<double>(x[j]) - static_cast<double>(x[i])) * g.scale[a];
      q += d[at(a)] * d[at(a)];
    }
    for (int a = 0; a < g.ndim; ++a) {
      const double r =
          isotropic ? std::sqrt(q + eps * eps) : std::sqrt(d[at(a)] * d[at(a)] + eps * eps);
      if (!isotropic) value += r;
      const int64_t j = neighbour(g, i, a);
      if (j < 0) continue;
      grad[at(j)] += d[at(a)] / r * g.scale[a];
      grad[at(i)] -= d[at(a)] / r * g.scale[a];
    }
    if (isotropic) value += std::sqrt(q + eps * eps);
  }
}

template <typename T>
void check_tv(const nc::StencilGrid& g, int64_t rows, bool isotropic) {
  const double eps = 0.05;
  const int64_t n = cells_of(g), blocks = blocks_per_row(n);
  const std::vector<T> x = random_values<T>(rows * n, static_cast<uint32_t>(n + rows));
  std::vector<double> coef;
  for (int64_t r = 0; r < rows; ++r) coef.push_back(1.5 - static_cast<double>(r));
  std::vector<double> want_partials, want_sums;
  std::vector<T> want_grad;
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x.data() + r * n;
    const RowSums s = fixed_order_sums(n, [&](int64_t i, double& a, double& b) {
      a += nc::tv_cell_value(xr, g, i, isotropic, eps * eps);
      b += 0.0;
    });
    want_partials.insert(want_partials.end(), s.partials.begin(), s.partials.end());
    want_sums.insert(want_sums.end(), {s.total[0], s.total[1]});
    for (int64_t i = 0; i < n; ++i)
      want_grad.push_back(
          static_cast<T>(coef[at(r)] * nc::tv_cell_gradient(xr, g, i, isotropic, eps * eps)));
    // The textbook TV and its scattered gradient, to rounding.
    double value = 0;
    std::vector<double> grad;
    tv_by_scatter(xr, g, isotropic, eps, value, grad);
    EXPECT_NEAR(s.total[0], value, 1e-12 * value) << "row " << r;
    double largest = 0;
    for (double v : grad) largest = std::max(largest, std::abs(v));
    for (int64_t i = 0; i < n; ++i)
      ASSERT_NEAR(static_cast<double>(want_grad[at(r * n + i)]), coef[at(r)] * grad[at(i)],
                  (std::is_same_v<T, float> ? 1e-6 : 1e-12) * largest * std::abs(coef[at(r)]))
          << "row " << r << " cell " << i;
  }
  in_both_orders([&](fkemu::Order) {
    std::vector<double> partials(at(rows * blocks * 2), kPoison), sums(at(2 * rows), kPoison);
    nc::emu::launch_tv_sums<T>(x.data(), rows, g, isotropic, eps, partials.data(), sums.data(),
                               nullptr);
    expect_same_bits(partials, want_partials, "TV partials");
    expect_same_bits(sums, want_sums, "TV sums");
    std::vector<T> got(at(rows * n), static_cast<T>(kPoison));
    nc::emu::launch_tv_grad<T>(x.data(), rows, g, isotropic, eps, coef.data(), got.data(), nullptr);
    expect_same_bits(got, want_grad, "TV gradient");
  });
}

TEST(EmulatedLossKernels, TotalVariation2d) {
  const nc::StencilGrid g = grid({13, 21}, {false, true}, {2.0, 0.5});  // 273 cells: two blocks
  check_tv<double>(g, 2, true);
  check_tv<double>(g, 2, false);
  check_tv<float>(g, 3, true);
  check_tv<float>(g, 1, false);
}

TEST(EmulatedLossKernels, TotalVariation3dAnd1d) {
  check_tv<double>(grid({5, 6, 7}, {true, false, true}, {1.0, 3.0, 0.25}), 2, true);
  check_tv<float>(grid({5, 6, 7}, {false, false, false}, {1.0, 1.0, 1.0}), 1, false);
  check_tv<double>(grid({300}, {false}, {4.0}), 2, true);  // 1-D across two blocks
  check_tv<float>(grid({9}, {true}, {1.0}), 1, true);
}

TEST(EmulatedLossKernels, TotalVariationOfNoRowsWritesNothing) {
  std::vector<double> untouched(4, kPoison);
  nc::emu::launch_tv_sums<float>(nullptr, 0, grid({4, 4}, {false, false}, {1, 1}), true, 0.1,
                                 untouched.data(), untouched.data(), nullptr);
  EXPECT_EQ(untouched, std::vector<double>(4, kPoison));
}

// (L x) by nested coordinates: replicated edges (wrapped on periodic axes),
// scale-0 axes skipped.
template <typename In, typename Out>
std::vector<Out> laplacian_by_coordinates(const std::vector<In>& x, int64_t rows,
                                          const nc::StencilGrid& g, const double* coef) {
  const int64_t n = cells_of(g);
  std::vector<Out> out(at(rows * n));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < n; ++i) {
      const In* xr = x.data() + r * n;
      const std::vector<int64_t> c = coords_of(g, i);
      double s = 0;
      for (int a = 0; a < g.ndim; ++a) {
        if (g.scale[a] == 0) continue;
        std::vector<int64_t> lo = c, hi = c;
        const int64_t m = g.shape[a];
        lo[at(a)] = g.periodic[a] ? (c[at(a)] + m - 1) % m : std::max<int64_t>(c[at(a)] - 1, 0);
        hi[at(a)] = g.periodic[a] ? (c[at(a)] + 1) % m : std::min<int64_t>(c[at(a)] + 1, m - 1);
        s += (static_cast<double>(xr[cell_at(g, lo)]) - 2 * static_cast<double>(xr[i]) +
              static_cast<double>(xr[cell_at(g, hi)])) *
             g.scale[a];
      }
      out[at(r * n + i)] = static_cast<Out>(coef ? coef[r] * s : s);
    }
  return out;
}

template <typename In, typename Out>
void check_laplacian(const nc::StencilGrid& g, int64_t rows) {
  const int64_t n = cells_of(g);
  const std::vector<In> x = random_values<In>(rows * n, static_cast<uint32_t>(3 * n + rows));
  std::vector<double> coef;
  for (int64_t r = 0; r < rows; ++r) coef.push_back(0.5 + static_cast<double>(r));
  for (const double* k :
       {static_cast<const double*>(nullptr), static_cast<const double*>(coef.data())}) {
    const std::vector<Out> want = laplacian_by_coordinates<In, Out>(x, rows, g, k);
    in_both_orders([&](fkemu::Order) {
      std::vector<Out> got(at(rows * n), static_cast<Out>(kPoison));
      nc::emu::launch_laplacian<In, Out>(x.data(), rows, g, k, got.data(), nullptr);
      expect_same_bits(got, want, k ? "coef L x" : "L x");
    });
  }
}

TEST(EmulatedLossKernels, LaplacianEveryInstantiation) {
  const nc::StencilGrid g2 = grid({11, 29}, {false, false}, {4.0, 0.25});  // 319 cells
  check_laplacian<float, double>(g2, 2);
  check_laplacian<double, double>(g2, 3);
  check_laplacian<double, float>(g2, 1);
  // 3-D with the middle axis skipped (scale 0), and a 1-D row of one cell.
  check_laplacian<double, double>(grid({4, 5, 6}, {false, false, false}, {1.0, 0.0, 9.0}), 2);
  check_laplacian<float, double>(grid({1}, {false}, {1.0}), 3);
  // Periodic axes wrap (the first, and a two-cell one).
  check_laplacian<double, double>(grid({7, 2, 5}, {true, true, false}, {1.0, 2.0, 0.5}), 2);
}

}  // namespace
