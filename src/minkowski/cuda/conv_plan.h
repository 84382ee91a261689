#pragma once
// The device convolution's decisions that need no device (device_conv.h):
// which operand dtypes it takes, which maps its i32 indices hold, and how
// its offsets are cut into the groups whose rows are staged together. Plain C++, compiled in every
// build, so the CPU tests check them where no GPU exists.
//
// Dtypes: f32, f16, bf16 (cuBLAS SGEMM / tensor cores, f32 accumulation) and
// f64 (cuBLAS DGEMM, f64 accumulation: what gradchecks and MinkowskiEngine's
// double features need); weight and grad_out in the features' dtype.
//
// Groups: whole offsets, consecutive, whose staged rows (pairs x row_bytes,
// row_bytes = (C_in + C_out) x itemsize, so f64 rows are twice f32's) fit
// the cap ME_FUSED_COPY_MAX_MB (0 = 2048); an offset larger than the cap is a
// group of its own, so the staging is at most max(cap, the largest offset's
// rows). Not fused (ME_FUSED_COPY=0): one offset per group. Offsets without
// pairs make no group of their own.
#include <cstdint>
#include <vector>

#include "fk/tensor.h"

namespace minkowski::cuda {

// Features f32, f16, bf16 or f64; weight and grad_out (when given and
// defined) in the features' dtype; else fk::Error from `where`.
void check_conv_dtypes(const char* where, const fk::Tensor& features, const fk::Tensor& weight,
                       const fk::Tensor* grad_out);

// The device map's indices are i32 (row ids, pair ids and the by-row CSRs
// the deterministic scatter walks): a map of `pairs` pairs fits when
// pairs < 2^31; else fk::Error from `where` (a host map that large stays
// on the CPU).
void check_device_pair_count(const char* where, int64_t pairs);

// Offsets [first, last) of one group.
struct OffsetGroup {
  int64_t first = 0, last = 0;
  bool operator==(const OffsetGroup&) const = default;
};

struct OffsetGroups {
  std::vector<OffsetGroup> groups;
  int64_t max_rows = 0;  // the staging buffers' rows: the largest group's pairs
  int64_t staging_bytes(int64_t row_bytes) const { return max_rows * row_bytes; }
};

// The groups of offsets with pairs_per_offset[k] pairs, staged rows of
// row_bytes (> 0) bytes, under a cap of cap_mb (>= 0; NaN refused) MiB (0:
// 2048; any larger value, infinity included, is taken as it is).
OffsetGroups plan_offset_groups(const std::vector<int64_t>& pairs_per_offset, int64_t row_bytes,
                                bool fused, double cap_mb);

}  // namespace minkowski::cuda
