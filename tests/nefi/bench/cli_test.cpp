// The nefi CLI's bench, bench-merge and profile commands on bad input: one
// line on stderr, exit status 2. Runs the built binary next to this test
// binary (both go to FK_BIN_DIR); skipped when it has not been built.
#include <gtest/gtest.h>
#include <algorithm>
#include <filesystem>
#include <fstream>

#include "cli_run.h"
#include "nefi/test_files.h"

namespace {

using nefi::test::scratch;

namespace fs = std::filesystem;

TEST(BenchCli, BadInputPrintsOneLineAndExits2) {
  if (!fs::exists(fieldkit_test::sibling_binary("nefi"))) GTEST_SKIP() << "nefi_cli not built";
  const fs::path file = scratch() / "nefi_cli_a_file";
  std::ofstream(file) << "x";
  const std::pair<std::string, std::string> cases[] = {
      {"bench toy1d --shard 3/2", "--shard"},
      {"bench toy1d --methods neural,admm", "admm"},
      {"bench toy2d", "toy2d"},
      {"bench toy1d --smoke --smoke-steps -1", "--smoke-steps"},
      {"bench toy1d --smoke --n 1 --seeds 0 -m neural --metrics psnr,nope -o " +
           (scratch() / "bench_metrics").string(),
       "'nope'"},
      {"bench toy1d --out " + file.string(), "is a file"},
      {"bench-merge " + (scratch() / "no_such_dir").string(), "bench-merge"},
      {"profile toy1d --stage 7", "stage"},
      {"profile deconvolution --method wiener --set n=16", "solver loop"}};
  for (const auto& [args, needle] : cases) {
    const auto r = fieldkit_test::run_cli(fieldkit_test::sibling_binary("nefi"), args, scratch());
    EXPECT_EQ(r.status, 2) << args;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << ": " << r.err;
    EXPECT_EQ(r.err.rfind("nefi: error: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << args << ": " << r.err;
  }
}

}  // namespace
