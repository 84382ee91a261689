#pragma once
// fk::Error: the one exception type of fieldkit. It names where the problem was
// found, what was expected and what was given, so a user can act on it.
#include <concepts>
#include <stdexcept>
#include <string>

namespace fk {

class Error : public std::runtime_error {
 public:
  // "<where>: expected <expected>, got <given>"
  Error(std::string where, std::string expected, std::string given);
  // A message that does not fit the expected/given form (e.g. an unsupported feature).
  explicit Error(const std::string& message);

  const std::string& where() const { return where_; }
  const std::string& expected() const { return expected_; }
  const std::string& given() const { return given_; }

 private:
  std::string where_, expected_, given_;
};

// A number as a message shows it: integers as std::to_string does, floating
// values in the shortest form that reads back the same (std::to_string's
// six decimals print 1e-9 as 0.000000 and -1e-9 as -0.000000).
std::string to_text(double v);
std::string to_text(float v);
template <std::integral T>
std::string to_text(T v) {
  return std::to_string(v);
}

// Throws Error(where, expected, given) when cond is false. The strings are only
// built on failure, so checks cost nothing on the hot path.
#define FK_CHECK(cond, where, expected, given)         \
  do {                                                 \
    if (!(cond)) [[unlikely]] {                        \
      throw ::fk::Error((where), (expected), (given)); \
    }                                                  \
  } while (0)

}  // namespace fk
