#pragma once
// PointCloud: what readers return and the scene generator makes — xyz
// positions, optional colours in [0, 1] and optional per-point class labels,
// as flat host vectors (N*3, N*3 or empty, N or empty).
//
// Positions keep the file's precision: a double file's (.npy float64 or
// int32/64, PLY double or int, text) are voxelized in f64, a float file's
// (and the generator's) in f32 as torch does for float32 points. Map-projected
// clouds (UTM, ~5e6 m) are stored in double: at float's 0.5 m step there,
// neighbouring 0.1 m voxels merged.
#include <cstdint>
#include <vector>

namespace minkowski::data {

struct PointCloud {
  std::vector<double> xyz;  // float values unless f64
  bool f64 = false;
  std::vector<float> rgb;
  std::vector<int64_t> labels;

  int64_t size() const { return static_cast<int64_t>(xyz.size() / 3); }
  bool has_colors() const { return !rgb.empty(); }
  bool has_labels() const { return !labels.empty(); }
  // v at the cloud's precision (rounded to float unless f64).
  double at_precision(double v) const {
    return f64 ? v : static_cast<double>(static_cast<float>(v));
  }
};

// A small portable generator (SplitMix64): the same stream on every platform
// and standard library, which std::*_distribution does not promise.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next();
  double uniform();  // [0, 1)
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  double normal();           // standard normal (Box–Muller)
  int64_t below(int64_t n);  // [0, n)

 private:
  uint64_t state_;
};

}  // namespace minkowski::data
