// channelwise.cu's kernels run on the emulated device (emulated_device.h):
// the row sums against channelwise_forward and channelwise_backward's input
// gradient on the CPU, over the same KernelMap's by-row indices, and the
// weight gradient's per-job partials, summed per offset in job order, against
// its weight gradient: f32 and f64, bit for bit (channelwise.cu: the CPU's
// order, products rounded before the adds), in both thread orders. The maps
// have empty offsets (repeated bounds, which the kernel's offset search must
// step over as the CPU's upper_bound does), rows without pairs, an offset
// longer than one weight job, and the identity map's layout.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "cuda_emu/emulated_device.h"
#include "cuda_emu/emulated_test_util.h"
#include "fk/factory.h"
#include "fk/tensor.h"
#include "minkowski/coords/kernel_map.h"
#include "minkowski/cuda/kernels.h"
#include "minkowski/ops/conv_kernel.h"
#include "minkowski/ops/conv_kernel_common.h"

// The emulated launchers this file runs: kernels.h's, in ::emu (a signature
// that drifts from its definition fails to link).
namespace minkowski::cuda::emu {
template <typename T>
void launch_channelwise_rows(const T* src, const T* w, int64_t cols, const int32_t* begin,
                             const int32_t* pair, const int32_t* other, const int64_t* offset_begin,
                             int64_t volume, int64_t rows, T* dst, void* stream);
template <typename T>
void launch_pair_product_partials(const T* f, const T* g, int64_t cols, const int32_t* in_rows,
                                  const int32_t* out_rows, const int64_t* job_begin, int64_t jobs,
                                  T* part, void* stream);
}  // namespace minkowski::cuda::emu

namespace mc = minkowski::cuda;

using fkemu_test::expect_same_bits;
using fkemu_test::in_both_orders;
using fkemu_test::order_name;
using fkemu_test::random_values;

namespace {

// A map whose offset k pairs `count[k]` distinct output rows with distinct
// input rows, both drawn at random (count[k] <= min(n_in, n_out)).
std::shared_ptr<minkowski::KernelMap> random_map(int64_t n_in, int64_t n_out,
                                                 const std::vector<int64_t>& count,
                                                 std::mt19937& rng) {
  auto m = std::make_shared<minkowski::KernelMap>();
  m->volume = static_cast<int64_t>(count.size());
  m->in_size = n_in;
  m->out_size = n_out;
  m->offset_begin = {0};
  std::vector<int32_t> in(static_cast<size_t>(n_in)), out(static_cast<size_t>(n_out));
  for (int64_t c : count) {
    std::iota(in.begin(), in.end(), 0);
    std::iota(out.begin(), out.end(), 0);
    std::shuffle(in.begin(), in.end(), rng);
    std::shuffle(out.begin(), out.end(), rng);
    std::sort(out.begin(), out.begin() + c);  // the build lists an offset's pairs by output row
    for (int64_t j = 0; j < c; ++j) {
      m->in_rows.push_back(in[static_cast<size_t>(j)]);
      m->out_rows.push_back(out[static_cast<size_t>(j)]);
    }
    m->offset_begin.push_back(static_cast<int64_t>(m->in_rows.size()));
  }
  return m;
}

// A by-row index as the device holds it (DeviceRowIndex: int32).
struct DeviceRows {
  std::vector<int32_t> begin, pair;
};
DeviceRows device_rows(const minkowski::RowIndex& x) {
  DeviceRows d;
  for (size_t r = 0; r < x.begin.size(); ++r) d.begin.push_back(static_cast<int32_t>(x.begin[r]));
  for (size_t e = 0; e < x.entries.size(); ++e) d.pair.push_back(x.entries[e].pair);
  return d;
}

// The pairs' rows on the device (the identity's made explicit, as
// device_kernel_map.cpp uploads them).
std::vector<int32_t> rows_of(const minkowski::KernelMap& m, bool inputs) {
  if (!m.identity) {
    const auto& r = inputs ? m.in_rows : m.out_rows;
    return std::vector<int32_t>(r.begin(), r.end());
  }
  std::vector<int32_t> r(static_cast<size_t>(m.pairs()));
  std::iota(r.begin(), r.end(), 0);
  return r;
}

// channelwise_dispatch.cpp's weight jobs: each offset's pairs in blocks of
// kWeightBlock; jobs tile the pairs in order, first[k] is offset k's first job.
struct Jobs {
  std::vector<int64_t> begin, first;
};
Jobs weight_jobs(const std::vector<int64_t>& offset_begin) {
  Jobs j;
  const size_t volume = offset_begin.size() - 1;
  for (size_t k = 0; k < volume; ++k) {
    j.first.push_back(static_cast<int64_t>(j.begin.size()));
    for (int64_t p = offset_begin[k]; p < offset_begin[k + 1];
         p += minkowski::conv_detail::kWeightBlock)
      j.begin.push_back(p);
  }
  j.first.push_back(static_cast<int64_t>(j.begin.size()));
  j.begin.push_back(offset_begin.back());
  return j;
}

template <typename T>
void check_map(const minkowski::KernelMap& m, int64_t c, uint32_t seed) {
  std::mt19937 rng(seed);
  const int64_t K = m.volume;
  const std::vector<T> f = random_values<T>(m.in_size * c, -1, 1, rng),
                       w = random_values<T>(K * c, -1, 1, rng),
                       g = random_values<T>(m.out_size * c, -1, 1, rng);
  const fk::Tensor ft = fk::from_vector(f, fk::Dims{m.in_size, c});
  const fk::Tensor wt = fk::from_vector(w, fk::Dims{K, c});
  const fk::Tensor gt = fk::from_vector(g, fk::Dims{m.out_size, c});
  const std::vector<T> want_out = minkowski::channelwise_forward(ft, wt, m).template to_vector<T>();
  const minkowski::ConvGrads want = minkowski::channelwise_backward(gt, ft, wt, m, true, true);
  const std::vector<T> want_in = want.features.template to_vector<T>();
  const std::vector<T> want_w = want.weight.template to_vector<T>();

  const DeviceRows by_out = device_rows(m.by_out()), by_in = device_rows(m.by_in());
  const std::vector<int32_t> in_rows = rows_of(m, true), out_rows = rows_of(m, false);
  const Jobs jobs = weight_jobs(m.offset_begin);
  const int64_t n_jobs = static_cast<int64_t>(jobs.begin.size()) - 1;
  const std::string what = std::to_string(m.pairs()) + " pairs in " + std::to_string(K) +
                           " offsets, " + std::to_string(c) + " channels";
  in_both_orders([&](fkemu::Order order) {
    const std::string when = what + " (" + order_name(order) + ")";
    // Poisoned: every output must be written.
    std::vector<T> out(static_cast<size_t>(m.out_size * c), static_cast<T>(NAN));
    mc::emu::launch_channelwise_rows<T>(f.data(), w.data(), c, by_out.begin.data(),
                                        by_out.pair.data(), in_rows.data(), m.offset_begin.data(),
                                        K, m.out_size, out.data(), nullptr);
    expect_same_bits(out, want_out, c, "forward, " + when);
    std::vector<T> grad_in(static_cast<size_t>(m.in_size * c), static_cast<T>(NAN));
    mc::emu::launch_channelwise_rows<T>(g.data(), w.data(), c, by_in.begin.data(),
                                        by_in.pair.data(), out_rows.data(), m.offset_begin.data(),
                                        K, m.in_size, grad_in.data(), nullptr);
    expect_same_bits(grad_in, want_in, c, "input gradient, " + when);

    std::vector<T> part(static_cast<size_t>(n_jobs * c), static_cast<T>(NAN));
    mc::emu::launch_pair_product_partials<T>(f.data(), g.data(), c, in_rows.data(), out_rows.data(),
                                             jobs.begin.data(), n_jobs, part.data(), nullptr);
    // Each offset's partials added in job order, as the CPU adds its blocks.
    std::vector<T> grad_w(static_cast<size_t>(K * c), T(0));
    for (int64_t k = 0; k < K; ++k)
      for (int64_t j = jobs.first[static_cast<size_t>(k)];
           j < jobs.first[static_cast<size_t>(k + 1)]; ++j)
        for (int64_t x = 0; x < c; ++x)
          grad_w[static_cast<size_t>(k * c + x)] += part[static_cast<size_t>(j * c + x)];
    expect_same_bits(grad_w, want_w, c, "weight gradient, " + when);
  });
}

TEST(EmulatedChannelwise, RandomMapWithEmptyOffsetsIsTheCpusBitForBit) {
  std::mt19937 rng(1);
  // 27 offsets, four of them empty (the first, two adjacent, the last).
  std::vector<int64_t> count(27);
  for (int64_t& n : count) n = 20 + static_cast<int64_t>(rng() % 90);
  count[0] = count[7] = count[8] = count[26] = 0;
  const auto m = random_map(150, 130, count, rng);  // 130 x 5 = 650 row threads
  check_map<float>(*m, 5, 2);
  check_map<double>(*m, 5, 3);
  check_map<float>(*m, 1, 4);
}

TEST(EmulatedChannelwise, AnOffsetLongerThanOneWeightJob) {
  std::mt19937 rng(5);
  const int64_t block = minkowski::conv_detail::kWeightBlock;
  // Offset 0 spans two jobs (the second partial); offset 1 is empty.
  const auto m = random_map(block + 300, block + 200, {block + 100, 0, 250}, rng);
  check_map<float>(*m, 2, 6);
  check_map<double>(*m, 1, 7);
}

TEST(EmulatedChannelwise, IdentityMap) {
  const auto m = minkowski::KernelMap::make_identity(300);
  check_map<float>(*m, 3, 8);
  check_map<double>(*m, 3, 9);
}

TEST(EmulatedChannelwise, AMapWithoutPairsGivesZeroRows) {
  std::mt19937 rng(10);
  const auto m = random_map(40, 30, {0, 0, 0}, rng);
  check_map<float>(*m, 4, 11);
  check_map<double>(*m, 4, 12);
}

}  // namespace
