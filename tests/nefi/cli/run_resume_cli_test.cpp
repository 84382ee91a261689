// nefi run --resume: the resumed run writes the whole run's history and
// stage summaries (the checkpoint keeps the run so far), so resuming a
// finished run into its own folder leaves its history as it was.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_run.h"
#include "nefi/cli/cli_output.h"
#include "nefi/test_files.h"

namespace {

std::string slurp(const std::filesystem::path& p) {
  std::ostringstream s;
  s << std::ifstream(p).rdbuf();
  return s.str();
}

TEST(RunResumeCli, AResumedRunWritesTheWholeHistory) {
  if (!nefi::test::nefi_built()) GTEST_SKIP() << "nefi_cli not built";
  const auto nefi = fieldkit_test::sibling_binary("nefi");
  const auto dir = nefi::test::fresh_dir("resume_history");
  const std::string run = "run toy1d --smoke --no-plot -m neural --out " + dir.string();
  const auto first = fieldkit_test::run_cli(nefi, run + " --save-every 10", nefi::test::scratch());
  ASSERT_EQ(first.status, 0) << first.err;
  const std::string history = slurp(dir / "history.csv");
  const auto before = nlohmann::json::parse(std::ifstream(dir / "metrics.json"));
  ASSERT_GT(std::count(history.begin(), history.end(), '\n'), 10) << history;

  const auto again =
      fieldkit_test::run_cli(nefi, run + " --resume " + dir.string(), nefi::test::scratch());
  ASSERT_EQ(again.status, 0) << again.err;
  EXPECT_EQ(slurp(dir / "history.csv"), history);
  const auto after = nlohmann::json::parse(std::ifstream(dir / "metrics.json"));
  const auto& s0 = before["methods"]["neural"]["stage_results"];
  const auto& s1 = after["methods"]["neural"]["stage_results"];
  ASSERT_EQ(s0.size(), s1.size());
  for (size_t i = 0; i < s0.size(); ++i) {
    EXPECT_EQ(s0[i]["name"], s1[i]["name"]) << i;
    EXPECT_EQ(s0[i]["steps"], s1[i]["steps"]) << i;
    EXPECT_EQ(s0[i]["final_total"], s1[i]["final_total"]) << i;
  }
  EXPECT_EQ(before["methods"]["neural"]["metrics"], after["methods"]["neural"]["metrics"]);
}

// --resume DIR: a method without a checkpoint there (the run stopped before
// it began) starts, beside one that resumes (it failed, "a readable
// checkpoint file", so a killed run of several methods could not go on in
// one command); a folder with no checkpoint of the run's methods is refused;
// and --save-every with restarts is refused before any work (each attempt
// overwrote the file, and a resume of it was refused).
TEST(RunResumeCli, AMethodWithoutACheckpointStartsAndEmptyFoldersAreRefused) {
  if (!nefi::test::nefi_built()) GTEST_SKIP() << "nefi_cli not built";
  const auto nefi = fieldkit_test::sibling_binary("nefi");
  const auto dir = nefi::test::fresh_dir("resume_partial");
  const std::string run = "run toy1d --smoke --smoke-steps 8 --no-plot --out " + dir.string();
  auto r = fieldkit_test::run_cli(nefi, run + " -m neural --save-every 4", nefi::test::scratch());
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_FALSE(std::filesystem::exists(dir / "checkpoint-grid.ckpt"));
  r = fieldkit_test::run_cli(nefi, run + " -m neural -m grid --resume " + dir.string(),
                             nefi::test::scratch());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(std::filesystem::exists(dir / "grid.npy"));
  const auto empty = nefi::test::fresh_dir("resume_none");
  std::filesystem::create_directories(empty);
  r = fieldkit_test::run_cli(nefi, run + " -m neural -m grid --resume " + empty.string(),
                             nefi::test::scratch());
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_EQ(r.err,
            "nefi: error: --resume: expected a run directory with a checkpoint of this "
            "run's methods (checkpoint-neural.ckpt, checkpoint-grid.ckpt), got '" +
                empty.string() + "' with none\n");
  r = fieldkit_test::run_cli(nefi,
                             "run toy1d --no-plot -m neural --set curriculum.restarts=2 "
                             "--set steps=[4,4] --save-every 2 --out " +
                                 (dir / "restarts").string(),
                             nefi::test::scratch());
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_EQ(r.err,
            "nefi: error: --save-every: expected a run of one attempt (a checkpoint "
            "holds one: curriculum.restarts 1), got 2 restarts\n");
  EXPECT_FALSE(std::filesystem::exists(dir / "restarts"));  // refused before any work
}

// A resume may extend the step budgets, not the physics: keys ending in
// "substeps" and anneal_steps are part of the run (every key ending in
// "steps" was dropped: thermal resumed under other implicit_substeps, its
// field scored against new data); the refusal names the key.
TEST(RunResumeCli, AChangedSubstepCountIsAnotherRun) {
  if (!nefi::test::nefi_built()) GTEST_SKIP() << "nefi_cli not built";
  const auto nefi = fieldkit_test::sibling_binary("nefi");
  const auto dir = nefi::test::fresh_dir("resume_substeps");
  const std::string run =
      "run thermal_tomography --smoke --smoke-steps 4 --no-plot -m nefty --out " + dir.string();
  auto r = fieldkit_test::run_cli(nefi, run + " --save-every 2", nefi::test::scratch());
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* set : {"implicit_substeps=3", "sim_min_substeps=40", "anneal_steps=7"}) {
    r = fieldkit_test::run_cli(nefi, run + " --resume " + dir.string() + " --set " + set,
                               nefi::test::scratch());
    EXPECT_EQ(r.status, 2) << set;
    const std::string key(set, std::string(set).find('='));
    EXPECT_NE(r.err.find("changed since: config." + key + ": "), std::string::npos) << r.err;
  }
  r = fieldkit_test::run_cli(nefi, run + " --resume " + dir.string() + " --set steps=200",
                             nefi::test::scratch());
  EXPECT_EQ(r.status, 0) << r.err;  // a budget may change
}

}  // namespace
