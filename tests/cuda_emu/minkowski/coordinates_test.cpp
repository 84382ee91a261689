// coordinates.cu's kernels run on the emulated device (emulated_device.h):
// the column statistics (warp shuffles, then integer atomics) against a host
// loop and the CPU packer's bounds; the deduplication's run bookkeeping,
// chained as device_coordinates.cpp chains it (the host's stable sort and
// exclusive scan standing in for CUB's), against the CPU CoordinateMap's
// rows, unique_rows and inverse in both row orders; the strided and expanded
// maps against CoordinateManager's; flooring, expanding and gathering rows
// against host loops; and lookups against CoordinateMap::find, rows outside
// the bounds that pack onto a present key included. Every launch runs in both
// thread orders.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <memory>
#include <numeric>
#include <random>
#include <utility>
#include <vector>

#include "cuda_emu/emulated_device.h"
#include "cuda_emu/emulated_test_util.h"
#include "minkowski/coords/coordinate_manager.h"
#include "minkowski/coords/coordinate_map.h"
#include "minkowski/coords/kernel_region.h"
#include "minkowski/cuda/kernels.h"

// The emulated launchers this file runs: kernels.h's, in ::emu (a signature
// that drifts from its definition fails to link). launch_hash_clear and
// launch_hash_insert are hash_map.cu's (hash_map_test.cpp has that file
// rewritten into this binary): the lookup needs a table they filled.
namespace minkowski::cuda::emu {
void launch_column_stats(const int32_t* coords, int64_t n, int width, int64_t* stats, void* stream);
void launch_run_heads(const uint64_t* sorted_keys, int64_t n, int32_t* head, void* stream);
void launch_runs(const uint64_t* sorted_keys, const int32_t* sorted_rows, const int32_t* head,
                 const int32_t* run, int64_t n, int32_t* run_row, uint64_t* run_key,
                 int32_t* run_of, void* stream);
void launch_first_flags(const int32_t* run_row, const int32_t* run_of, int64_t n, int32_t* first,
                        void* stream);
void launch_first_order(const int32_t* run_row, const int32_t* run_of, const int32_t* first,
                        const int32_t* id, const uint64_t* keys, int64_t n, int32_t* inverse,
                        int32_t* unique_rows, uint64_t* row_key, void* stream);
void launch_gather_coordinates(const int32_t* coords, int width, const int32_t* rows, int64_t m,
                               int32_t* out, void* stream);
void launch_floor_coordinates(const int32_t* coords, int64_t n, int width, const int32_t* step,
                              int32_t* out, void* stream);
void launch_expand_coordinates(const int32_t* coords, int64_t n, int width, const int32_t* offsets,
                               int64_t K, int32_t* out, void* stream);
void launch_lookup_coordinates(HashTable t, const KeyLayout& layout, const int32_t* queries,
                               int64_t q, int32_t* found, void* stream);
void launch_hash_clear(HashTable t, void* stream);
void launch_hash_insert(HashTable t, const uint64_t* keys, int64_t n, void* stream);
}  // namespace minkowski::cuda::emu

namespace mc = minkowski::cuda;
using fkemu_test::in_both_orders;
using minkowski::CoordinateMap;
using minkowski::CoordinatePacker;
using minkowski::RowOrder;

namespace {

constexpr int32_t kUnwritten = -7;

size_t at(int64_t i) {
  return static_cast<size_t>(i);
}

// n rows of `width` columns: the batch in [0, 3), the others in [-span, span)
// and multiples of `multiple`, about a third repeating an earlier row (not
// next to it, mostly).
std::vector<int32_t> random_rows(int64_t n, int width, int32_t span, int32_t multiple,
                                 uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> rows(at(n * width));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t copy = i > 0 && rng() % 3 == 0 ? static_cast<int64_t>(rng() % i) : -1;
    for (int c = 0; c < width; ++c) {
      int32_t& v = rows[at(i * width + c)];
      if (copy >= 0)
        v = rows[at(copy * width + c)];
      else if (c == 0)
        v = static_cast<int32_t>(rng() % 3);
      else
        v = (static_cast<int32_t>(rng() % static_cast<uint32_t>(2 * span)) - span) / multiple *
            multiple;
    }
  }
  return rows;
}

// The CPU packer's layout as the kernels take it (device_coordinates.cpp's
// packer_layout computes the same from the column statistics).
mc::KeyLayout layout_of(const CoordinatePacker& p) {
  mc::KeyLayout l;
  l.width = p.width();
  for (int c = 0; c < p.width(); ++c) {
    l.lo[c] = p.min(c);
    l.hi[c] = p.min(c) + p.extent(c);
    l.shift[c] = p.shift(c);
  }
  return l;
}

std::vector<uint64_t> packed_keys(const CoordinatePacker& p, const std::vector<int32_t>& rows) {
  std::vector<uint64_t> keys(rows.size() / at(p.width()));
  for (size_t i = 0; i < keys.size(); ++i)
    keys[i] = p.pack_inside<uint64_t>(rows.data() + i * at(p.width()));
  return keys;
}

// A map as device_coordinates.cpp's make_map builds it from packed keys: the
// (key, row) pairs sorted stably, run heads flagged and scanned, the runs, in
// kFirstOccurrence order the first occurrences flagged and scanned, then the
// map's rows gathered. Every output starts as kUnwritten, so a position no
// launch wrote shows.
struct EmulatedMap {
  std::vector<int32_t> map_rows;  // input row of each map row
  std::vector<uint64_t> row_key;  // key of each map row
  std::vector<int32_t> inverse;   // map row of each input row
  std::vector<int32_t> coordinates;
  // The flags the device scans (n + 1 entries; first: kFirstOccurrence only).
  std::vector<int32_t> head, first;
};
EmulatedMap emulated_map(const std::vector<int32_t>& rows, int width,
                         const std::vector<uint64_t>& keys, RowOrder order) {
  const int64_t n = static_cast<int64_t>(keys.size());
  std::vector<int32_t> sorted_rows(at(n));
  std::iota(sorted_rows.begin(), sorted_rows.end(), 0);
  std::stable_sort(sorted_rows.begin(), sorted_rows.end(),
                   [&](int32_t a, int32_t b) { return keys[at(a)] < keys[at(b)]; });
  std::vector<uint64_t> sorted_keys(at(n));
  for (int64_t s = 0; s < n; ++s) sorted_keys[at(s)] = keys[at(sorted_rows[at(s)])];

  EmulatedMap m;
  m.head.assign(at(n + 1), kUnwritten);
  mc::emu::launch_run_heads(sorted_keys.data(), n, m.head.data(), nullptr);
  std::vector<int32_t> run(at(n + 1));
  std::exclusive_scan(m.head.begin(), m.head.end(), run.begin(), 0);
  const int64_t size = run[at(n)];
  std::vector<int32_t> run_row(at(size), kUnwritten), run_of(at(n), kUnwritten);
  std::vector<uint64_t> run_key(at(size), ~uint64_t{0});
  mc::emu::launch_runs(sorted_keys.data(), sorted_rows.data(), m.head.data(), run.data(), n,
                       run_row.data(), run_key.data(), run_of.data(), nullptr);
  if (order == RowOrder::kKeys) {
    m.map_rows = run_row;
    m.row_key = run_key;
    m.inverse = run_of;
  } else {
    m.first.assign(at(n + 1), kUnwritten);
    mc::emu::launch_first_flags(run_row.data(), run_of.data(), n, m.first.data(), nullptr);
    std::vector<int32_t> id(at(n + 1));
    std::exclusive_scan(m.first.begin(), m.first.end(), id.begin(), 0);
    m.map_rows.assign(at(size), kUnwritten);
    m.row_key.assign(at(size), ~uint64_t{0});
    m.inverse.assign(at(n), kUnwritten);
    mc::emu::launch_first_order(run_row.data(), run_of.data(), m.first.data(), id.data(),
                                keys.data(), n, m.inverse.data(), m.map_rows.data(),
                                m.row_key.data(), nullptr);
  }
  m.coordinates.assign(at(size * width), kUnwritten);
  mc::emu::launch_gather_coordinates(rows.data(), width, m.map_rows.data(), size,
                                     m.coordinates.data(), nullptr);
  return m;
}

// The emulated map of rows equals CoordinateMap's, row for row, with its
// unique_rows and inverse, and holds each map row's key.
void expect_cpu_map(const std::vector<int32_t>& rows, int width, RowOrder order) {
  const int64_t n = static_cast<int64_t>(rows.size()) / width;
  std::vector<int64_t> unique_rows, inverse;
  const CoordinateMap cpu(rows.data(), n, width, std::vector<int32_t>(at(width - 1), 1),
                          &unique_rows, &inverse, order);
  const std::vector<uint64_t> keys = packed_keys(cpu.packer(), rows);
  in_both_orders([&](fkemu::Order) {
    const EmulatedMap m = emulated_map(rows, width, keys, order);
    EXPECT_EQ(m.coordinates, cpu.coordinates());
    EXPECT_EQ(std::vector<int64_t>(m.map_rows.begin(), m.map_rows.end()), unique_rows);
    EXPECT_EQ(std::vector<int64_t>(m.inverse.begin(), m.inverse.end()), inverse);
    ASSERT_EQ(m.row_key.size(), unique_rows.size());
    for (size_t r = 0; r < unique_rows.size(); ++r)
      ASSERT_EQ(m.row_key[r], keys[at(unique_rows[r])]) << "map row " << r;
    EXPECT_EQ(m.head.back(), 0);
    if (order == RowOrder::kFirstOccurrence) {
      EXPECT_EQ(m.first.back(), 0);
    }
  });
}

TEST(EmulatedCoordinates, ColumnStatsAreExactForEveryWidth) {
  std::mt19937 rng(1);
  // 37 rows: one block, its second warp one row long, its other warps
  // without rows; 300: a full block and a partial one, their warps' parts
  // combined by the atomics. (Each shuffle is a warp barrier, the emulator's
  // costly step: 300 rows at two widths only.)
  std::vector<std::pair<int64_t, int>> shapes{{300, 1}, {300, mc::kMaxWidth}};
  for (int width = 1; width <= mc::kMaxWidth; ++width) shapes.emplace_back(37, width);
  for (const auto& [n, width] : shapes) {
    SCOPED_TRACE(testing::Message() << n << " rows x " << width);
    // Each value repeats the row above's half of the time (changes below
    // n - 1); the int32 extremes test the 64-bit statistics.
    std::vector<int32_t> rows(at(n * width));
    for (int64_t i = 0; i < n; ++i)
      for (int c = 0; c < width; ++c) {
        const uint32_t draw = rng() % 16;
        int32_t& v = rows[at(i * width + c)];
        if (i > 0 && draw < 8)
          v = rows[at((i - 1) * width + c)];
        else if (draw == 8)
          v = INT32_MIN;
        else if (draw == 9)
          v = INT32_MAX;
        else
          v = static_cast<int32_t>(rng() % 2001) - 1000;
      }
    std::vector<int64_t> want(at(3 * width));
    for (int c = 0; c < width; ++c) {
      int64_t lo = INT64_MAX, hi = INT64_MIN, changes = 0;
      for (int64_t i = 0; i < n; ++i) {
        const int32_t v = rows[at(i * width + c)];
        lo = std::min<int64_t>(lo, v);
        hi = std::max<int64_t>(hi, v);
        if (i > 0) changes += v != rows[at((i - 1) * width + c)];
      }
      want[at(c)] = lo;
      want[at(width + c)] = hi;
      want[at(2 * width + c)] = changes;
    }
    // The bounds are the CPU packer's, which the device map's layout
    // copies (the packer refuses more than three columns of 33-bit extents).
    if (width <= 3) {
      const CoordinatePacker packer(rows.data(), n, width);
      for (int c = 0; c < width; ++c) {
        ASSERT_EQ(want[at(c)], packer.min(c));
        ASSERT_EQ(want[at(width + c)], packer.min(c) + packer.extent(c));
      }
    }
    in_both_orders([&](fkemu::Order) {
      std::vector<int64_t> stats(at(3 * width), 12345);
      mc::emu::launch_column_stats(rows.data(), n, width, stats.data(), nullptr);
      EXPECT_EQ(stats, want);
    });
  }
}

TEST(EmulatedCoordinates, ColumnStatsOfNoRowsAreTheIdentities) {
  for (int width : {1, mc::kMaxWidth}) {
    std::vector<int64_t> stats(at(3 * width), 12345);
    mc::emu::launch_column_stats(nullptr, 0, width, stats.data(), nullptr);
    for (int c = 0; c < width; ++c) {
      EXPECT_EQ(stats[at(c)], INT64_MAX);
      EXPECT_EQ(stats[at(width + c)], INT64_MIN);
      EXPECT_EQ(stats[at(2 * width + c)], 0);
    }
  }
}

TEST(EmulatedCoordinates, RunHeadsFlagWhereEachRunOfKeysStarts) {
  std::mt19937_64 rng(2);
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{600}}) {
    std::vector<uint64_t> keys(at(n));
    for (int64_t s = 0; s < n; ++s)
      keys[at(s)] = s > 0 && rng() % 2 ? keys[at(s - 1)] : rng() & ((uint64_t{1} << 62) - 1);
    std::sort(keys.begin(), keys.end());
    std::vector<int32_t> want(at(n + 1), 0);
    for (int64_t s = 0; s < n; ++s) want[at(s)] = s == 0 || keys[at(s)] != keys[at(s - 1)];
    in_both_orders([&](fkemu::Order) {
      std::vector<int32_t> head(at(n + 1), kUnwritten);
      mc::emu::launch_run_heads(keys.data(), n, head.data(), nullptr);
      EXPECT_EQ(head, want) << n << " keys";
    });
  }
}

TEST(EmulatedCoordinates, DeduplicationMatchesTheCpuMapInBothRowOrders) {
  for (RowOrder order : {RowOrder::kFirstOccurrence, RowOrder::kKeys}) {
    SCOPED_TRACE(order == RowOrder::kKeys ? "key order" : "first-occurrence order");
    expect_cpu_map(random_rows(700, 4, 6, 1, 3), 4, order);
    // Eight columns, wider spans: 58 bits of key.
    expect_cpu_map(random_rows(300, 8, 100, 1, 4), 8, order);
    expect_cpu_map(random_rows(1, 3, 5, 1, 5), 3, order);
    // One row repeated: one run holding every row.
    std::vector<int32_t> same;
    for (int i = 0; i < 260; ++i) same.insert(same.end(), {1, -4, 9});
    expect_cpu_map(same, 3, order);
  }
}

TEST(EmulatedCoordinates, DeduplicationOfNoRowsFlagsOnlyTheEnd) {
  for (RowOrder order : {RowOrder::kFirstOccurrence, RowOrder::kKeys}) {
    const EmulatedMap m = emulated_map({}, 4, {}, order);
    EXPECT_EQ(m.head, std::vector<int32_t>{0});
    if (order == RowOrder::kFirstOccurrence) {
      EXPECT_EQ(m.first, std::vector<int32_t>{0});
    }
    EXPECT_TRUE(m.map_rows.empty() && m.inverse.empty() && m.coordinates.empty());
  }
}

TEST(EmulatedCoordinates, GatherCopiesTheNamedRows) {
  std::mt19937 rng(6);
  for (int width : {1, 3, mc::kMaxWidth}) {
    const int64_t n = 90, m = 301;
    const std::vector<int32_t> coords = random_rows(n, width, 1000, 1, 7);
    std::vector<int32_t> rows(at(m));
    for (int32_t& r : rows) r = static_cast<int32_t>(rng() % n);
    std::vector<int32_t> want;
    for (int32_t r : rows)
      want.insert(want.end(), &coords[at(r * width)], &coords[at((r + 1) * width)]);
    in_both_orders([&](fkemu::Order) {
      std::vector<int32_t> out(at(m * width), kUnwritten);
      mc::emu::launch_gather_coordinates(coords.data(), width, rows.data(), m, out.data(), nullptr);
      EXPECT_EQ(out, want) << "width " << width;
    });
  }
  std::vector<int32_t> untouched{kUnwritten};
  mc::emu::launch_gather_coordinates(nullptr, 4, nullptr, 0, untouched.data(), nullptr);
  EXPECT_EQ(untouched[0], kUnwritten);
}

TEST(EmulatedCoordinates, FloorRoundsSpatialColumnsTowardMinusInfinity) {
  // Per spatial axis a step: 1 (unchanged), 2, 3, 7 and 2^30; the batch (also
  // negative here) is kept.
  const int width = 6;
  const std::vector<int32_t> step{1, 2, 3, 7, int32_t{1} << 30};
  std::mt19937 rng(8);
  std::vector<int32_t> coords;
  for (int i = 0; i < 200; ++i)
    for (int c = 0; c < width; ++c) coords.push_back(static_cast<int32_t>(rng() % 61) - 30);
  // Rows of exact multiples, both sides of zero, and the int32 ends whose
  // floors still fit (INT32_MIN is a multiple of 2 and of 2^30; 7 and 3 take
  // INT32_MIN + 6 and + 2 down to the nearest multiples, -2^31 + 5 and + 1).
  const std::vector<std::vector<int32_t>> edges{
      {-1, -1, -2, -3, -7, -(int32_t{1} << 30)},
      {5, 0, 0, 0, 0, 0},
      {0, INT32_MAX, INT32_MAX, INT32_MAX, INT32_MAX, INT32_MAX},
      {INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN + 2, INT32_MIN + 6, INT32_MIN},
      {2, -1, -1, -1, -1, -1},
      {2, -29, -5, -4, -8, -(int32_t{1} << 30) - 1},
  };
  for (const auto& row : edges) coords.insert(coords.end(), row.begin(), row.end());
  const int64_t n = static_cast<int64_t>(coords.size()) / width;
  std::vector<int32_t> want(coords.size());
  for (int64_t i = 0; i < n; ++i)
    for (int c = 0; c < width; ++c) {
      const int64_t v = coords[at(i * width + c)];
      if (c == 0) {
        want[at(i * width)] = static_cast<int32_t>(v);
        continue;
      }
      // Truncating division, one step down where it rounded a negative up.
      const int64_t t = step[at(c - 1)];
      const int64_t q = v / t - (v % t != 0 && v < 0);
      ASSERT_GE(q * t, INT32_MIN);
      want[at(i * width + c)] = static_cast<int32_t>(q * t);
    }
  // Spot checks of the reference itself.
  ASSERT_EQ(want[at(200 * width + 2)], -2);   // -2 floored to a multiple of 2
  ASSERT_EQ(want[at(204 * width + 3)], -3);   // -1 floored to a multiple of 3
  ASSERT_EQ(want[at(205 * width + 4)], -14);  // -8 floored to a multiple of 7
  in_both_orders([&](fkemu::Order) {
    std::vector<int32_t> out(coords.size(), kUnwritten);
    mc::emu::launch_floor_coordinates(coords.data(), n, width, step.data(), out.data(), nullptr);
    EXPECT_EQ(out, want);
  });
  std::vector<int32_t> untouched{kUnwritten};
  mc::emu::launch_floor_coordinates(nullptr, 0, width, step.data(), untouched.data(), nullptr);
  EXPECT_EQ(untouched[0], kUnwritten);
}

TEST(EmulatedCoordinates, ExpandAddsEveryOffsetToEveryRow) {
  const int width = 4, d = 3;
  const int64_t n = 70;
  const std::vector<int32_t> coords = random_rows(n, width, 50, 1, 9);
  // 5 offsets: negative, zero and mixed.
  const std::vector<int32_t> offsets{0, 0, 0, -1, 2, -3, 4, -5, 6, -100, 0, 100, 7, 7, -7};
  const int64_t K = static_cast<int64_t>(offsets.size()) / d;
  std::vector<int32_t> want;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < K; ++k) {
      want.push_back(coords[at(i * width)]);
      for (int a = 0; a < d; ++a)
        want.push_back(coords[at(i * width + 1 + a)] + offsets[at(k * d + a)]);
    }
  in_both_orders([&](fkemu::Order) {
    std::vector<int32_t> out(want.size(), kUnwritten);
    mc::emu::launch_expand_coordinates(coords.data(), n, width, offsets.data(), K, out.data(),
                                       nullptr);
    EXPECT_EQ(out, want);
  });
  std::vector<int32_t> untouched{kUnwritten};
  mc::emu::launch_expand_coordinates(coords.data(), n, width, offsets.data(), 0, untouched.data(),
                                     nullptr);
  mc::emu::launch_expand_coordinates(nullptr, 0, width, offsets.data(), K, untouched.data(),
                                     nullptr);
  EXPECT_EQ(untouched[0], kUnwritten);
}

// stride_coordinates' chain (floor, then the map in key order) against
// CoordinateManager::stride's map; expand_coordinates' (expand, then the map
// in first-occurrence order) against CoordinateManager::expand's.
TEST(EmulatedCoordinates, StridedAndExpandedMapsMatchTheCpuManager) {
  const int width = 4;
  const std::vector<int32_t> rows = random_rows(400, width, 40, 2, 10);
  const int64_t n = static_cast<int64_t>(rows.size()) / width;
  minkowski::CoordinateManager manager(width - 1);
  const minkowski::MapKey in = manager.insert_rows(rows.data(), n, {2, 2, 2}, "").key;
  const std::vector<int32_t>& in_rows = manager.map(in)->coordinates();
  const int64_t in_size = manager.size(in);

  const std::vector<int32_t> stride{2, 3, 1}, ts{4, 6, 2};
  const minkowski::MapKey strided = manager.stride(in, stride);
  const std::vector<int32_t> cpu_strided = manager.coordinates(strided).to_vector<int32_t>();
  const std::vector<int32_t> out_ts{1, 1, 1};
  const minkowski::KernelRegion region = minkowski::KernelRegion::cube({2});
  const minkowski::MapKey expanded = manager.expand(in, region, out_ts);
  const std::vector<int32_t> cpu_expanded = manager.coordinates(expanded).to_vector<int32_t>();
  const std::vector<int32_t> offsets = region.offsets(out_ts);
  const int64_t K = static_cast<int64_t>(offsets.size()) / (width - 1);
  in_both_orders([&](fkemu::Order) {
    std::vector<int32_t> floored(in_rows.size(), kUnwritten);
    mc::emu::launch_floor_coordinates(in_rows.data(), in_size, width, ts.data(), floored.data(),
                                      nullptr);
    const CoordinatePacker floored_packer(floored.data(), in_size, width);
    EXPECT_EQ(emulated_map(floored, width, packed_keys(floored_packer, floored), RowOrder::kKeys)
                  .coordinates,
              cpu_strided);

    std::vector<int32_t> grown(at(in_size * K * width), kUnwritten);
    mc::emu::launch_expand_coordinates(in_rows.data(), in_size, width, offsets.data(), K,
                                       grown.data(), nullptr);
    const CoordinatePacker grown_packer(grown.data(), in_size * K, width);
    EXPECT_EQ(
        emulated_map(grown, width, packed_keys(grown_packer, grown), RowOrder::kFirstOccurrence)
            .coordinates,
        cpu_expanded);
  });
}

TEST(EmulatedCoordinates, LookupFindsMapRowsAndRefusesRowsOutsideTheBounds) {
  const int width = 4;
  const std::vector<int32_t> rows = random_rows(500, width, 6, 1, 11);
  const int64_t n = static_cast<int64_t>(rows.size()) / width;
  const CoordinateMap cpu(rows.data(), n, width, {1, 1, 1});
  const CoordinatePacker& packer = cpu.packer();
  const mc::KeyLayout layout = layout_of(packer);
  const std::vector<uint64_t> keys = packed_keys(packer, rows);
  const EmulatedMap m = emulated_map(rows, width, keys, RowOrder::kFirstOccurrence);
  const int64_t size = cpu.size();
  std::vector<uint64_t> table_keys(2048);
  std::vector<int32_t> table_values(2048);
  const mc::HashTable table{table_keys.data(), table_values.data(), 2048};
  ASSERT_GT(table.capacity, 2 * size);
  mc::emu::launch_hash_clear(table, nullptr);
  mc::emu::launch_hash_insert(table, m.row_key.data(), size, nullptr);

  // Queries: the input rows (duplicates included), every row of the bounding
  // box one wider than the bounds on every column (absent rows, rows just
  // outside), and rows outside whose packed key is a map row's.
  std::vector<int32_t> queries(rows);
  for (int32_t b = -1; b <= 3; ++b)
    for (int64_t x = layout.lo[1] - 1; x <= layout.hi[1] + 1; ++x)
      for (int64_t y = layout.lo[2] - 1; y <= layout.hi[2] + 1; ++y)
        for (int64_t z = layout.lo[3] - 1; z <= layout.hi[3] + 1; ++z)
          queries.insert(queries.end(), {b, static_cast<int32_t>(x), static_cast<int32_t>(y),
                                         static_cast<int32_t>(z)});
  // Column c one step down costs 2^shift[c]; column c + 1 (packed right
  // below it, bits(c + 1) = shift[c] - shift[c + 1]) pays it back past its
  // maximum: the same key, on a row outside. Columns are ORed in, so column
  // c's new lowest bit must be clear.
  int64_t aliases = 0;
  for (int64_t r = 0; r < size; ++r)
    for (int c = 0; c + 1 < width; ++c) {
      const int32_t* row = cpu.row(r);
      if ((row[c] - layout.lo[c]) % 2 == 0 || layout.shift[c] == layout.shift[c + 1]) continue;
      std::vector<int32_t> q(row, row + width);
      q[at(c)] -= 1;
      q[at(c + 1)] += int32_t{1} << (layout.shift[c] - layout.shift[c + 1]);
      ASSERT_EQ(packer.pack_inside<uint64_t>(q.data()), m.row_key[at(r)]);
      queries.insert(queries.end(), q.begin(), q.end());
      ++aliases;
    }
  ASSERT_GT(aliases, 100);
  const int64_t q = static_cast<int64_t>(queries.size()) / width;
  std::vector<int32_t> want(at(q));
  for (int64_t i = 0; i < q; ++i)
    want[at(i)] = static_cast<int32_t>(cpu.find(&queries[at(i * width)]));
  for (int64_t i = q - aliases; i < q; ++i) ASSERT_EQ(want[at(i)], -1);
  in_both_orders([&](fkemu::Order) {
    std::vector<int32_t> found(at(q), kUnwritten);
    mc::emu::launch_lookup_coordinates(table, layout, queries.data(), q, found.data(), nullptr);
    EXPECT_EQ(found, want);
  });
}

}  // namespace
