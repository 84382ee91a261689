// nefi autotune: a quick tune of toy1d's smoke preset writes its decisions
// with their evidence, and `nefi run tuned_config.yaml` reproduces the tuned
// solve of --compare exactly; one-line errors.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "nefi/cli/cli_output.h"
#include "nefi/test_files.h"

namespace {

using nefi::test::nefi_built;
using nefi::test::nefi_stdout;
namespace fs = std::filesystem;

TEST(AutotuneCli, TunedConfigReproducesTheComparison) {
  if (!nefi_built()) GTEST_SKIP() << "nefi_cli not built";
  const fs::path out = nefi::test::fresh_dir("autotune_cli"),
                 run = nefi::test::fresh_dir("autotune_run");
  const auto r =
      nefi_stdout("autotune toy1d --smoke --set steps=[20,40] --compare -o " + out.string());
  ASSERT_EQ(r.status, 0) << r.out;
  for (const char* f : {"autotune.md", "autotune.json", "tuned_config.yaml"})
    EXPECT_TRUE(fs::exists(out / f)) << f;
  const auto j = nlohmann::json::parse(nefi::test::slurp(out / "autotune.json"));
  ASSERT_EQ(j["decisions"].size(), 2u);  // lr, and tv (l1 is off in the preset)
  EXPECT_EQ(j["decisions"][0]["key"], "lr");
  EXPECT_EQ(j["decisions"][0]["evidence"].size(), 3u);
  EXPECT_EQ(j["decisions"][1]["key"], "tv");
  EXPECT_EQ(j["decisions"][1]["evidence"].size(), 3u);
  EXPECT_EQ(j["pilot_steps"], 15);  // 25 % of 60
  ASSERT_EQ(
      nefi_stdout("run " + (out / "tuned_config.yaml").string() + " --no-plot -o " + run.string())
          .status,
      0);
  const auto m = nlohmann::json::parse(nefi::test::slurp(run / "metrics.json"));
  EXPECT_EQ(m["methods"]["neural"]["metrics"]["psnr"].get<double>(),
            j["comparison"]["tuned"]["metrics"]["psnr"].get<double>());
  EXPECT_NE(nefi::test::slurp(out / "tuned_config.yaml")
                .find("lr: " + j["decisions"][0]["chosen"].get<std::string>()),
            std::string::npos);
}

TEST(AutotuneCli, BadInputPrintsOneLine) {
  if (!nefi_built()) GTEST_SKIP() << "nefi_cli not built";
  nefi::test::expect_one_line_errors(
      {{"autotune toy1d --level fast", "--level"},
       {"autotune toy1d --method admm", "admm"},
       {"autotune deconvolution --smoke --method wiener --set n=16 -o " +
            (nefi::test::scratch() / "autotune_direct").string(),
        "direct"},
       {"autotune", "target"}},
      nefi::test::scratch());
}

}  // namespace
