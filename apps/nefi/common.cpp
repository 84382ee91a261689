#include "common.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "fk/error.h"
#include "fk/parallel.h"

namespace fs = std::filesystem;

namespace nefi::cli {

std::vector<fs::path> config_dirs(const char* argv0) {
  std::vector<fs::path> dirs;
  // An empty value is unset (as fk's knobs); a missing directory is refused,
  // not skipped while the configs come from elsewhere.
  if (const char* e = std::getenv("NEFI_CONFIG_DIR"); e != nullptr && *e != '\0') {
    FK_CHECK(fs::is_directory(e), "NEFI_CONFIG_DIR", "a directory of config files",
             "'" + std::string(e) + "'");
    dirs.emplace_back(e);
  }
  dirs.emplace_back("configs");
  std::error_code ec;
  const fs::path exe = fs::canonical(fs::path(argv0), ec);
  // The repository's configs/ beside the build tree: build/bin/nefi (release)
  // or build/<preset>/bin/nefi (dev, asan), so the nearest ancestor that has one.
  if (!ec) {
    for (fs::path p = exe.parent_path(); p.has_relative_path(); p = p.parent_path()) {
      if (fs::is_directory(p / "configs")) {
        dirs.push_back(p / "configs");
        break;
      }
    }
  }
  return dirs;
}

fs::path find_config(const std::vector<fs::path>& dirs, const std::string& file) {
  for (const auto& d : dirs)
    if (fs::exists(d / file)) return d / file;
  return {};
}

void set_threads(int threads) {
  if (threads > 0)
    fk::set_num_threads(threads);
  else if (const char* v = std::getenv("OMP_NUM_THREADS"); v == nullptr || *v == '\0')
    fk::set_num_threads(1);
}

bool stderr_is_tty() {
  return isatty(fileno(stderr));
}

}  // namespace nefi::cli
