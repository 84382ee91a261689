#pragma once
// One gather through per-dim index tables: the engine of pad, roll and flip
// (join/pad.cpp, join/roll_flip.cpp) on layouts without a faster path.
#include <cstdint>
#include <vector>

#include "fk/tensor.h"

namespace fk::join_detail {

// maps[d][i] is the source coordinate along d of output coordinate i, or -1
// where the output takes `fill` (a 0-dim tensor of t's dtype).
using DimMaps = std::vector<std::vector<int64_t>>;

// The output of `shape` whose element at coordinates (i_0, .., i_k) is t at
// (maps[0][i_0], .., maps[k][i_k]), or `fill` where a map holds -1.
Tensor gather_by_maps(const Tensor& t, const Dims& shape, const DimMaps& maps, const Tensor& fill);
// The same on CUDA (no -1 entries): one index_select per changed dim.
Tensor gather_by_maps_cuda(const Tensor& t, const DimMaps& maps);
// maps[d][i] = i for every dim of `shape`.
DimMaps identity_maps(const Dims& shape);

}  // namespace fk::join_detail
