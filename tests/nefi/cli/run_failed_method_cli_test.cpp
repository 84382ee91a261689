// nefi run with a method that fails: the methods that finished are written,
// metrics.json records the failure, and the run exits 2 naming it; a run whose
// only method fails writes nothing and prints the method's own error.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_run.h"
#include "nefi/cli/cli_output.h"
#include "nefi/test_files.h"

namespace {

// wiener's discrepancy principle needs a noise level: noise_std=0 fails it.
const std::string kWienerFails =
    "run deconvolution --smoke --smoke-steps 4 --no-plot --set noise_std=0 ";

TEST(RunFailedMethodCli, TheFinishedMethodsAreWrittenAndTheFailureNamed) {
  if (!nefi::test::nefi_built()) GTEST_SKIP() << "nefi_cli not built";
  const auto nefi = fieldkit_test::sibling_binary("nefi");
  const auto dir = nefi::test::fresh_dir("failed_method");
  const auto res = fieldkit_test::run_cli(
      nefi, kWienerFails + "-m wiener -m neural --out " + dir.string(), nefi::test::scratch());
  EXPECT_EQ(res.status, 2) << res.err;
  EXPECT_NE(res.err.find("method wiener failed"), std::string::npos) << res.err;
  EXPECT_NE(res.err.find("noise_std"), std::string::npos) << res.err;
  EXPECT_NE(res.err.find("neural written to " + dir.string()), std::string::npos) << res.err;
  EXPECT_EQ(res.err.find('\n'), res.err.size() - 1) << "one line: " << res.err;

  EXPECT_TRUE(std::filesystem::exists(dir / "neural.npy"));
  EXPECT_FALSE(std::filesystem::exists(dir / "wiener.npy"));
  const auto j = nlohmann::json::parse(std::ifstream(dir / "metrics.json"));
  EXPECT_TRUE(j["methods"].contains("neural"));
  EXPECT_FALSE(j["methods"].contains("wiener"));
  ASSERT_TRUE(j.contains("failed_methods"));
  EXPECT_NE(j["failed_methods"]["wiener"].get<std::string>().find("noise_std"), std::string::npos);
}

TEST(RunFailedMethodCli, AnOnlyMethodFailingWritesNothing) {
  if (!nefi::test::nefi_built()) GTEST_SKIP() << "nefi_cli not built";
  const auto nefi = fieldkit_test::sibling_binary("nefi");
  const auto dir = nefi::test::fresh_dir("failed_only");
  const auto res = fieldkit_test::run_cli(nefi, kWienerFails + "-m wiener --out " + dir.string(),
                                          nefi::test::scratch());
  EXPECT_EQ(res.status, 2) << res.err;
  EXPECT_EQ(res.err.rfind("nefi: error: method wiener: expected a noise level", 0), 0u) << res.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "metrics.json"));
}

// A run directory's checkpoint that is not one (a file of text).
void write_bad_checkpoint(const std::filesystem::path& dir, const std::string& method) {
  std::filesystem::create_directories(dir);
  std::ofstream(dir / ("checkpoint-" + method + ".ckpt")) << "not a checkpoint";
}

// A training method that fails under --resume (a checkpoint it cannot read)
// is named with its own error and the direct baseline beside it is written
// (the run refused it as "only direct methods", writing nothing).
TEST(RunFailedMethodCli, AFailedTrainingMethodIsNotTakenForADirectOne) {
  if (!nefi::test::nefi_built()) GTEST_SKIP() << "nefi_cli not built";
  const auto nefi = fieldkit_test::sibling_binary("nefi");
  const auto empty = nefi::test::fresh_dir("failed_resume_empty");
  write_bad_checkpoint(empty, "neural");
  const auto dir = nefi::test::fresh_dir("failed_resume");
  const auto res = fieldkit_test::run_cli(nefi,
                                          "run deconvolution --smoke --smoke-steps 4 --no-plot "
                                          "-m wiener -m neural --resume " +
                                              empty.string() + " --out " + dir.string(),
                                          nefi::test::scratch());
  EXPECT_EQ(res.status, 2) << res.err;
  EXPECT_NE(res.err.find("method neural failed"), std::string::npos) << res.err;
  EXPECT_EQ(res.err.find("only direct methods"), std::string::npos) << res.err;
  EXPECT_TRUE(std::filesystem::exists(dir / "wiener.npy"));
}

// Every one of several methods failing writes nothing and names each
// method's error on one line.
TEST(RunFailedMethodCli, EveryMethodFailingNamesEachAndWritesNothing) {
  if (!nefi::test::nefi_built()) GTEST_SKIP() << "nefi_cli not built";
  const auto nefi = fieldkit_test::sibling_binary("nefi");
  const auto empty = nefi::test::fresh_dir("failed_every_empty");
  write_bad_checkpoint(empty, "neural");
  write_bad_checkpoint(empty, "grid");
  const auto dir = nefi::test::fresh_dir("failed_every");
  const auto res = fieldkit_test::run_cli(nefi,
                                          "run deconvolution --smoke --smoke-steps 4 --no-plot "
                                          "-m neural -m grid --resume " +
                                              empty.string() + " --out " + dir.string(),
                                          nefi::test::scratch());
  EXPECT_EQ(res.status, 2) << res.err;
  EXPECT_EQ(res.err.rfind("nefi: error: every method failed (", 0), 0u) << res.err;
  for (const char* m : {"neural: nefi::load_checkpoint", "grid: nefi::load_checkpoint"})
    EXPECT_NE(res.err.find(m), std::string::npos) << res.err;
  EXPECT_EQ(res.err.find('\n'), res.err.size() - 1) << "one line: " << res.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "metrics.json"));
}

// One cause shared by every method (a bad key of the instance) is said once.
TEST(RunFailedMethodCli, OneCauseOfEveryFailureIsSaidOnce) {
  if (!nefi::test::nefi_built()) GTEST_SKIP() << "nefi_cli not built";
  const auto nefi = fieldkit_test::sibling_binary("nefi");
  const auto dir = nefi::test::fresh_dir("failed_every_alike");
  const auto res = fieldkit_test::run_cli(nefi,
                                          "run deconvolution --smoke --smoke-steps 4 --no-plot "
                                          "-m neural -m grid --set noise_std=-1 --out " +
                                              dir.string(),
                                          nefi::test::scratch());
  EXPECT_EQ(res.status, 2) << res.err;
  EXPECT_EQ(res.err.rfind("nefi: error: every method failed: config key 'noise_std'", 0), 0u)
      << res.err;
  EXPECT_EQ(res.err.find("noise_std"), res.err.rfind("noise_std")) << res.err;
}

// A field that cannot be written (its name taken by a directory) fails the
// run naming it; no temporary stays and no metrics.json claims the run.
TEST(RunFailedMethodCli, AnUnwritableFieldIsNamedAndLeavesNoTemporary) {
  if (!nefi::test::nefi_built()) GTEST_SKIP() << "nefi_cli not built";
  const auto nefi = fieldkit_test::sibling_binary("nefi");
  const auto dir = nefi::test::fresh_dir("unwritable_field");
  std::filesystem::create_directories(dir / "wiener.npy" / "taken");
  const auto res = fieldkit_test::run_cli(
      nefi, "run deconvolution --smoke --no-plot -m wiener --out " + dir.string(),
      nefi::test::scratch());
  EXPECT_EQ(res.status, 2) << res.err;
  EXPECT_NE(res.err.find((dir / "wiener.npy").string()), std::string::npos) << res.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "metrics.json"));
  for (const auto& e : std::filesystem::directory_iterator(dir))
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
}

}  // namespace
