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

}  // namespace
