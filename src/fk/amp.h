#pragma once
// Mixed precision: autocast, dynamic loss scaling and the TF32 switch.
//
// Autocast: inside an AutocastGuard(F16 or BF16) the matmul-class ops (matmul,
// bmm, linear) cast their f32 (and other-half) operands to that dtype before
// multiplying, so results are stored in half while GEMM accumulates in f32;
// f64 and complex operands, and every other op, are left alone. The cast is
// the differentiable to(), so gradients flow back to the f32 tensors in f32.
// The scope is thread-local and nests; AutocastGuard(F32) switches autocast off
// for its scope. Backward passes ignore autocast (they use the pure backward
// functions in the forward's dtypes).
//
// GradScaler: for f16 training, where small gradients underflow. Multiply the
// loss by scale() before backward, then unscale_and_check() the gradients: it
// divides them in place by the scale and reports whether they are all finite;
// skip the optimizer step when they are not and call update(found_inf) every
// step. The scale halves (backoff_factor) on every step with inf/nan and
// doubles (growth_factor) after growth_interval clean steps in a row.
#include <cstdint>
#include <optional>
#include <vector>

#include "fk/dtype.h"
#include "fk/tensor.h"

namespace fk::amp {

// The autocast dtype in force on this thread, or nullopt outside any scope.
std::optional<DType> autocast_dtype();

// Whether every element of t is finite (both parts of a complex one; integers
// always): the GradScaler's check, read in place on the CPU, one reduction and
// one host read on a device.
bool all_finite(const Tensor& t);

class AutocastGuard {
 public:
  // dtype: F16 or BF16 turns autocast on for this scope, F32 turns it off.
  explicit AutocastGuard(DType dtype);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  std::optional<DType> prev_;
};

struct GradScalerOptions {
  double init_scale = 65536.0;
  double growth_factor = 2.0;      // > 1
  double backoff_factor = 0.5;     // in (0, 1)
  int64_t growth_interval = 2000;  // clean steps before the scale grows
};

class GradScaler {
 public:
  explicit GradScaler(GradScalerOptions options = {});

  // loss * scale, differentiable; a half loss is scaled in f32 (the product
  // would overflow f16 otherwise).
  Tensor scale(const Tensor& loss) const;
  // Divides every defined gradient in place by the scale (under no-grad) and
  // returns true when all of them are finite, false on any inf or nan.
  bool unscale_and_check(std::vector<Tensor>& grads) const;
  // Call once per step with found_inf = !unscale_and_check(...).
  void update(bool found_inf);

  double scale_value() const { return scale_; }
  // Clean steps since the last growth or backoff.
  int64_t growth_tracker() const { return growth_tracker_; }
  // Puts back a scale and tracker read from the two above (a resumed run's);
  // throws fk::Error unless scale > 0 is finite and 0 <= tracker < growth_interval.
  void restore(double scale, int64_t growth_tracker);

 private:
  GradScalerOptions options_;
  double scale_;
  int64_t growth_tracker_ = 0;
};

// Whether f32 GEMMs may run on TF32 tensor cores (10-bit mantissa inputs, f32
// accumulation). A process-wide switch kept in the registered knob
// FK_ALLOW_TF32 (default off); set_allow_tf32 overrides the environment. The
// CUDA GEMM honours it; on the CPU it has no effect (OpenBLAS has no TF32).
void set_allow_tf32(bool allow);
bool allow_tf32();

}  // namespace fk::amp
