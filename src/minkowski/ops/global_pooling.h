#pragma once
// Global pooling on SparseTensors: one row per batch item, the max,
// average or sum of the item's rows, per channel.
//
//   output        one row per batch item with points, at (b, 0, ..., 0), in
//                 ascending b: items without points (a scene cropped to
//                 nothing) get no row, as on the reference's origin map, and
//                 never a NaN; the coordinates name each row's item. An empty
//                 tensor gives no row; a negative batch index is an fk::Error.
//   tensor stride the input's. (MinkowskiEngine puts the result on an origin
//                 map of tensor stride 0; this manager's strides are positive
//                 and (b, 0, ..., 0) is a multiple of any of them.) The map is
//                 tagged "<input tag>@origin", made once per input map and
//                 reused. broadcast.h matches rows by batch item, so a global
//                 tensor broadcasts onto any tensor of its manager whatever
//                 the two tensor strides.
//   Average       divides by the item's number of points; Max records the
//                 arg-max row (ties: the first row in map order) and routes
//                 the gradient to it.
//
// Dtypes f32, f64, f16, bf16 (16-bit accumulated in f32). Determinism: the
// rows of each item are summed in fixed blocks of kGlobalBlock rows in row
// order and the blocks' partials combined in order, so results are
// bit-identical at any thread count; features on a CUDA device are reduced
// there in the same blocks and order (pooling_device.h). Memory: B x C
// output (+ B x C int32 arg-max rows for Max), one partial row per block, and
// the grouping (8 bytes per input row).
#include <cstdint>
#include <memory>
#include <vector>

#include "fk/tensor.h"
#include "minkowski/coords/coordinate_manager.h"
#include "minkowski/coords/coordinate_map.h"
#include "minkowski/ops/pooling.h"
#include "minkowski/sparse_tensor.h"

namespace minkowski {

inline constexpr int64_t kGlobalBlock = 2048;

// Rows grouped by a label in [0, groups) (a batch item, or a global row for
// broadcast): group[i] is row i's label; group g's rows, in row order, are
// rows[begin[g] .. begin[g + 1]).
struct RowGroups {
  int64_t groups = 0;
  std::vector<int32_t> group;
  std::vector<int64_t> begin;
  std::vector<int32_t> rows;
  std::vector<int32_t> items;  // batch_groups: group g's batch index, ascending
  int64_t size(int64_t g) const { return begin[g + 1] - begin[g]; }
};

// Groups rows by `label` (each in [0, groups), checked by the caller).
RowGroups group_by(std::vector<int32_t> label, int64_t groups);
// The batch items of a map's rows: one group per item with rows, in
// ascending batch index (none for no rows); throws for a negative index.
RowGroups batch_groups(const CoordinateMap& map, const char* where);
// The same from each row's batch index (a TensorField's points).
RowGroups batch_groups(std::vector<int32_t> batch, const char* where);

struct GlobalPoolingResult {
  fk::Tensor out;     // groups x C, the features' dtype
  fk::Tensor argmax;  // Max: groups x C int32 rows (-1 for an empty group); else undefined
};

// The pure pair (an empty group gives 0 and passes no gradient).
GlobalPoolingResult global_pool_forward(const fk::Tensor& features, const RowGroups& groups,
                                        PoolingMode mode);
fk::Tensor global_pool_backward(const fk::Tensor& grad_out, const RowGroups& groups,
                                PoolingMode mode, const fk::Tensor& argmax);
// Per group, the sum over its rows of a[i] * b[i] (a, b: N x C of one dtype),
// blocked like Sum: the glob gradient of broadcast_multiply without
// materialising the products.
fk::Tensor group_sum_of_products(const fk::Tensor& a, const fk::Tensor& b, const RowGroups& groups);
// The differentiable core.
fk::Tensor global_pool_features(const fk::Tensor& features, std::shared_ptr<const RowGroups> groups,
                                PoolingMode mode);

// The key "<in tag>@origin" of the map of rows (b, 0, ..., 0), b in `items`
// (ascending, batch_groups' items), at in's tensor stride: made once, then
// reused while it holds those rows.
MapKey origin_key(CoordinateManager& mgr, const MapKey& in, const std::vector<int32_t>& items);

SparseTensor global_pooling(const SparseTensor& x, PoolingMode mode);
SparseTensor global_max_pooling(const SparseTensor& x);
SparseTensor global_avg_pooling(const SparseTensor& x);
SparseTensor global_sum_pooling(const SparseTensor& x);

}  // namespace minkowski
