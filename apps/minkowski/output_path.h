#pragma once
// Output files a command writes after its work, checked before it: a bad
// path fails at once instead of after minutes of timing.
#include <filesystem>
#include <fstream>
#include <string>

#include "fk/error.h"

namespace minkowski_app {

// Opens `path` for appending (an existing file keeps its contents until the
// command writes it) and fails with an fk::Error naming `flag` if it cannot;
// a file the probe made is removed again, so a command that fails later
// leaves no empty file behind.
inline void check_writable(const std::string& path, const std::string& flag) {
  if (path.empty()) return;
  std::error_code ec;
  const bool existed = std::filesystem::exists(path, ec);
  {
    std::ofstream probe(path, std::ios::app);
    FK_CHECK(probe.good(), flag, "a writable file", "'" + path + "'");
  }
  if (!existed) std::filesystem::remove(path, ec);
}

// A path prefix PATH whose files (PATH-....json) go into PATH's folder.
inline void check_writable_folder_of(const std::string& path, const std::string& flag) {
  if (path.empty()) return;
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  FK_CHECK(dir.empty() || std::filesystem::is_directory(dir), flag, "a path in an existing folder",
           "'" + path + "'");
}

}  // namespace minkowski_app
