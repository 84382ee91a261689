#pragma once
// A temporary file name beside `path`, unique to this process and call: a
// file written there and renamed onto `path` is never seen half written, and
// two processes writing one path no longer rename each other's temporary
// away (a fixed "path.tmp" failed one of two concurrent runs).
#include <unistd.h>

#include <atomic>
#include <string>

namespace fk {

inline std::string temporary_path(const std::string& path) {
  static std::atomic<unsigned long> counter{0};
  return path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
}

}  // namespace fk
