// CUDA's grid limits as host checks (launch_limits.h).
#include "fk/cuda/launch_limits.h"

#include <string>

#include "fk/error.h"

namespace fk::cuda {

int64_t max_grid_dim(char axis) {
  FK_CHECK(axis == 'x' || axis == 'y' || axis == 'z', "fk::cuda::max_grid_dim",
           "grid axis 'x', 'y' or 'z'", std::string("'") + axis + "'");
  return axis == 'x' ? kMaxGridX : kMaxGridYZ;
}

unsigned grid_dim(const char* where, char axis, int64_t total, int64_t per_block,
                  const char* what) {
  const int64_t limit = max_grid_dim(axis);
  FK_CHECK(total > 0 && per_block > 0, where,
           std::string("a positive count of ") + what + " and of them per block",
           fk::to_text(total) + " and " + fk::to_text(per_block));
  const int64_t blocks = total / per_block + (total % per_block != 0);
  FK_CHECK(blocks <= limit, where,
           std::string("at most ") + fk::to_text(limit) + " blocks along gridDim." + axis +
               " (CUDA's limit), " + fk::to_text(per_block) + " " + what + " to a block",
           fk::to_text(blocks) + " blocks for " + fk::to_text(total) + " " + what);
  return static_cast<unsigned>(blocks);
}

}  // namespace fk::cuda
