// A kernel map's row blocks (row_blocks.h) against a plain bucketing of its
// pair arrays, on both sides, for symmetric (input side through the mirror),
// strided and asymmetric maps; built once per map and side and kept; a
// transposed map's are its own; a row meeting an offset twice is refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "fk/fk.h"
#include "minkowski/coords/coordinate_rows.h"
#include "minkowski/minkowski.h"

namespace minkowski {
namespace {

// Every bucket (block b, offset k) holds exactly offset k's pairs whose row
// on `inputs`' side lies in block b, rows ascending, with the right other row.
void expect_row_blocks(const KernelMap& km, const RowBlocks& rb, bool inputs) {
  const int64_t rows = inputs ? km.in_size : km.out_size, K = km.volume;
  ASSERT_EQ(rb.rows, rows);
  ASSERT_EQ(rb.volume, K);
  const int64_t nb = (rows + RowBlocks::kRows - 1) / RowBlocks::kRows;
  ASSERT_EQ(rb.blocks(), nb);
  ASSERT_EQ(static_cast<int64_t>(rb.begin.size()), nb * K + 1);
  // want[b * K + k]: (row, other) of the bucket, by row
  std::vector<std::vector<std::pair<int32_t, int32_t>>> want(nb * K);
  for (int64_t k = 0; k < K; ++k)
    for (int64_t p = km.offset_begin[k]; p < km.offset_begin[k + 1]; ++p) {
      const int32_t self = inputs ? km.in_rows[p] : km.out_rows[p];
      const int32_t other = inputs ? km.out_rows[p] : km.in_rows[p];
      want[self / RowBlocks::kRows * K + k].push_back({self, other});
    }
  EXPECT_EQ(rb.begin[0], 0);
  for (int64_t b = 0; b < nb; ++b)
    for (int64_t k = 0; k < K; ++k) {
      auto& w = want[b * K + k];
      std::sort(w.begin(), w.end());
      const int64_t j0 = rb.begin[b * K + k], j1 = rb.begin[b * K + k + 1];
      ASSERT_EQ(j1 - j0, static_cast<int64_t>(w.size())) << "block " << b << " offset " << k;
      for (int64_t j = j0; j < j1; ++j) {
        EXPECT_EQ(b * RowBlocks::kRows + rb.row[j], w[j - j0].first) << j;
        EXPECT_EQ(rb.other[j], w[j - j0].second) << j;
      }
    }
  EXPECT_EQ(rb.begin[nb * K], km.pairs());
}

TEST(MinkowskiRowBlocks, BucketsAgainstPlainRegrouping) {
  CoordinateManager m(3);
  auto k = m.insert(coords(lcg_cloud(2500, 7, 8), 4), {1}).key;  // ~2000 rows: many blocks
  auto sub = m.kernel_map(k, k, KernelRegion::cube({3}), false);
  auto cross = m.kernel_map(k, k, KernelRegion::cross({3}), false);  // mirror out of order
  auto strided = m.kernel_map(k, m.stride(k, {2}), KernelRegion::cube({3}), false);
  auto even = m.kernel_map(k, k, KernelRegion::cube({2}), false);  // not symmetric
  ASSERT_FALSE(sub->mirror.empty());
  ASSERT_TRUE(strided->mirror.empty() && even->mirror.empty());
  ASSERT_GT(sub->out_size, 4 * RowBlocks::kRows);
  for (const auto& km : {sub, cross, strided, even})
    for (bool inputs : {false, true}) expect_row_blocks(*km, km->row_blocks(inputs), inputs);
}

TEST(MinkowskiRowBlocks, BuiltOncePerMapAndSide) {
  CoordinateManager m(3);
  auto k = m.insert(coords(lcg_cloud(600, 3, 8), 4), {1}).key;
  auto km = m.kernel_map(k, m.stride(k, {2}), KernelRegion::cube({3}), false);
  km->by_in();  // the input side's blocks come from by_in: count it before
  const int64_t before = km->bytes();
  const RowBlocks& out = km->row_blocks(false);
  const RowBlocks& in = km->row_blocks(true);
  EXPECT_NE(&out, &in);
  EXPECT_EQ(&km->row_blocks(false), &out);  // kept: a second call builds nothing
  EXPECT_EQ(&km->row_blocks(true), &in);
  EXPECT_EQ(km->bytes(), before + out.bytes() + in.bytes());  // counted as the map's
  // The transpose builds its own (its output side is our input side).
  auto tr = m.kernel_map(m.stride(k, {2}), k, KernelRegion::cube({3}), true);
  const RowBlocks& t_out = tr->row_blocks(false);
  EXPECT_NE(&t_out, &in);
  expect_row_blocks(*tr, t_out, false);
  ASSERT_EQ(t_out.begin.size(), in.begin.size());
  EXPECT_TRUE(std::equal(t_out.begin.begin(), t_out.begin.end(), in.begin.begin()));
  EXPECT_TRUE(std::equal(t_out.other.begin(), t_out.other.end(), in.other.begin()));
  EXPECT_TRUE(std::equal(t_out.row.begin(), t_out.row.end(), in.row.begin()));
}

TEST(MinkowskiRowBlocks, RefuseARowMeetingAnOffsetTwice) {
  KernelMap m;
  m.volume = 2;
  m.in_size = 3;
  m.out_size = 2;
  m.offset_begin = {0, 1, 3};
  m.in_rows = {0, 1, 2};
  m.out_rows = {1, 0, 0};  // output row 0 meets offset 1 twice
  try {
    m.row_blocks(false);
    FAIL() << "no error";
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("at most one pair per row and offset"), std::string::npos)
        << e.what();
  }
  // the input side has one pair a row and offset: fine
  expect_row_blocks(m, m.row_blocks(true), true);
}

}  // namespace
}  // namespace minkowski
