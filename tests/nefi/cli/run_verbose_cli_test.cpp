// nefi run off a terminal: quiet without --verbose; with it, a loss line every
// twentieth of the steps on stderr, the last one at the final step.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "cli_run.h"
#include "nefi/cli/cli_output.h"
#include "nefi/test_files.h"

namespace {

std::vector<std::string> step_lines(const std::string& err) {
  std::vector<std::string> lines;
  std::istringstream in(err);
  for (std::string l; std::getline(in, l);)
    if (l.find(" step ") != std::string::npos) lines.push_back(l);
  return lines;
}

TEST(RunVerboseCli, OffATerminalVerboseLogsTheLossAndQuietRunsDoNot) {
  if (!nefi::test::nefi_built()) GTEST_SKIP() << "nefi_cli not built";
  const auto nefi = fieldkit_test::sibling_binary("nefi");
  const std::string base = "run toy1d --smoke --smoke-steps 40 --no-plot -m neural --out ";

  const auto quiet = fieldkit_test::run_cli(nefi, base + nefi::test::fresh_dir("quiet").string(),
                                            nefi::test::scratch());
  ASSERT_EQ(quiet.status, 0) << quiet.err;
  EXPECT_TRUE(step_lines(quiet.err).empty()) << quiet.err;

  const auto loud = fieldkit_test::run_cli(
      nefi, base + nefi::test::fresh_dir("loud").string() + " -v", nefi::test::scratch());
  ASSERT_EQ(loud.status, 0) << loud.err;
  const auto lines = step_lines(loud.err);
  // 40 steps, a line every 2: 20 lines (a stage boundary may add none or one).
  EXPECT_GE(lines.size(), 19u) << loud.err;
  EXPECT_LE(lines.size(), 21u) << loud.err;
  ASSERT_FALSE(lines.empty());
  EXPECT_NE(lines.back().find("step 40/40"), std::string::npos) << lines.back();
  EXPECT_NE(lines.back().find("loss "), std::string::npos) << lines.back();
  EXPECT_EQ(lines.back().rfind("neural", 0), 0u) << lines.back();
}

// --quiet: nothing on stdout, the run folder written; with --verbose, an error.
TEST(RunVerboseCli, QuietPrintsNothingButWritesTheRun) {
  if (!nefi::test::nefi_built()) GTEST_SKIP() << "nefi_cli not built";
  const auto nefi = fieldkit_test::sibling_binary("nefi");
  const auto dir = nefi::test::fresh_dir("quiet_flag");
  std::filesystem::create_directories(dir);
  const auto out = dir / "stdout.txt";
  const std::string cmd = nefi.string() + " run toy1d --smoke --smoke-steps 4 --no-plot -q --out " +
                          (dir / "run").string() + " >" + out.string() + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  std::ifstream f(out);
  const std::string printed((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_EQ(printed, "");
  EXPECT_TRUE(std::filesystem::exists(dir / "run" / "metrics.json"));
  const auto both =
      fieldkit_test::run_cli(nefi, "run toy1d --smoke -q -v --no-plot", nefi::test::scratch());
  EXPECT_EQ(both.status, 2);
  EXPECT_NE(both.err.find("--quiet"), std::string::npos) << both.err;
}

}  // namespace
