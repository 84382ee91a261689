#include "minkowski/ops/dense.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/index.h"
#include "fk/ops/reduce.h"
#include "minkowski/coords/kernel_region.h"

namespace minkowski {

namespace {
// Whether each row of `rows` (R x C) has a nonzero channel (NaN counts), found
// on the rows' device: only the R flags come to the host.
std::vector<bool> nonzero_rows(const fk::Tensor& rows) {
  if (rows.size(0) == 0 || rows.size(1) == 0) return std::vector<bool>(rows.size(0), false);
  return fk::amax(fk::ne(rows, fk::scalar_like(rows, 0.0)), {1}).to_vector<bool>();
}
}  // namespace

Dense to_dense(const SparseTensor& x, std::optional<std::vector<int32_t>> min_coordinate,
               std::optional<std::vector<int64_t>> shape, bool contract_stride) {
  const char* where = "minkowski::to_dense";
  FK_CHECK(x.defined(), where, "a sparse tensor", "an empty handle");
  const int d = x.dimension(), w = d + 1;
  FK_CHECK(d <= 6, where, "at most 6 spatial dimensions", fk::to_text(d));
  auto map = x.manager()->map(x.key());
  const auto& ts = x.tensor_stride();
  std::vector<int32_t> mn = min_coordinate ? *min_coordinate : std::vector<int32_t>(d, 0);
  FK_CHECK(static_cast<int>(mn.size()) == d, where, fk::to_text(d) + " min coordinates",
           fk::to_text(mn.size()));
  for (int a = 0; contract_stride && a < d; ++a)
    FK_CHECK(mn[a] % ts[a] == 0, where,
             "a min coordinate that is a multiple of the tensor stride " + x.key().str(),
             fk::to_text(mn[a]) + " on axis " + fk::to_text(a));
  int64_t n = map->size(), batches = 0;
  FK_CHECK(n > 0 || shape, where, "a shape for an empty tensor (no row to size it)", "no shape");
  std::vector<int64_t> cell(static_cast<size_t>(n * d));
  std::vector<int64_t> need(d, 0);
  for (int64_t i = 0; i < n; ++i) {
    const int32_t* c = map->row(i);
    FK_CHECK(c[0] >= 0, where, "non-negative batch indices", fk::to_text(c[0]));
    batches = std::max<int64_t>(batches, int64_t{c[0]} + 1);  // batch 2^31 - 1 wrapped
    for (int a = 0; a < d; ++a) {
      int64_t v = static_cast<int64_t>(c[1 + a]) - mn[a];
      FK_CHECK(v >= 0, where,
               min_coordinate ? "coordinates >= the min coordinate"
                              : "non-negative coordinates (or a min_coordinate)",
               fk::to_text(c[1 + a]) + " on axis " + fk::to_text(a));
      if (contract_stride) v /= ts[a];
      cell[i * d + a] = v;
      need[a] = std::max(need[a], v + 1);
    }
  }
  std::vector<int64_t> sh = shape ? *shape : need;
  FK_CHECK(static_cast<int>(sh.size()) == d, where, fk::to_text(d) + " spatial sizes",
           fk::to_text(sh.size()));
  for (int a = 0; a < d; ++a)
    FK_CHECK(sh[a] >= need[a], where, "a shape holding every coordinate",
             "size " + fk::to_text(sh[a]) + " on axis " + fk::to_text(a) + " for cell " +
                 fk::to_text(need[a] - 1));
  int64_t cells = 1;
  for (int64_t s : sh) cells *= s;
  std::vector<int64_t> flat(n);
  for (int64_t i = 0; i < n; ++i) {
    int64_t f = map->row(i)[0];
    for (int a = 0; a < d; ++a) f = f * sh[a] + cell[i * d + a];
    flat[i] = f;
  }
  (void)w;
  int64_t c = x.channels();
  // on the features' device (fk's index_add runs on either)
  const fk::Device dev = x.F().device();
  fk::Tensor acc = fk::index_add(fk::zeros({batches * cells, c}, {x.F().dtype(), dev}), 0, flat,
                                 x.F());  // checked on the host, uploaded
  std::vector<int64_t> full{batches};
  full.insert(full.end(), sh.begin(), sh.end());
  full.push_back(c);
  std::vector<int64_t> perm{0, d + 1};
  for (int a = 0; a < d; ++a) perm.push_back(a + 1);
  Dense r;
  r.dense = acc.reshape(fk::Dims(full)).permute(fk::Dims(perm)).contiguous();
  r.min_coordinate = mn;
  r.tensor_stride = ts;
  return r;
}

SparseTensor to_sparse(const fk::Tensor& dense, const std::vector<int32_t>& tensor_stride,
                       std::shared_ptr<CoordinateManager> manager,
                       std::optional<std::vector<int32_t>> min_coordinate, bool remove_zeros) {
  const char* where = "minkowski::to_sparse";
  FK_CHECK(dense.defined() && dense.dim() >= 3, where, "a B x C x s_1..s_D tensor (D >= 1)",
           dense.defined() ? dense.shape().str() : "undefined");
  const int d = dense.dim() - 2;
  auto ts = expand_axes(tensor_stride, d, where, "tensor stride");
  std::vector<int32_t> mn = min_coordinate ? *min_coordinate : std::vector<int32_t>(d, 0);
  FK_CHECK(static_cast<int>(mn.size()) == d, where, fk::to_text(d) + " min coordinates",
           fk::to_text(mn.size()));
  int64_t b = dense.size(0), c = dense.size(1), cells = 1;
  std::vector<int64_t> perm{0};
  for (int a = 0; a < d; ++a) {
    perm.push_back(a + 2);
    cells *= dense.size(a + 2);
  }
  perm.push_back(1);
  fk::Tensor rows = dense.permute(fk::Dims(perm)).reshape({b * cells, c});
  const std::vector<bool> nonzero =
      remove_zeros ? nonzero_rows(rows) : std::vector<bool>(static_cast<size_t>(b * cells), true);
  std::vector<int64_t> keep;
  std::vector<int32_t> coords;
  for (int64_t r = 0; r < b * cells; ++r) {
    if (!nonzero[r]) continue;
    keep.push_back(r);
    std::vector<int32_t> cc(d);
    int64_t rem = r;
    for (int a = d - 1; a >= 0; --a) {
      int64_t at = mn[a] + (rem % dense.size(a + 2)) * static_cast<int64_t>(ts[a]);
      FK_CHECK(at >= INT32_MIN && at <= INT32_MAX, where, "coordinates within int32",
               fk::to_text(at) + " on axis " + fk::to_text(a));
      cc[a] = static_cast<int32_t>(at);
      rem /= dense.size(a + 2);
    }
    coords.push_back(static_cast<int32_t>(rem));
    coords.insert(coords.end(), cc.begin(), cc.end());
  }
  int64_t n = static_cast<int64_t>(keep.size());
  // the host-made rows, checked there and uploaded to the dense tensor's
  // device: no host read of a device index for its range check
  fk::Tensor f = fk::index_select(rows, 0, keep);
  return SparseTensor(f, fk::from_vector(coords, fk::Dims{n, d + 1}), ts,
                      QuantizationMode::RandomSubsample, std::move(manager));
}

}  // namespace minkowski
