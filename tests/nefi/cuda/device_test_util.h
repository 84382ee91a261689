#pragma once
// Shared pieces of nefi's CUDA tests of the neural field: the skip where no
// device is usable, TF32 off for a scope, a knob override for a scope, and
// the closeness check relative to the largest expected value.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "fk/amp.h"
#include "fk/cuda/runtime.h"
#include "fk/knobs.h"

namespace nefi::cuda_test {

// fk::cuda::device_count() is 0 without a usable device and in CPU-only
// builds; scripts/gpu-check counts a skip on a GPU machine as a failure.
#define NEFI_SKIP_WITHOUT_GPU()                                                   \
  do {                                                                            \
    if (::fk::cuda::device_count() == 0) GTEST_SKIP() << "no usable CUDA device"; \
  } while (0)

inline const fk::Device kGpu = fk::cuda_device(0);

// TF32 off for a scope (f32 tolerances assume f32 products).
class NoTf32 {
 public:
  NoTf32() : was_(fk::amp::allow_tf32()) { fk::amp::set_allow_tf32(false); }
  ~NoTf32() { fk::amp::set_allow_tf32(was_); }
  NoTf32(const NoTf32&) = delete;
  NoTf32& operator=(const NoTf32&) = delete;

 private:
  bool was_;
};

// Knob `name` set to `value` for a scope.
class KnobOverride {
 public:
  KnobOverride(const char* name, const char* value) : knob_(fk::mutable_knob(name)) {
    knob_.set_override(std::string(value));
  }
  ~KnobOverride() { knob_.set_override(std::nullopt); }
  KnobOverride(const KnobOverride&) = delete;
  KnobOverride& operator=(const KnobOverride&) = delete;

 private:
  fk::Knob& knob_;
};

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

}  // namespace nefi::cuda_test
