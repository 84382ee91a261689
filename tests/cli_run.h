#pragma once
// Runs one of the project's programs, built next to the test binary (both go
// to FK_BIN_DIR), and keeps its exit status and standard error: for the CLIs'
// bad-input tests (one line on stderr, non-zero exit).
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace fieldkit_test {

// The program `name` in this test binary's directory.
inline std::filesystem::path sibling_binary(const std::string& name) {
  return std::filesystem::read_symlink("/proc/self/exe").parent_path() / name;
}

struct CliResult {
  int status = -1;  // exit status, -1 when killed by a signal
  std::string err;  // everything written to stderr
};

// `program args`, stdout sent to `out` (discarded by default), stderr kept
// through a file in `scratch`.
inline CliResult run_cli(const std::filesystem::path& program, const std::string& args,
                         const std::filesystem::path& scratch,
                         const std::string& out = "/dev/null") {
  const std::filesystem::path err = scratch / (program.filename().string() + "_cli_err.txt");
  const std::string cmd = program.string() + " " + args + " >" + out + " 2>" + err.string();
  const int rc = std::system(cmd.c_str());
  std::ifstream f(err);
  std::stringstream ss;
  ss << f.rdbuf();
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, ss.str()};
}

}  // namespace fieldkit_test
