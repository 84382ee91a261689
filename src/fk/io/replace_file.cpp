#include "fk/io/replace_file.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <filesystem>

#include "fk/error.h"

namespace fk {
namespace {

// Removes `path`'s temporaries left by a process of this host that no longer
// runs (killed between its write and its rename). Best effort.
void remove_stale_temporaries(const std::string& path) {
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

}  // namespace

std::string host_tag() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0 || !name[0]) return "host";
  std::string s(name);
  for (char& ch : s)
    if (ch == '/' || ch == '.') ch = '_';
  return s;
}

std::string temporary_path(const std::string& path) {
  static std::atomic<unsigned long> counter{0};
  static const std::string host = host_tag();
  return path + ".tmp." + host + "." + std::to_string(::getpid()) + "." + std::to_string(counter++);
}

void replace_file(const std::string& path, const std::function<void(const std::string&)>& write,
                  const char* where, const std::string& named) {
  remove_stale_temporaries(path);
  const std::string tmp = temporary_path(path);
  std::error_code ec, ignored;
  try {
    write(tmp);
    std::filesystem::rename(tmp, path, ec);
  } catch (...) {
    std::filesystem::remove(tmp, ignored);
    throw;
  }
  if (ec) std::filesystem::remove(tmp, ignored);
  FK_CHECK(!ec, where, "a successful write", (named.empty() ? path : named) + ": " + ec.message());
}

}  // namespace fk
