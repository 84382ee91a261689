#pragma once
// PointCloud: what readers return and the scene generator makes — xyz
// positions, optional colours in [0, 1] and optional per-point class labels,
// as flat host vectors (N*3, N*3 or empty, N or empty).
#include <cstdint>
#include <vector>

namespace minkowski::data {

struct PointCloud {
  std::vector<float> xyz;
  std::vector<float> rgb;
  std::vector<int64_t> labels;

  int64_t size() const { return static_cast<int64_t>(xyz.size() / 3); }
  bool has_colors() const { return !rgb.empty(); }
  bool has_labels() const { return !labels.empty(); }
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
