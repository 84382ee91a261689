#pragma once
// A temporary file name beside `path`, unique to this host, process and call:
// a file written there and renamed onto `path` is never seen half written,
// and two processes writing one path no longer rename each other's temporary
// away (a fixed "path.tmp" failed one of two concurrent runs). A process
// killed between the write and the rename leaves its temporary; the next
// writer of `path` removes those whose process is gone.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <filesystem>
#include <string>

namespace fk {

inline std::string host_tag() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0 || !name[0]) return "host";
  std::string s(name);
  for (char& ch : s)
    if (ch == '/' || ch == '.') ch = '_';
  return s;
}

inline std::string temporary_path(const std::string& path) {
  static std::atomic<unsigned long> counter{0};
  static const std::string host = host_tag();
  return path + ".tmp." + host + "." + std::to_string(::getpid()) + "." + std::to_string(counter++);
}

// Removes `path`'s temporaries left by a process of this host that no longer
// runs (killed between its write and its rename). Best effort: errors are
// ignored.
inline void remove_stale_temporaries(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path target(path);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  const std::string prefix = target.filename().string() + ".tmp." + host_tag() + ".";
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string rest = name.substr(prefix.size());
    const size_t dot = rest.find('.');
    if (dot == std::string::npos || dot == 0) continue;
    pid_t pid = 0;
    try {
      pid = static_cast<pid_t>(std::stol(rest.substr(0, dot)));
    } catch (...) {
      continue;
    }
    if (pid > 0 && pid != ::getpid() && ::kill(pid, 0) != 0 && errno == ESRCH)
      fs::remove(entry.path(), ec);
  }
}

}  // namespace fk
