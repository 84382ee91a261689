// nefi list [KIND] [-v] [--json] and nefi run --plot/--no-plot.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "nefi/cli/cli_output.h"
#include "nefi/instances/instance.h"
#include "nefi/operators/catalogue.h"
#include "nefi/test_files.h"

namespace {

using nefi::test::nefi_built;
using nefi::test::nefi_stdout;
namespace fs = std::filesystem;

TEST(ListCli, JsonListsEveryInstanceAndConfig) {
  if (!nefi_built()) GTEST_SKIP() << "nefi_cli not built";
  const auto r = nefi_stdout("list --json -v");
  ASSERT_EQ(r.status, 0);
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["instances"].size(), nefi::all_instances().size());
  for (size_t i = 0; i < j["instances"].size(); ++i) {
    const auto& e = j["instances"][i];
    const auto& inst = nefi::all_instances()[i];
    EXPECT_EQ(e["name"], inst->name());
    EXPECT_EQ(e["methods"].get<std::vector<std::string>>(), inst->methods());
    EXPECT_EQ(e["config"].size(), inst->default_config().entries().size()) << inst->name();
  }
  const auto& toy = j["instances"][0];
  const auto it = std::find_if(toy["config"].begin(), toy["config"].end(),
                               [](const auto& c) { return c["key"] == "n"; });
  ASSERT_NE(it, toy["config"].end());
  EXPECT_EQ((*it)["value"], 128);
  EXPECT_EQ((*it)["doc"], "grid cells");
  const auto configs = j["configs"].get<std::vector<std::string>>();
  EXPECT_TRUE(std::any_of(configs.begin(), configs.end(),
                          [](const std::string& c) { return c.ends_with("toy1d_smoke.yaml"); }));
  // Without -v the configs are left out; a kind keeps to its registry.
  const auto brief = nlohmann::json::parse(nefi_stdout("list instances --json").out);
  EXPECT_FALSE(brief["instances"][0].contains("config"));
  EXPECT_FALSE(brief.contains("configs"));
  const auto text = nefi_stdout("list instances -v");
  EXPECT_NE(text.out.find("anneal_fraction"), std::string::npos);
  const auto ops = nlohmann::json::parse(nefi_stdout("list operators --json").out);
  EXPECT_FALSE(ops.contains("instances"));
  ASSERT_EQ(ops["operators"].size(), nefi::operator_catalogue().size());
  EXPECT_EQ(ops["operators"][0]["kind"], nefi::operator_catalogue()[0].kind);
  EXPECT_NE(nefi_stdout("list operators -v").out.find("implicit-function adjoint"),
            std::string::npos);
  nefi::test::expect_one_line_errors({{"list kernels", "kernels"}, {"list --jsn", "--jsn"}},
                                     nefi::test::scratch());
}

TEST(RunCli, NoPlotSkipsTheFigures) {
  if (!nefi_built()) GTEST_SKIP() << "nefi_cli not built";
  const fs::path a = nefi::test::fresh_dir("run_plot"), b = nefi::test::fresh_dir("run_no_plot");
  ASSERT_EQ(nefi_stdout("run toy1d --smoke --smoke-steps 4 -m neural -o " + a.string()).status, 0);
  ASSERT_EQ(
      nefi_stdout("run toy1d --smoke --smoke-steps 4 -m neural --no-plot -o " + b.string()).status,
      0);
  EXPECT_TRUE(fs::exists(a / "panel.png"));
  EXPECT_TRUE(fs::exists(a / "history.png"));
  EXPECT_FALSE(fs::exists(b / "panel.png"));
  EXPECT_FALSE(fs::exists(b / "history.png"));
  EXPECT_TRUE(fs::exists(b / "metrics.json"));
  // The figures change nothing else: the solutions are the same bytes.
  EXPECT_EQ(nefi::test::slurp(a / "neural.npy"), nefi::test::slurp(b / "neural.npy"));
}

// A run into the folder of an earlier one replaces its outputs: no other
// method's field or figure is left to contradict metrics.json; each method's
// history has its file; a direct baseline refuses checkpoints.
TEST(RunCli, ARunReplacesAnEarlierRunsOutputs) {
  if (!nefi_built()) GTEST_SKIP() << "nefi_cli not built";
  const fs::path d = nefi::test::fresh_dir("run_again");
  ASSERT_EQ(
      nefi_stdout("run toy1d --smoke --smoke-steps 4 -m neural -m grid -o " + d.string()).status,
      0);
  EXPECT_TRUE(fs::exists(d / "history.csv"));
  EXPECT_TRUE(fs::exists(d / "history-grid.csv"));
  EXPECT_TRUE(fs::exists(d / "panel.png"));
  ASSERT_EQ(
      nefi_stdout("run toy1d --smoke --smoke-steps 4 -m grid --no-plot -o " + d.string()).status,
      0);
  EXPECT_TRUE(fs::exists(d / "grid.npy"));
  for (const char* gone : {"neural.npy", "history-grid.csv", "panel.png", "history.png"})
    EXPECT_FALSE(fs::exists(d / gone)) << gone;
  nefi::test::expect_one_line_errors(
      {{"run deconvolution --smoke -b wiener --save-every 1 -o " + d.string(),
        "--resume / --save-every: expected a method that trains"}},
      nefi::test::scratch());
  // A folder whose metrics.json another program wrote keeps every file.
  const fs::path other = nefi::test::fresh_dir("run_foreign");
  std::ofstream(other / "metrics.json")
      << "{\"instance\": \"x\", \"config_hash\": \"0\", \"methods\": {\"../outside\": 1}}\n";
  std::ofstream(other.parent_path() / "outside.npy") << "not ours\n";
  std::ofstream(other / "panel.png") << "not ours either\n";
  ASSERT_EQ(nefi_stdout("run toy1d --smoke --smoke-steps 4 -m grid --no-plot -o " + other.string())
                .status,
            0);
  EXPECT_TRUE(fs::exists(other.parent_path() / "outside.npy"));  // a method name is a file name
  EXPECT_FALSE(fs::exists(other / "panel.png"));  // this schema is ours: its outputs go
  std::ofstream(other / "metrics.json") << "{\"methods\": {}}\n";  // another program's
  std::ofstream(other / "panel.png") << "theirs\n";
  ASSERT_EQ(nefi_stdout("run toy1d --smoke --smoke-steps 4 -m grid --no-plot -o " + other.string())
                .status,
            0);
  EXPECT_TRUE(fs::exists(other / "panel.png"));
}

TEST(RunCli, BaselineRunsThatMethodAlone) {
  if (!nefi_built()) GTEST_SKIP() << "nefi_cli not built";
  const fs::path d = nefi::test::fresh_dir("run_baseline");
  const auto r = nefi_stdout("run deconvolution --smoke -b wiener --no-plot -o " + d.string());
  ASSERT_EQ(r.status, 0);
  EXPECT_NE(r.out.find(" wiener psnr"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(" neural "), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(d / "wiener.npy"));
  EXPECT_FALSE(fs::exists(d / "neural.npy"));
  nefi::test::expect_one_line_errors(
      {{"run deconvolution --smoke -b neural", "a baseline of"},
       {"run deconvolution --smoke -b nope", "nope"},
       {"run deconvolution --smoke -b wiener -m grid", "--baseline"}},
      nefi::test::scratch());
}

}  // namespace

// What a bug hunt found the CLI accepting: a negative seed (read into an
// unsigned one as 2^64 - 1), a seed twice in a campaign (its runs counted
// twice), step counts past an int (wrapped: 4294967296 lifted the cap), and
// a config file's bad method hidden by --smoke's preset. Each refused in one
// line.
// A directory named like an instance in the working directory is not a
// config file: `nefi run toy1d` runs the instance.
TEST(RunCli, ADirectoryNamedLikeTheInstanceIsNotAConfig) {
  if (!nefi::test::nefi_built()) GTEST_SKIP() << "nefi_cli not built";
  const fs::path dir = nefi::test::fresh_dir("run_cli_dir_target");
  fs::create_directories(dir / "toy1d");
  const std::string cmd = "cd " + dir.string() + " && " +
                          fieldkit_test::sibling_binary("nefi").string() +
                          " run toy1d --smoke --no-plot --smoke-steps 4 -o out >/dev/null 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  EXPECT_TRUE(fs::exists(dir / "out" / "config.yaml"));
}

TEST(RunCli, SeedsAndCountsAreCheckedBeforeAnyRun) {
  if (!nefi::test::nefi_built()) GTEST_SKIP() << "nefi_cli not built";
  const fs::path dir = nefi::test::scratch();
  {
    std::ofstream f(dir / "bogus_method.yaml");
    f << "instance: toy1d\nrun: {methods: [bogus]}\n";
    std::ofstream g(dir / "bogus_optim.yaml");
    g << "instance: toy1d\ncurriculum:\n  optim: {bogus: 1}\n";
  }
  nefi::test::expect_one_line_errors(
      {{"run toy1d --smoke --seed -1", "--seed: expected a seed in [0, 2^64), got '-1'"},
       {"autotune toy1d --smoke --seed 99999999999999999999",
        "--seed: expected a seed in [0, 2^64), got '99999999999999999999'"},
       {"bench toy1d --smoke --n 1 --seeds ''", "--seeds: expected a seed in [0, 2^64), got ''"},
       {"bench toy1d --smoke --n 1 -o ''", "--out: expected a directory, got ''"},
       {"sweep toy1d --axis lr --values 1e-3,0.001 --n 1", "--values: expected each value once"},
       {"ablate toy1d --variants no_pe --base grid --n 1",
        "modifier 'no_pe': expected the neural method"},
       {"profile toy1d --chunk 2", "--chunk: expected --batch beside it"},
       {"profile toy1d --json /proc/no/such.jsonl", "--json: expected a writable file"},
       {"gallery --instances toy1d,toy1d", "--instances: expected each instance once"},
       {"gallery --instances nosuch", "--instances: expected registered instances"},
       {"run toy1d --smoke --threads 100000",
        "--threads: expected a thread count in [0, 4096], got '100000'"},
       {"run toy1d --smoke --threads abc",
        "--threads: expected a thread count in [0, 4096], got 'abc'"},
       {"bench toy1d --smoke --n 1 --seeds 0,0", "--seeds: expected distinct seeds, got 0 twice"},
       {"bench toy1d --smoke --n 1 --seeds 1,-2",
        "--seeds: expected a seed in [0, 2^64), got '-2'"},
       {"run toy1d --smoke --set run.max_total_steps=4294967296",
        "run.max_total_steps: expected an integer in [0, 2147483647]"},
       {"run toy1d --smoke --set solver.checkpoint_every=4294967296",
        "solver.checkpoint_every: expected an integer in [1, 2147483647], got 4294967296"},
       {"run toy1d --smoke-steps 4294967297", "--smoke-steps: expected a step count in"},
       {"run toy1d --set lr=.inf -o " + (dir / "inf_lr").string(),
        "config key 'lr': expected a finite number, got .inf"},
       {"run " + (dir / "bogus_method.yaml").string() + " --smoke", "bogus"},
       // Instances that read these without a check took them (toy1d's noise,
       // deconvolution's tv); a negative decay was taken everywhere.
       {"run toy1d --smoke --set noise_std=-1", "'noise_std': expected a noise level >= 0"},
       {"run deconvolution --smoke --set tv=-1", "'tv': expected a weight >= 0"},
       {"run toy1d --smoke --set weight_decay=-1", "weight_decay >= 0"},
       // An empty or file output (the first fell back to runs/, the second
       // failed after the solve) and a method twice (solved twice, one lost).
       {"run toy1d --smoke -o ''", "--out: expected a directory, got ''"},
       {"run toy1d --smoke -o " + (dir / "bogus_method.yaml").string(), "a file"},
       {"run toy1d --smoke -m neural -m neural", "'neural' twice"},
       // A config file's key named as the file writes it (it said --set optim.bogus).
       {"run " + (dir / "bogus_optim.yaml").string(), "bogus_optim.yaml: curriculum.optim.bogus"}},
      dir);
}
