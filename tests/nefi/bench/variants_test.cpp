// Ablation and sweep variants: the modifier grammar turned into --set
// assignments (cumulative and independent), every bad modifier, key or value
// refused before anything runs, and a variant campaign whose `full` rows are
// the plain campaign's rows and whose variant rows really differ.
#include "nefi/bench/variants.h"

#include <gtest/gtest.h>

#include "fk/error.h"
#include "nefi/test_files.h"

namespace {

using namespace nefi::bench;
using nefi::test::config_path;

nefi::RunConfig toy() {
  return nefi::load_run_config_file(config_path("toy1d_smoke.yaml"));
}

std::vector<std::string> labels(const std::vector<Variant>& v) {
  std::vector<std::string> l;
  for (const auto& x : v) l.push_back(x.label);
  return l;
}

TEST(BenchVariants, CumulativeAndIndependentAblations) {
  const auto inst = nefi::find_instance("toy1d");
  const std::vector<std::string> mods{"no_annealing",       "no_pe",
                                      "single_stage",       "drop_loss:tv",
                                      "set_weight:l1=1e-3", "optim:grad_clip=0"};
  const auto cum = ablation_variants(toy(), *inst, "neural", mods, false);
  EXPECT_EQ(labels(cum), (std::vector<std::string>{"full", "-annealing", "-pe", "-multiscale",
                                                   "-tv", "l1=1e-3", "optim.grad_clip=0"}));
  EXPECT_TRUE(cum[0].sets.empty());
  EXPECT_EQ(cum.back().sets,
            (std::vector<std::string>{"anneal_fraction=1e-9", "n_octaves=0", "steps=[180.0]",
                                      "tv=0", "l1=1e-3", "optim.grad_clip=0"}));
  const auto ind = ablation_variants(toy(), *inst, "neural", mods, true);
  EXPECT_EQ(labels(ind), labels(cum));
  EXPECT_EQ(ind[3].sets, (std::vector<std::string>{"steps=[180.0]"}));
  EXPECT_EQ(ind[4].modifiers, (std::vector<std::string>{"drop_loss:tv"}));
  // grid_field switches the method for that row and (cumulatively) the rows after it.
  const auto grid =
      ablation_variants(toy(), *inst, "neural", {"grid_field", "drop_loss:tv"}, false);
  EXPECT_EQ(grid[1].method, "grid");
  EXPECT_EQ(grid[2].method, "grid");
  EXPECT_EQ(loss_weight_keys(toy().config), (std::vector<std::string>{"tv", "l1"}));
}

TEST(BenchVariants, BadModifiersAreRefusedUpFront) {
  const auto inst = nefi::find_instance("toy1d");
  const std::pair<std::string, std::string> cases[] = {{"no_gate", "modifier"},
                                                       {"drop_loss:hidden", "loss weight"},
                                                       {"set_weight:tv", "NAME=VALUE"},
                                                       {"set:nokey=1", "nokey"},
                                                       {"set:n=abc", "n"},
                                                       {"stage:warmup=1", "stage.warmup"},
                                                       {"optim:beta=1", "optim.beta"},
                                                       {"set_weight:tv=x", "tv"}};
  for (const auto& [mod, needle] : cases) {
    try {
      ablation_variants(toy(), *inst, "neural", {mod}, false);
      ADD_FAILURE() << mod << " accepted";
    } catch (const fk::Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << mod << ": " << e.what();
    }
  }
  EXPECT_THROW(ablation_variants(toy(), *inst, "admm", {"no_pe"}, false), fk::Error);
  EXPECT_THROW(ablation_variants(toy(), *inst, "neural", {}, false), fk::Error);
  EXPECT_THROW(ablation_variants(toy(), *inst, "neural", {"no_pe", "no_pe"}, false), fk::Error);
}

// no_gate: the reference's ablation of NV's gated rho head. The plain head
// reads one trunk output where the gated one reads two (value and gate), so
// the field loses exactly one output unit: its weights from the last hidden
// layer and its bias.
TEST(BenchVariants, NoGateTakesNvsPlainSoftplusHead) {
  const auto inst = nefi::find_instance("nv_relaxometry");
  nefi::RunConfig nv = nefi::default_run_config("nv_relaxometry");
  const auto v = ablation_variants(nv, *inst, "neural", {"no_gate"}, false);
  ASSERT_EQ(labels(v), (std::vector<std::string>{"full", "-gate"}));
  EXPECT_EQ(v[1].sets, (std::vector<std::string>{"gate=false"}));
  const int64_t gated = inst->setup(nv.config, "neural", 0)->problem.field->n_parameters();
  nefi::apply_set(nv, "gate=false");
  const int64_t plain = inst->setup(nv.config, "neural", 0)->problem.field->n_parameters();
  EXPECT_EQ(gated - plain, nv.config.i("hidden") + 1);
}

TEST(BenchVariants, SweepAxes) {
  const auto lr = sweep_variants(toy(), "neural", "lr", {"1e-3", "1e-2"});
  EXPECT_EQ(labels(lr), (std::vector<std::string>{"lr=1e-3", "lr=1e-2"}));
  EXPECT_EQ(lr[1].sets, (std::vector<std::string>{"lr=1e-2"}));
  EXPECT_EQ(sweep_variants(toy(), "neural", "weight.tv", {"0"})[0].sets,
            (std::vector<std::string>{"tv=0"}));
  EXPECT_EQ(sweep_variants(toy(), "neural", "stage.anneal_fraction", {"0.5"})[0].label,
            "stage.anneal_fraction=0.5");
  EXPECT_THROW(sweep_variants(toy(), "neural", "bogus", {"1"}), fk::Error);
  EXPECT_THROW(sweep_variants(toy(), "neural", "weight.hidden", {"1"}), fk::Error);
  EXPECT_THROW(sweep_variants(toy(), "neural", "lr", {"fast"}), fk::Error);
  EXPECT_THROW(sweep_variants(toy(), "neural", "lr", {}), fk::Error);
  EXPECT_THROW(sweep_variants(toy(), "neural", "lr", {"1", "1"}), fk::Error);
}

TEST(BenchVariants, FullRowsAreThePlainCampaign) {
  CampaignSpec spec;
  spec.target = config_path("toy1d_smoke.yaml");
  spec.classes = {"bumps"};
  spec.n_samples = 1;
  spec.seeds = {0, 1};
  spec.budget_scale = 0.05;
  const auto inst = nefi::find_instance("toy1d");
  const auto vars = ablation_variants(toy(), *inst, "neural", {"drop_loss:tv", "no_pe"}, true);
  CampaignOptions co;
  co.warmup = false;
  const VariantCampaign vc = run_variants(spec, vars, co);
  EXPECT_EQ(vc.protocol.methods, (std::vector<std::string>{"full", "-tv", "-pe"}));
  // Each row's regime is its base method's (the inverse-crime tags by label).
  for (const auto& [label, regime] : vc.protocol.regimes())
    EXPECT_EQ(regime, "cross-fidelity") << label;
  ASSERT_EQ(vc.rows.size(), 6u);
  CampaignSpec plain = spec;
  plain.methods = {"neural"};
  const auto rows = run_campaign(*inst, make_protocol(plain), co);
  ASSERT_EQ(rows.size(), 2u);
  // Canonical order: unit (seed) inside method inside (class, sample).
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(vc.rows[i].method, "full");
    EXPECT_EQ(vc.rows[i].metrics, rows[i].metrics) << i;
    EXPECT_EQ(vc.rows[i].unit, rows[i].unit);
    EXPECT_EQ(vc.rows[2 + i].method, "-tv");
    EXPECT_EQ(vc.rows[2 + i].unit, rows[i].unit);
    EXPECT_EQ(vc.rows[4 + i].method, "-pe");
    EXPECT_NE(vc.rows[4 + i].metrics.at("psnr"), rows[i].metrics.at("psnr"));
    EXPECT_NE(vc.rows[4 + i].n_params, rows[i].n_params);  // no Fourier features: a narrower input
  }
  const std::string md = variants_md(vars, "t");
  EXPECT_NE(md.find("| -pe | neural | `n_octaves=0` |"), std::string::npos) << md;
}

}  // namespace
