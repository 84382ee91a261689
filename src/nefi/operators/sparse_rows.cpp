#include "nefi/operators/sparse_rows.h"

#include <cstddef>

namespace nefi {

SparseRows transpose(const SparseRows& m) {
  SparseRows t;
  t.n_cols = m.n_rows();
  t.row_start.assign(static_cast<size_t>(m.n_cols) + 1, 0);
  for (int32_t c : m.col) ++t.row_start[static_cast<size_t>(c) + 1];
  for (int64_t c = 0; c < m.n_cols; ++c) t.row_start[c + 1] += t.row_start[c];
  t.col.resize(m.col.size());
  t.weight.resize(m.weight.size());
  std::vector<int64_t> next(t.row_start.begin(), t.row_start.end() - 1);
  // Rows ascending, entries ascending: each column's list keeps scatter order.
  for (int64_t r = 0; r < m.n_rows(); ++r)
    for (int64_t e = m.row_start[r]; e < m.row_start[r + 1]; ++e) {
      const int64_t at = next[m.col[e]]++;
      t.col[at] = static_cast<int32_t>(r);
      t.weight[at] = m.weight[e];
    }
  return t;
}

}  // namespace nefi
