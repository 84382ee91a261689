// A table the tools print that cannot reach its file (/dev/full: a full
// disk) fails the command with one line, where it once exited 0.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <tuple>

#include "cli_run.h"
#include "nefi/cli/cli_output.h"
#include "nefi/test_files.h"

namespace {

TEST(StdoutFullCli, AnUnwrittenStandardOutputFailsTheCommand) {
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  if (!nefi::test::nefi_built()) GTEST_SKIP() << "nefi_cli not built";
  for (const auto& [name, args, status] :
       {std::tuple<std::string, std::string, int>{"nefi", "list", 2},
        {"nefi", "--help", 2},
        {"fk-info", "", 1},
        // More than fmt's buffer: its write throws before the flush (abort).
        {"fk-info", "--bench-overhead", 1}}) {
    const auto program = fieldkit_test::sibling_binary(name);
    if (!std::filesystem::exists(program)) continue;
    const auto full = fieldkit_test::run_cli(program, args, nefi::test::scratch(), "/dev/full");
    EXPECT_EQ(full.status, status) << name << ": " << full.err;
    EXPECT_NE(full.err.find(name + ": error: could not write the standard output"),
              std::string::npos)
        << full.err;
    EXPECT_EQ(std::count(full.err.begin(), full.err.end(), '\n'), 1) << full.err;
    EXPECT_EQ(fieldkit_test::run_cli(program, args, nefi::test::scratch()).status, 0) << name;
  }
}

}  // namespace
