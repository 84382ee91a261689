#pragma once
// Checkpoints: named tensors in one binary file, little-endian.
//
//   magic "FKMKNN01" (8 bytes), u32 format version (1), u32 tensor count,
//   then per tensor: u32 name length, name bytes, u8 dtype (fk::DType),
//   u8 rank, rank x i64 dims, numel * itemsize bytes of C-order data.
//
// Reading checks everything it can before trusting it (magic, version,
// lengths against the bytes left), so a foreign or truncated file is an
// fk::Error naming the file and what was expected, never a crash or a huge
// allocation. Loading into a module requires the same names, shapes and
// dtypes: a checkpoint of another architecture is an error naming the first
// tensor that differs.
#include <string>

#include "minkowski/nn/module.h"

namespace minkowski::nn {

inline constexpr uint32_t kCheckpointVersion = 1;

void save_tensors(const std::string& path, const NamedTensors& tensors);
NamedTensors read_tensors(const std::string& path);

// Copies `source` into `targets` (in place, no autograd): names, shapes and
// dtypes must match one to one. `where` names the caller in errors.
void copy_named(const NamedTensors& targets, const NamedTensors& source, const std::string& where);

// Throws fk::Error at `where`, naming the tensor, unless every floating
// tensor of `tensors` is finite (a diverged run saves NaN weights; a model
// loaded from them labels every point alike).
void check_finite(const NamedTensors& tensors, const std::string& where);

// Tensors named "meta.*" describe how a checkpoint was made (minkowski
// train's meta.voxel), not a module's state: load_state skips them.
inline constexpr const char* kMetaPrefix = "meta.";

// A module's state (parameters and buffers).
void save_state(const Module& module, const std::string& path);
void load_state(Module& module, const std::string& path);

}  // namespace minkowski::nn
