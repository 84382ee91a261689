#pragma once
// Kernel-map pairs as the device holds them, for the minkowski kernels'
// emulated-device tests: random maps and the per-row index (CSR) the
// kernels read.
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

namespace fkemu_test {

// Pairs grouped by offset (offset_begin), each offset's pairs injective on
// both sides (distinct coordinates), output rows ascending within an offset.
struct DevicePairs {
  int64_t n_in = 0, n_out = 0, volume = 0;
  std::vector<int64_t> offset_begin{0};
  std::vector<int32_t> in_rows, out_rows;
};

// About `density` of the first min(n_in, n_out) outputs paired per offset
// (the rest, and any output past n_in, get none).
inline DevicePairs random_pairs(int64_t n_in, int64_t n_out, int64_t volume, double density,
                                uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  DevicePairs m{n_in, n_out, volume, {0}, {}, {}};
  std::vector<int32_t> perm(static_cast<size_t>(n_in));
  for (int64_t k = 0; k < volume; ++k) {
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    for (int64_t j = 0; j < std::min(n_in, n_out); ++j)
      if (u(rng) < density) {
        m.in_rows.push_back(perm[static_cast<size_t>(j)]);
        m.out_rows.push_back(static_cast<int32_t>(j));
      }
    m.offset_begin.push_back(static_cast<int64_t>(m.in_rows.size()));
  }
  return m;
}

// A DeviceKernelMap's by_out or by_in: for each row of `side`, its pairs
// ascending.
struct RowIndex {
  std::vector<int32_t> begin, pair;
};
inline RowIndex row_index(const std::vector<int32_t>& side, int64_t rows) {
  RowIndex x;
  x.begin.assign(static_cast<size_t>(rows + 1), 0);
  for (int32_t r : side) ++x.begin[static_cast<size_t>(r + 1)];
  std::partial_sum(x.begin.begin(), x.begin.end(), x.begin.begin());
  std::vector<int32_t> next(x.begin.begin(), x.begin.end() - 1);
  x.pair.resize(side.size());
  for (size_t p = 0; p < side.size(); ++p)
    x.pair[static_cast<size_t>(next[static_cast<size_t>(side[p])]++)] = static_cast<int32_t>(p);
  return x;
}

}  // namespace fkemu_test
