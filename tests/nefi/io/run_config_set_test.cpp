// --set prefixes (stage., optim., solver., run.) and the --smoke step cap.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli_run.h"
#include "fk/error.h"
#include "nefi/io/run_config.h"
#include "nefi/solve/curriculum.h"
#include "nefi/test_files.h"

namespace {

namespace fs = std::filesystem;

TEST(NefiSetPrefixes, StageOptimSolverAndRunAttributes) {
  nefi::RunConfig c = nefi::default_run_config("toy1d");
  nefi::apply_set(c, "stage.steps=7");
  EXPECT_EQ(c.config.list("steps"), (std::vector<double>{7, 7}));
  nefi::apply_set(c, "stage.lr_schedule=constant");
  EXPECT_EQ(c.config.s("lr_schedule"), "constant");
  nefi::apply_set(c, "optim.optimizer=lbfgs");
  nefi::apply_set(c, "optim.lbfgs_history=5");
  EXPECT_EQ(c.config.s("optimizer"), "lbfgs");
  EXPECT_EQ(c.config.i("lbfgs_history"), 5);
  nefi::apply_set(c, "solver.nan_guard=false");
  EXPECT_FALSE(c.nan_guard);
  nefi::apply_set(c, "run.max_total_steps=12");
  EXPECT_EQ(c.max_total_steps, 12);
  EXPECT_NE(nefi::to_yaml(c).find("max_total_steps: 12"), std::string::npos);
  // Thermal: stage.steps gives each of its n_stages stages the count.
  nefi::RunConfig t = nefi::default_run_config("thermal_tomography");
  nefi::apply_set(t, "n_stages=2");
  nefi::apply_set(t, "stage.steps=30");
  EXPECT_EQ(t.config.i("steps"), 60);
  EXPECT_EQ(t.config.list("stage_steps"), (std::vector<double>{30, 30}));
  nefi::apply_set(t, "stage.anneal_steps=10");
  EXPECT_EQ(t.config.i("anneal_steps"), 10);
  // Unknown attributes name the prefix and list the valid ones, in one line.
  for (const char* bad : {"optim.beta=0.5", "stage.warmup=3", "solver.compile=step",
                          "run.device=tpu", "stage.steps=0", "stage.steps=x"}) {
    std::string msg = "no error";
    try {
      nefi::apply_set(c, bad);
    } catch (const fk::Error& e) {
      msg = e.what();
    }
    const std::string key(bad, std::string(bad).find('='));
    EXPECT_NE(msg.find(key), std::string::npos) << bad << ": " << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

// The reference's scale_budget: round(steps · cap / total) per stage (ties
// to even, at least 1), then at least min_stage_steps; one restart.
TEST(NefiSetPrefixes, CurriculumCapScalesStagesAlike) {
  auto steps = [](std::vector<int> s, int cap) {
    nefi::Curriculum c = nefi::Curriculum::multiscale({64}, s, 1e-2, 0.5, 8);
    c.restarts = 3;
    const nefi::Curriculum k = c.capped(cap);
    EXPECT_EQ(k.restarts, 1);
    std::vector<int> out;
    for (const auto& st : k.stages) out.push_back(st.steps);
    return out;
  };
  EXPECT_EQ(steps({150, 300}, 40), (std::vector<int>{13, 27}));  // deconvolution smoke
  EXPECT_EQ(steps({40, 60}, 40), (std::vector<int>{16, 24}));    // the reference's toy1d smoke
  EXPECT_EQ(steps({5, 15}, 10), (std::vector<int>{2, 8}));       // 2.5 -> 2, 7.5 -> 8
  EXPECT_EQ(steps({3, 1000}, 40), (std::vector<int>{2, 40}));    // min 2 a stage
  EXPECT_EQ(steps({10, 20}, 40), (std::vector<int>{10, 20}));    // under the cap
  EXPECT_EQ(steps({1, 20}, 0), (std::vector<int>{2, 20}));       // no cap, the minimum
  EXPECT_THROW(nefi::Curriculum{}.capped(-1), fk::Error);
}

TEST(NefiRunCli, OptionsAndOneLineErrors) {
  const fs::path nefi_bin = fieldkit_test::sibling_binary("nefi");
  if (!fs::exists(nefi_bin)) GTEST_SKIP() << "nefi_cli not built";
  const fs::path out = nefi::test::scratch() / "nefi_run_cli";
  EXPECT_EQ(fieldkit_test::run_cli(nefi_bin, "--version", out.parent_path()).status, 0);
  const auto ok = fieldkit_test::run_cli(
      nefi_bin,
      "run toy1d --smoke --smoke-steps 6 --scene spikes --metrics psnr,mse -m neural -o " +
          out.string(),
      out.parent_path());
  ASSERT_EQ(ok.status, 0) << ok.err;
  std::ifstream f(out / "config.yaml");
  std::stringstream ss;
  ss << f.rdbuf();
  EXPECT_NE(ss.str().find("max_total_steps: 6"), std::string::npos) << ss.str();
  EXPECT_NE(ss.str().find("scene: spikes"), std::string::npos);
  std::ifstream m(out / "metrics.json");
  std::stringstream ms;
  ms << m.rdbuf();
  EXPECT_NE(ms.str().find("\"mse\""), std::string::npos);
  EXPECT_EQ(ms.str().find("relative_error"), std::string::npos);  // not selected
  const std::pair<std::string, std::string> cases[] = {
      {"run toy1d --scene stars", "scene"},
      {"run toy1d --smoke-steps -1", "--smoke-steps"},
      {"run toy1d --set optim.beta=1", "optim.beta"},
      {"run toy1d --set stage.warmup=1", "stage.warmup"},
      {"run toy1d --set solver.compile=step", "solver.compile"},
      {"run toy1d --smoke --smoke-steps 2 -m neural --metrics bogus -o " + out.string(),
       "--metrics"}};
  for (const auto& [args, needle] : cases) {
    const auto r = fieldkit_test::run_cli(nefi_bin, args, out.parent_path());
    EXPECT_EQ(r.status, 2) << args;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << ": " << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << args << ": " << r.err;
  }
}

}  // namespace
