// spmm.cu's kernels run on the emulated device (emulated_device.h): the
// grouped row products against spmm_forward and spmm_backward's dense
// gradient on the CPU, the per-entry dots against its value gradient, f32 and
// f64, bit for bit (kernels.h: products rounded before their adds, terms in
// the CPU's order), in both thread orders. The lists have duplicate entries
// and rows without entries, and rows x channels that leave the last block
// partial.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cuda_emu/emulated_device.h"
#include "cuda_emu/emulated_test_util.h"
#include "fk/factory.h"
#include "fk/tensor.h"
#include "minkowski/cuda/kernels.h"
#include "minkowski/ops/spmm.h"

// The emulated launchers this file runs: kernels.h's, in ::emu (a signature
// that drifts from its definition fails to link).
namespace minkowski::cuda::emu {
template <typename T>
void launch_csr_rows(const int64_t* begin, const int64_t* entry, const int64_t* src, const T* v,
                     const T* in, int64_t cols, int64_t rows, T* out, void* stream);
template <typename T>
void launch_row_dots(const int64_t* a_row, const int64_t* b_row, const T* a, const T* b,
                     int64_t cols, int64_t n, T* out, void* stream);
}  // namespace minkowski::cuda::emu

namespace mc = minkowski::cuda;

using fkemu_test::expect_same_bits;
using fkemu_test::in_both_orders;
using fkemu_test::order_name;
using fkemu_test::random_values;

namespace {

template <typename T>
fk::Tensor tensor_of(const std::vector<T>& v, fk::Dims shape) {
  return fk::from_vector(v, shape);
}

// A coordinate list of nnz entries in an m x k matrix: about a fifth repeat
// an earlier entry's (row, column), and rows past m / 2 + 1 skip every
// other one (so some rows have no entries).
struct Coo {
  int64_t m = 0, k = 0;
  std::vector<int64_t> rows, cols;
};
Coo random_coo(int64_t m, int64_t k, int64_t nnz, std::mt19937& rng) {
  Coo a{m, k, {}, {}};
  while (static_cast<int64_t>(a.rows.size()) < nnz) {
    const size_t have = a.rows.size();
    if (have > 0 && rng() % 5 == 0) {
      const size_t e = rng() % have;
      a.rows.push_back(a.rows[e]);
      a.cols.push_back(a.cols[e]);
      continue;
    }
    const int64_t r = static_cast<int64_t>(rng() % static_cast<uint64_t>(m));
    if (r > m / 2 + 1 && r % 2 == 1) continue;
    a.rows.push_back(r);
    a.cols.push_back(static_cast<int64_t>(rng() % static_cast<uint64_t>(k)));
  }
  return a;
}

// What launch_csr_rows reads for out = A in with A's entries keyed by `to`
// and reading input rows `from`: the entries grouped by key, stably (begin,
// entry), and each grouped entry's input row (src).
struct Grouped {
  std::vector<int64_t> begin, entry, src;
};
Grouped group(const std::vector<int64_t>& to, const std::vector<int64_t>& from, int64_t keys) {
  Grouped g;
  g.begin.assign(static_cast<size_t>(keys + 1), 0);
  for (int64_t r : to) ++g.begin[static_cast<size_t>(r + 1)];
  for (size_t r = 0; r < static_cast<size_t>(keys); ++r) g.begin[r + 1] += g.begin[r];
  for (int64_t r = 0; r < keys; ++r)
    for (size_t p = 0; p < to.size(); ++p)
      if (to[p] == r) g.entry.push_back(static_cast<int64_t>(p));
  for (int64_t p : g.entry) g.src.push_back(from[static_cast<size_t>(p)]);
  return g;
}

// launch_csr_rows over `g` (rows out_rows, channels c), every output
// poisoned first so that an unwritten one shows.
template <typename T>
std::vector<T> csr_rows(const Grouped& g, const std::vector<T>& values, const std::vector<T>& in,
                        int64_t c, int64_t out_rows) {
  std::vector<T> out(static_cast<size_t>(out_rows * c), static_cast<T>(NAN));
  mc::emu::launch_csr_rows<T>(g.begin.data(), g.entry.data(), g.src.data(), values.data(),
                              in.data(), c, out_rows, out.data(), nullptr);
  return out;
}

template <typename T>
void check_products(int64_t m, int64_t k, int64_t nnz, int64_t c, uint32_t seed) {
  std::mt19937 rng(seed);
  const Coo a = random_coo(m, k, nnz, rng);
  const std::vector<T> values = random_values<T>(nnz, -1, 1, rng),
                       dense = random_values<T>(k * c, -1, 1, rng),
                       grad = random_values<T>(m * c, -1, 1, rng);
  const minkowski::CooList list = minkowski::coo_list(a.rows, a.cols, {m, k});
  const fk::Tensor v = tensor_of(values, {nnz}), d = tensor_of(dense, {k, c});
  const std::vector<T> want_out = minkowski::spmm_forward(list, v, d).template to_vector<T>();
  const minkowski::SpmmGrads want =
      minkowski::spmm_backward(tensor_of(grad, {m, c}), list, v, d, true, true);
  const std::vector<T> want_dense = want.dense.template to_vector<T>();
  const std::vector<T> want_values = want.values.template to_vector<T>();
  const Grouped by_row = group(a.rows, a.cols, m), by_col = group(a.cols, a.rows, k);
  const std::string what = std::to_string(m) + " x " + std::to_string(k) + ", " +
                           std::to_string(nnz) + " entries, " + std::to_string(c) + " channels";
  in_both_orders([&](fkemu::Order order) {
    const std::string when = what + " (" + order_name(order) + ")";
    expect_same_bits(csr_rows(by_row, values, dense, c, m), want_out, c, "A dense, " + when);
    expect_same_bits(csr_rows(by_col, values, grad, c, k), want_dense, c, "A^T grad, " + when);
    std::vector<T> dots(static_cast<size_t>(nnz), static_cast<T>(NAN));
    mc::emu::launch_row_dots<T>(a.rows.data(), a.cols.data(), grad.data(), dense.data(), c, nnz,
                                dots.data(), nullptr);
    expect_same_bits(dots, want_values, 1, "value gradient, " + when);
  });
}

TEST(EmulatedSpmm, RowProductsAndDotsAreTheCpusBitForBit) {
  check_products<float>(97, 60, 400, 7, 1);  // 679 row threads: the third block partial
  check_products<double>(97, 60, 400, 7, 2);
  check_products<float>(300, 40, 900, 1, 3);  // one channel; 900 dot threads
  check_products<double>(20, 333, 260, 3, 4);
}

TEST(EmulatedSpmm, AnEmptyListGivesZeroRows) {
  in_both_orders([&](fkemu::Order order) {
    const Grouped none = group({}, {}, 5);
    const std::vector<double> in(12, 1.0);
    EXPECT_EQ(csr_rows(none, std::vector<double>{}, in, 3, 5), std::vector<double>(15, 0.0))
        << order_name(order);
  });
}

TEST(EmulatedSpmm, DotsOverNoChannelsAreZero) {
  const std::vector<int64_t> rows{0, 1, 1}, cols{2, 0, 1};
  const std::vector<double> unread(1, NAN);  // no channel of a or b is read
  std::vector<double> dots(3, NAN);
  mc::emu::launch_row_dots<double>(rows.data(), cols.data(), unread.data(), unread.data(), 0, 3,
                                   dots.data(), nullptr);
  EXPECT_EQ(dots, std::vector<double>(3, 0.0));
}

}  // namespace
