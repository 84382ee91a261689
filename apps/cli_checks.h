#pragma once
// CLI11 checks the command-line tools share, for the values CLI11 would
// otherwise read silently wrong (or pass on to crash later).
#include <CLI/CLI.hpp>
#include <charconv>
#include <cstdint>
#include <limits>
#include <string>

namespace cli_checks {

// A seed (each value of a list): CLI11 reads "-1" into an unsigned seed as
// 2^64 - 1, and clamps a seed past 2^64 - 1 to it.
inline CLI::Validator non_negative_seed() {
  return CLI::Validator(
      [](std::string& s) {
        uint64_t v = 0;
        const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        return s.empty() || ec != std::errc() || end != s.data() + s.size()
                   ? "expected a seed in [0, 2^64), got '" + s + "'"
                   : std::string();
      },
      "SEED>=0");
}

// A value >= 0 (a count or a weight), said in the tools' words: CLI11's
// NonNegativeNumber printed its range's upper end, the largest double, in
// full (300 digits).
inline CLI::Validator non_negative() {
  return CLI::Validator(
      [](std::string& s) {
        double v = 0;
        const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        return s.empty() || ec != std::errc() || end != s.data() + s.size() || !(v >= 0) ||
                       v == std::numeric_limits<double>::infinity()
                   ? "expected a finite value >= 0, got '" + s + "'"
                   : std::string();
      },
      ">=0");
}

// --threads (each value of a list): `lo` (0: the tool's default) up to fk's
// limit of 4096; CLI11's Range would call a word "not in range".
inline CLI::Validator thread_count(int lo = 0) {
  const std::string want = "a thread count in [" + std::to_string(lo) + ", 4096]";
  return CLI::Validator(
      [lo, want](std::string& s) {
        int v = 0;
        const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        return s.empty() || ec != std::errc() || end != s.data() + s.size() || v < lo || v > 4096
                   ? "expected " + want + ", got '" + s + "'"
                   : std::string();
      },
      std::to_string(lo) + "..4096");
}

}  // namespace cli_checks
