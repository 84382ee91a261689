#pragma once
// Files for nefi's tests: the repo's sources and configs, a per-process scratch
// directory (scratch_dir.h) and whole-file reads.

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "scratch_dir.h"

namespace nefi::test {

// The checkout's root directory (source_dir.cpp).
std::string source_dir();

inline std::string config_path(const std::string& name) {
  return source_dir() + "/configs/" + name;
}

// The test process's scratch directory (removed when the process exits).
inline std::filesystem::path scratch() {
  return fieldkit_test::scratch_dir();
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
