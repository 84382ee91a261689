#pragma once
// Output files a command writes after its work, checked before it: a bad
// path fails at once instead of after minutes of timing.
#include <filesystem>
#include <fstream>
#include <string>

#include "fk/error.h"

namespace minkowski_app {

// Whether `path` can be opened for appending (an existing file keeps its
// contents until the command writes it); a file the probe made is removed
// again, so a command that fails later leaves no empty file behind.
inline bool can_write(const std::filesystem::path& path) {
  std::error_code ec;
  const bool existed = std::filesystem::exists(path, ec);
  const bool ok = std::ofstream(path, std::ios::app).good();
  if (ok && !existed) std::filesystem::remove(path, ec);
  return ok;
}

// An fk::Error naming `flag` unless `path` can be written.
inline void check_writable(const std::string& path, const std::string& flag) {
  if (!path.empty()) FK_CHECK(can_write(path), flag, "a writable file", "'" + path + "'");
}

// A path prefix PATH whose files (PATH-....json) go into PATH's folder.
// The folder must exist and take a file (a probe is written and removed:
// /proc's folder exists, and the first trace failed after a warm-up and a
// traced step); PATH names a file, not a folder (mk/ wrote mk/-1-f32-fused).
inline void check_writable_folder_of(const std::string& path, const std::string& flag) {
  if (path.empty()) return;
  const std::filesystem::path p(path), dir = p.parent_path();
  FK_CHECK(!p.stem().empty() && !std::filesystem::is_directory(p), flag,
           "a file path (FILE.json), not a folder", "'" + path + "'");
  FK_CHECK(dir.empty() || std::filesystem::is_directory(dir), flag, "a path in an existing folder",
           "'" + path + "'");
  FK_CHECK(can_write(dir / (p.stem().string() + "-probe" + p.extension().string())), flag,
           "a path in a writable folder", "'" + path + "'");
}

}  // namespace minkowski_app
