// A knob's malformed environment value stops nefi and minkowski before the
// command runs, as fk-info reports it: a CPU run never read the CUDA knobs
// and went on with FK_ALLOW_TF32=maybe.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <tuple>

#include "cli_run.h"
#include "nefi/cli/cli_output.h"
#include "nefi/test_files.h"

namespace {

TEST(KnobEnvCli, AMalformedKnobStopsTheCommand) {
  if (!nefi::test::nefi_built()) GTEST_SKIP() << "nefi_cli not built";
  for (const auto& [name, args, status] :
       {std::tuple<std::string, std::string, int>{"nefi", "list", 2},
        {"minkowski", "predict --checkpoint absent.ckpt", 1}}) {
    const auto program = fieldkit_test::sibling_binary(name);
    if (!std::filesystem::exists(program)) continue;
    const auto bad = fieldkit_test::run_cli("/usr/bin/env",
                                            "FK_ALLOW_TF32=maybe " + program.string() + " " + args,
                                            nefi::test::scratch());
    EXPECT_EQ(bad.status, status) << name << ": " << bad.err;
    EXPECT_NE(bad.err.find("FK_ALLOW_TF32: expected 0, 1, true, false"), std::string::npos)
        << bad.err;
    EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 1) << bad.err;
  }
}

// A malformed OMP_NUM_THREADS (fk's thread count, read outside the knob
// table) stops a run before any method starts: it failed each method on its
// own ("every method failed: ...").
TEST(KnobEnvCli, AMalformedThreadCountStopsTheRunBeforeItsMethods) {
  if (!nefi::test::nefi_built()) GTEST_SKIP() << "nefi_cli not built";
  const auto bad = fieldkit_test::run_cli(
      "/usr/bin/env",
      "OMP_NUM_THREADS=abc " + fieldkit_test::sibling_binary("nefi").string() +
          " run toy1d --smoke -q --out " + (nefi::test::scratch() / "omp_abc").string(),
      nefi::test::scratch());
  EXPECT_EQ(bad.status, 2) << bad.err;
  EXPECT_NE(bad.err.find("nefi: error: knob OMP_NUM_THREADS"), std::string::npos) << bad.err;
  EXPECT_FALSE(std::filesystem::exists(nefi::test::scratch() / "omp_abc"));
}

}  // namespace
