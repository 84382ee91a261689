// nefi ablate and nefi sweep: bench's files plus variants.md from a tiny
// toy1d campaign, and one-line errors for bad modifiers, axes and options.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "nefi/cli/cli_output.h"
#include "nefi/test_files.h"

namespace {

using nefi::test::config_path;
using nefi::test::nefi_built;
using nefi::test::nefi_stdout;
namespace fs = std::filesystem;

const std::string kTiny = " --classes bumps --n 1 --seeds 0,1 --budget-scale 0.05 ";

TEST(AblateCli, WritesBenchTablesPerVariant) {
  if (!nefi_built()) GTEST_SKIP() << "nefi_cli not built";
  const fs::path out = nefi::test::fresh_dir("ablate_cli");
  const auto r = nefi_stdout("ablate " + config_path("toy1d_smoke.yaml") + kTiny +
                             "--variants no_pe,drop_loss:tv -o " + out.string());
  ASSERT_EQ(r.status, 0) << r.out;
  for (const char* f :
       {"summary.md", "summary.csv", "rows.csv", "benchmark.json", "summary.png", "variants.md"})
    EXPECT_TRUE(fs::exists(out / f)) << f;
  const auto j = nlohmann::json::parse(nefi::test::slurp(out / "benchmark.json"));
  EXPECT_EQ(j["protocol"]["methods"].get<std::vector<std::string>>(),
            (std::vector<std::string>{"full", "-pe", "-tv"}));
  EXPECT_EQ(j["rows"].size(), 6u);
  const std::string md = nefi::test::slurp(out / "variants.md");
  EXPECT_NE(md.find("`n_octaves=0`, `tv=0`"), std::string::npos) << md;  // cumulative
  EXPECT_NE(r.out.find("| -pe"), std::string::npos) << r.out;
}

TEST(AblateCli, ShardsMergeWithBenchMerge) {
  if (!nefi_built()) GTEST_SKIP() << "nefi_cli not built";
  const fs::path out = nefi::test::fresh_dir("ablate_cli_shards");
  for (const char* shard : {"0/2", "1/2"})
    ASSERT_EQ(nefi_stdout("ablate " + config_path("toy1d_smoke.yaml") + kTiny +
                          "--variants no_pe --independent --shard " + shard + " -o " + out.string())
                  .status,
              0)
        << shard;
  EXPECT_TRUE(fs::exists(out / "shard-000-of-002.json"));
  ASSERT_EQ(nefi_stdout("bench-merge " + out.string()).status, 0);
  const auto j = nlohmann::json::parse(nefi::test::slurp(out / "benchmark.json"));
  EXPECT_EQ(j["protocol"]["methods"].get<std::vector<std::string>>(),
            (std::vector<std::string>{"full", "-pe"}));
  ASSERT_EQ(j["rows"].size(), 4u);  // 2 units x 2 rows, one unit from each shard
}

TEST(SweepCli, OneRowPerValue) {
  if (!nefi_built()) GTEST_SKIP() << "nefi_cli not built";
  const fs::path out = nefi::test::fresh_dir("sweep_cli");
  const auto r = nefi_stdout("sweep " + config_path("toy1d_smoke.yaml") + kTiny +
                             "--axis lr --values 0.005,0.02 -o " + out.string());
  ASSERT_EQ(r.status, 0) << r.out;
  const auto j = nlohmann::json::parse(nefi::test::slurp(out / "benchmark.json"));
  EXPECT_EQ(j["protocol"]["methods"].get<std::vector<std::string>>(),
            (std::vector<std::string>{"lr=0.005", "lr=0.02"}));
  EXPECT_EQ(j["rows"].size(), 4u);
  EXPECT_GT(fs::file_size(out / "sweep.png"), 5000u);
  // Values that are not all numbers have no sweep.png.
  const fs::path words = nefi::test::fresh_dir("sweep_cli_words");
  ASSERT_EQ(nefi_stdout("sweep " + config_path("toy1d_smoke.yaml") + kTiny +
                        "--axis lr_schedule --values cosine,constant -o " + words.string())
                .status,
            0);
  EXPECT_TRUE(fs::exists(words / "summary.png"));
  EXPECT_FALSE(fs::exists(words / "sweep.png"));
}

TEST(VariantsCli, BadInputPrintsOneLine) {
  if (!nefi_built()) GTEST_SKIP() << "nefi_cli not built";
  nefi::test::expect_one_line_errors(
      {{"ablate toy1d --variants no_gate", "no_gate"},
       {"ablate toy1d --variants drop_loss:hidden", "hidden"},
       {"ablate toy1d --variants no_pe --base admm", "--base"},
       {"ablate toy1d", "--variants"},
       {"ablate toy1d --variants no_pe --shard 2/2", "--shard"},
       {"sweep toy1d --axis bogus --values 1", "bogus"},
       // What the campaign sets per unit: swept, it was
       // overwritten (rows of 0 +- 0).
       {"sweep toy1d --axis run.seed --values 1,2", "no seed in a campaign"},
       {"sweep toy1d --axis run.device --values cpu", "no device in a campaign"},
       {"ablate toy1d --variants set:scene=spikes",
        "no scene in a campaign (--classes picks the scenes)"},
       {"bench toy1d --n 1 --set scene=spikes", "no scene"},
       {"sweep toy1d --axis lr --values fast", "lr"},
       {"sweep toy1d --axis lr", "--values"},
       {"sweep toy1d --axis lr --values 1 --n 0", "--n"},
       {"sweep toy2d --axis lr --values 1", "toy2d"}},
      nefi::test::scratch());
}

}  // namespace
