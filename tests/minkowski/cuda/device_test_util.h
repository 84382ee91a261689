#pragma once
// Shared pieces of the minkowski CUDA tests: the skip where no device is
// usable, random coordinate maps, knob and flag overrides, and a closeness
// check. Device results are compared with the CPU path on the same inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "fk/cuda/runtime.h"
#include "fk/fk.h"
#include "minkowski/minkowski.h"

namespace minkowski::cuda_test {

// fk::cuda::device_count() is 0 on any runtime error (no driver: error 35 on
// machines without a GPU) and in CPU-only builds; scripts/gpu-check counts a
// skip on a GPU machine as a failure.
#define MK_SKIP_WITHOUT_GPU()                                                      \
  do {                                                                             \
    if (::fk::cuda::device_count() == 0)                                           \
      GTEST_SKIP() << "no usable CUDA device: " << ::fk::cuda::no_device_reason(); \
  } while (0)

inline const fk::Device kGpu = fk::cuda_device(0);

// n distinct rows [batch, x_1..x_D], coordinates multiples of ts in
// [-range, range] * ts, in random order (shuffle) or sorted.
inline std::vector<int32_t> random_rows(int d, int64_t n, int range, int ts, int batches,
                                        unsigned seed, bool shuffle = true) {
  std::mt19937 g(seed);
  std::uniform_int_distribution<int> u(-range, range), ub(0, batches - 1);
  std::set<std::vector<int32_t>> seen;
  std::vector<std::vector<int32_t>> rows;
  while (static_cast<int64_t>(rows.size()) < n) {
    std::vector<int32_t> c(d + 1);
    c[0] = ub(g);
    for (int a = 1; a <= d; ++a) c[a] = u(g) * ts;
    if (seen.insert(c).second) rows.push_back(c);
  }
  if (!shuffle) std::sort(rows.begin(), rows.end());
  std::vector<int32_t> flat;
  for (const auto& r : rows) flat.insert(flat.end(), r.begin(), r.end());
  return flat;
}

inline std::shared_ptr<CoordinateMap> make_map(const std::vector<int32_t>& rows, int d, int ts) {
  return std::make_shared<CoordinateMap>(rows.data(), static_cast<int64_t>(rows.size()) / (d + 1),
                                         d + 1, std::vector<int32_t>(d, ts));
}

// The map with every coordinate floored to a multiple of ts * s (rows in
// first-occurrence order of the input), as a strided convolution's output.
inline std::shared_ptr<CoordinateMap> strided_map(const CoordinateMap& in, int ts, int s) {
  std::vector<int32_t> rows = in.coordinates();
  const int w = in.width(), m = ts * s;
  for (size_t i = 0; i < rows.size(); ++i)
    if (i % w != 0)
      rows[i] = static_cast<int32_t>(std::floor(rows[i] / static_cast<double>(m)) * m);
  return std::make_shared<CoordinateMap>(rows.data(), static_cast<int64_t>(rows.size()) / w, w,
                                         std::vector<int32_t>(w - 1, m));
}

// f32 values uniform in [-scale, scale), on the CPU.
inline fk::Tensor random_values(const fk::Dims& shape, double scale, uint64_t seed) {
  fk::Generator g(seed);
  return fk::uniform(shape, -scale, scale, {fk::DType::F32}, &g);
}

using fk::KnobOverride;

class DeterministicScope {
 public:
  explicit DeterministicScope(bool on) : was_(is_deterministic()) { set_deterministic(on); }
  ~DeterministicScope() { set_deterministic(was_); }
  DeterministicScope(const DeterministicScope&) = delete;
  DeterministicScope& operator=(const DeterministicScope&) = delete;

 private:
  bool was_;
};

// max |got - want| <= tol * max(1, max |want|) (got on any device; a NaN in
// got fails), in f64 when both are f64 (rounding them to f32 would hide an
// f64 op computed in f32), else in f32.
inline void expect_close(const fk::Tensor& got, const fk::Tensor& want, double tol,
                         const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  const bool f64 = got.dtype() == fk::DType::F64 && want.dtype() == fk::DType::F64;
  auto values = [f64](const fk::Tensor& t) {
    if (f64) return t.to_vector<double>();
    const std::vector<float> v = t.to_vector<float>();
    return std::vector<double>(v.begin(), v.end());
  };
  const std::vector<double> g = values(got), w = values(want);
  double scale = 1, worst = 0;
  int64_t at = -1;
  for (double v : w) scale = std::max(scale, std::fabs(v));
  for (size_t i = 0; i < g.size(); ++i) {
    const double d = std::fabs(g[i] - w[i]);
    // A NaN stays the worst (as infinity): a later finite d must not replace it.
    if (!(d <= worst)) {
      worst = std::isnan(d) ? std::numeric_limits<double>::infinity() : d;
      at = static_cast<int64_t>(i);
      if (std::isnan(d)) break;
    }
  }
  EXPECT_LE(worst, tol * scale) << what << ": worst at element " << at << " (scale " << scale
                                << ")";
}

inline bool bitwise_equal(const fk::Tensor& a, const fk::Tensor& b) {
  const std::vector<float> x = a.to_vector<float>(), y = b.to_vector<float>();
  return x.size() == y.size() && std::equal(x.begin(), x.end(), y.begin(), [](float p, float q) {
           return std::memcmp(&p, &q, sizeof(float)) == 0;
         });
}

// The CPU's and the device's outputs of one op on one manager sit on the
// same coordinates in the same order: the same map, or (generative ops,
// whose CoordinateManager::expand makes a new map at every call) maps of
// the same stride holding the same rows.
inline void expect_same_map(const SparseTensor& cpu, const SparseTensor& device,
                            const std::string& what) {
  if (cpu.key() == device.key()) return;
  EXPECT_EQ(cpu.key().tensor_stride, device.key().tensor_stride) << what;
  EXPECT_EQ(cpu.C().to_vector<int32_t>(), device.C().to_vector<int32_t>()) << what;
}

// A fresh leaf copy of t on `device` (gradients are asked of it).
inline fk::Tensor leaf(const fk::Tensor& t, fk::Device device) {
  fk::Tensor c = t.detach().clone().to(device);
  c.set_requires_grad(true);
  return c;
}

}  // namespace minkowski::cuda_test
