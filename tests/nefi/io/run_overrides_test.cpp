// What a run config sets beyond an instance's keys: the curriculum overrides
// (stopping rules, restarts, EMA, betas), the device (run.device,
// NEFI_DEVICE) and the reference's names for an instance's own solver.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_run.h"
#include "fk/error.h"
#include "fk/knobs.h"
#include "fk/test_util.h"
#include "nefi/bench/campaign.h"
#include "nefi/instances/instance.h"
#include "nefi/instances/run_method.h"
#include "nefi/io/run_config.h"
#include "nefi/test_files.h"

namespace {

namespace fs = std::filesystem;

using fk::test::error_of;

TEST(NefiRunOverrides, CurriculumFromSetAndFileRoundTrip) {
  nefi::RunConfig c = nefi::default_run_config("toy1d");
  const std::string plain = nefi::to_yaml(c);
  EXPECT_EQ(plain.find("curriculum:"), std::string::npos);  // nothing set, nothing written
  nefi::apply_set(c, "curriculum.early_stop_patience=7");
  nefi::apply_set(c, "curriculum.early_stop_min_delta=0.001");
  nefi::apply_set(c, "curriculum.discrepancy_tau=1.2");
  nefi::apply_set(c, "curriculum.time_budget_s=30");
  nefi::apply_set(c, "curriculum.restarts=2");
  nefi::apply_set(c, "optim.ema=0.95");
  nefi::apply_set(c, "curriculum.optim.betas=[0.8, 0.99]");  // a file's nesting, flattened
  nefi::apply_set(c, "optim.lr_mult={field.out: 0.5, field.layer0: 2}");
  nefi::apply_set(c, "curriculum.freeze=[[field.out], []]");
  const nefi::CurriculumOverrides& o = c.curriculum;
  EXPECT_EQ(o.lr_mult, (std::map<std::string, double>{{"field.out", 0.5}, {"field.layer0", 2}}));
  ASSERT_TRUE(o.freeze.has_value());
  EXPECT_EQ(o.freeze->size(), 2u);
  EXPECT_EQ(o.early_stop_patience, 7);
  EXPECT_EQ(o.early_stop_min_delta, 0.001);
  EXPECT_EQ(o.discrepancy_tau, 1.2);
  EXPECT_EQ(o.time_budget_s, 30.0);
  EXPECT_EQ(o.restarts, 2);
  EXPECT_EQ(o.ema, 0.95);
  EXPECT_EQ(o.betas, (std::pair{0.8, 0.99}));
  EXPECT_NE(nefi::config_hash(c), nefi::config_hash(nefi::default_run_config("toy1d")));

  // config.yaml is re-runnable: the file gives the same overrides and hash.
  const fs::path f = nefi::test::scratch() / "overrides_round_trip.yaml";
  std::ofstream(f) << nefi::to_yaml(c);
  const nefi::RunConfig back = nefi::load_run_config_file(f.string());
  EXPECT_EQ(nefi::to_yaml(back), nefi::to_yaml(c));
  EXPECT_EQ(back.curriculum.betas, o.betas);
  EXPECT_EQ(back.curriculum.lr_mult, o.lr_mult);
  EXPECT_EQ(back.curriculum.freeze, o.freeze);

  // Applied on top of the instance's curriculum; the unset fields keep it.
  nefi::Curriculum own = nefi::Curriculum::multiscale({64}, {10, 10});
  own.early_stop_patience = 100;
  own.optim.weight_decay = 0.5;
  const nefi::Curriculum got = o.applied_to(own);
  EXPECT_EQ(got.optim.lr_mult.at("field.out"), 0.5);
  EXPECT_EQ(got.stages[0].freeze, std::vector<std::string>{"field.out"});
  EXPECT_TRUE(got.stages[1].freeze.empty());
  nefi::CurriculumOverrides every;
  every.freeze = std::vector<std::vector<std::string>>{{"field.layer"}};  // one list: every stage
  EXPECT_EQ(every.applied_to(own).stages[1].freeze, std::vector<std::string>{"field.layer"});
  every.freeze = std::vector<std::vector<std::string>>{{"a"}, {"b"}, {"c"}};
  EXPECT_NE(error_of([&] { every.applied_to(own); }).find("one per stage (2)"), std::string::npos);
  EXPECT_EQ(got.early_stop_patience, 7);
  EXPECT_EQ(got.discrepancy_tau, 1.2);
  EXPECT_EQ(got.restarts, 2);
  EXPECT_EQ(got.optim.ema, 0.95);
  EXPECT_EQ(got.optim.beta1, 0.8);
  EXPECT_EQ(got.optim.beta2, 0.99);
  EXPECT_EQ(got.optim.weight_decay, 0.5);
  nefi::CurriculumOverrides none;
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(none.applied_to(own).early_stop_patience, 100);
}

TEST(NefiRunOverrides, BadCurriculumValuesAreOneLineErrorsNamingTheKey) {
  nefi::RunConfig c = nefi::default_run_config("toy1d");
  for (const char* bad :
       {"curriculum.restarts=0", "curriculum.discrepancy_tau=-1", "curriculum.time_budget_s=0",
        "curriculum.early_stop_patience=0", "curriculum.early_stop_min_delta=-1", "optim.ema=1",
        "optim.betas=[0.9]", "optim.betas=[0.9, 1.0]", "curriculum.restarts=x",
        "curriculum.stages=3", "optim.lr_mult=[1, 2]", "optim.lr_mult={field.out: -1}",
        "curriculum.freeze=field.out"}) {
    const std::string msg = error_of([&] { nefi::apply_set(c, bad); });
    const std::string key(bad, std::string(bad).find('='));
    const std::string attr = key.substr(key.rfind('.') + 1);
    EXPECT_NE(msg.find(attr), std::string::npos) << bad << ": " << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
  EXPECT_TRUE(c.curriculum.empty());  // a refused value leaves the config as it was
  // Each says what it expected: the type, or the range of a whole number
  // (3e9 restarts, past int's range, were "a value of the right type").
  EXPECT_EQ(error_of([&] { nefi::apply_set(c, "curriculum.restarts=3000000000"); }),
            "--set curriculum.restarts: expected a whole number in [1, 1000], got 3000000000");
  EXPECT_EQ(error_of([&] { nefi::apply_set(c, "curriculum.restarts=1001"); }),
            "--set curriculum.restarts: expected a whole number in [1, 1000], got 1001");
  EXPECT_EQ(error_of([&] { nefi::apply_set(c, "curriculum.restarts=3e9"); }),
            "--set curriculum.restarts: expected a whole number, got '3e9'");
  EXPECT_EQ(error_of([&] { nefi::apply_set(c, "optim.ema=fast"); }),
            "--set optim.ema: expected a number, got 'fast'");

  const fs::path f = nefi::test::scratch() / "overrides_bad.yaml";
  std::ofstream(f) << "instance: toy1d\ncurriculum:\n  patience: 3\n";
  EXPECT_NE(error_of([&] { nefi::load_run_config_file(f.string()); }).find("patience"),
            std::string::npos);
  std::ofstream(f) << "instance: toy1d\ncurriculum:\n  optim:\n    ema: 2\n";
  const std::string ema = error_of([&] { nefi::load_run_config_file(f.string()); });
  EXPECT_NE(ema.find(f.string()), std::string::npos) << ema;
  EXPECT_NE(ema.find("ema"), std::string::npos) << ema;
  // A key written twice: yaml-cpp keeps both, and which one a reader sees
  // depends on how it reads the map; refused, naming it and where it sits.
  std::ofstream(f) << "instance: toy1d\nconfig:\n  n: 64\n  n: 32\n";
  EXPECT_NE(error_of([&] {
              nefi::load_run_config_file(f.string());
            }).find("each key once in a mapping, got 'n' twice in config"),
            std::string::npos);
  std::ofstream(f) << "instance: toy1d\ninstance: deconvolution\n";
  EXPECT_NE(error_of([&] {
              nefi::load_run_config_file(f.string());
            }).find("'instance' twice at the top level"),
            std::string::npos);
  // A directory: named as such (the stream's own message named no path).
  EXPECT_NE(error_of([&] {
              nefi::load_run_config_file(nefi::test::scratch().string());
            }).find("a directory"),
            std::string::npos);
}

// The overrides reach the solve: a discrepancy level far above the noise
// stops toy1d's first stage as soon as its bands are open.
TEST(NefiRunOverrides, DiscrepancyStopReachesTheSolve) {
  nefi::RunConfig c = nefi::default_run_config("toy1d");
  nefi::apply_set(c, "steps=[20, 20]");
  nefi::apply_set(c, "anneal_fraction=0.25");
  const nefi::InstancePtr inst = nefi::find_instance("toy1d");
  const nefi::RunOutput plain = inst->run(c.config, "neural", 0, nefi::solver_options(c));
  EXPECT_EQ(plain.result.total_steps(), 40);
  nefi::apply_set(c, "curriculum.discrepancy_tau=1e6");
  const nefi::RunOutput stopped = inst->run(c.config, "neural", 0, nefi::solver_options(c));
  ASSERT_EQ(stopped.result.stages.size(), 2u);
  for (const auto& s : stopped.result.stages) {
    EXPECT_EQ(s.stop, "discrepancy");
    EXPECT_EQ(s.steps, 6);  // progress reaches 1 at step index 0.25 * 20 = 5, the sixth
  }
  EXPECT_EQ(stopped.curriculum.discrepancy_tau, 1e6);  // recorded with the run
}

TEST(NefiRunOverrides, DeviceFromSetOrKnobNamesItsOwnRunFolder) {
  const nefi::RunConfig cpu = nefi::default_run_config("toy1d");
  EXPECT_EQ(cpu.device, "cpu");
  nefi::RunConfig c = cpu;
  nefi::apply_set(c, "run.device=cpu");
  EXPECT_EQ(nefi::config_hash(c), nefi::config_hash(cpu));  // a CPU run keeps its folder
  nefi::apply_set(c, "run.device=cuda");
  EXPECT_EQ(c.device, "cuda:0");
  EXPECT_NE(nefi::to_yaml(c).find("  device: cuda:0"), std::string::npos);
  EXPECT_NE(nefi::config_hash(c), nefi::config_hash(cpu));
  EXPECT_TRUE(nefi::solver_options(c).device.is_cuda());
  EXPECT_NE(error_of([&] { nefi::apply_set(c, "run.device=gpu"); }).find("run.device"),
            std::string::npos);
  // The device trains every method whose field has a device path: every
  // field kind nefi makes, the baselines' deep decoder and Gaussian splats
  // included.
  const nefi::SolverOptions so = nefi::solver_options(c);
  auto device_of = [&](const std::string& instance, const std::string& method) {
    const nefi::InstancePtr inst = nefi::find_instance(instance);
    const nefi::RunConfig smoke =
        nefi::load_run_config_file(nefi::test::config_path(instance + "_smoke.yaml"));
    return nefi::method_options(*inst, method, *inst->setup(smoke.config, method, 0)->problem.field,
                                so)
        .device;
  };
  EXPECT_TRUE(device_of("thermal_tomography", "nefty").is_cuda());
  EXPECT_TRUE(device_of("thermal_tomography", "grid").is_cuda());
  EXPECT_TRUE(device_of("thermal_tomography", "pinn_soft").is_cuda());
  EXPECT_TRUE(device_of("deconvolution", "deep_decoder").is_cuda());
  EXPECT_TRUE(device_of("deconvolution", "gaussian_splat").is_cuda());
  // config.yaml names the CPU too: re-run under another NEFI_DEVICE, it stays.
  EXPECT_NE(nefi::to_yaml(cpu).find("  device: cpu"), std::string::npos);
  const fs::path f = nefi::test::scratch() / "device_round_trip.yaml";
  std::ofstream(f) << nefi::to_yaml(cpu);
  {
    fk::KnobOverride knob("NEFI_DEVICE", "cuda:1");
    EXPECT_EQ(nefi::default_run_config("toy1d").device, "cuda:1");
    EXPECT_EQ(nefi::load_run_config_file(f.string()).device, "cpu");
  }
  // Another word is refused by the knob itself (so fk-info refuses it too).
  for (const char* bad : {"tpu", "cuda:", "cuda:x", "gpu", "cuda:N", "cuda:128", "cuda:2147483648",
                          "cuda:99999999999999999999", "cuda:+1"}) {
    EXPECT_NE(error_of([&] { fk::KnobOverride knob("NEFI_DEVICE", bad); }).find("NEFI_DEVICE"),
              std::string::npos)
        << bad;
  }
}

TEST(NefiMethodNames, ReferenceNamesMeanTheInstancesOwnSolver) {
  const nefi::InstancePtr toy = nefi::find_instance("toy1d");
  const nefi::InstancePtr thermal = nefi::find_instance("thermal_tomography");
  EXPECT_EQ(nefi::default_method(*toy), "neural");
  EXPECT_EQ(nefi::default_method(*thermal), "nefty");
  for (const char* alias : {"neural", "nefi", "default", "ours", "netmy", "nefty"}) {
    EXPECT_EQ(nefi::canonical_method(*toy, alias, "--method"), "neural") << alias;
    EXPECT_EQ(nefi::canonical_method(*thermal, alias, "--method"), "nefty") << alias;
  }
  EXPECT_EQ(nefi::canonical_method(*toy, "grid", "--method"), "grid");
  EXPECT_EQ(nefi::canonical_method(*thermal, "pinn_soft", "--method"), "pinn_soft");
  const std::string msg = error_of([&] { nefi::canonical_method(*toy, "Neural", "--methods"); });
  EXPECT_NE(msg.find("--methods"), std::string::npos) << msg;
  EXPECT_NE(msg.find("neural, grid"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'Neural'"), std::string::npos) << msg;
}

// The CLI takes the reference's names and writes the run's device.
TEST(NefiRunOverrides, CliTakesReferenceMethodNamesAndWritesTheDevice) {
  const fs::path nefi_bin = fieldkit_test::sibling_binary("nefi");
  if (!fs::exists(nefi_bin)) GTEST_SKIP() << "nefi_cli not built";
  const fs::path out = nefi::test::scratch() / "nefi_run_aliases";
  const auto ok = fieldkit_test::run_cli(
      nefi_bin,
      "run toy1d --smoke --smoke-steps 4 --no-plot -m netmy --set curriculum.restarts=2 -o " +
          out.string(),
      out.parent_path());
  ASSERT_EQ(ok.status, 0) << ok.err;
  std::stringstream metrics, config;
  metrics << std::ifstream(out / "metrics.json").rdbuf();
  config << std::ifstream(out / "config.yaml").rdbuf();
  EXPECT_NE(metrics.str().find("\"device\": \"cpu\""), std::string::npos) << metrics.str();
  EXPECT_NE(metrics.str().find("\"neural\""), std::string::npos) << metrics.str();
  EXPECT_EQ(metrics.str().find("netmy"), std::string::npos) << metrics.str();
  EXPECT_NE(config.str().find("restarts: 2"), std::string::npos) << config.str();
  // metrics.json names the start a trained method kept: restart r of three
  // from run.init_seed 7 is init seed 7 + r.
  const fs::path kept = nefi::test::scratch() / "nefi_run_restarts";
  const auto three = fieldkit_test::run_cli(
      nefi_bin,
      "run toy1d --smoke --smoke-steps 0 --no-plot -m neural --set steps=[4,4] "
      "--set curriculum.restarts=3 --set run.init_seed=7 -o " +
          kept.string(),
      kept.parent_path());
  ASSERT_EQ(three.status, 0) << three.err;
  const nlohmann::json m = nlohmann::json::parse(std::ifstream(kept / "metrics.json"));
  const auto& neural = m.at("methods").at("neural");
  EXPECT_EQ(neural.at("init_seed").get<int>(), 7 + neural.at("restart").get<int>()) << neural;
  EXPECT_LT(neural.at("restart").get<int>(), 3);
  const auto bad =
      fieldkit_test::run_cli(nefi_bin, "run toy1d --smoke -m bogus --no-plot", out.parent_path());
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("nefty name neural"), std::string::npos) << bad.err;
}

}  // namespace

namespace {

// The reference's schedule name and stage key: warmup_cosine is cosine after
// the lr_warmup steps, stage.warmup_steps sets lr_warmup.
TEST(NefiRunOverrides, WarmupCosineAndWarmupStepsAreTheReferencesNames) {
  nefi::RunConfig c = nefi::default_run_config("toy1d");
  nefi::apply_set(c, "stage.warmup_steps=4");
  EXPECT_EQ(c.config.i("lr_warmup"), 4);
  nefi::apply_set(c, "stage.lr_schedule=warmup_cosine");
  nefi::Stage s;
  s.steps = 20;
  s.lr = 1;
  s.lr_warmup = 4;
  nefi::Stage w = s;
  w.lr_schedule = "warmup_cosine";
  w.validate();
  for (int t = 0; t < 20; ++t) EXPECT_EQ(w.lr_at(t), s.lr_at(t)) << t;
  EXPECT_EQ(w.lr_at(1), 0.5);  // (t + 1) / warmup
  const nefi::RunOutput out =
      nefi::find_instance("toy1d")->run(c.config, "neural", 0, nefi::solver_options(c));
  EXPECT_EQ(out.curriculum.stages[0].lr_schedule, "warmup_cosine");
  EXPECT_EQ(out.curriculum.stages[0].lr_warmup, 4);
}

}  // namespace

namespace {

// The reference's config layout B: the instance keys beside its type.
TEST(NefiRunOverrides, ConfigLayoutBIsLayoutA) {
  const fs::path a = nefi::test::scratch() / "layout_a.yaml";
  const fs::path b = nefi::test::scratch() / "layout_b.yaml";
  std::ofstream(a) << "instance: toy1d\nconfig:\n  n: 48\n  tv: 0.01\nrun:\n  seed: 3\n";
  std::ofstream(b) << "instance:\n  type: toy1d\n  n: 48\n  tv: 0.01\nrun:\n  seed: 3\n";
  EXPECT_EQ(nefi::to_yaml(nefi::load_run_config_file(b.string())),
            nefi::to_yaml(nefi::load_run_config_file(a.string())));
  std::ofstream(b) << "instance:\n  type: toy1d\n  n: 48\nconfig:\n  tv: 0.01\n";
  EXPECT_NE(error_of([&] { nefi::load_run_config_file(b.string()); }).find("both"),
            std::string::npos);
  std::ofstream(b) << "instance:\n  n: 48\n";
  EXPECT_NE(error_of([&] { nefi::load_run_config_file(b.string()); }).find("type"),
            std::string::npos);
  std::ofstream(b) << "instance:\n  type: toy1d\n  nn: 48\n";
  EXPECT_NE(error_of([&] { nefi::load_run_config_file(b.string()); }).find("nn"),
            std::string::npos);
}

}  // namespace

namespace {

// run.init_seed: the field starts from another seed on the same measurement.
TEST(NefiRunOverrides, InitSeedVariesTheFieldNotTheData) {
  nefi::RunConfig c = nefi::default_run_config("toy1d");
  nefi::apply_set(c, "steps=[4, 4]");
  const nefi::InstancePtr inst = nefi::find_instance("toy1d");
  const nefi::RunOutput plain = inst->run(c.config, "neural", 0, nefi::solver_options(c));
  nefi::apply_set(c, "run.init_seed=0");
  EXPECT_NE(nefi::to_yaml(c).find("init_seed: 0"), std::string::npos);
  const nefi::RunOutput zero = inst->run(c.config, "neural", 0, nefi::solver_options(c));
  EXPECT_EQ(zero.reconstruction.to_vector<double>(), plain.reconstruction.to_vector<double>());
  nefi::apply_set(c, "run.init_seed=7");
  const nefi::RunOutput other = inst->run(c.config, "neural", 0, nefi::solver_options(c));
  EXPECT_EQ(other.measurement.data.to_vector<double>(), plain.measurement.data.to_vector<double>());
  EXPECT_NE(other.reconstruction.to_vector<double>(), plain.reconstruction.to_vector<double>());
  nefi::bench::CampaignSpec spec;
  spec.target = "toy1d";
  spec.sets = {"run.init_seed=1"};
  EXPECT_NE(error_of([&] { nefi::bench::make_protocol(spec); }).find("run.init_seed"),
            std::string::npos);
  // A config file's run.seed too (it was dropped: data seed 0 ran).
  const fs::path seeded = nefi::test::scratch() / "seeded_campaign.yaml";
  std::ofstream(seeded) << "instance: toy1d\nrun:\n  seed: 5\n";
  spec.target = seeded.string();
  spec.sets = {};
  EXPECT_NE(error_of([&] { nefi::bench::make_protocol(spec); }).find("run.seed"),
            std::string::npos);
}

}  // namespace
