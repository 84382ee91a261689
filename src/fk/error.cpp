#include "fk/error.h"

#include <utility>

namespace fk {

Error::Error(std::string where, std::string expected, std::string given)
    : std::runtime_error(where + ": expected " + expected + ", got " + given),
      where_(std::move(where)),
      expected_(std::move(expected)),
      given_(std::move(given)) {}

Error::Error(const std::string& message) : std::runtime_error(message) {}

}  // namespace fk
