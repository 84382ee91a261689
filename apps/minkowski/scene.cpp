#include "scene.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <unordered_set>

#include "fk/error.h"
#include "fk/io/npy.h"

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

// Surface voxels of the box [x0,x1] x [y0,y1] x [z0,z1].
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

// Shapes in a row that add no voxel before a room counts as full: a room that
// still has space gets a new voxel from most shapes.
constexpr int kFullRoomMisses = 200;
}  // namespace

SyntheticScene synthetic_scene(int64_t points, uint64_t seed) {
  std::mt19937_64 g(seed);
  Adder a;
  a.limit = points;
  SyntheticScene scene;
  // Rooms take about half the voxels; a room of side s has ~ 6 s^2 * 0.8 surface voxels.
  double s = std::sqrt(static_cast<double>(points) * 0.5 / 4.8);
  int side = std::max(8, static_cast<int>(s));
  int height = std::max(6, side * 2 / 5);
  // Rooms stand side by side along x, 2 * side apart (shapes reach < side / 4
  // past a room's far wall).
  int x0 = 0, misses = 0;
  box(a, x0, 0, 0, x0 + side, side * 5 / 4, height);
  scene.rooms = 1;
  std::uniform_real_distribution<double> u(0, 1);
  while (!a.full()) {
    if (misses == kFullRoomMisses) {
      x0 += 2 * side;
      box(a, x0, 0, 0, x0 + side, side * 5 / 4, height);
      ++scene.rooms;
      misses = 0;
      continue;
    }
    const size_t before = a.seen.size();
    double kind = u(g);
    int x = x0 + 1 + static_cast<int>(u(g) * (side - 4)),
        y = 1 + static_cast<int>(u(g) * (side - 4));
    if (kind < 0.6) {  // furniture: boxes standing on the floor
      int w = 2 + static_cast<int>(u(g) * side / 6), l = 2 + static_cast<int>(u(g) * side / 6),
          h = 2 + static_cast<int>(u(g) * height / 2);
      box(a, x, y, 0, x + w, y + l, h);
    } else {
      double r = 1.5 + u(g) * side / 14.0;
      sphere(a, x, y, r + u(g) * height / 2, r);
    }
    ++scene.shapes;
    misses = a.seen.size() == before ? misses + 1 : 0;
  }
  scene.rows = std::move(a.rows);
  return scene;
}

std::vector<int32_t> read_scene(const std::string& path) {
  const fk::Tensor t = fk::read_npy(path);
  FK_CHECK(t.dim() == 2 && t.size(1) == 4 && t.size(0) > 0, path,
           "an N x 4 array (batch, x, y, z), N >= 1", "shape " + t.shape().str());
  std::vector<int32_t> rows(static_cast<size_t>(t.numel()));
  if (t.dtype() == fk::DType::I32) {
    const int32_t* p = t.data<int32_t>();
    rows.assign(p, p + t.numel());
  } else {
    FK_CHECK(t.dtype() == fk::DType::I64, path, "int32 or int64 coordinates", fk::name(t.dtype()));
    const int64_t* p = t.data<int64_t>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      FK_CHECK(p[i] >= std::numeric_limits<int32_t>::min() &&
                   p[i] <= std::numeric_limits<int32_t>::max(),
               path, "int64 coordinates within the int32 range",
               fk::to_text(p[i]) + " in row " + fk::to_text(i / 4));
      rows[i] = static_cast<int32_t>(p[i]);
    }
  }
  for (size_t i = 0; i < rows.size(); i += 4)
    FK_CHECK(rows[i] >= 0, path, "batch indices >= 0",
             fk::to_text(rows[i]) + " in row " + fk::to_text(i / 4));
  return rows;
}

}  // namespace minkowski_app
