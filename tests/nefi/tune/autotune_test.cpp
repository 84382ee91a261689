// autotune's rules on a stand-in instance whose residual is a known function
// of the learning rate and the TV weight: residual = 0.1 |log10(lr) + 2| +
// 0.05 + 10 tv (sigma 0.1), NaN for lr > 0.05 (a diverging pilot). So the
// best lr is 1e-2, and the discrepancy principle (residual <= 1.1 sigma)
// holds up to tv = 6e-3. With `decay`, the residual also carries
// decay x exp(-steps / 10): the budget the data need.
#include "nefi/tune/autotune.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "fk/device.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "nefi/io/run_config.h"
#include "nefi/test_files.h"
#include "nefi/tune/autotune_report.h"

namespace nefi::tune {
namespace {

class ResidualModel : public Instance {
 public:
  explicit ResidualModel(double sigma, double decay = 0) : sigma_(sigma), decay_(decay) {}
  std::string name() const override { return "model"; }
  std::string summary() const override { return "a residual known in closed form"; }
  Params default_config() const override {
    Params p;
    p.declare("steps", std::vector<double>{40, 60}, "steps per stage");
    p.declare("lr", 1e-3, "learning rate");
    p.declare("tv", 1e-3, "TV weight");
    p.declare("l1", 0.0, "L1 weight");
    p.declare("out_init_scale", 0.1, "output-layer weight scale");
    return p;
  }
  std::vector<std::string> methods() const override { return {"neural"}; }
  std::vector<std::string> scenes() const override { return {"any"}; }
  DataLabels data_labels(const Params&) const override {
    const DataAxis x = span_axis("x", "px", 0, 8);
    return {{"value", "v", "a.u."}, {x}, {"residual", "r", "a.u."}, {x}};
  }
  std::pair<Measurement, fk::Tensor> make_measurement(const Params&, uint64_t) const override {
    Measurement m;
    m.data = fk::zeros({8}, {fk::DType::F64});
    m.noise_std = sigma_;
    return {m, fk::zeros({8}, {fk::DType::F64})};
  }
  RunOutput run(const Params& p, const std::string& method, uint64_t seed,
                const SolverOptions& so) const override {
    auto [m, gt] = make_measurement(p, seed);
    RunOutput out = start_run_output(method, m, gt);
    const double lr = p.d("lr");
    StageResult s;
    // The budget in 'steps', capped as a solve caps it.
    int total = 0;
    for (double n : p.list("steps")) total += static_cast<int>(n);
    s.steps = so.max_total_steps > 0 ? std::min(total, so.max_total_steps) : total;
    const double r = lr > 0.05 ? NAN
                               : 0.1 * std::abs(std::log10(lr) + 2) + 0.05 + 10 * p.d("tv") +
                                     decay_ * std::exp(-s.steps / 10.0);
    out.result.prediction = fk::full({8}, r, {fk::DType::F64});
    out.result.stages = {s};
    out.metrics = {{"psnr", -r}};
    ++runs;
    return out;
  }
  mutable int runs = 0;

 private:
  double sigma_, decay_;
};

RunConfig model_config() {
  RunConfig c;
  c.instance = "model";
  c.config = ResidualModel(0.1).default_config();
  c.methods = {"neural"};
  return c;
}

TEST(Autotune, LearningRateByResidualThenWeightByDiscrepancy) {
  ResidualModel inst(0.1);
  RunConfig cfg = model_config();
  cfg.config.set("lr", "3e-3");
  const AutotuneReport r = autotune(inst, cfg, "neural", level_plan("standard"));
  EXPECT_EQ(r.pilot_steps, 50);       // 50 % of 100
  ASSERT_EQ(r.decisions.size(), 3u);  // lr, tv (l1 is off and stays off), steps
  const Decision& lr = r.decisions[0];
  EXPECT_EQ(lr.key, "lr");
  ASSERT_EQ(lr.pilots.size(), 5u);             // 3e-4 ... 3e-2 ... 3e-2 x 10 = 0.03
  EXPECT_EQ(lr.chosen, Params::render(9e-3));  // 9e-3: the nearest to 1e-2
  const Decision& tv = r.decisions[1];
  EXPECT_EQ(tv.key, "tv");
  ASSERT_EQ(tv.pilots.size(), 7u);
  EXPECT_EQ(tv.chosen, Params::render(3e-3));  // 3e-3 meets 1.1 sigma; 1e-2 does not
  EXPECT_EQ(r.tuned.config.d("tv"), 3e-3);
  EXPECT_EQ(r.tuned.config.d("lr"), 9e-3);
  EXPECT_EQ(r.tuned.config.d("l1"), 0.0);
  EXPECT_EQ(inst.runs, 16);  // 5 + 7 + 4 budget pilots
  // A residual that does not depend on the steps: the smallest budget meets.
  EXPECT_EQ(r.decisions[2].chosen, "[5, 8]");  // [40, 60] x 1/8, rounded
}

TEST(Autotune, TheBudgetIsTheSmallestThatReachesTheFloor) {
  // The steps term decays as exp(-steps / 10): at 13, 25, 50 and 100 total
  // steps it adds 0.027, 0.0082, 0.0007 and 0.000005 to 0.05 + 10 tv.
  ResidualModel inst(0.01, 0.1);
  RunConfig cfg = model_config();
  cfg.config.set("lr", "1e-2");
  cfg.config.set("tv", "1e-4");
  const AutotuneReport r = autotune(inst, cfg, "neural", level_plan("standard"));
  const Decision& b = r.decisions.back();
  EXPECT_EQ(b.key, "steps");
  ASSERT_EQ(b.pilots.size(), 4u);
  // The floor is the 100-step pilot's residual (sigma 0.01 is below every
  // fit): 1.1 x floor is first met at 50 steps.
  EXPECT_EQ(b.chosen, "[20, 30]");
  EXPECT_EQ(r.tuned.config.list("steps"), (std::vector<double>{20, 30}));
  EXPECT_TRUE(level_plan("quick").budget_factors.empty());  // quick keeps the budget
  EXPECT_EQ(level_plan("thorough").budget_factors.back(), 2.0);
}

TEST(Autotune, DivergedPilotsNeverWinAndUnreachedDiscrepancyFallsBack) {
  ResidualModel inst(0.01);  // sigma so small no weight reaches 1.1 sigma
  RunConfig cfg = model_config();
  cfg.config.set("lr", "2e-2");
  const AutotuneReport r = autotune(inst, cfg, "neural", level_plan("quick"));
  const Decision& lr = r.decisions[0];
  EXPECT_FALSE(lr.pilots[2].error.empty());          // 6e-2 diverged
  EXPECT_EQ(lr.chosen, Params::render(0.00666667));  // 6.7e-3 beats 2e-2
  // Every residual stays above sigma; the floor 0.0686 sets the level:
  // tv = 1e-3 gives 0.0776 > 1.1 x 0.0686, so 1e-4 stays.
  EXPECT_EQ(r.decisions[1].chosen, Params::render(1e-4));  // the lowest residual
  EXPECT_NE(r.decisions[1].reason.find("no pilot reached sigma"), std::string::npos);
  const std::string md = autotune_md(r);
  EXPECT_NE(md.find("failed: diverged"), std::string::npos) << md;
}

TEST(Autotune, TheComparisonSaysWhenTheDefaultFitsNearerTheNoise) {
  AutotuneReport r;
  r.instance = "toy1d";
  r.noise_std = 0.02;
  r.comparison = Comparison{};
  r.comparison->default_residual = 0.0218;  // 1.09 sigma
  r.comparison->tuned_residual = 0.0469;    // 2.35 sigma: underfit
  std::string md = autotune_md(r);
  EXPECT_NE(md.find("default 1.090, tuned 2.345"), std::string::npos) << md;
  EXPECT_NE(md.find("keep it"), std::string::npos) << md;
  EXPECT_NE(md.find("not recommended"), std::string::npos) << md;
  EXPECT_NE(autotune_json(r).find("\"default_fits_nearer_the_noise\": true"), std::string::npos);
  r.comparison->tuned_residual = 0.0206;  // 1.03 sigma
  md = autotune_md(r);
  EXPECT_EQ(md.find("keep it"), std::string::npos) << md;
  EXPECT_NE(md.find("Reproduce the tuned solve"), std::string::npos) << md;
  r.noise_std = -1;  // unknown: no verdict
  EXPECT_EQ(autotune_md(r).find("Residual / sigma"), std::string::npos);
}

TEST(Autotune, ModelErrorFloorSetsTheDiscrepancyLevel) {
  // sigma 0.01 with lr exact (1e-2): residuals 0.05 + 10 tv, the floor
  // 0.05001 at tv = 1e-6; tv = 1e-3 (0.06) is beyond 1.1 x 0.05001, so 3e-4
  // (0.053) is the largest weight within.
  ResidualModel inst(0.01);
  RunConfig cfg = model_config();
  cfg.config.set("lr", "1e-2");
  cfg.config.set("tv", "1e-4");
  const AutotuneReport r = autotune(inst, cfg, "neural", level_plan("standard"));
  EXPECT_EQ(r.decisions[0].chosen, Params::render(1e-2));
  EXPECT_EQ(r.decisions[1].chosen, Params::render(3e-4));
}

TEST(Autotune, UnknownNoiseKeepsTheWeightAndLevelsAreChecked) {
  ResidualModel inst(-1);
  const AutotuneReport r = autotune(inst, model_config(), "neural", level_plan("quick"));
  EXPECT_EQ(r.decisions[1].chosen, r.decisions[1].before);
  EXPECT_TRUE(r.decisions[1].pilots.empty());
  EXPECT_EQ(level_plan("thorough").lr_factors.size(), 7u);
  EXPECT_EQ(level_plan("thorough").weight_factors.size(), 13u);
  EXPECT_THROW(level_plan("fast"), fk::Error);
}

// A device no pilot can use is refused before the first (every pilot failed
// and the config came back untuned, without a word).
TEST(Autotune, AnUnusableDeviceIsRefusedBeforeAnyPilot) {
  if (fk::cuda_device_count() > 63) GTEST_SKIP() << "a machine with 64 CUDA devices";
  ResidualModel inst(0.1);
  RunConfig c = model_config();
  c.device = "cuda:63";
  try {
    (void)autotune(inst, c, "neural", level_plan("quick"));
    ADD_FAILURE() << "tuned on cuda:63";
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("autotune device"), std::string::npos) << e.what();
  }
}

Pilot pilot(const std::string& value, double residual, const std::string& error = "") {
  Pilot p;
  p.value = value;
  p.residual_rms = residual;
  p.steps = 10;
  p.error = error;
  return p;
}

// A setting the method does not read (its pilots agree in residual,
// metrics and steps) keeps its value: a tie-break moved it without cause
// (the neural weights under grid went x100, 'lr' under gaussian_splat x1/3).
// Each method with a learning rate of its own has it tuned.
TEST(Autotune, ASettingWithoutEffectIsKept) {
  ResidualModel inst(0.1);
  RunConfig cfg = model_config();
  const AutotuneReport r = autotune(inst, cfg, "neural", level_plan("standard"));
  const Decision& l1 = r.decisions[1];  // tv, read
  EXPECT_NE(l1.reason.find("sigma"), std::string::npos) << l1.reason;
  std::vector<Pilot> same{pilot("1", 0.2), pilot("2", 0.2), pilot("3", 0.2, "diverged")};
  EXPECT_TRUE(no_effect(same));
  same[1].steps = 20;  // a budget it reads changes its steps
  EXPECT_FALSE(no_effect(same));
  EXPECT_FALSE(no_effect({pilot("1", 0.2), pilot("2", 0.3)}));
  EXPECT_FALSE(no_effect({pilot("1", 0.2)}));  // one pilot shows nothing
  Params p;
  p.declare("lr", 1e-3, "");
  p.declare("splat_lr", 3e-2, "");
  p.declare("dd_lr", 2e-2, "");
  EXPECT_EQ(lr_key(p, "gaussian_splat"), "splat_lr");
  EXPECT_EQ(lr_key(p, "deep_decoder"), "dd_lr");
  EXPECT_EQ(lr_key(p, "grid"), "lr");  // no grid_lr declared: the neural one
  EXPECT_EQ(lr_key(p, "neural"), "lr");
}

// The budget pilots run the method's own budget, capped only by the run's
// cap: grid (grid_steps) was cut at the scaled 'steps' it never reads.
TEST(Autotune, AMethodThatDoesNotReadStepsKeepsItsBudget) {
  // nv_relaxometry's grid: its own grid_steps and weights (grid_l2, grid_tv)
  RunConfig cfg = load_run_config_file(nefi::test::config_path("nv_relaxometry_smoke.yaml"));
  cfg.max_total_steps = 40;
  const AutotuneReport r =
      autotune(*find_instance("nv_relaxometry"), cfg, "grid", level_plan("standard"));
  const Decision& steps = r.decisions.back();
  ASSERT_EQ(steps.key, "steps");
  EXPECT_EQ(steps.chosen, steps.before);
  EXPECT_NE(steps.reason.find("no effect on grid"), std::string::npos) << steps.reason;
  for (const Decision& d : r.decisions) {
    if (d.key.rfind("grid_", 0) == 0) continue;  // the grid's own keys are tuned
    EXPECT_EQ(d.chosen, d.before) << d.key << ": " << d.reason;
  }
}

TEST(Autotune, TheRulesOnHandMadePilots) {
  // lr: the lowest residual among pilots that ran.
  const std::vector<Pilot> lrs{pilot("a", 0.3), pilot("b", 0.1, "diverged"), pilot("c", 0.2)};
  EXPECT_EQ(lr_choice(lrs).first->value, "c");
  EXPECT_EQ(lr_choice(lrs).second, "residual 2.0000e-01, the lowest of 3 pilots");
  EXPECT_EQ(lr_choice({pilot("a", 0.1, "x")}).first, nullptr);
  // Strength, sigma 0.1: the largest value at <= 0.11 (not the lowest residual).
  const std::vector<Pilot> ws{pilot("1", 0.08), pilot("2", 0.105), pilot("3", 0.12)};
  const Choice w = discrepancy_choice(ws, 0.1, "strength");
  EXPECT_EQ(w.first->value, "2");
  EXPECT_EQ(w.second, "residual 1.0500e-01 = 1.050 sigma");
  // Every pilot above sigma: the floor is the lowest residual (0.2), 1.1 x it 0.22.
  const std::vector<Pilot> above{pilot("1", 0.2), pilot("2", 0.21), pilot("3", 0.3)};
  const Choice a = discrepancy_choice(above, 0.1, "strength");
  EXPECT_EQ(a.first->value, "2");
  EXPECT_EQ(a.second,
            "no pilot reached sigma (the best: 2.000 sigma); the largest strength within 1.1 x "
            "that floor: residual 2.100 sigma");
  // Budget: the smallest within 1.1 x max(sigma, lowest) = 0.11.
  const std::vector<Pilot> bs{pilot("25", 0.2), pilot("50", 0.108), pilot("100", 0.1)};
  const Choice b = budget_choice(bs, 0.1);
  EXPECT_EQ(b.first->value, "50");
  EXPECT_EQ(b.second, "residual 1.0800e-01 in 10 steps (floor 1.0000e-01)");
  EXPECT_EQ(budget_choice({pilot("25", NAN, "diverged")}, 0.1).first, nullptr);
}

}  // namespace
}  // namespace nefi::tune
