// adam.cu's kernels run on the emulated device (emulated_device.h): the
// squared gradient norm's two passes against a host loop in their documented
// order (a strided walk per thread, a halving tree per block of 256, f64),
// bit for bit; the AdamW update, with its scalars as arguments or read from
// a device step block, against the CPU's own adam_update (solve/adam.cpp),
// bit for bit over several steps in f32 and f64; the block's finite-loss gate
// and clip factor; and the gather of a step's scalars. Both thread orders.
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
#include "nefi/cuda/adam_kernels.h"
#include "nefi/solve/device_step_slots.h"
#include "nefi/solve/fused_optimizer.h"

// The emulated launchers this file runs: adam_kernels.h's, in ::emu (a
// signature that drifts from its definition fails to link).
namespace nefi::cuda::emu {
int64_t sum_sq_blocks(int64_t n);
template <typename T>
void launch_sum_sq_partials(const T* g, int64_t n, double* partials, void* stream);
void launch_sum_partials(const double* partials, int64_t count, double* out, void* stream);
template <typename T>
void launch_adam_update(T* x, const T* g, T* m, T* v, int64_t n, const AdamScalars<T>& s,
                        void* stream);
template <typename T>
void launch_adam_update_gated(T* x, const T* g, T* m, T* v, int64_t n, const double* block,
                              void* stream);
void launch_gather_scalars(const GatherSources& src, double* out, void* stream);
}  // namespace nefi::cuda::emu

namespace nc = nefi::cuda;
using fkemu_test::expect_same_bits;
using fkemu_test::in_both_orders;

namespace {

constexpr int64_t kBlock = 256;
constexpr double kPoison = -4321.0;

size_t at(int64_t i) {
  return static_cast<size_t>(i);
}

// block_sum's halving tree over a block's 256 thread sums.
double tree_sum(std::vector<double> v) {
  for (size_t stride = v.size() / 2; stride > 0; stride /= 2)
    for (size_t t = 0; t < stride; ++t) v[t] += v[t + stride];
  return v[0];
}

template <typename T>
std::vector<T> random_values(int64_t n, double scale, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-scale, scale);
  std::vector<T> v(at(n));
  for (T& e : v) e = static_cast<T>(u(rng));
  return v;
}

template <typename T>
void check_sum_sq(int64_t n) {
  SCOPED_TRACE("n " + std::to_string(n));
  const std::vector<T> g = random_values<T>(n, 3.0, static_cast<uint32_t>(n + 1));
  const int64_t blocks = std::max<int64_t>(1, (n + kBlock - 1) / kBlock);
  ASSERT_EQ(nc::emu::sum_sq_blocks(n), blocks);
  std::vector<double> want(at(blocks));
  for (int64_t b = 0; b < blocks; ++b) {
    std::vector<double> s(kBlock, 0.0);
    for (int64_t t = 0; t < kBlock; ++t)
      for (int64_t i = b * kBlock + t; i < n; i += blocks * kBlock)
        s[at(t)] += static_cast<double>(g[at(i)]) * static_cast<double>(g[at(i)]);
    want[at(b)] = tree_sum(s);
  }
  std::vector<double> s(kBlock, 0.0);
  for (int64_t t = 0; t < kBlock; ++t)
    for (int64_t i = t; i < blocks; i += kBlock) s[at(t)] += want[at(i)];
  const double total = tree_sum(s);
  double plain = 0;
  for (T v : g) plain += static_cast<double>(v) * static_cast<double>(v);
  EXPECT_NEAR(total, plain, 1e-13 * plain);
  in_both_orders([&](fkemu::Order) {
    std::vector<double> partials(at(blocks), kPoison), out(1, kPoison);
    nc::emu::launch_sum_sq_partials<T>(g.data(), n, partials.data(), nullptr);
    expect_same_bits(partials, want, "partials");
    nc::emu::launch_sum_partials(partials.data(), blocks, out.data(), nullptr);
    expect_same_bits(out, std::vector<double>{total}, "sum");
  });
}

TEST(EmulatedAdam, SquaredNormFollowsTheFixedOrder) {
  check_sum_sq<double>(1000);  // four blocks, the last partial
  check_sum_sq<float>(257);    // a block of one element
  check_sum_sq<float>(5);
  check_sum_sq<double>(0);  // one block of nothing: 0
}

TEST(EmulatedAdam, PartialSumsPastOneBlockStrideTheirThreads) {
  // 600 partials (as many gradients' blocks add up to): threads 0..87 add three.
  const std::vector<double> partials = random_values<double>(600, 1.0, 9);
  std::vector<double> s(kBlock, 0.0);
  for (int64_t t = 0; t < kBlock; ++t)
    for (int64_t i = t; i < 600; i += kBlock) s[at(t)] += partials[at(i)];
  const double want = tree_sum(s);
  in_both_orders([&](fkemu::Order) {
    std::vector<double> out(1, kPoison);
    nc::emu::launch_sum_partials(partials.data(), 600, out.data(), nullptr);
    expect_same_bits(out, std::vector<double>{want}, "sum");
  });
  EXPECT_EQ(nc::emu::sum_sq_blocks(int64_t{1} << 30), 1024);  // the grid's cap
}

template <typename T>
nc::AdamScalars<T> rounded(const nefi::AdamScalars& s) {
  return {static_cast<T>(s.clip),         static_cast<T>(s.l2),  static_cast<T>(s.decay),
          static_cast<T>(s.b1),           static_cast<T>(s.b2),  static_cast<T>(s.step),
          static_cast<T>(s.inv_sqrt_bc2), static_cast<T>(s.eps), static_cast<T>(1.0 - s.b1),
          static_cast<T>(1.0 - s.b2)};
}

// Parameters, gradients and moments of one buffer.
template <typename T>
struct State {
  std::vector<T> x, g, m, v;
};
template <typename T>
State<T> random_state(int64_t n, uint32_t seed) {
  return {random_values<T>(n, 1.0, seed), random_values<T>(n, 0.5, seed + 1),
          std::vector<T>(at(n), T(0)), std::vector<T>(at(n), T(0))};
}

template <typename T>
void expect_same_state(const State<T>& got, const State<T>& want, int step) {
  const std::string s = " after step " + std::to_string(step);
  expect_same_bits(got.x, want.x, "x" + s);
  expect_same_bits(got.m, want.m, "m" + s);
  expect_same_bits(got.v, want.v, "v" + s);
}

template <typename T>
void check_update(const nefi::OptimizerOptions& o, int64_t n) {
  in_both_orders([&](fkemu::Order) {
    State<T> cpu = random_state<T>(n, 3), dev = cpu;
    for (int t = 1; t <= 4; ++t) {
      const double lr = 1e-2 / t, clip = t % 2 ? 1.0 : 0.37;
      const std::vector<T> g = random_values<T>(n, 0.5, static_cast<uint32_t>(10 + t));
      nefi::adam_update(cpu.x.data(), g.data(), cpu.m.data(), cpu.v.data(), n, lr, clip, o, t);
      nc::emu::launch_adam_update<T>(dev.x.data(), g.data(), dev.m.data(), dev.v.data(), n,
                                     rounded<T>(nefi::adam_scalars(lr, clip, o, t)), nullptr);
      expect_same_state(dev, cpu, t);
    }
  });
}

nefi::OptimizerOptions options(bool decoupled, double decay) {
  nefi::OptimizerOptions o;
  o.decoupled = decoupled;
  o.weight_decay = decay;
  return o;
}

TEST(EmulatedAdam, UpdateEqualsTheCpuLoopF32) {
  check_update<float>(options(true, 0.01), 700);  // AdamW, three blocks, the last partial
  check_update<float>(options(false, 0.1), 33);   // Adam with L2
}

TEST(EmulatedAdam, UpdateEqualsTheCpuLoopF64) {
  check_update<double>(options(true, 0.0), 513);
  check_update<double>(options(false, 0.05), 100);
}

TEST(EmulatedAdam, UpdateOfNothingLaunchesNothing) {
  nc::emu::launch_adam_update<float>(nullptr, nullptr, nullptr, nullptr, 0, {}, nullptr);
  nc::emu::launch_adam_update_gated<double>(nullptr, nullptr, nullptr, nullptr, 0, nullptr,
                                            nullptr);
}

// A device step block: the step's f64 scalars (clip slot unused), the clip
// threshold, the squared gradient norm and the loss total.
std::vector<double> step_block(const nefi::AdamScalars& s, double threshold, double sq,
                               double total) {
  std::vector<double> b(16, kPoison);
  const double scalars[8] = {kPoison, s.l2, s.decay, s.b1, s.b2, s.step, s.inv_sqrt_bc2, s.eps};
  for (int i = 0; i < 8; ++i) b[at(nefi::kSlotAdamScalars + i)] = scalars[i];
  b[nefi::kSlotGradClip] = threshold;
  b[nefi::kSlotSqSum] = sq;
  b[nefi::kSlotTotal] = total;
  return b;
}

template <typename T>
void check_gated(const nefi::OptimizerOptions& o, int64_t n) {
  // Per step: the clip threshold against the gradient's norm (above, below, off).
  const double thresholds[4] = {0.5, 1e9, 0.0, 2.0};
  in_both_orders([&](fkemu::Order) {
    State<T> cpu = random_state<T>(n, 4), dev = cpu;
    for (int t = 1; t <= 4; ++t) {
      const double lr = 3e-3;
      const std::vector<T> g = random_values<T>(n, 0.5, static_cast<uint32_t>(20 + t));
      double sq = 0;
      for (T v : g) sq += static_cast<double>(v) * static_cast<double>(v);
      // FusedOptimizer::step's clip factor.
      const double threshold = thresholds[t - 1], norm = std::sqrt(sq);
      const double clip = threshold > 0 && norm > threshold ? threshold / (norm + 1e-6) : 1.0;
      nefi::adam_update(cpu.x.data(), g.data(), cpu.m.data(), cpu.v.data(), n, lr, clip, o, t);
      const std::vector<double> block =
          step_block(nefi::adam_scalars(lr, 1.0, o, t), threshold, sq, 0.25);
      nc::emu::launch_adam_update_gated<T>(dev.x.data(), g.data(), dev.m.data(), dev.v.data(), n,
                                           block.data(), nullptr);
      expect_same_state(dev, cpu, t);
    }
  });
}

TEST(EmulatedAdam, GatedUpdateClipsAsTheHostStep) {
  check_gated<float>(options(true, 0.01), 300);
  check_gated<double>(options(false, 0.02), 257);
}

TEST(EmulatedAdam, GatedUpdateSkipsANonFiniteLoss) {
  const nefi::AdamScalars s = nefi::adam_scalars(1e-2, 1.0, options(true, 0.01), 1);
  for (double total :
       {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    State<float> st = random_state<float>(300, 5);
    const State<float> before = st;
    const std::vector<double> block = step_block(s, 0.0, 1.0, total);
    nc::emu::launch_adam_update_gated<float>(st.x.data(), st.g.data(), st.m.data(), st.v.data(),
                                             300, block.data(), nullptr);
    expect_same_state(st, before, 1);
  }
}

TEST(EmulatedAdam, GatherScalarsWidensAndZeroesMissingOnes) {
  const float f[3] = {1.5f, -2.25f, 0.1f};
  const double d[3] = {3.0, -1e-300, 0.1};
  nc::GatherSources src{};
  src.count = nc::kMaxGathered;
  std::vector<double> want;
  for (int i = 0; i < nc::kMaxGathered; ++i) {
    if (i % 3 == 2) {
      src.ptr[i] = nullptr;
      want.push_back(0.0);
    } else if (i % 3 == 0) {
      src.ptr[i] = &f[(i / 3) % 3];
      src.f64[i] = false;
      want.push_back(static_cast<double>(f[(i / 3) % 3]));
    } else {
      src.ptr[i] = &d[(i / 3) % 3];
      src.f64[i] = true;
      want.push_back(d[(i / 3) % 3]);
    }
  }
  std::vector<double> out(nc::kMaxGathered + 1, kPoison);
  nc::emu::launch_gather_scalars(src, out.data(), nullptr);
  want.push_back(kPoison);  // nothing past count
  expect_same_bits(out, want, "gathered");
  src.count = 1;
  std::vector<double> one(2, kPoison);
  nc::emu::launch_gather_scalars(src, one.data(), nullptr);
  expect_same_bits(one, std::vector<double>{1.5, kPoison}, "one gathered");
}

}  // namespace
