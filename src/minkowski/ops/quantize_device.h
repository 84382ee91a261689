#pragma once
// MaxPool quantization (sparse_tensor.h's quantize_features) of features on
// a CUDA device: the row holding each group's per-channel max, which the
// caller gathers (fk::gather, so the gradient reaches that row only).
//
// Same choice as the CPU: each group's rows are walked in ascending order
// (the groups' member lists are a counting sort on the host, uploaded per
// call) by one device thread per (group, channel), a later row winning in
// max_order.h's order (a NaN wins, ties keep the first row). Comparisons in f32 (f64
// for f64 features; 16-bit features converted exactly), as the CPU's f64 ones
// order the same values. The walk is pooling.cu's max-pooling kernel.
//
// CUDA builds implement this in minkowski/cuda/quantize_dispatch.cpp; CPU-only
// builds in quantize_device_stub.cpp, as an fk::Error that says so.
#include <cstdint>
#include <vector>

#include "fk/tensor.h"

namespace minkowski {

// features: N x C on a CUDA device; group: the group (map row) of each of the
// N rows, in [0, groups), every group non-empty. Returns groups x C i64 row
// indices on the features' device.
fk::Tensor device_group_argmax(const fk::Tensor& features, const std::vector<int64_t>& group,
                               int64_t groups);

}  // namespace minkowski
