#pragma once
// dispatch_real(dtype, f): calls f(double{}) for f64 and f(float{}) otherwise,
// so a solver written once as a template over T runs on f32 and f64 tensors
// (callers have already refused other dtypes).
#include "fk/dtype.h"

namespace nefi {

template <typename F>
void dispatch_real(fk::DType dt, F&& f) {
  if (dt == fk::DType::F64)
    f(double{});
  else
    f(float{});
}

}  // namespace nefi
