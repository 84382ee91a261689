// nefi profile and the solver switches it rests on (one stage, stopping rules
// off, the initialisation seed apart from the data seed).
#include "nefi/bench/profile.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "fk/error.h"
#include "nefi/io/run_config.h"
#include "nefi/test_files.h"

namespace {

using nefi::test::scratch;

using namespace nefi::bench;

nefi::RunConfig smoke(const std::string& name) {
  return nefi::load_run_config_file(nefi::test::config_path(name));
}

TEST(BenchProfile, ReportsTheLastStageOfToy1d) {
  const nefi::RunConfig cfg = smoke("toy1d_smoke.yaml");
  ProfileOptions o;
  o.steps = 4;
  o.warmup = 2;
  const std::string trace = (scratch() / "nefi_profile_trace.json").string();
  o.trace_path = trace;
  const auto inst = nefi::find_instance("toy1d");
  const ProfileReport r = profile_instance(*inst, cfg.config, o);
  EXPECT_EQ(r.method, "neural");
  EXPECT_EQ(r.stage, 1);
  EXPECT_EQ(r.n_stages, 2);
  EXPECT_EQ(r.shape, fk::Dims{64});
  EXPECT_GT(r.median_ms, 0);
  EXPECT_GT(r.ops_per_step, 0);
  EXPECT_GT(r.n_params, 0);
  EXPECT_GT(r.peak_bytes, 0);
  ASSERT_FALSE(r.ops.empty());
  // Every counted op is a traced op: the table's calls add up to ops/step,
  // and the fused optimizer runs once per step.
  double calls = 0;
  for (const auto& op : r.ops) {
    calls += op.calls_per_step;
    if (op.name == "adam_step") {
      EXPECT_DOUBLE_EQ(op.calls_per_step, 1.0);
    }
  }
  EXPECT_NEAR(calls, r.ops_per_step, 1e-9);
  // The chrome trace is valid JSON with one event per traced op.
  EXPECT_EQ(r.trace_written, trace);
  std::ifstream f(trace);
  const auto j = nlohmann::json::parse(f);
  EXPECT_NEAR(static_cast<double>(j.at("traceEvents").size()), calls * o.steps, 1e-9);
  const auto line = nlohmann::json::parse(profile_json_line(r, "c.yaml", {"n=64"}));
  EXPECT_EQ(line.at("instance"), "toy1d");
  EXPECT_EQ(line.at("overrides").at(0), "n=64");
  EXPECT_EQ(line.at("shape").at(0), 64);
  EXPECT_EQ(line.at("device"), "cpu");
  EXPECT_EQ(format_profile(r, false).find("cuda"), std::string::npos);
  EXPECT_NE(format_profile(r, true).find("adam_step"), std::string::npos);

  // Timed steps to the stage's end leave none to trace: no trace is said
  // written (nefi profile printed "trace -> FILE" and wrote none).
  ProfileOptions whole = o;
  whole.steps = static_cast<int>(cfg.config.list("steps").back()) - o.warmup;
  whole.trace_path = (scratch() / "nefi_profile_untraced.json").string();
  std::filesystem::remove(whole.trace_path);
  EXPECT_TRUE(profile_instance(*inst, cfg.config, whole).trace_written.empty());
  EXPECT_FALSE(std::filesystem::exists(whole.trace_path));

  // The first stage, and the bare loop, on the same config.
  o.stage = 0;
  o.trace_path.clear();
  EXPECT_EQ(profile_instance(*inst, cfg.config, o).shape, fk::Dims{32});
  o.minimal = true;
  const ProfileReport m = profile_instance(*inst, cfg.config, o);
  EXPECT_TRUE(m.minimal);
  EXPECT_GT(m.ops_per_step, 0);
  EXPECT_LE(m.ops_per_step, r.ops_per_step);
}

TEST(BenchProfile, BadRequestsAreClearErrors) {
  const nefi::RunConfig cfg = smoke("toy1d_smoke.yaml");
  const auto inst = nefi::find_instance("toy1d");
  ProfileOptions o;
  o.stage = 5;
  EXPECT_THROW(profile_instance(*inst, cfg.config, o), fk::Error);
  o.stage = -1;
  o.steps = 200;  // the last stage has 120
  try {
    profile_instance(*inst, cfg.config, o);
    FAIL();
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("120"), std::string::npos);
  }
  o.steps = 2;
  o.minimal = true;  // the bare loop is the host's
  o.device = fk::cuda_device(0);
  EXPECT_THROW(profile_instance(*inst, cfg.config, o), fk::Error);
  o.minimal = false;
  o.device = fk::kCPU;
  o.method = "admm";
  EXPECT_THROW(profile_instance(*inst, cfg.config, o), fk::Error);
  // A direct method has no solver loop to profile.
  nefi::RunConfig dc = smoke("deconvolution_smoke.yaml");
  nefi::apply_set(dc, "n=16");
  o.method = "wiener";
  EXPECT_THROW(profile_instance(*nefi::find_instance("deconvolution"), dc.config, o), fk::Error);
}

TEST(BenchProfile, SolverSwitches) {
  const nefi::RunConfig cfg = smoke("toy1d_smoke.yaml");
  nefi::Params p = cfg.config;
  p.set("steps", "[4, 6]");
  const auto inst = nefi::find_instance("toy1d");
  nefi::SolverOptions so;
  so.only_stage = -2;
  auto out = inst->run(p, "neural", 0, so);
  ASSERT_EQ(out.result.stages.size(), 1u);
  EXPECT_EQ(out.result.stages[0].shape, fk::Dims{32});
  EXPECT_EQ(out.result.stages[0].steps, 4);
  // A grid field's early stage alone: its values are resampled to the final
  // grid, where the result lives.
  const auto grid = inst->run(p, "grid", 0, so);
  ASSERT_EQ(grid.result.stages.size(), 1u);
  EXPECT_EQ(grid.result.stages[0].shape, fk::Dims{32});
  EXPECT_EQ(grid.reconstruction.shape(), out.reconstruction.shape());
  EXPECT_EQ(grid.reconstruction.shape(), fk::Dims{64});
  // The initialisation seed decouples the field from the data seed.
  so = {};
  so.init_seed = 5;
  const auto a = inst->run(p, "neural", 0, so);
  const auto b = inst->run(p, "neural", 0, so);
  so.init_seed = 6;
  const auto c = inst->run(p, "neural", 0, so);
  EXPECT_EQ(a.metrics, b.metrics);
  EXPECT_NE(a.metrics.at("psnr"), c.metrics.at("psnr"));
  EXPECT_EQ(a.result.seed, 5u);
  // Stopping rules off: a callback sees every step even when the data loss
  // cannot improve (min_delta huge would stop after `patience` steps).
  // Step infos carry per-step time and counters.
  int steps = 0;
  so = {};
  so.stopping_rules = false;
  so.callbacks.push_back([&steps](const nefi::StepInfo& s) {
    ++steps;
    EXPECT_GE(s.step_ms, 0);
    EXPECT_GT(s.step_ops, 0);
    return true;
  });
  inst->run(p, "neural", 0, so);
  EXPECT_EQ(steps, 10);
}

}  // namespace
