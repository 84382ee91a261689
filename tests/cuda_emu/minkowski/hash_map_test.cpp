// hash_map.cu's kernels run on the emulated device (emulated_device.h):
// key packing, the hash table's insert and lookup (duplicates keep their
// first row), the kernel-map search over key offsets, the pair layout and
// the CSR row starts, each against a host container or loop.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <unordered_map>
#include <vector>

#include "cuda_emu/emulated_device.h"
#include "minkowski/cuda/kernels.h"

// The emulated launchers this file runs: kernels.h's, in ::emu (a signature
// that drifts from its definition fails to link).
namespace minkowski::cuda::emu {
void launch_pack_keys(const int32_t* coords, int64_t n, const KeyLayout& layout, uint64_t* keys,
                      int32_t* rows, void* stream);
void launch_hash_clear(HashTable t, void* stream);
void launch_hash_insert(HashTable t, const uint64_t* keys, int64_t n, void* stream);
void launch_hash_lookup(HashTable t, const uint64_t* keys, int64_t n, int32_t* found, void* stream);
void launch_kernel_map_search(HashTable in_table, const uint64_t* out_keys, int64_t n_out,
                              const uint64_t* deltas, int64_t K, int32_t* hit, int32_t* flag,
                              void* stream);
void launch_kernel_map_pairs(const int32_t* hit, const int32_t* pos, const int32_t* flag,
                             const int32_t* out_order, int64_t n_out, int64_t K, int32_t* in_rows,
                             int32_t* out_rows, int32_t* offset_begin, void* stream);
void launch_row_begin(const int32_t* sorted_rows, int64_t n, int64_t rows, int32_t* begin,
                      void* stream);
}  // namespace minkowski::cuda::emu

namespace mc = minkowski::cuda;

namespace {

// A table of `capacity` slots over host vectors.
struct Table {
  std::vector<uint64_t> keys;
  std::vector<int32_t> values;
  mc::HashTable view() { return {keys.data(), values.data(), static_cast<int64_t>(keys.size())}; }
  explicit Table(int64_t capacity)
      : keys(static_cast<size_t>(capacity)), values(static_cast<size_t>(capacity)) {
    mc::emu::launch_hash_clear(view(), nullptr);
  }
};

// n keys of up to 40 bits, about a third repeated.
std::vector<uint64_t> random_keys(int64_t n, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> keys(static_cast<size_t>(n));
  for (size_t i = 0; i < keys.size(); ++i)
    keys[i] = i > 0 && rng() % 3 == 0 ? keys[rng() % i] : rng() & ((uint64_t{1} << 40) - 1);
  return keys;
}

// The first row of every key.
std::unordered_map<uint64_t, int32_t> first_rows(const std::vector<uint64_t>& keys) {
  std::unordered_map<uint64_t, int32_t> first;
  for (size_t i = 0; i < keys.size(); ++i) first.emplace(keys[i], static_cast<int32_t>(i));
  return first;
}

TEST(EmulatedHashMap, ClearInsertLookupKeepTheFirstRowOfAKey) {
  const std::vector<uint64_t> keys = random_keys(3000, 1);
  const auto first = first_rows(keys);
  for (fkemu::Order order : {fkemu::Order::kAscending, fkemu::Order::kDescending}) {
    fkemu::set_order(order);
    Table t(8192);
    EXPECT_TRUE(
        std::all_of(t.keys.begin(), t.keys.end(), [](uint64_t k) { return k == mc::kEmptyKey; }));
    mc::emu::launch_hash_insert(t.view(), keys.data(), static_cast<int64_t>(keys.size()), nullptr);
    EXPECT_EQ(
        std::count_if(t.keys.begin(), t.keys.end(), [](uint64_t k) { return k != mc::kEmptyKey; }),
        static_cast<int64_t>(first.size()));
    // Present keys, then absent ones (their bit 41 set).
    std::vector<uint64_t> queries(keys);
    for (uint64_t k : keys) queries.push_back(k | uint64_t{1} << 41);
    std::vector<int32_t> found(queries.size(), -7);
    mc::emu::launch_hash_lookup(t.view(), queries.data(), static_cast<int64_t>(queries.size()),
                                found.data(), nullptr);
    for (size_t i = 0; i < keys.size(); ++i) {
      ASSERT_EQ(found[i], first.at(keys[i])) << "key " << i;
      ASSERT_EQ(found[keys.size() + i], -1) << "absent key " << i;
    }
  }
  fkemu::set_order(fkemu::starting_order());
}

TEST(EmulatedHashMap, AFullTableProbesAroundItsEnd) {
  // Capacity 8 with 7 keys: every lookup still ends, at its key or at the one empty slot.
  std::vector<uint64_t> keys{3, 11, 19, 27, 35, 43, 51};
  Table t(8);
  mc::emu::launch_hash_insert(t.view(), keys.data(), 7, nullptr);
  std::vector<uint64_t> queries(keys);
  queries.push_back(59);
  std::vector<int32_t> found(queries.size());
  mc::emu::launch_hash_lookup(t.view(), queries.data(), 8, found.data(), nullptr);
  for (int32_t i = 0; i < 7; ++i) EXPECT_EQ(found[static_cast<size_t>(i)], i);
  EXPECT_EQ(found[7], -1);
}

TEST(EmulatedHashMap, PackKeysShiftsEachColumnFromItsLow) {
  mc::KeyLayout l;
  l.width = 4;
  const int64_t lo[4] = {0, -40, -3, 5};
  const int shift[4] = {48, 32, 16, 0};
  for (int c = 0; c < 4; ++c) {
    l.lo[c] = lo[c];
    l.shift[c] = shift[c];
  }
  std::mt19937 rng(2);
  const int64_t n = 700;
  std::vector<int32_t> coords(static_cast<size_t>(n * 4));
  for (int64_t i = 0; i < n; ++i)
    for (int c = 0; c < 4; ++c)
      coords[static_cast<size_t>(i * 4 + c)] = static_cast<int32_t>(lo[c] + rng() % 1000);
  std::vector<uint64_t> keys(static_cast<size_t>(n));
  std::vector<int32_t> rows(static_cast<size_t>(n), -1);
  mc::emu::launch_pack_keys(coords.data(), n, l, keys.data(), rows.data(), nullptr);
  for (int64_t i = 0; i < n; ++i) {
    uint64_t want = 0;
    for (int c = 0; c < 4; ++c)
      want |= static_cast<uint64_t>(coords[static_cast<size_t>(i * 4 + c)] - lo[c]) << shift[c];
    ASSERT_EQ(keys[static_cast<size_t>(i)], want) << "row " << i;
    ASSERT_EQ(rows[static_cast<size_t>(i)], i);
  }
}

// The search, the exclusive scan (the host's here, CUB's on the device), the
// pair layout and the CSR starts of the pairs' output rows, as
// device_kernel_map.cpp chains them.
TEST(EmulatedHashMap, SearchPairsAndRowStartsFollowTheOffsets) {
  // Inputs: keys of 2-D points (x << 16 | y) on a 30 x 30 grid, about half present.
  std::mt19937 rng(3);
  std::vector<uint64_t> in_keys, out_keys;
  for (uint64_t x = 2; x < 32; ++x)
    for (uint64_t y = 2; y < 32; ++y) {
      if (rng() % 2) in_keys.push_back(x << 16 | y);
      if (rng() % 3 == 0) out_keys.push_back(x << 16 | y);
    }
  std::sort(out_keys.begin(), out_keys.end());
  std::vector<uint64_t> deltas;
  for (int64_t dx = -1; dx <= 1; ++dx)
    for (int64_t dy = -1; dy <= 1; ++dy) deltas.push_back(static_cast<uint64_t>(dx * 65536 + dy));
  const int64_t n_out = static_cast<int64_t>(out_keys.size()), K = 9, slots = n_out * K;
  Table t(4096);
  mc::emu::launch_hash_insert(t.view(), in_keys.data(), static_cast<int64_t>(in_keys.size()),
                              nullptr);
  const auto row_of = first_rows(in_keys);
  std::vector<int32_t> hit(static_cast<size_t>(slots)), flag(static_cast<size_t>(slots));
  mc::emu::launch_kernel_map_search(t.view(), out_keys.data(), n_out, deltas.data(), K, hit.data(),
                                    flag.data(), nullptr);
  for (int64_t k = 0; k < K; ++k)
    for (int64_t j = 0; j < n_out; ++j) {
      const auto it =
          row_of.find(out_keys[static_cast<size_t>(j)] + deltas[static_cast<size_t>(k)]);
      const int32_t want = it == row_of.end() ? -1 : it->second;
      ASSERT_EQ(hit[static_cast<size_t>(k * n_out + j)], want) << "offset " << k << " out " << j;
      ASSERT_EQ(flag[static_cast<size_t>(k * n_out + j)], want >= 0 ? 1 : 0);
    }

  std::vector<int32_t> pos(static_cast<size_t>(slots));
  std::exclusive_scan(flag.begin(), flag.end(), pos.begin(), 0);
  const int32_t total = pos.back() + flag.back();
  // Output rows in another order than their keys: out_order maps positions to rows.
  std::vector<int32_t> out_order(static_cast<size_t>(n_out));
  std::iota(out_order.begin(), out_order.end(), 0);
  std::shuffle(out_order.begin(), out_order.end(), rng);
  std::vector<int32_t> begin_only(static_cast<size_t>(K + 1), -1);
  mc::emu::launch_kernel_map_pairs(hit.data(), pos.data(), flag.data(), out_order.data(), n_out, K,
                                   nullptr, nullptr, begin_only.data(), nullptr);
  std::vector<int32_t> in_rows(static_cast<size_t>(total)), out_rows(in_rows.size());
  std::vector<int32_t> offset_begin(static_cast<size_t>(K + 1), -1);
  mc::emu::launch_kernel_map_pairs(hit.data(), pos.data(), flag.data(), out_order.data(), n_out, K,
                                   in_rows.data(), out_rows.data(), offset_begin.data(), nullptr);
  EXPECT_EQ(begin_only, offset_begin);
  EXPECT_EQ(offset_begin[static_cast<size_t>(K)], total);
  size_t p = 0;
  for (int64_t k = 0; k < K; ++k) {
    ASSERT_EQ(offset_begin[static_cast<size_t>(k)], static_cast<int32_t>(p)) << "offset " << k;
    for (int64_t j = 0; j < n_out; ++j) {
      const int32_t h = hit[static_cast<size_t>(k * n_out + j)];
      if (h < 0) continue;
      ASSERT_EQ(in_rows[p], h);
      ASSERT_EQ(out_rows[p], out_order[static_cast<size_t>(j)]);
      ++p;
    }
  }

  // CSR starts over the output rows: their pairs' rows sorted ascending.
  std::vector<int32_t> sorted(out_rows);
  std::sort(sorted.begin(), sorted.end());
  std::vector<int32_t> begin(static_cast<size_t>(n_out + 1), -1);
  mc::emu::launch_row_begin(sorted.data(), total, n_out, begin.data(), nullptr);
  for (int64_t r = 0; r <= n_out; ++r)
    ASSERT_EQ(
        begin[static_cast<size_t>(r)],
        std::lower_bound(sorted.begin(), sorted.end(), static_cast<int32_t>(r)) - sorted.begin())
        << "row " << r;
}

}  // namespace
