#pragma once
// SparseRows: a sparse matrix by rows (CSR), the form in which operators that
// are a fixed linear map store it (the Radon projection, the
// advection-diffusion stencil), with its transpose as rows again so that an
// adjoint is a gather too.
#include <cstdint>
#include <vector>

namespace nefi {

// Row r's entries are [row_start[r], row_start[r + 1]) of (col, weight), in
// the order they are summed.
struct SparseRows {
  int64_t n_cols = 0;
  std::vector<int64_t> row_start{0};
  std::vector<int32_t> col;
  std::vector<double> weight;
  int64_t n_rows() const { return static_cast<int64_t>(row_start.size()) - 1; }
};

// The transpose as rows again: column c of m becomes row c, its entries in
// ascending row and, within a row, entry order of m -- the order in which a
// scatter over m's rows adds them, so a gather over the transpose sums each
// output in the same order as that scatter.
SparseRows transpose(const SparseRows& m);

}  // namespace nefi
