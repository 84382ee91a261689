#pragma once
// Synthetic indoor scenes with surface-like occupancy: a room (floor, ceiling,
// walls) with boxes and spheres in it, voxelized on their surfaces, as a
// sparse convolution sees a scanned room. Deterministic for a seed.
#include <cstdint>
#include <vector>

namespace minkowski_app {

// About `points` unique voxels (exactly that many), rows [0, x, y, z].
std::vector<int32_t> synthetic_scene(int64_t points, uint64_t seed = 1);

}  // namespace minkowski_app
