#pragma once
// A minimal .npy reader for integer coordinate arrays (N x W, little-endian
// int32 or int64, C order), enough for scene files.
#include <cstdint>
#include <string>
#include <vector>

namespace minkowski_app {

struct NpyInts {
  int64_t rows = 0, cols = 0;
  std::vector<int32_t> data;  // rows x cols, converted to int32
};

// Throws std::runtime_error with a one-line message on any problem.
NpyInts read_npy_ints(const std::string& path);

}  // namespace minkowski_app
