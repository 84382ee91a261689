// pooling.cu's kernels run on the emulated device (emulated_device.h) and
// are checked bit for bit against the CPU's pooling, as kernels.h promises:
// local pooling forward and backward (minkowski::pool_forward/pool_backward
// on a hand-made kernel map), global pooling's blocked partials and their
// combination (global_pool_forward, group_sum_of_products), its backward
// (global_pool_backward), and the partials over job blocks other than the
// CPU's against a plain loop. Max, Average and Sum; f32 and f64; values
// with many ties (the arg-max keeps the first) and zeros of both signs;
// outputs without pairs, empty groups; both thread orders. Outputs start
// poisoned: every element must be written.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "cuda_emu/emulated_device.h"
#include "cuda_emu/minkowski/device_pairs.h"
#include "fk/factory.h"
#include "fk/tensor.h"
#include "minkowski/coords/kernel_map.h"
#include "minkowski/cuda/kernels.h"
#include "minkowski/ops/global_pooling.h"
#include "minkowski/ops/pooling.h"

// The emulated launchers this file runs: kernels.h's, in ::emu (a signature
// that drifts from its definition fails to link).
namespace minkowski::cuda::emu {
template <typename T>
void launch_pool_forward(int mode, const T* src, int64_t cols, const int32_t* out_begin,
                         const int32_t* out_pair, const int32_t* in_rows, int64_t n_out, T* dst,
                         int32_t* argmax, void* stream);
template <typename T>
void launch_pool_backward(int mode, const T* grad, int64_t cols, const int32_t* in_begin,
                          const int32_t* in_pair, const int32_t* out_rows, const int32_t* out_begin,
                          const int32_t* argmax, int64_t n_in, T* dst, void* stream);
template <typename T>
void launch_group_partials(int mode, const T* a, const T* b, int64_t cols, const int32_t* rows,
                           const int64_t* job_begin, int64_t jobs, T* part, int32_t* part_arg,
                           void* stream);
template <typename T>
void launch_group_combine(int mode, const T* part, const int32_t* part_arg, const int64_t* first,
                          const int64_t* begin, int64_t groups, int64_t cols, T* out,
                          int32_t* argmax, void* stream);
template <typename T>
void launch_group_backward(int mode, const T* grad, int64_t cols, const int32_t* group,
                           const int64_t* begin, const int32_t* argmax, int64_t n, T* dst,
                           void* stream);
}  // namespace minkowski::cuda::emu

namespace mc = minkowski::cuda;
using minkowski::PoolingMode;

using fkemu_test::DevicePairs;
using fkemu_test::random_pairs;
using fkemu_test::row_index;
using fkemu_test::RowIndex;

namespace {

constexpr fkemu::Order kOrders[] = {fkemu::Order::kAscending, fkemu::Order::kDescending};
constexpr PoolingMode kModes[] = {PoolingMode::Max, PoolingMode::Average, PoolingMode::Sum};
constexpr int32_t kArgPoison = 0x5eed;

std::string where(PoolingMode mode, fkemu::Order order) {
  return std::string(minkowski::pooling_mode_name(mode)) + ", " +
         (order == fkemu::Order::kAscending ? "ascending" : "descending") + " order";
}

template <typename T>
uint64_t bits_of(T v) {
  uint64_t b = 0;
  std::memcpy(&b, &v, sizeof(T));
  return b;
}

// n values: uniform in [-1, 1), or (`ties`) drawn from five values, signed
// zeros among them, so maxima tie and the first must win.
template <typename T>
std::vector<T> random_values(int64_t n, bool ties, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  const T few[] = {T(-1), T(-0.0), T(0), T(0.5), T(1)};
  std::vector<T> v(static_cast<size_t>(n));
  for (T& x : v) x = ties ? few[rng() % 5] : static_cast<T>(u(rng));
  return v;
}

template <typename T>
fk::Tensor matrix(const std::vector<T>& v, int64_t cols) {
  return fk::from_vector(v, fk::Dims{static_cast<int64_t>(v.size()) / cols, cols});
}

// Counts the elements where got and the tensor want (contiguous, T or int32)
// differ in their bits, reporting the first few.
template <typename T>
int64_t count_wrong(const std::vector<T>& got, const fk::Tensor& want, int64_t cols,
                    const std::string& what) {
  const fk::Tensor w = want.contiguous();
  EXPECT_EQ(w.numel(), static_cast<int64_t>(got.size())) << what;
  if (w.numel() != static_cast<int64_t>(got.size())) return 1;
  const T* pw = w.data<T>();
  int64_t wrong = 0;
  for (size_t e = 0; e < got.size(); ++e)
    if (bits_of(got[e]) != bits_of(pw[e]) && wrong++ < 5)
      ADD_FAILURE() << what << ": row " << e / static_cast<size_t>(cols) << " channel "
                    << e % static_cast<size_t>(cols) << ": got " << got[e] << ", want " << pw[e];
  return wrong;
}

// --- local pooling -------------------------------------------------------------

void fill_map(const DevicePairs& p, minkowski::KernelMap& m) {
  m.volume = p.volume;
  m.in_size = p.n_in;
  m.out_size = p.n_out;
  m.offset_begin = p.offset_begin;
  m.in_rows.assign(p.in_rows.begin(), p.in_rows.end());
  m.out_rows.assign(p.out_rows.begin(), p.out_rows.end());
}

// Forward and backward of every mode on the emulated device against
// pool_forward and pool_backward on the CPU.
template <typename T>
void check_local_pooling(const DevicePairs& p, int64_t cols, bool ties, uint32_t seed) {
  SCOPED_TRACE(std::to_string(p.n_in) + " -> " + std::to_string(p.n_out) + " rows, " +
               std::to_string(cols) + " channels, " + std::to_string(p.volume) + " offsets" +
               (ties ? ", ties" : ""));
  minkowski::KernelMap map;
  fill_map(p, map);
  const RowIndex by_out = row_index(p.out_rows, p.n_out), by_in = row_index(p.in_rows, p.n_in);
  const std::vector<T> f = random_values<T>(p.n_in * cols, ties, seed);
  const std::vector<T> g = random_values<T>(p.n_out * cols, false, seed + 1);
  const T nan = std::numeric_limits<T>::quiet_NaN();
  for (PoolingMode mode : kModes) {
    const bool max = mode == PoolingMode::Max;
    const minkowski::PoolingResult want = minkowski::pool_forward(matrix(f, cols), map, mode);
    const fk::Tensor want_grad = minkowski::pool_backward(matrix(g, cols), map, mode, want.argmax);
    for (fkemu::Order order : kOrders) {
      fkemu::set_order(order);
      const std::string at = where(mode, order);
      std::vector<T> out(static_cast<size_t>(p.n_out * cols), nan);
      std::vector<int32_t> arg(max ? out.size() : 0, kArgPoison);
      mc::emu::launch_pool_forward<T>(static_cast<int>(mode), f.data(), cols, by_out.begin.data(),
                                      by_out.pair.data(), p.in_rows.data(), p.n_out, out.data(),
                                      max ? arg.data() : nullptr, nullptr);
      EXPECT_EQ(count_wrong(out, want.out, cols, "forward, " + at), 0);
      if (max) {
        EXPECT_EQ(count_wrong(arg, want.argmax, cols, "arg-max, " + at), 0);
      }

      std::vector<T> grad(static_cast<size_t>(p.n_in * cols), nan);
      mc::emu::launch_pool_backward<T>(static_cast<int>(mode), g.data(), cols, by_in.begin.data(),
                                       by_in.pair.data(), p.out_rows.data(), by_out.begin.data(),
                                       max ? arg.data() : nullptr, p.n_in, grad.data(), nullptr);
      EXPECT_EQ(count_wrong(grad, want_grad, cols, "backward, " + at), 0);
    }
  }
  fkemu::set_order(fkemu::starting_order());
}

TEST(EmulatedPooling, LocalPoolingIsTheCpusF32) {
  // 27 offsets over 260 x 5 outputs: 1,300 threads, a partial last block.
  check_local_pooling<float>(random_pairs(300, 260, 27, 0.4, 1), 5, false, 10);
  check_local_pooling<float>(random_pairs(300, 260, 27, 0.4, 2), 3, true, 11);
}

TEST(EmulatedPooling, LocalPoolingIsTheCpusF64) {
  check_local_pooling<double>(random_pairs(250, 200, 8, 0.5, 3), 4, false, 12);
  check_local_pooling<double>(random_pairs(250, 200, 8, 0.5, 4), 2, true, 13);
}

TEST(EmulatedPooling, OutputsWithoutPairsGetZeroAndInputsWithoutPairsNoGradient) {
  // Sparse, and more outputs than inputs: outputs 120 .. 199 have no pair,
  // and at density 0.1 over 4 offsets most inputs have none either.
  const DevicePairs p = random_pairs(120, 200, 4, 0.1, 5);
  check_local_pooling<float>(p, 3, false, 14);
  check_local_pooling<double>(p, 1, true, 15);
}

TEST(EmulatedPooling, LocalPoolingOfNothingTouchesNothing) {
  // No output rows, or no channels: no launch, no pointer read.
  for (PoolingMode mode : kModes) {
    mc::emu::launch_pool_forward<float>(static_cast<int>(mode), nullptr, 4, nullptr, nullptr,
                                        nullptr, 0, nullptr, nullptr, nullptr);
    mc::emu::launch_pool_forward<double>(static_cast<int>(mode), nullptr, 0, nullptr, nullptr,
                                         nullptr, 7, nullptr, nullptr, nullptr);
    mc::emu::launch_pool_backward<float>(static_cast<int>(mode), nullptr, 4, nullptr, nullptr,
                                         nullptr, nullptr, nullptr, 0, nullptr, nullptr);
    mc::emu::launch_pool_backward<double>(static_cast<int>(mode), nullptr, 0, nullptr, nullptr,
                                          nullptr, nullptr, nullptr, 7, nullptr, nullptr);
  }
}

// --- global pooling ------------------------------------------------------------

// Rows labelled by group (sizes[g] rows of group g, shuffled).
minkowski::RowGroups random_groups(const std::vector<int64_t>& sizes, uint32_t seed) {
  std::vector<int32_t> label;
  for (size_t g = 0; g < sizes.size(); ++g) label.insert(label.end(), sizes[g], int32_t(g));
  std::mt19937 rng(seed);
  std::shuffle(label.begin(), label.end(), rng);
  return minkowski::group_by(std::move(label), static_cast<int64_t>(sizes.size()));
}

// The jobs: each group's rows in blocks of `block` (the CPU's kGlobalBlock,
// or any other), as pooling_dispatch.cpp lays them out.
struct Jobs {
  std::vector<int64_t> job_begin, first;
  int64_t count() const { return static_cast<int64_t>(job_begin.size()) - 1; }
};
Jobs jobs_of(const minkowski::RowGroups& rg, int64_t block) {
  Jobs j;
  j.first.resize(static_cast<size_t>(rg.groups + 1));
  for (int64_t g = 0; g < rg.groups; ++g) {
    j.first[static_cast<size_t>(g)] = static_cast<int64_t>(j.job_begin.size());
    for (int64_t p = rg.begin[static_cast<size_t>(g)]; p < rg.begin[static_cast<size_t>(g + 1)];
         p += block)
      j.job_begin.push_back(p);
  }
  j.first[static_cast<size_t>(rg.groups)] = static_cast<int64_t>(j.job_begin.size());
  j.job_begin.push_back(static_cast<int64_t>(rg.rows.size()));
  return j;
}

// The group reduction on the emulated device: partials, then their combination.
template <typename T>
struct Reduced {
  std::vector<T> out;
  std::vector<int32_t> argmax;
};
template <typename T>
Reduced<T> reduce_on_device(PoolingMode mode, const std::vector<T>& a, const std::vector<T>* b,
                            int64_t cols, const minkowski::RowGroups& rg, const Jobs& jobs) {
  const bool max = mode == PoolingMode::Max;
  const T nan = std::numeric_limits<T>::quiet_NaN();
  std::vector<T> part(static_cast<size_t>(jobs.count() * cols), nan);
  std::vector<int32_t> part_arg(max ? part.size() : 0, kArgPoison);
  mc::emu::launch_group_partials<T>(static_cast<int>(mode), a.data(), b ? b->data() : nullptr, cols,
                                    rg.rows.data(), jobs.job_begin.data(), jobs.count(),
                                    part.data(), max ? part_arg.data() : nullptr, nullptr);
  Reduced<T> r{std::vector<T>(static_cast<size_t>(rg.groups * cols), nan),
               std::vector<int32_t>(max ? static_cast<size_t>(rg.groups * cols) : 0, kArgPoison)};
  mc::emu::launch_group_combine<T>(
      static_cast<int>(mode), part.data(), max ? part_arg.data() : nullptr, jobs.first.data(),
      rg.begin.data(), rg.groups, cols, r.out.data(), max ? r.argmax.data() : nullptr, nullptr);
  return r;
}

// Forward and backward of every mode against global_pool_forward and
// global_pool_backward on the CPU, in the CPU's blocks.
template <typename T>
void check_global_pooling(const std::vector<int64_t>& sizes, int64_t cols, bool ties,
                          uint32_t seed) {
  const minkowski::RowGroups rg = random_groups(sizes, seed);
  const Jobs jobs = jobs_of(rg, minkowski::kGlobalBlock);
  const int64_t n = static_cast<int64_t>(rg.rows.size());
  const std::vector<T> f = random_values<T>(n * cols, ties, seed + 1);
  const std::vector<T> g = random_values<T>(rg.groups * cols, false, seed + 2);
  const T nan = std::numeric_limits<T>::quiet_NaN();
  for (PoolingMode mode : kModes) {
    const bool max = mode == PoolingMode::Max;
    const minkowski::GlobalPoolingResult want =
        minkowski::global_pool_forward(matrix(f, cols), rg, mode);
    const fk::Tensor want_grad =
        minkowski::global_pool_backward(matrix(g, cols), rg, mode, want.argmax);
    for (fkemu::Order order : kOrders) {
      fkemu::set_order(order);
      const std::string at = where(mode, order);
      const Reduced<T> got = reduce_on_device<T>(mode, f, nullptr, cols, rg, jobs);
      EXPECT_EQ(count_wrong(got.out, want.out, cols, "forward, " + at), 0);
      if (max) {
        EXPECT_EQ(count_wrong(got.argmax, want.argmax, cols, "arg-max, " + at), 0);
      }

      std::vector<T> grad(static_cast<size_t>(n * cols), nan);
      mc::emu::launch_group_backward<T>(static_cast<int>(mode), g.data(), cols, rg.group.data(),
                                        rg.begin.data(), max ? got.argmax.data() : nullptr, n,
                                        grad.data(), nullptr);
      EXPECT_EQ(count_wrong(grad, want_grad, cols, "backward, " + at), 0);
    }
  }
  fkemu::set_order(fkemu::starting_order());
}

// Group 0 spans three of the CPU's blocks (the last partial), group 1 is
// empty, group 2 a single row.
const std::vector<int64_t> kGroupSizes = {2 * minkowski::kGlobalBlock + 300, 0, 1, 37, 150};

TEST(EmulatedPooling, GlobalPoolingIsTheCpusF32) {
  check_global_pooling<float>(kGroupSizes, 3, false, 20);
  check_global_pooling<float>(kGroupSizes, 2, true, 21);
}

TEST(EmulatedPooling, GlobalPoolingIsTheCpusF64) {
  check_global_pooling<double>(kGroupSizes, 2, false, 22);
  check_global_pooling<double>(kGroupSizes, 1, true, 23);
}

// With b: the sum over each group's rows of a[i] * b[i], against
// group_sum_of_products on the CPU.
template <typename T>
void check_sum_of_products(int64_t cols, uint32_t seed) {
  const minkowski::RowGroups rg = random_groups(kGroupSizes, seed);
  const Jobs jobs = jobs_of(rg, minkowski::kGlobalBlock);
  const int64_t n = static_cast<int64_t>(rg.rows.size());
  const std::vector<T> a = random_values<T>(n * cols, false, seed + 1);
  const std::vector<T> b = random_values<T>(n * cols, false, seed + 2);
  const fk::Tensor want = minkowski::group_sum_of_products(matrix(a, cols), matrix(b, cols), rg);
  for (fkemu::Order order : kOrders) {
    fkemu::set_order(order);
    const Reduced<T> got = reduce_on_device<T>(PoolingMode::Sum, a, &b, cols, rg, jobs);
    EXPECT_EQ(
        count_wrong(got.out, want, cols, "sum of products, " + where(PoolingMode::Sum, order)), 0);
  }
  fkemu::set_order(fkemu::starting_order());
}

TEST(EmulatedPooling, GroupSumOfProductsIsTheCpus) {
  check_sum_of_products<float>(3, 30);
  check_sum_of_products<double>(2, 31);
}

// The partials and their combination in blocks other than the CPU's (many
// jobs a group, one-row jobs), against a plain loop over the documented
// order: each job's rows in order, then the jobs in order.
template <typename T>
void check_blocks(int64_t block, int64_t cols, bool ties, uint32_t seed) {
  SCOPED_TRACE("blocks of " + std::to_string(block) + (ties ? ", ties" : ""));
  const minkowski::RowGroups rg = random_groups({40, 0, 1, 7, 23, 5}, seed);
  const Jobs jobs = jobs_of(rg, block);
  const int64_t n = static_cast<int64_t>(rg.rows.size());
  const std::vector<T> a = random_values<T>(n * cols, ties, seed + 1);
  const std::vector<T> b = random_values<T>(n * cols, false, seed + 2);
  for (PoolingMode mode : kModes)
    for (bool product : {false, true}) {
      if (product && mode != PoolingMode::Sum) continue;
      auto term = [&](int64_t i, int64_t c) {
        const size_t e = static_cast<size_t>(i * cols + c);
        // Rounded on its own, as the kernel's mul_rn: never contracted into the add.
        const volatile T ab = a[e] * b[e];
        return product ? T(ab) : a[e];
      };
      std::vector<T> want(static_cast<size_t>(rg.groups * cols));
      std::vector<int32_t> want_arg(want.size());
      for (int64_t g = 0; g < rg.groups; ++g)
        for (int64_t c = 0; c < cols; ++c) {
          const size_t e = static_cast<size_t>(g * cols + c);
          if (jobs.first[static_cast<size_t>(g)] == jobs.first[static_cast<size_t>(g + 1)]) {
            want[e] = T(0);
            want_arg[e] = -1;
            continue;
          }
          T total = T(0);
          int32_t total_arg = -1;
          for (int64_t j = jobs.first[static_cast<size_t>(g)];
               j < jobs.first[static_cast<size_t>(g + 1)]; ++j) {
            const int64_t p0 = jobs.job_begin[static_cast<size_t>(j)],
                          p1 = jobs.job_begin[static_cast<size_t>(j + 1)];
            T part = term(rg.rows[static_cast<size_t>(p0)], c);
            int32_t arg = rg.rows[static_cast<size_t>(p0)];
            for (int64_t q = p0 + 1; q < p1; ++q) {
              const int32_t i = rg.rows[static_cast<size_t>(q)];
              if (mode != PoolingMode::Max)
                part += term(i, c);
              else if (term(i, c) > part)
                part = term(i, c), arg = i;
            }
            if (total_arg < 0)
              total = part, total_arg = arg;
            else if (mode != PoolingMode::Max)
              total += part;
            else if (part > total)
              total = part, total_arg = arg;
          }
          if (mode == PoolingMode::Average) total /= static_cast<T>(rg.size(g));
          want[e] = total;
          want_arg[e] = total_arg;
        }
      for (fkemu::Order order : kOrders) {
        fkemu::set_order(order);
        const std::string at = where(mode, order) + (product ? ", products" : "");
        const Reduced<T> got = reduce_on_device<T>(mode, a, product ? &b : nullptr, cols, rg, jobs);
        EXPECT_EQ(count_wrong(got.out, matrix(want, cols), cols, at), 0);
        if (mode == PoolingMode::Max) {
          EXPECT_EQ(count_wrong(got.argmax, matrix(want_arg, cols), cols, "arg-max, " + at), 0);
        }
      }
    }
  fkemu::set_order(fkemu::starting_order());
}

TEST(EmulatedPooling, GroupPartialsCombineInJobOrderAtAnyBlock) {
  check_blocks<float>(1, 3, false, 40);
  check_blocks<float>(4, 3, true, 41);
  check_blocks<double>(6, 2, false, 42);
  check_blocks<double>(3, 2, true, 43);
}

TEST(EmulatedPooling, GlobalPoolingOfNothingTouchesNothing) {
  for (PoolingMode mode : kModes) {
    const int m = static_cast<int>(mode);
    mc::emu::launch_group_partials<float>(m, nullptr, nullptr, 3, nullptr, nullptr, 0, nullptr,
                                          nullptr, nullptr);
    mc::emu::launch_group_partials<double>(m, nullptr, nullptr, 0, nullptr, nullptr, 4, nullptr,
                                           nullptr, nullptr);
    mc::emu::launch_group_combine<float>(m, nullptr, nullptr, nullptr, nullptr, 0, 3, nullptr,
                                         nullptr, nullptr);
    mc::emu::launch_group_combine<double>(m, nullptr, nullptr, nullptr, nullptr, 4, 0, nullptr,
                                          nullptr, nullptr);
    mc::emu::launch_group_backward<float>(m, nullptr, 3, nullptr, nullptr, nullptr, 0, nullptr,
                                          nullptr);
    mc::emu::launch_group_backward<double>(m, nullptr, 0, nullptr, nullptr, nullptr, 4, nullptr,
                                           nullptr);
  }
}

}  // namespace
