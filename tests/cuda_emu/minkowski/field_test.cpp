// field.cu's voxelization runs on the emulated device (emulated_device.h):
// its rows against the CPU TensorField's (sparse()'s map rows through its
// inverse mapping), f32 and f64 coordinates, 1, 3 and 7 spatial axes; and
// every kind of row the host loop refuses (a batch index that is not finite
// or too large, a voxel coordinate that is not finite or leaves int32 before
// or only after flooring to the stride), each zeroing its element and the
// lowest of them reported as the host's error names it, in both thread
// orders.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "cuda_emu/emulated_device.h"
#include "cuda_emu/emulated_test_util.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "minkowski/cuda/field_kernels.h"
#include "minkowski/tensor_field.h"

// The emulated launcher this file runs: field_kernels.h's, in ::emu (a
// signature that drifts from its definition fails to link).
namespace minkowski::cuda::emu {
template <typename T>
void launch_voxelize(const T* coords, int64_t n, const VoxelGrid& grid, int32_t* rows,
                     unsigned long long* bad, void* stream);
}  // namespace minkowski::cuda::emu

namespace mc = minkowski::cuda;

using fkemu_test::in_both_orders;

namespace {

constexpr int32_t kUnwritten = -7;

size_t at(int64_t i) {
  return static_cast<size_t>(i);
}

// The voxel sizes and tensor strides of D spatial axes, and the kernel's grid of them.
struct Voxels {
  std::vector<double> size;
  std::vector<int32_t> stride;
  mc::VoxelGrid grid() const {
    mc::VoxelGrid g;
    g.width = static_cast<int>(size.size()) + 1;
    for (size_t a = 0; a < size.size(); ++a) {
      g.voxel[a + 1] = size[a];
      g.stride[a + 1] = stride[a];
    }
    return g;
  }
};
Voxels voxels_of(int d) {
  const double size[] = {0.5, 0.3, 1.7, 0.1, 2.0, 0.7, 1e-3};
  const int32_t stride[] = {1, 4, 3, 2, 1, 8, 5};
  return {std::vector<double>(size, size + d), std::vector<int32_t>(stride, stride + d)};
}

// n points of 1 + d values: batch in [-1, 3) (some a little off an integer,
// some half way: rounded, to even at the half), coordinates in [-20, 20),
// with exact multiples of the voxel size, -0.0 and tiny negatives among them.
std::vector<double> random_points(int64_t n, const Voxels& v, uint32_t seed) {
  const int w = static_cast<int>(v.size.size()) + 1;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-20, 20);
  std::vector<double> p(at(n * w));
  for (int64_t i = 0; i < n; ++i) {
    const double batch_offset[] = {0, 0, 1e-6, -0.3, 0.5};
    p[at(i * w)] = static_cast<double>(rng() % 4) - 1 + batch_offset[rng() % 5];
    for (int a = 1; a < w; ++a) {
      double& x = p[at(i * w + a)];
      switch (rng() % 8) {
        case 0:
          x = static_cast<double>(static_cast<int>(rng() % 41) - 20) * v.size[at(a - 1)];
          break;
        case 1:
          x = rng() % 2 ? -0.0 : -1e-300;
          break;
        default:
          x = u(rng);
      }
    }
  }
  return p;
}

template <typename T>
std::vector<T> as(const std::vector<double>& p) {
  return std::vector<T>(p.begin(), p.end());
}

// The CPU TensorField's voxel row of every point: sparse()'s map row of it.
// T is the coordinates' dtype (the points already rounded to it).
template <typename T>
std::vector<int32_t> cpu_voxel_rows(const std::vector<T>& points, const Voxels& v) {
  const int64_t w = static_cast<int64_t>(v.size.size()) + 1;
  const int64_t n = static_cast<int64_t>(points.size()) / w;
  minkowski::TensorField field(fk::zeros({n, 1}), fk::from_vector(points, fk::Dims{n, w}));
  const minkowski::SparseTensor s =
      field.sparse(v.size, minkowski::QuantizationMode::FirstOccurrence, nullptr, v.stride);
  const std::vector<int32_t> map_rows = s.C().to_vector<int32_t>();
  std::vector<int32_t> rows;
  for (int64_t r : field.inverse_mapping())
    rows.insert(rows.end(), &map_rows[at(r * w)], &map_rows[at((r + 1) * w)]);
  return rows;
}

// The row the CPU TensorField refuses first (its error names it), or -1.
template <typename T>
int64_t cpu_refused_row(const std::vector<T>& points, const Voxels& v) {
  const int64_t w = static_cast<int64_t>(v.size.size()) + 1;
  const int64_t n = static_cast<int64_t>(points.size()) / w;
  minkowski::TensorField field(fk::zeros({n, 1}), fk::from_vector(points, fk::Dims{n, w}));
  try {
    field.sparse(v.size, minkowski::QuantizationMode::FirstOccurrence, nullptr, v.stride);
  } catch (const fk::Error& e) {
    const std::string& expected = e.expected();
    const size_t row = expected.rfind("(row ");
    if (row == std::string::npos) throw;
    return std::stoll(expected.substr(row + 5));
  }
  return -1;
}

template <typename T>
void expect_cpu_rows(int d, int64_t n, uint32_t seed) {
  SCOPED_TRACE(testing::Message() << d << "-D, " << sizeof(T) * 8 << "-bit coordinates");
  const Voxels v = voxels_of(d);
  const std::vector<T> points = as<T>(random_points(n, v, seed));
  const std::vector<int32_t> want = cpu_voxel_rows(points, v);
  in_both_orders([&](fkemu::Order) {
    std::vector<int32_t> rows(want.size(), kUnwritten);
    unsigned long long bad = static_cast<unsigned long long>(n);
    mc::emu::launch_voxelize<T>(points.data(), n, v.grid(), rows.data(), &bad, nullptr);
    EXPECT_EQ(rows, want);
    EXPECT_EQ(bad, static_cast<unsigned long long>(n));
  });
}

TEST(EmulatedField, VoxelRowsAreTheCpuFieldsForEachDtypeAndDimension) {
  // 301 points: 1204 (3-D), 602 (1-D) and 2408 (7-D) threads, never whole blocks.
  expect_cpu_rows<float>(3, 301, 1);
  expect_cpu_rows<double>(3, 301, 2);
  expect_cpu_rows<float>(1, 301, 3);
  expect_cpu_rows<double>(7, 301, 4);
}

// A point the host loop refuses: one value of a valid point replaced.
struct Refusal {
  const char* what;
  int axis;  // 0 the batch
  double value;
};

template <typename T>
void expect_refusals(const std::vector<Refusal>& refusals) {
  SCOPED_TRACE(testing::Message() << sizeof(T) * 8 << "-bit coordinates");
  const Voxels v = voxels_of(3);
  const int64_t n = 301, w = 4;
  const std::vector<T> good = as<T>(random_points(n, v, 5));
  const std::vector<int32_t> good_rows = cpu_voxel_rows(good, v);
  // Each refusal alone at point 200 with another at 260 (the lowest is
  // reported), then all of them, one every 7 points from 100.
  std::vector<std::vector<std::pair<int64_t, Refusal>>> cases;
  for (size_t k = 0; k < refusals.size(); ++k)
    cases.push_back({{200, refusals[k]}, {260, refusals[(k + 1) % refusals.size()]}});
  cases.emplace_back();
  for (size_t k = 0; k < refusals.size(); ++k)
    cases.back().emplace_back(100 + 7 * static_cast<int64_t>(k), refusals[k]);
  for (const auto& placed : cases) {
    SCOPED_TRACE(placed.size() == 2 ? placed[0].second.what : "every refusal");
    std::vector<T> points(good);
    std::vector<int32_t> want(good_rows);
    for (const auto& [i, r] : placed) {
      points[at(i * w + r.axis)] = static_cast<T>(r.value);
      want[at(i * w + r.axis)] = 0;
    }
    const int64_t first = placed[0].first;
    ASSERT_EQ(cpu_refused_row(points, v), first);
    in_both_orders([&](fkemu::Order) {
      std::vector<int32_t> rows(want.size(), kUnwritten);
      unsigned long long bad = static_cast<unsigned long long>(n);
      mc::emu::launch_voxelize<T>(points.data(), n, v.grid(), rows.data(), &bad, nullptr);
      EXPECT_EQ(rows, want);
      EXPECT_EQ(bad, static_cast<unsigned long long>(first));
    });
  }
}

TEST(EmulatedField, EveryRowTheHostRefusesIsZeroedAndTheLowestReported) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // Voxel sizes 0.5, 0.3, 1.7 and strides 1, 4, 3 (voxels_of(3)).
  const std::vector<Refusal> both{
      {"a NaN batch index", 0, nan},
      {"an infinite batch index", 0, -inf},
      {"a batch index of 2^31", 0, 2147483648.0},
      {"a NaN coordinate", 2, nan},
      {"an infinite coordinate", 1, inf},
      {"a voxel past int32", 3, 1.7 * 3e9},
      {"a voxel below int32", 1, -0.5 * 2.2e9},
  };
  expect_refusals<float>(both);
  // f64 only: values f32 cannot hold. On axis 3 the voxel -2^31 fits int32,
  // its floor to the stride 3, -2^31 - 1, does not. (The batch index 2^31 - 1
  // and the voxel -2^31 are int32s: taken, as the host takes them.)
  std::vector<Refusal> f64(both);
  f64.push_back({"a voxel that leaves int32 only floored to the stride", 3, 1.7 * -2147483647.5});
  expect_refusals<double>(f64);
}

TEST(EmulatedField, NoPointsWriteNothing) {
  const Voxels v = voxels_of(3);
  int32_t row = kUnwritten;
  unsigned long long bad = 9;
  mc::emu::launch_voxelize<float>(nullptr, 0, v.grid(), &row, &bad, nullptr);
  mc::emu::launch_voxelize<double>(nullptr, 0, v.grid(), &row, &bad, nullptr);
  EXPECT_EQ(row, kUnwritten);
  EXPECT_EQ(bad, 9u);
}

}  // namespace
