#pragma once
// The flux trace's 1/σ term of the eit operator (config key trace: flux;
// eit_model.h's flux_trace_matrix): C (1/σ), with C a (R, n·n) matrix whose
// only nonzero columns are boundary cells (each face voltage takes half a
// cell of the Neumann flux over its boundary cell's σ).
//
// Algorithm: C is kept as its boundary-ring columns, (R, 4n − 4) f64 (R =
// patterns × observed segments), and the term is one matmul with 1/σ on the
// ring, the ring taken from σ by two strided slices and one cat. Every
// piece is an fk op that runs on the CPU and on a CUDA device without a
// host read or an index table (index_select's range check reads the host),
// and the gradient is autograd's through the same ops: −C^T g / σ² on the
// ring, zero inside. The ring table is converted and moved once per
// (device, dtype) (table_cache.h), so a step on a device never uploads it
// and can be captured in a CUDA graph.
//
// Dtypes: f32, f64 (the table is converted to the field's dtype). Memory:
// the (R, 4n − 4) table per (device, dtype); per call the ring and its
// reciprocal, 4n − 4 values each. Deterministic (matmul's fixed order).
#include <cstdint>
#include <memory>
#include <vector>

#include "fk/tensor.h"
#include "nefi/operators/table_cache.h"

namespace nefi::eit {

// The boundary ring of an n×n grid (n >= 3) in boundary_ring's order: rows
// 0 and n − 1 whole, then the first and last cell of each row between
// them; C-order cell indices, 4n − 4 of them.
std::vector<int64_t> boundary_ring_cells(int64_t n);
// x (n, n) → its boundary ring, (4n − 4) in boundary_ring_cells' order.
// Differentiable; fk::Error unless x is square with n >= 3.
fk::Tensor boundary_ring(const fk::Tensor& x);

class FluxTerm {
 public:
  // c: the dense (R, n·n) matrix. fk::Error unless it has n·n columns and
  // is zero off the boundary ring.
  FluxTerm(const fk::Tensor& c, int64_t n);
  // C (1/x) for a field x (n, n): (R) in x's dtype on x's device.
  fk::Tensor apply(const fk::Tensor& x) const;
  // C's boundary-ring columns, (R, 4n − 4) f64 on the host.
  const fk::Tensor& ring_columns() const { return ring_; }
  // ring_columns() in `dtype` on `device`, made on the first call and kept.
  fk::Tensor ring_columns_on(fk::Device device, fk::DType dtype) const;

 private:
  int64_t n_ = 0;
  fk::Tensor ring_;
  std::shared_ptr<TableCache<fk::Tensor>> tables_;
};

}  // namespace nefi::eit
