#pragma once
// The scenes `minkowski bench conv` runs on: synthetic indoor scenes, or
// N x 4 coordinate rows (batch, x, y, z) from a .npy file.
#include <cstdint>
#include <string>
#include <vector>

namespace minkowski_app {

// Synthetic indoor scenes with surface-like occupancy: a room (floor, ceiling,
// walls) with boxes and spheres in it, voxelized on their surfaces, as a
// sparse convolution sees a scanned room. When a room has no room left (its
// shapes keep landing on voxels it already has), the next room is built beside
// it, so every `points` is reached. Deterministic for a seed.
struct SyntheticScene {
  std::vector<int32_t> rows;  // exactly `points` unique voxels, rows [0, x, y, z]
  int rooms = 0;
  int64_t shapes = 0;  // boxes and spheres placed in the rooms
};
SyntheticScene synthetic_scene(int64_t points, uint64_t seed = 1);

// The rows of an N x 4 int32 or int64 .npy file (int64 values must fit int32);
// fk::Error naming the file otherwise.
std::vector<int32_t> read_scene(const std::string& path);

}  // namespace minkowski_app
