#include "minkowski/ops/prune.h"

#include <string>
#include <vector>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/index.h"
#include "fk/profile.h"

namespace minkowski {

namespace {
constexpr const char* kWhere = "minkowski::prune";
}  // namespace

std::vector<int64_t> kept_rows(const fk::Tensor& mask, int64_t n) {
  FK_CHECK(mask.defined(), kWhere, "a mask tensor", "an undefined tensor");
  FK_CHECK(mask.dtype() == fk::DType::Bool, kWhere, "a bool mask", fk::name(mask.dtype()));
  FK_CHECK(mask.numel() == n && (mask.dim() == 1 || (mask.dim() == 2 && mask.size(1) == 1)), kWhere,
           "a mask of shape (" + fk::to_text(n) + "), one entry per row", mask.shape().str());
  // The new map is built on the host: a device mask is read back (a sync).
  auto m = mask.to_vector<bool>();
  std::vector<int64_t> rows;
  for (int64_t i = 0; i < n; ++i)
    if (m[i]) rows.push_back(i);
  return rows;
}

SparseTensor prune(const SparseTensor& x, const fk::Tensor& mask) {
  fk::profile::OpScope scope("minkowski.prune");
  FK_CHECK(x.defined(), kWhere, "a sparse tensor", "an empty handle");
  std::vector<int64_t> rows = kept_rows(mask, x.size());
  const int64_t k = static_cast<int64_t>(rows.size());
  auto map = x.manager()->map(x.key());
  const int w = map->width();
  std::vector<int32_t> coords(static_cast<size_t>(k * w));
  for (int64_t r = 0; r < k; ++r)
    for (int c = 0; c < w; ++c) coords[r * w + c] = map->row(rows[r])[c];
  auto ins = x.manager()->insert_rows(coords.data(), k, x.tensor_stride(), "pruned");
  // the host-made row indices, checked there and uploaded to the features'
  // device: no host read of a device index for its range check
  fk::Tensor f = fk::index_select(x.F(), 0, rows);
  return SparseTensor(f, ins.key, x.manager());
}

SparseTensor prune(const SparseTensor& x, const std::vector<bool>& mask) {
  return prune(x, fk::from_vector(mask, fk::Dims{static_cast<int64_t>(mask.size())}));
}

}  // namespace minkowski
