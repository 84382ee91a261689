#pragma once
// Files for nefi's tests: the repo's sources and configs, a per-process scratch
// directory (test processes run in parallel under ctest) and whole-file reads.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace nefi::test {

// The checkout's root directory (source_dir.cpp).
std::string source_dir();

inline std::string config_path(const std::string& name) {
  return source_dir() + "/configs/" + name;
}

// The directory is removed when the test process exits, so runs leave nothing behind in /tmp.
inline std::filesystem::path scratch() {
  struct Dir {
    std::filesystem::path path;
    ~Dir() {
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
    }
  };
  static const Dir dir{std::filesystem::path(testing::TempDir()) /
                       ("nefi_tests_" + std::to_string(static_cast<long>(getpid())))};
  std::filesystem::create_directories(dir.path);
  return dir.path;
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
