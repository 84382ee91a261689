#pragma once
// The scratch directory of a test process. ctest runs every test in a process
// of its own, two at a time, so a file name fixed in the temporary directory
// would be shared; this one carries the process id and is removed when the
// process exits, so test runs leave nothing behind in /tmp.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace fieldkit_test {

inline std::filesystem::path scratch_dir() {
  struct Dir {
    std::filesystem::path path;
    ~Dir() {
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
    }
  };
  static const Dir dir{std::filesystem::path(testing::TempDir()) /
                       ("fieldkit_tests_" + std::to_string(static_cast<long>(getpid())))};
  std::filesystem::create_directories(dir.path);
  return dir.path;
}

}  // namespace fieldkit_test
