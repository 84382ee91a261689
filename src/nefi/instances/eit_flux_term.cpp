#include "nefi/instances/eit_flux_term.h"

#include <string>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/join.h"
#include "fk/ops/linalg.h"
#include "fk/ops/unary.h"

namespace nefi::eit {
namespace {

constexpr const char* kWhere = "nefi::eit::FluxTerm";

}  // namespace

std::vector<int64_t> boundary_ring_cells(int64_t n) {
  FK_CHECK(n >= 3, "nefi::eit::boundary_ring_cells", "a grid of n >= 3 cells per axis",
           fk::to_text(n));
  std::vector<int64_t> cells;
  cells.reserve(4 * n - 4);
  for (int64_t row : {int64_t{0}, n - 1})
    for (int64_t j = 0; j < n; ++j) cells.push_back(row * n + j);
  for (int64_t i = 1; i < n - 1; ++i) {
    cells.push_back(i * n);
    cells.push_back(i * n + n - 1);
  }
  return cells;
}

fk::Tensor boundary_ring(const fk::Tensor& x) {
  FK_CHECK(x.dim() == 2 && x.size(0) == x.size(1) && x.size(0) >= 3, "nefi::eit::boundary_ring",
           "a square (n, n) field with n >= 3", x.shape().str());
  const int64_t n = x.size(0);
  // Step n − 1 picks the first and the last row (and column).
  const fk::Tensor rows = x.slice(0, 0, n, n - 1).reshape({2 * n});
  const fk::Tensor sides = x.slice(0, 1, n - 1).slice(1, 0, n, n - 1).reshape({2 * (n - 2)});
  return fk::cat({rows, sides}, 0);
}

FluxTerm::FluxTerm(const fk::Tensor& c, int64_t n) : n_(n) {
  const std::vector<int64_t> ring = boundary_ring_cells(n);
  FK_CHECK(c.dim() == 2 && c.size(1) == n * n, kWhere,
           "a (R, " + fk::to_text(n * n) + ") flux matrix", c.shape().str());
  const int64_t rows = c.size(0), cols = n * n, k = static_cast<int64_t>(ring.size());
  const std::vector<double> v = c.to(fk::DType::F64).contiguous().to_vector<double>();
  std::vector<bool> on_ring(cols, false);
  for (int64_t cell : ring) on_ring[cell] = true;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      FK_CHECK(on_ring[j] || v[i * cols + j] == 0, kWhere,
               "a flux matrix that is zero off the boundary cells",
               "a nonzero at row " + fk::to_text(i) + ", cell " + fk::to_text(j));
  std::vector<double> kept(rows * k);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t r = 0; r < k; ++r) kept[i * k + r] = v[i * cols + ring[r]];
  ring_ = fk::from_vector(kept, {rows, k});
  tables_ = std::make_shared<TableCache<fk::Tensor>>();
}

fk::Tensor FluxTerm::ring_columns_on(fk::Device device, fk::DType dtype) const {
  return tables_->get(device, dtype,
                      [this](fk::Device d, fk::DType dt) { return table_on(ring_, d, dt); });
}

fk::Tensor FluxTerm::apply(const fk::Tensor& x) const {
  FK_CHECK(x.shape() == fk::Dims({n_, n_}), kWhere, "a field of shape " + fk::Dims({n_, n_}).str(),
           x.shape().str());
  FK_CHECK(x.dtype() == fk::DType::F32 || x.dtype() == fk::DType::F64, kWhere,
           "a real f32/f64 field", fk::name(x.dtype()));
  const fk::Tensor c = ring_columns_on(x.device(), x.dtype());
  const fk::Tensor rho = fk::reciprocal(boundary_ring(x));
  return fk::matmul(c, rho.reshape({rho.numel(), 1})).reshape({c.size(0)});
}

}  // namespace nefi::eit
