// transpose(SparseRows): the transpose of a small matrix with an empty row
// and an empty column, entries in the order a scatter over the rows adds
// them, and transposing twice gives the matrix back.
#include "nefi/operators/sparse_rows.h"

#include <gtest/gtest.h>

namespace {

TEST(NefiSparseRows, TransposeKeepsTheScatterOrder) {
  // 3 x 4: row 0 (1: 1.0, 3: 2.0), row 1 empty, row 2 (0: 3.0, 1: 4.0, 3: 5.0);
  // column 2 empty.
  nefi::SparseRows m;
  m.n_cols = 4;
  m.row_start = {0, 2, 2, 5};
  m.col = {1, 3, 0, 1, 3};
  m.weight = {1.0, 2.0, 3.0, 4.0, 5.0};
  const nefi::SparseRows t = nefi::transpose(m);
  EXPECT_EQ(t.n_rows(), 4);
  EXPECT_EQ(t.n_cols, 3);
  EXPECT_EQ(t.row_start, (std::vector<int64_t>{0, 1, 3, 3, 5}));
  EXPECT_EQ(t.col, (std::vector<int32_t>{2, 0, 2, 0, 2}));
  EXPECT_EQ(t.weight, (std::vector<double>{3.0, 1.0, 4.0, 2.0, 5.0}));
  const nefi::SparseRows back = nefi::transpose(t);
  EXPECT_EQ(back.n_cols, m.n_cols);
  EXPECT_EQ(back.row_start, m.row_start);
  EXPECT_EQ(back.col, m.col);
  EXPECT_EQ(back.weight, m.weight);
}

}  // namespace
