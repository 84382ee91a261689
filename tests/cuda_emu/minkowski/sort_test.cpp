// sort.cu's launchers run on the emulated device, CUB through the emulator's
// stand-ins (cuda_emu/include/cub/): the pair sorts against std::stable_sort
// on the low `bits` bits (duplicate keys keep their input order, bits above
// the range are carried, bits 0, 1 and the key's width, i32 keys with their
// sign bit in and out of the range), the exclusive sum against
// std::exclusive_scan, empty and one-item inputs, and the launchers'
// refusals. The stand-ins' own promises (a size query that writes nothing,
// too little or overlapping scratch refused, scratch overwritten) are pinned
// first: the launcher tests lean on them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <utility>
#include <vector>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include "cuda_emu/emulated_device.h"
#include "cuda_emu/emulated_test_util.h"
#include "fk/error.h"
#include "minkowski/cuda/kernels.h"

// The emulated launchers this file runs: kernels.h's, in ::emu (a signature
// that drifts from its definition fails to link).
namespace minkowski::cuda::emu {
void sort_pairs_u64(const uint64_t* keys, const int32_t* values, uint64_t* keys_out,
                    int32_t* values_out, int64_t n, int bits, void* stream);
void sort_pairs_i32(const int32_t* keys, const int32_t* values, int32_t* keys_out,
                    int32_t* values_out, int64_t n, int bits, void* stream);
void exclusive_sum_i32(const int32_t* in, int32_t* out, int64_t n, void* stream);
}  // namespace minkowski::cuda::emu

namespace mc = minkowski::cuda;
using fkemu_test::expect_same_bits;
using fkemu_test::in_both_orders;

namespace {

// --- the stand-ins' protocol -------------------------------------------------------

TEST(CubStandIn, SizeQueryAsksMoreForMoreItemsAndTouchesNothing) {
  std::vector<uint64_t> keys = {3, 1, 2}, keys_out(3, 7);
  std::vector<int32_t> values = {0, 1, 2}, values_out(3, 7);
  size_t small = 0, large = 0;
  ASSERT_EQ(cub::DeviceRadixSort::SortPairs(nullptr, small, keys.data(), keys_out.data(),
                                            values.data(), values_out.data(), 3),
            cudaSuccess);
  ASSERT_EQ(cub::DeviceRadixSort::SortPairs(nullptr, large, keys.data(), keys_out.data(),
                                            values.data(), values_out.data(), 1000),
            cudaSuccess);
  EXPECT_GT(small, 0u);
  EXPECT_GT(large, small);
  EXPECT_EQ(keys_out, std::vector<uint64_t>(3, 7));
  EXPECT_EQ(values_out, std::vector<int32_t>(3, 7));
  size_t scan_small = 0, scan_large = 0;
  ASSERT_EQ(cub::DeviceScan::ExclusiveSum(nullptr, scan_small, values.data(), values_out.data(), 3),
            cudaSuccess);
  ASSERT_EQ(
      cub::DeviceScan::ExclusiveSum(nullptr, scan_large, values.data(), values_out.data(), 1000),
      cudaSuccess);
  EXPECT_GT(scan_small, 0u);
  EXPECT_GT(scan_large, scan_small);
  EXPECT_EQ(values_out, std::vector<int32_t>(3, 7));
}

TEST(CubStandIn, RefusesTooLittleOrOverlappingScratchAndOverwritesIt) {
  std::vector<uint64_t> keys = {3, 1, 2}, keys_out(3, 7);
  std::vector<int32_t> values = {0, 1, 2}, values_out(3, 7);
  size_t bytes = 0;
  ASSERT_EQ(cub::DeviceRadixSort::SortPairs(nullptr, bytes, keys.data(), keys_out.data(),
                                            values.data(), values_out.data(), 3),
            cudaSuccess);
  std::vector<unsigned char> scratch(bytes, 0);
  size_t fewer = bytes - 1;
  EXPECT_EQ(cub::DeviceRadixSort::SortPairs(scratch.data(), fewer, keys.data(), keys_out.data(),
                                            values.data(), values_out.data(), 3),
            cudaErrorInvalidValue);
  EXPECT_EQ(keys_out, std::vector<uint64_t>(3, 7));
  // The scratch holding the output keys (one buffer, carved wrongly).
  std::vector<unsigned char> shared(bytes + 3 * sizeof(uint64_t));
  auto* keys_in_scratch = reinterpret_cast<uint64_t*>(shared.data() + bytes - 8);
  EXPECT_EQ(cub::DeviceRadixSort::SortPairs(shared.data(), bytes, keys.data(), keys_in_scratch,
                                            values.data(), values_out.data(), 3),
            cudaErrorInvalidValue);
  ASSERT_EQ(cub::DeviceRadixSort::SortPairs(scratch.data(), bytes, keys.data(), keys_out.data(),
                                            values.data(), values_out.data(), 3),
            cudaSuccess);
  EXPECT_EQ(keys_out, (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_EQ(values_out, (std::vector<int32_t>{1, 2, 0}));
  EXPECT_TRUE(std::all_of(scratch.begin(), scratch.end(),
                          [](unsigned char b) { return b == cub::emulated::kScratchPattern; }));
  // The scan in place is CUB's; a shifted overlap is not.
  ASSERT_EQ(cub::DeviceScan::ExclusiveSum(nullptr, bytes, values.data(), values.data(), 3),
            cudaSuccess);
  scratch.assign(bytes, 0);
  EXPECT_EQ(
      cub::DeviceScan::ExclusiveSum(scratch.data(), bytes, values.data() + 1, values.data(), 2),
      cudaErrorInvalidValue);
  values = {4, 5, 6};
  ASSERT_EQ(cub::DeviceScan::ExclusiveSum(scratch.data(), bytes, values.data(), values.data(), 3),
            cudaSuccess);
  EXPECT_EQ(values, (std::vector<int32_t>{0, 4, 9}));
}

// A stream model that keeps the work until the test runs it.
std::vector<fkemu::StreamWork>& deferred() {
  static std::vector<fkemu::StreamWork> work;
  return work;
}
void defer(cudaStream_t, fkemu::StreamWork work) {
  deferred().push_back(std::move(work));
}

// The calls return before their work runs (in a frame gone by then).
void sort_and_scan_in_a_frame_that_returns(const uint64_t* keys, uint64_t* keys_out,
                                           const int32_t* values, int32_t* values_out,
                                           int32_t* sums, void* scratch, size_t bytes) {
  size_t sort_bytes = bytes, scan_bytes = bytes;
  ASSERT_EQ(cub::DeviceRadixSort::SortPairs(scratch, sort_bytes, keys, keys_out, values, values_out,
                                            3, 0, 2),
            cudaSuccess);
  ASSERT_EQ(cub::DeviceScan::ExclusiveSum(scratch, scan_bytes, values, sums, 3), cudaSuccess);
}

TEST(CubStandIn, WorkRunsInStreamOrderOnValuesItCaptured) {
  const std::vector<uint64_t> keys = {7, 5, 6};
  const std::vector<int32_t> values = {10, 20, 30};
  std::vector<uint64_t> keys_out(3, 0);
  std::vector<int32_t> values_out(3, 0), sums(3, -1);
  std::vector<unsigned char> scratch(4096);
  fkemu::set_stream_model(defer);
  sort_and_scan_in_a_frame_that_returns(keys.data(), keys_out.data(), values.data(),
                                        values_out.data(), sums.data(), scratch.data(),
                                        scratch.size());
  fkemu::set_stream_model(nullptr);
  EXPECT_EQ(deferred().size(), 2u);
  EXPECT_EQ(keys_out, std::vector<uint64_t>(3, 0));
  for (const fkemu::StreamWork& work : deferred()) work();
  deferred().clear();
  // Bits [0, 2): 7 -> 3, 5 -> 1, 6 -> 2.
  EXPECT_EQ(keys_out, (std::vector<uint64_t>{5, 6, 7}));
  EXPECT_EQ(values_out, (std::vector<int32_t>{20, 30, 10}));
  EXPECT_EQ(sums, (std::vector<int32_t>{0, 10, 30}));
}

// --- reference ---------------------------------------------------------------------

// The positions of keys in the order a stable sort on their low `bits` bits
// puts them; i32 keys sorted over all 32 bits compare as signed (CUB inverts
// the sign bit before it looks at the range), over fewer bits their low bits
// compare as unsigned.
template <typename K>
std::vector<int32_t> stable_order(const std::vector<K>& keys, int bits) {
  using U = std::make_unsigned_t<K>;
  constexpr int kWidth = sizeof(K) * 8;
  std::vector<int32_t> order(keys.size());
  std::iota(order.begin(), order.end(), 0);
  if (bits == kWidth) {
    std::stable_sort(order.begin(), order.end(),
                     [&](int32_t a, int32_t b) { return keys[a] < keys[b]; });
    return order;
  }
  const U mask = static_cast<U>((U{1} << bits) - 1);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return (static_cast<U>(keys[a]) & mask) < (static_cast<U>(keys[b]) & mask);
  });
  return order;
}

template <typename K>
void sort_pairs(const K* keys, const int32_t* values, K* keys_out, int32_t* values_out, int64_t n,
                int bits) {
  if constexpr (std::is_same_v<K, uint64_t>)
    mc::emu::sort_pairs_u64(keys, values, keys_out, values_out, n, bits, nullptr);
  else
    mc::emu::sort_pairs_i32(keys, values, keys_out, values_out, n, bits, nullptr);
}

// Sorts keys (values: a permutation of 0..n-1, so stability shows) and checks
// against stable_order, the inputs unchanged.
template <typename K>
void expect_sorted(const std::vector<K>& keys, int bits, uint32_t seed) {
  const int64_t n = static_cast<int64_t>(keys.size());
  std::vector<int32_t> values(keys.size());
  std::iota(values.begin(), values.end(), 0);
  std::shuffle(values.begin(), values.end(), std::mt19937(seed));
  const std::vector<int32_t> order = stable_order(keys, bits);
  std::vector<K> want_keys(keys.size());
  std::vector<int32_t> want_values(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    want_keys[i] = keys[static_cast<size_t>(order[i])];
    want_values[i] = values[static_cast<size_t>(order[i])];
  }
  in_both_orders([&](fkemu::Order) {
    const std::vector<K> keys_before = keys;
    const std::vector<int32_t> values_before = values;
    std::vector<K> keys_out(keys.size(), K{0x5a});
    std::vector<int32_t> values_out(keys.size(), -7);
    sort_pairs(keys.data(), values.data(), keys_out.data(), values_out.data(), n, bits);
    const std::string what = "n " + std::to_string(n) + " bits " + std::to_string(bits);
    expect_same_bits(keys_out, want_keys, what + " keys");
    expect_same_bits(values_out, want_values, what + " values");
    EXPECT_EQ(keys, keys_before) << what << ": input keys modified";
    EXPECT_EQ(values, values_before) << what << ": input values modified";
  });
}

// n keys with `distinct` values below 2^bits (many duplicates when distinct
// is small), plus random bits above `bits` when `high` (carried, not compared).
template <typename K>
std::vector<K> random_keys(int64_t n, int bits, int64_t distinct, bool high, uint32_t seed) {
  using U = std::make_unsigned_t<K>;
  constexpr int kWidth = sizeof(K) * 8;
  std::mt19937_64 rng(seed);
  const U low_mask = bits >= kWidth ? static_cast<U>(~U{0}) : static_cast<U>((U{1} << bits) - 1);
  std::vector<U> pool(static_cast<size_t>(distinct));
  for (U& v : pool) v = static_cast<U>(rng()) & low_mask;
  std::vector<K> keys(static_cast<size_t>(n));
  for (K& k : keys) {
    U v = pool[rng() % pool.size()];
    if (high) v |= static_cast<U>(rng()) & static_cast<U>(~low_mask);
    k = static_cast<K>(v);
  }
  return keys;
}

// --- sort_pairs_u64 ----------------------------------------------------------------

TEST(EmulatedSort, U64DuplicateKeysKeepTheirInputOrder) {
  expect_sorted(random_keys<uint64_t>(2000, 40, 37, false, 1), 40, 2);
  expect_sorted(random_keys<uint64_t>(700, 64, 5, false, 3), 64, 4);
}

TEST(EmulatedSort, U64BitsAboveTheRangeAreCarriedNotCompared) {
  for (int bits : {1, 7, 12, 33, 63})
    expect_sorted(random_keys<uint64_t>(900, bits, 50, true, 5), bits, 6);
}

// bits 0: no bit compared, so the pairs come out in input order (kernels.h:
// "by the low `bits` bits"); keys differ in bit 0 so a 1-bit sort would show.
TEST(EmulatedSort, U64NoBitsKeepsInputOrder) {
  expect_sorted(random_keys<uint64_t>(300, 64, 300, false, 7), 0, 8);
}

TEST(EmulatedSort, U64AllBitsAndLargeN) {
  expect_sorted(random_keys<uint64_t>(1, 64, 1, false, 9), 64, 10);
  expect_sorted(random_keys<uint64_t>(1 << 17, 64, 1 << 16, false, 11), 64, 12);
}

// --- sort_pairs_i32 ----------------------------------------------------------------

// group_by (device_kernel_map.cpp) sorts row ids, never negative, on
// ceil(log2(rows)) bits; the launcher takes any keys and up to all 32 bits.
TEST(EmulatedSort, I32NonNegativeRowsAsGroupByPassesThem) {
  std::vector<int32_t> rows = random_keys<int32_t>(3000, 10, 1000, false, 13);
  for (int32_t& r : rows) r %= 1000;  // rows < n_rows = 1000: 10 bits
  expect_sorted(rows, 10, 14);
  expect_sorted(std::vector<int32_t>{5}, 1, 15);
}

TEST(EmulatedSort, I32NegativeKeysOverAllBitsSortAsSigned) {
  std::vector<int32_t> keys = random_keys<int32_t>(1500, 32, 200, false, 16);
  keys.push_back(INT32_MIN);
  keys.push_back(INT32_MAX);
  keys.push_back(-1);
  keys.push_back(0);
  expect_sorted(keys, 32, 17);
}

TEST(EmulatedSort, I32NegativeKeysOverFewerBitsCompareTheirLowBitsUnsigned) {
  std::vector<int32_t> keys = random_keys<int32_t>(1200, 32, 300, false, 18);
  for (int bits : {0, 1, 8, 31}) expect_sorted(keys, bits, 19);
}

TEST(EmulatedSort, EmptyInputWritesNothingAndBadCountsOrBitsThrow) {
  std::vector<uint64_t> keys_out(2, 9);
  std::vector<int32_t> values_out(2, 9);
  const uint64_t keys[2] = {2, 1};
  const int32_t values[2] = {0, 1};
  mc::emu::sort_pairs_u64(keys, values, keys_out.data(), values_out.data(), 0, 64, nullptr);
  EXPECT_EQ(keys_out, std::vector<uint64_t>(2, 9));
  EXPECT_EQ(values_out, std::vector<int32_t>(2, 9));
  EXPECT_THROW(
      mc::emu::sort_pairs_u64(keys, values, keys_out.data(), values_out.data(), -1, 64, nullptr),
      fk::Error);
  EXPECT_THROW(mc::emu::sort_pairs_i32(values, values, values_out.data(), values_out.data(),
                                       int64_t{1} << 31, 32, nullptr),
               fk::Error);
  EXPECT_THROW(mc::emu::exclusive_sum_i32(values, values_out.data(), -1, nullptr), fk::Error);
  for (int bits : {-1, 65})
    EXPECT_THROW(
        mc::emu::sort_pairs_u64(keys, values, keys_out.data(), values_out.data(), 2, bits, nullptr),
        fk::Error);
  EXPECT_THROW(
      mc::emu::sort_pairs_i32(values, values, values_out.data(), values_out.data(), 2, 33, nullptr),
      fk::Error);
}

// --- exclusive_sum_i32 --------------------------------------------------------------

void expect_exclusive_sum(const std::vector<int32_t>& in) {
  std::vector<int32_t> want(in.size());
  std::exclusive_scan(in.begin(), in.end(), want.begin(), 0);
  in_both_orders([&](fkemu::Order) {
    std::vector<int32_t> out(in.size(), -99);
    const std::vector<int32_t> before = in;
    mc::emu::exclusive_sum_i32(in.data(), out.data(), static_cast<int64_t>(in.size()), nullptr);
    expect_same_bits(out, want, "n " + std::to_string(in.size()));
    EXPECT_EQ(in, before);
  });
}

TEST(EmulatedSort, ExclusiveSumOfFlagsAndSignedValues) {
  std::mt19937 rng(20);
  std::vector<int32_t> flags(1 << 18), values(5000);
  for (int32_t& f : flags) f = static_cast<int32_t>(rng() % 2);  // the callers' 0/1 heads
  for (int32_t& v : values) v = static_cast<int32_t>(rng() % 20001) - 10000;
  expect_exclusive_sum(flags);
  expect_exclusive_sum(values);
  expect_exclusive_sum({42});
  expect_exclusive_sum({3, -3});
}

TEST(EmulatedSort, ExclusiveSumOfNothingWritesNothing) {
  std::vector<int32_t> out(1, -99);
  const int32_t in[1] = {5};
  mc::emu::exclusive_sum_i32(in, out.data(), 0, nullptr);
  EXPECT_EQ(out[0], -99);
}

}  // namespace
