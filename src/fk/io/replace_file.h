#pragma once
// Writes a file whole or not at all. `write` fills a temporary beside `path`
// (throwing fk::Error on a failed open or write), which is then renamed onto
// `path`: a full disk or a kill never leaves a half file under the real name
// (a full disk once left a 0-byte metrics.json, and truncating a checkpoint
// in place lost the last good one). The temporary is removed when anything
// fails; its name is unique to this host, process and call, so concurrent
// writers of one path do not rename each other's away; one a killed process
// left is removed by the next writer of `path`. A failed rename is an
// fk::Error from `where` naming the file as `named` (default: `path`).
#include <functional>
#include <string>

namespace fk {

void replace_file(const std::string& path, const std::function<void(const std::string&)>& write,
                  const char* where, const std::string& named = "");

// The temporary's name for `path` (for tests), and this host's part of it.
std::string temporary_path(const std::string& path);
std::string host_tag();

}  // namespace fk
