#pragma once
// Union of sparse tensors: one tensor on the union of their coordinates, the
// features summed where coordinates coincide (MinkowskiUnion).
//
// The union is a NEW map of the inputs' manager with their tensor stride: the
// first input's rows in its order, then each further input's rows not seen
// before, in its order (first occurrence over the inputs concatenated).
// Global pools (maps tagged "@origin") of any strides unite onto an
// "@origin" map at the first's stride, as on the reference's one origin map.
// Inputs: at least 2 SparseTensors of one manager, one tensor stride, one
// channel count, one feature dtype (f64, f32, f16, bf16) and one device (the
// CPU or a CUDA device, where the result lands).
//
// Differentiable w.r.t. every input's features: the forward is fk::index_add
// of the concatenated features into zeros at their union rows (f16/bf16
// accumulated in f32, rounded once), its backward an index_select of the
// gradient rows (fk's pair and node; no kernel here). Deterministic: each
// union row adds its inputs in input order, for any thread count. Memory: the
// union map, the concatenated features (a copy), one int64 per input row.
#include <cstdint>
#include <vector>

#include "minkowski/sparse_tensor.h"

namespace minkowski {

struct UnionMap {
  MapKey key;                                 // the union map in the inputs' manager
  int64_t size = 0;                           // its rows
  std::vector<std::vector<int64_t>> rows_of;  // union row of each row of each input
};

// Checks the inputs (same manager and tensor stride; `where` names the caller)
// and builds their union map.
UnionMap union_map(const std::vector<SparseTensor>& xs, const char* where);

SparseTensor sparse_union(const std::vector<SparseTensor>& xs);

}  // namespace minkowski
