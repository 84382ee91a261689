#pragma once
// Helpers of the fuzz harnesses: readers that take a path get the input
// through a per-process scratch file.
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

namespace fieldkit_fuzz {

// A file in the temporary directory, named after the harness and the
// process, holding the latest input; removed when the process ends.
class ScratchFile {
 public:
  // `extension` (e.g. ".ply") ends the name, for readers that go by it.
  explicit ScratchFile(const std::string& name, const std::string& extension = "")
      : path_(std::filesystem::temp_directory_path() /
              ("fieldkit_fuzz_" + name + "_" + std::to_string(static_cast<long>(getpid())) +
               extension)) {}
  ~ScratchFile() {
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }
  const std::string& write(const uint8_t* data, size_t size) {
    std::ofstream(path_, std::ios::binary | std::ios::trunc)
        .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    text_ = path_.string();
    return text_;
  }

 private:
  std::filesystem::path path_;
  std::string text_;
};

// The input cut at every occurrence of `separator` (at most `max_parts` parts;
// the last part keeps the rest).
inline std::vector<std::string> split(std::string_view input, std::string_view separator,
                                      size_t max_parts) {
  std::vector<std::string> parts;
  while (parts.size() + 1 < max_parts) {
    const size_t at = input.find(separator);
    if (at == std::string_view::npos) break;
    parts.emplace_back(input.substr(0, at));
    input.remove_prefix(at + separator.size());
  }
  parts.emplace_back(input);
  return parts;
}

}  // namespace fieldkit_fuzz
