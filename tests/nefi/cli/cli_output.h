#pragma once
// Standard output of a nefi command (the bad-input tests use cli_run.h,
// which keeps standard error instead).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "cli_run.h"

namespace nefi::test {

struct CliOutput {
  int status = -1;
  std::string out;
};

inline CliOutput nefi_stdout(const std::string& args) {
  const std::string cmd =
      fieldkit_test::sibling_binary("nefi").string() + " " + args + " 2>/dev/null";
  CliOutput r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int rc = pclose(p);
  r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  return r;
}

inline bool nefi_built() {
  return std::filesystem::exists(fieldkit_test::sibling_binary("nefi"));
}

// Each args must fail with one line on stderr, "nefi: error: ", exit 2, and
// mention its needle.
inline void expect_one_line_errors(const std::vector<std::pair<std::string, std::string>>& cases,
                                   const std::filesystem::path& scratch) {
  for (const auto& [args, needle] : cases) {
    const auto r = fieldkit_test::run_cli(fieldkit_test::sibling_binary("nefi"), args, scratch);
    EXPECT_EQ(r.status, 2) << args;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << ": " << r.err;
    EXPECT_EQ(r.err.rfind("nefi: error: ", 0), 0u) << args << ": " << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << args << ": " << r.err;
  }
}

}  // namespace nefi::test
