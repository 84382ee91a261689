#pragma once
// CUDA's grid limits (every compute capability fk builds for): gridDim.x up
// to 2^31 − 1 blocks, gridDim.y and gridDim.z up to 65535. A launch past them
// fails with the runtime's "invalid configuration argument", which names
// neither the kernel nor the size that grew too large, so a launcher whose
// grid follows an input size (and does not loop over the rest with a stride)
// takes its grid dimension from grid_dim. Plain C++, no CUDA header:
// compiled in every build and tested on hosts without a GPU.
#include <cstdint>

namespace fk::cuda {

inline constexpr int64_t kMaxGridX = 2147483647;  // 2^31 − 1
inline constexpr int64_t kMaxGridYZ = 65535;

// The largest gridDim of `axis` ('x', 'y' or 'z'; fk::Error for another).
int64_t max_grid_dim(char axis);

// The blocks along `axis` that cover `total` items (> 0), `per_block` (> 0)
// to a block: ceil(total / per_block). fk::Error from `where` when that is
// past max_grid_dim(axis), naming the axis, its limit, the blocks and the
// items (`what`, e.g. "output channels").
unsigned grid_dim(const char* where, char axis, int64_t total, int64_t per_block, const char* what);

}  // namespace fk::cuda
