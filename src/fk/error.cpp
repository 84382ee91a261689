#include "fk/error.h"

#include <charconv>
#include <utility>

namespace fk {

Error::Error(std::string where, std::string expected, std::string given)
    : std::runtime_error(where + ": expected " + expected + ", got " + given),
      where_(std::move(where)),
      expected_(std::move(expected)),
      given_(std::move(given)) {}

Error::Error(const std::string& message) : std::runtime_error(message) {}

namespace {
template <typename T>
std::string shortest(T v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}
}  // namespace

std::string to_text(double v) {
  return shortest(v);
}
std::string to_text(float v) {
  return shortest(v);
}

}  // namespace fk
