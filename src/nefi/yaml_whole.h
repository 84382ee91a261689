#pragma once
// Whole numbers in config text, read as decimal. yaml-cpp's as<int> follows
// YAML 1.1 (064 is octal 52, 0x40 hex) while its floats and nefi's lists
// read 064 as 64: a leading zero silently changed an integer key. YAML 1.2,
// like every other reader here, takes [-+]?[0-9]+ as decimal.
#include <charconv>
#include <string>

#include <yaml-cpp/yaml.h>

namespace nefi {

// The node's scalar as a decimal T; YAML::BadConversion otherwise (another
// form, past T's range, or not a scalar), as yaml-cpp's own as<T> throws.
template <typename T>
T yaml_whole(const YAML::Node& n) {
  if (!n.IsScalar()) throw YAML::BadConversion(n.Mark());
  const std::string& s = n.Scalar();
  const char* first = s.data() + (!s.empty() && s[0] == '+' ? 1 : 0);
  const char* last = s.data() + s.size();
  // One sign at most: from_chars after a '+' took "+-5" as -5.
  if (first == last || (first != s.data() && *first == '-')) throw YAML::BadConversion(n.Mark());
  T v{};
  const auto [end, ec] = std::from_chars(first, last, v);
  if (ec != std::errc() || end != last) throw YAML::BadConversion(n.Mark());
  return v;
}

}  // namespace nefi
