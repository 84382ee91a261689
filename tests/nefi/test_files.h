#pragma once
// Files for nefi's tests: the repo's configs, a per-process scratch directory
// (test processes run in parallel under ctest) and whole-file reads.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace nefi::test {

inline std::string config_path(const std::string& name) {
  return std::string(NEFI_SOURCE_DIR) + "/configs/" + name;
}

inline std::filesystem::path scratch() {
  const auto d = std::filesystem::path(testing::TempDir()) /
                 ("nefi_bench_tests_" + std::to_string(static_cast<long>(getpid())));
  std::filesystem::create_directories(d);
  return d;
}

// scratch()/name, removed if it exists.
inline std::filesystem::path fresh_dir(const std::string& name) {
  const std::filesystem::path d = scratch() / name;
  std::filesystem::remove_all(d);
  return d;
}

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace nefi::test
