#pragma once
// Small helpers shared by the join tests.
#include <functional>
#include <string>
#include <vector>

#include "fk/fk.h"

namespace fk::join_test {

inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

inline Tensor vec(const std::vector<double>& v, const Dims& shape) {
  return from_vector(v, shape);
}

}  // namespace fk::join_test
