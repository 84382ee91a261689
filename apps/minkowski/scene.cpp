#include "scene.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <unordered_set>

namespace minkowski_app {

namespace {
struct Adder {
  std::unordered_set<uint64_t> seen;
  std::vector<int32_t> rows;
  int64_t limit;
  bool full() const { return static_cast<int64_t>(seen.size()) >= limit; }
  void add(int x, int y, int z) {
    if (full() || x < 0 || y < 0 || z < 0) return;
    uint64_t key = (static_cast<uint64_t>(x) << 42) | (static_cast<uint64_t>(y) << 21) | z;
    if (!seen.insert(key).second) return;
    rows.insert(rows.end(), {0, x, y, z});
  }
};

// Surface voxels of the box [x0,x1] x [y0,y1] x [z0,z1] (open top when asked).
void box(Adder& a, int x0, int y0, int z0, int x1, int y1, int z1) {
  for (int x = x0; x <= x1; ++x)
    for (int y = y0; y <= y1; ++y) {
      a.add(x, y, z0);
      a.add(x, y, z1);
    }
  for (int z = z0; z <= z1; ++z) {
    for (int x = x0; x <= x1; ++x) {
      a.add(x, y0, z);
      a.add(x, y1, z);
    }
    for (int y = y0; y <= y1; ++y) {
      a.add(x0, y, z);
      a.add(x1, y, z);
    }
  }
}

void sphere(Adder& a, double cx, double cy, double cz, double r) {
  int n = static_cast<int>(std::ceil(r));
  for (int x = -n; x <= n; ++x)
    for (int y = -n; y <= n; ++y)
      for (int z = -n; z <= n; ++z) {
        double d = std::sqrt(double(x * x + y * y + z * z));
        if (std::abs(d - r) <= 0.5)
          a.add(static_cast<int>(cx) + x, static_cast<int>(cy) + y, static_cast<int>(cz) + z);
      }
}
}  // namespace

std::vector<int32_t> synthetic_scene(int64_t points, uint64_t seed) {
  std::mt19937_64 g(seed);
  Adder a;
  a.limit = points;
  // Rooms take about half the voxels; a room of side s has ~ 6 s^2 * 0.8 surface voxels.
  double s = std::sqrt(static_cast<double>(points) * 0.5 / 4.8);
  int side = std::max(8, static_cast<int>(s));
  int height = std::max(6, side * 2 / 5);
  box(a, 0, 0, 0, side, side * 5 / 4, height);
  std::uniform_real_distribution<double> u(0, 1);
  while (!a.full()) {
    double kind = u(g);
    int x = 1 + static_cast<int>(u(g) * (side - 4)), y = 1 + static_cast<int>(u(g) * (side - 4));
    if (kind < 0.6) {  // furniture: boxes standing on the floor
      int w = 2 + static_cast<int>(u(g) * side / 6), l = 2 + static_cast<int>(u(g) * side / 6),
          h = 2 + static_cast<int>(u(g) * height / 2);
      box(a, x, y, 0, x + w, y + l, h);
    } else {
      double r = 1.5 + u(g) * side / 14.0;
      sphere(a, x, y, r + u(g) * height / 2, r);
    }
  }
  return a.rows;
}

}  // namespace minkowski_app
