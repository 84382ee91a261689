#include "nefi/instances/run_method.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "fk/factory.h"
#include "fk/thread_count.h"
#include "nefi/io/run_config.h"
#include "nefi/solve/metrics.h"
#include "nefi/test_files.h"

namespace {

// An instance whose measurement is 2 everywhere and truth 1: "halve" is a
// direct method (x = data / 2, with a metric of its own); "neural" has no
// setup here.
class Halving : public nefi::Instance {
 public:
  std::string name() const override { return "halving"; }
  std::string summary() const override { return ""; }
  nefi::Params default_config() const override { return {}; }
  std::vector<std::string> methods() const override { return {"neural", "halve"}; }
  std::vector<std::string> scenes() const override { return {}; }
  nefi::DataLabels data_labels(const nefi::Params&) const override { return {}; }
  std::pair<nefi::Measurement, fk::Tensor> make_measurement(const nefi::Params&,
                                                            uint64_t seed) const override {
    nefi::Measurement m;
    m.data = fk::full({3}, 2.0 + static_cast<double>(seed), {fk::DType::F64});
    return {m, fk::full({3}, 1.0, {fk::DType::F64})};
  }
  nefi::RunOutput run(const nefi::Params& p, const std::string& method, uint64_t seed,
                      const nefi::SolverOptions& so) const override {
    nefi::MethodRunners runners;
    runners.direct["halve"] = [](const nefi::Measurement& m, nefi::RunOutput& out) {
      std::vector<double> x = m.data.to_vector<double>();
      for (double& v : x) v /= 2;
      out.reconstruction = fk::from_vector(x, {3});
      out.metrics["halve_own"] = 7;
      out.metrics["rmse"] = -1;  // evaluate's value wins
    };
    return nefi::run_method(*this, p, method, seed, so, runners);
  }
  std::map<std::string, double> evaluate(const nefi::Params&,
                                         const nefi::RunOutput& out) const override {
    return {{"rmse", std::sqrt(nefi::mse(out.reconstruction, out.gt))}};
  }
};

TEST(NefiRunMethod, DirectMethodRunsOnTheMeasurementAndKeepsItsMetrics) {
  const Halving h;
  const nefi::RunOutput out = h.run({}, "halve", 0, {});
  EXPECT_EQ(out.method, "halve");
  EXPECT_EQ(out.reconstruction.to_vector<double>(), (std::vector<double>{1, 1, 1}));
  EXPECT_EQ(out.measurement.data.to_vector<double>(), (std::vector<double>{2, 2, 2}));
  EXPECT_EQ(out.metrics.at("halve_own"), 7);
  EXPECT_EQ(out.metrics.at("rmse"), 0);
}

TEST(NefiRunMethod, AMethodWithoutASetupIsAnError) {
  const Halving h;
  try {
    h.run({}, "neural", 0, {});
    FAIL();
  } catch (const fk::Error& e) {
    EXPECT_EQ(e.where(), "halving");
    EXPECT_NE(std::string(e.expected()).find("setup() for method neural"), std::string::npos);
  }
}

TEST(NefiRunMethod, UnknownMethodIsAnErrorListingTheMethods) {
  const Halving h;
  try {
    h.run({}, "wiener", 0, {});
    FAIL();
  } catch (const fk::Error& e) {
    EXPECT_EQ(e.where(), "halving");
    EXPECT_EQ(e.expected(), "method neural or halve");
    EXPECT_EQ(e.given(), "wiener");
  }
}

// Without a solve of its own, run_method is start_run_output + solve_and_record
// on the instance's setup: toy1d's run gives that solve's field bit for bit.
TEST(NefiRunMethod, DefaultSolveIsSolveAndRecord) {
  const fk::test::ThreadCount one_thread(1);
  const nefi::RunConfig c = nefi::load_run_config_file(nefi::test::config_path("toy1d_smoke.yaml"));
  const auto toy = nefi::find_instance("toy1d");
  nefi::SolverOptions so;
  so.max_total_steps = 20;
  const nefi::RunOutput out = toy->run(c.config, "neural", 1, so);
  nefi::ProblemSetup s = *toy->setup(c.config, "neural", 1);
  nefi::RunOutput direct = nefi::start_run_output("neural", s.measurement, s.gt);
  nefi::solve_and_record(std::move(s.problem), s.curriculum, 1, so, direct);
  EXPECT_EQ(out.reconstruction.to_vector<double>(), direct.reconstruction.to_vector<double>());
  EXPECT_EQ(out.metrics, toy->evaluate(c.config, direct));
}

// Curriculum overrides apply to every method a run solves (the caller chose
// them), the grid baseline as the neural field.
TEST(NefiRunMethod, CurriculumOverridesApplyToEveryMethodRun) {
  const fk::test::ThreadCount one_thread(1);
  const nefi::RunConfig c = nefi::load_run_config_file(nefi::test::config_path("toy1d_smoke.yaml"));
  const auto toy = nefi::find_instance("toy1d");
  nefi::SolverOptions plain;
  plain.max_total_steps = 20;
  nefi::SolverOptions ema = plain;
  ema.curriculum.ema = 0.99;
  for (const char* method : {"grid", "neural"}) {
    const auto a = toy->run(c.config, method, 1, plain).reconstruction.to_vector<double>();
    const auto b = toy->run(c.config, method, 1, ema).reconstruction.to_vector<double>();
    EXPECT_NE(a, b) << method;
  }
}

// toy1d with a stage after its solve that records what it was given: the
// seed, the solved output's steps and the problem as set up (its name); it
// also sets a metric evaluate() reports, whose value must win.
class AfterSolveToy : public nefi::Instance {
 public:
  std::string name() const override { return "after_solve_toy"; }
  std::string summary() const override { return ""; }
  nefi::Params default_config() const override { return toy_->default_config(); }
  std::vector<std::string> methods() const override { return toy_->methods(); }
  std::vector<std::string> scenes() const override { return {}; }
  nefi::DataLabels data_labels(const nefi::Params&) const override { return {}; }
  std::pair<nefi::Measurement, fk::Tensor> make_measurement(const nefi::Params& p,
                                                            uint64_t seed) const override {
    return toy_->make_measurement(p, seed);
  }
  std::optional<nefi::ProblemSetup> setup_from(const nefi::Params& p, const std::string& method,
                                               uint64_t seed,
                                               const nefi::Measurement* measured) const override {
    return toy_->setup_from(p, method, seed, measured);
  }
  nefi::RunOutput run(const nefi::Params& p, const std::string& method, uint64_t seed,
                      const nefi::SolverOptions& so) const override {
    return nefi::run_method(*this, p, method, seed, so);
  }
  void after_solve(const nefi::Params&, const nefi::InverseProblem& solved,
                   nefi::RunOutput& out) const override {
    out.metrics["after_seed"] = static_cast<double>(out.seed);
    out.metrics["after_steps"] = out.result.total_steps();
    out.metrics["after_named_toy1d"] = solved.name == "toy1d" && solved.op != nullptr;
    out.metrics["psnr"] = -1;
  }
  std::map<std::string, double> evaluate(const nefi::Params& p,
                                         const nefi::RunOutput& out) const override {
    return toy_->evaluate(p, out);
  }

 private:
  nefi::InstancePtr toy_ = nefi::find_instance("toy1d");
};

TEST(NefiRunMethod, AfterSolveRunsOnTheSolvedOutputBeforeEvaluate) {
  const fk::test::ThreadCount one_thread(1);
  const nefi::RunConfig c = nefi::load_run_config_file(nefi::test::config_path("toy1d_smoke.yaml"));
  const AfterSolveToy toy;
  nefi::SolverOptions so;
  so.max_total_steps = 12;
  const nefi::RunOutput out = toy.run(c.config, "neural", 3, so);
  EXPECT_EQ(out.seed, 3u);
  EXPECT_EQ(out.metrics.at("after_seed"), 3);
  EXPECT_EQ(out.metrics.at("after_steps"), 12);
  EXPECT_EQ(out.metrics.at("after_named_toy1d"), 1);
  EXPECT_DOUBLE_EQ(out.metrics.at("psnr"), nefi::psnr(out.reconstruction, out.gt));
}

// A reconstruction holding a NaN (solver.nan_guard off) scores NaN on every
// metric: ct3d's IoU thresholds the volume, where a NaN cell counted as
// background and a run that diverged kept a plausible IoU.
TEST(NefiRunMethod, ANonFiniteReconstructionScoresNanOnEveryMetric) {
  const auto inst = nefi::find_instance("ct3d");
  nefi::Params p = nefi::load_run_config_file(nefi::test::config_path("ct3d_smoke.yaml")).config;
  p.set("n", "16");
  p.set("n_z", "8");
  p.set("n_views", "8");
  auto [m, gt] = inst->make_measurement(p, 0);
  nefi::RunOutput out;
  out.method = "neural";
  out.measurement = m;
  out.gt = gt;
  out.reconstruction = gt.clone();
  nefi::score_output(*inst, p, 0, out);
  EXPECT_DOUBLE_EQ(out.metrics.at("iou"), 1.0);
  std::vector<double> x = gt.to_vector<double>();
  x[x.size() / 2] = std::nan("");
  out.reconstruction = fk::from_vector(x, gt.shape());
  out.metrics.clear();
  nefi::score_output(*inst, p, 0, out);
  ASSERT_TRUE(out.metrics.count("iou"));
  for (const auto& [k, v] : out.metrics) EXPECT_TRUE(std::isnan(v)) << k << " " << v;
}

}  // namespace
