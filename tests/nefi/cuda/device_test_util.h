#pragma once
// Shared pieces of nefi's CUDA tests: the skip where no device is usable,
// TF32 off for a scope, a knob override for a scope, a tensor's values on the
// host, and the closeness check relative to the largest expected value.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "fk/amp.h"
#include "fk/cuda/runtime.h"
#include "fk/knobs.h"
#include "fk/tensor.h"
#include "nefi/operators/operator.h"

namespace nefi::cuda_test {

// fk::cuda::device_count() is 0 without a usable device and in CPU-only
// builds; scripts/gpu-check counts a skip on a GPU machine as a failure.
#define NEFI_SKIP_WITHOUT_GPU()                                                    \
  do {                                                                             \
    if (::fk::cuda::device_count() == 0)                                           \
      GTEST_SKIP() << "no usable CUDA device: " << ::fk::cuda::no_device_reason(); \
  } while (0)

inline const fk::Device kGpu = fk::cuda_device(0);

// TF32 off for a scope (f32 tolerances assume f32 products).
struct NoTf32 : fk::KnobOverride {
  NoTf32() : fk::KnobOverride("FK_ALLOW_TF32", "0") {}
};

using fk::KnobOverride;

// A tensor's values on the host as f64, from any device, real dtype and
// layout (detached: reading a value records no autograd node).
inline std::vector<double> host(const fk::Tensor& t) {
  return t.detach().to(fk::kCPU).to(fk::DType::F64).contiguous().to_vector<double>();
}

// max |got - want| <= tol * max(1, max |want|); a NaN anywhere in got fails.
inline void expect_close(const std::vector<double>& got, const std::vector<double>& want,
                         double tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double scale = 1, worst = 0;
  size_t at = 0;
  for (double v : want) scale = std::max(scale, std::fabs(v));
  for (size_t i = 0; i < got.size(); ++i) {
    const double e = std::fabs(got[i] - want[i]);
    if (!(e <= worst)) {
      worst = e;
      at = i;
      if (std::isnan(e)) break;  // a NaN stays the worst (later e <= NaN is false too)
    }
  }
  EXPECT_LE(worst, tol * scale) << what << ": worst at " << at << " (scale " << scale << ")";
}

// The adjoint dot test with both sides on the device: <A x, y> = <x, A^T y>
// to 1e-12 relative, A^T through op's autograd node (x, y on one device, f64).
inline void expect_adjoint_on_device(const nefi::Operator& op, const fk::Tensor& x,
                                     const fk::Tensor& y) {
  const fk::Tensor aty = op.vjp(x, y);
  ASSERT_EQ(aty.device(), x.device());
  auto inner = [](const fk::Tensor& a, const fk::Tensor& b) {
    const std::vector<double> u = a.to_vector<double>(), v = b.to_vector<double>();
    double s = 0;
    for (size_t i = 0; i < u.size(); ++i) s += u[i] * v[i];
    return s;
  };
  const double lhs = inner(op.apply(x), y), rhs = inner(x, aty);
  EXPECT_NEAR(lhs, rhs, 1e-12 * (1 + std::abs(lhs)));
}

// The larger of m and v where a NaN wins (std::max(m, NaN) is m, which would
// let a NaN result pass a tolerance check); once NaN, it stays NaN.
inline double nan_max(double m, double v) {
  if (std::isnan(m) || std::isnan(v)) return std::nan("");
  return v > m ? v : m;
}

// max_i |a_i - b_i| (any value type with std::abs of a difference), NaN when
// any difference is NaN: a NaN result fails EXPECT_LE(max_abs_diff, tol).
template <typename V>
double max_abs_diff(const std::vector<V>& a, const std::vector<V>& b) {
  EXPECT_EQ(a.size(), b.size());
  double m = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    m = nan_max(m, static_cast<double>(std::abs(a[i] - b[i])));
  return m;
}

}  // namespace nefi::cuda_test
