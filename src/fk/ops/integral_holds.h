#pragma once
// Whether an integer dtype holds a double exactly, the check before a cast
// whose result is otherwise undefined (an alpha of 3e9 into i32 gave
// INT_MIN).
#include <cmath>

#include "fk/dtype.h"

namespace fk {

// A whole, finite s in dt's range (bool: any whole one); true for the
// floating and complex dtypes.
inline bool integral_holds(DType dt, double s) {
  if (!is_integral(dt)) return true;
  if (!std::isfinite(s) || s != std::floor(s)) return false;
  if (dt == DType::I32) return s >= -2147483648.0 && s <= 2147483647.0;
  return dt == DType::Bool || (s >= -9223372036854775808.0 && s < 9223372036854775808.0);
}

}  // namespace fk
