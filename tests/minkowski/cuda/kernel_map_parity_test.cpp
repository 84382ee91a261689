// Device kernel maps and hash table against the CPU: the device build must
// give the CPU's pairs bit for bit (offset ranges, input and output rows in
// order), and its row indices the CPU's by_out / by_in. The key-layout test
// checks, on the CPU alone, the property the device build relies on.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "device_test_util.h"
#include "minkowski/cuda/device_kernel_map.h"

namespace minkowski {
namespace {

using cuda_test::make_map;
using cuda_test::random_rows;
using cuda_test::strided_map;

struct MapCase {
  std::string name;
  std::shared_ptr<CoordinateMap> in, out;
  std::vector<int32_t> offsets;
};

// Submanifold, strided, dilated, cross and higher-dimensional maps, on rows in
// random and in sorted order.
std::vector<MapCase> map_cases() {
  std::vector<MapCase> cases;
  auto sub = make_map(random_rows(3, 1500, 9, 1, 2, 1), 3, 1);
  cases.push_back({"cube3_shuffled", sub, sub, KernelRegion::cube({3}).offsets({1, 1, 1})});
  auto sorted = make_map(random_rows(3, 1500, 9, 2, 2, 2, false), 3, 2);
  cases.push_back({"cube3_sorted_ts2", sorted, sorted, KernelRegion::cube({3}).offsets({2, 2, 2})});
  cases.push_back(
      {"cube2_stride2", sub, strided_map(*sub, 1, 2), KernelRegion::cube({2}).offsets({1, 1, 1})});
  cases.push_back(
      {"cube3_stride2", sub, strided_map(*sub, 1, 2), KernelRegion::cube({3}).offsets({1, 1, 1})});
  cases.push_back({"cross5_dilated", sub, sub, KernelRegion::cross({5}, {2}).offsets({1, 1, 1})});
  auto plane = make_map(random_rows(2, 400, 30, 1, 3, 3), 2, 1);
  cases.push_back({"2d_cube5", plane, plane, KernelRegion::cube({5}).offsets({1, 1})});
  auto four = make_map(random_rows(4, 800, 4, 1, 1, 4), 4, 1);
  cases.push_back({"4d_cube3", four, four, KernelRegion::cube({3}).offsets({1, 1, 1, 1})});
  return cases;
}

// The packed key of a row under a layout.
uint64_t key_of(const KernelMapKeyLayout& l, const int32_t* row) {
  uint64_t k = 0;
  for (size_t c = 0; c < l.lo.size(); ++c)
    k |= static_cast<uint64_t>(int64_t{row[c]} - l.lo[c]) << l.shift[c];
  return k;
}

// The CPU's pairs of each offset ascend in the layout's key of their output
// row, and key(in) = key(out) + delta(offset): what lets the device build
// (sort the outputs by key, search key + delta) reproduce them bit for bit.
// Runs without a GPU.
TEST(MinkowskiCudaKeyLayout, CpuPairsFollowOutputKeys) {
  for (const MapCase& c : map_cases()) {
    SCOPED_TRACE(c.name);
    auto cpu = build_kernel_map(*c.in, *c.out, c.offsets);
    const KernelMapKeyLayout l = kernel_map_key_layout(*c.in, *c.out, c.offsets);
    ASSERT_LE(l.bits, 63);
    const int d = c.in->dimension();
    for (int64_t k = 0; k < cpu->volume; ++k) {
      uint64_t delta = 0;
      for (int i = 0; i < d; ++i)
        delta += static_cast<uint64_t>(int64_t{c.offsets[k * d + i]}) << l.shift[i + 1];
      for (int64_t p = cpu->offset_begin[k]; p < cpu->offset_begin[k + 1]; ++p) {
        const uint64_t ko = key_of(l, c.out->row(cpu->out_rows[p]));
        ASSERT_EQ(key_of(l, c.in->row(cpu->in_rows[p])), ko + delta) << "pair " << p;
        if (p > cpu->offset_begin[k]) {
          ASSERT_LT(key_of(l, c.out->row(cpu->out_rows[p - 1])), ko) << "pair " << p;
        }
      }
    }
  }
}

std::vector<int32_t> host_i32(const fk::Tensor& t) {
  return t.to_vector<int32_t>();
}

// A device row index against the CPU's (pair ids per row, in order).
void expect_row_index(const cuda::DeviceRowIndex& got, const RowIndex& want, int64_t rows) {
  const std::vector<int32_t> begin = host_i32(got.begin), pair = host_i32(got.pair);
  ASSERT_EQ(static_cast<int64_t>(begin.size()), rows + 1);
  for (int64_t r = 0; r <= rows; ++r) ASSERT_EQ(begin[r], want.begin[r]) << "row " << r;
  for (size_t e = 0; e < pair.size(); ++e) ASSERT_EQ(pair[e], want.entries[e].pair) << e;
}

TEST(MinkowskiCudaKernelMap, MatchesCpuBitwise) {
  MK_SKIP_WITHOUT_GPU();
  for (const MapCase& c : map_cases()) {
    SCOPED_TRACE(c.name);
    auto cpu = build_kernel_map(*c.in, *c.out, c.offsets);
    cuda::DeviceKernelMap dev = cuda::build_device_kernel_map(*c.in, *c.out, c.offsets);
    ASSERT_EQ(dev.volume, cpu->volume);
    ASSERT_EQ(dev.offset_begin, cpu->offset_begin);
    const std::vector<int32_t> in = host_i32(dev.in_rows), out = host_i32(dev.out_rows);
    EXPECT_TRUE(std::equal(in.begin(), in.end(), cpu->in_rows.begin(), cpu->in_rows.end()));
    EXPECT_TRUE(std::equal(out.begin(), out.end(), cpu->out_rows.begin(), cpu->out_rows.end()));
    expect_row_index(dev.by_out, cpu->by_out(), cpu->out_size);
    expect_row_index(dev.by_in, cpu->by_in(), cpu->in_size);
    // A second build is the same (no scheduling dependence), and to_host round-trips.
    cuda::DeviceKernelMap again = cuda::build_device_kernel_map(*c.in, *c.out, c.offsets);
    EXPECT_EQ(host_i32(again.in_rows), in);
    EXPECT_EQ(host_i32(again.out_rows), out);
    auto host = dev.to_host();
    EXPECT_EQ(host->offset_begin, cpu->offset_begin);
    EXPECT_TRUE(std::equal(host->in_rows.begin(), host->in_rows.end(), cpu->in_rows.begin(),
                           cpu->in_rows.end()));
  }
}

TEST(MinkowskiCudaKernelMap, EmptyMapsAndUpload) {
  MK_SKIP_WITHOUT_GPU();
  auto a = make_map(random_rows(3, 200, 3, 1, 1, 5), 3, 1);
  std::vector<int32_t> none;
  auto empty = std::make_shared<CoordinateMap>(none.data(), 0, 4, std::vector<int32_t>{1, 1, 1});
  const auto off = KernelRegion::cube({3}).offsets({1, 1, 1});
  cuda::DeviceKernelMap e = cuda::build_device_kernel_map(*a, *empty, off);
  EXPECT_EQ(e.pairs(), 0);
  EXPECT_EQ(e.offset_begin, std::vector<int64_t>(28, 0));
  auto cpu = build_kernel_map(*a, *a, off);
  cuda::DeviceKernelMap up = cuda::upload_kernel_map(*cpu);
  EXPECT_EQ(up.offset_begin, cpu->offset_begin);
  expect_row_index(up.by_out, cpu->by_out(), cpu->out_size);
  expect_row_index(up.by_in, cpu->by_in(), cpu->in_size);
}

TEST(MinkowskiCudaHashTable, FirstOccurrenceAndMisses) {
  MK_SKIP_WITHOUT_GPU();
  // Rows 0..3 with row 3 repeating row 1; queries: every row, then absent ones.
  const std::vector<int32_t> rows = {0, 1, 2, 3, 0, -4, 5, 6, 1, 0, 0, 0, 0, -4, 5, 6};
  const std::vector<int32_t> queries = {0, 1, 2, 3, 0, -4, 5, 6, 1, 0,
                                        0, 0, 1, 1, 2, 3,  0, 0, 0, 1};
  auto m = make_map(rows, 3, 1);
  const auto off = KernelRegion::cube({3}).offsets({1, 1, 1});
  const KernelMapKeyLayout l = kernel_map_key_layout(*m, *m, off);
  const std::vector<int32_t> found = cuda::device_hash_lookup(rows, queries, 4, l);
  EXPECT_EQ(found, (std::vector<int32_t>{0, 1, 2, -1, -1}));
  // A query one below every column's low end packs to all ones, the empty-slot
  // key: a miss, not the first empty slot's value.
  std::vector<int32_t> below;
  for (int64_t lo : l.lo) below.push_back(static_cast<int32_t>(lo - 1));
  EXPECT_EQ(cuda::device_hash_lookup(rows, below, 4, l), (std::vector<int32_t>{-1}));
  // Many keys (a table of thousands of slots, long probe chains included).
  const std::vector<int32_t> many = random_rows(3, 5000, 30, 1, 4, 6);
  auto mm = make_map(many, 3, 1);
  const KernelMapKeyLayout lm = kernel_map_key_layout(*mm, *mm, off);
  const std::vector<int32_t> got = cuda::device_hash_lookup(many, many, 4, lm);
  for (int32_t i = 0; i < 5000; ++i) ASSERT_EQ(got[i], i);
}

}  // namespace
}  // namespace minkowski
