// Ablation and sweep variants: the modifier grammar turned into --set
// assignments (cumulative and independent), every bad modifier, key or value
// refused before anything runs, and a variant campaign whose `full` rows are
// the plain campaign's rows and whose variant rows really differ.
#include "nefi/bench/variants.h"

#include <gtest/gtest.h>

#include "fk/error.h"
#include "nefi/bench/merge.h"
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
                                                       {"set_weight:tv=x", "tv"},
                                                       // already off: a no-op row
                                                       {"drop_loss:l1", "'l1' at 0 already"}};
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
  // A stage or optimizer setting reaches the neural method alone: on grid
  // every row would be the base row.
  for (const char* axis : {"stage.anneal_fraction", "optim.grad_clip"}) {
    try {
      sweep_variants(toy(), "grid", axis, {"0.5", "1"});
      ADD_FAILURE() << axis << " accepted on grid";
    } catch (const fk::Error& e) {
      EXPECT_NE(std::string(e.what()).find("reach only neural"), std::string::npos) << e.what();
    }
  }
  const auto inst = nefi::find_instance("toy1d");
  EXPECT_THROW(
      ablation_variants(toy(), *inst, "neural", {"grid_field", "optim:grad_clip=0"}, false),
      fk::Error);
}

// --values and --variants: commas outside brackets split, a list value is
// one item, items are trimmed, and an empty item or an open bracket is named.
TEST(BenchVariants, ListsSplitAtTopLevelCommas) {
  using V = std::vector<std::string>;
  EXPECT_EQ(split_list("[10, 20]", "--values"), V{"[10, 20]"});
  EXPECT_EQ(split_list("[10,20],[20, 40]", "--values"), (V{"[10,20]", "[20, 40]"}));
  EXPECT_EQ(split_list("1e-3, 1e-2", "--values"), (V{"1e-3", "1e-2"}));
  EXPECT_EQ(split_list("{field.out: 0.1, field.layer: 2},{field.out: 1}", "--values"),
            (V{"{field.out: 0.1, field.layer: 2}", "{field.out: 1}"}));
  EXPECT_EQ(split_list("set:steps=[10, 20],no_pe\ndrop_loss:tv", "--variants"),
            (V{"set:steps=[10, 20]", "no_pe", "drop_loss:tv"}));
  for (const char* bad : {"a,,b", "", "[1, 2", "a,"}) {
    try {
      split_list(bad, "--values");
      ADD_FAILURE() << "'" << bad << "' accepted";
    } catch (const fk::Error& e) {
      EXPECT_EQ(std::string(e.what()).rfind("--values: expected", 0), 0u) << e.what();
    }
  }
  // A list-valued sweep: one row per schedule.
  const auto steps = sweep_variants(toy(), "neural", "steps", split_list("[10, 20],[20, 40]", "v"));
  EXPECT_EQ(labels(steps), (V{"steps=[10, 20]", "steps=[20, 40]"}));
  // One list written twice is one value.
  EXPECT_THROW(sweep_variants(toy(), "neural", "steps", {"[10, 20]", "[10,20]"}), fk::Error);
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
  // The protocol holds the campaign's config and what each row applies over
  // it (it once held the first row's config for every row).
  using V = std::vector<std::string>;
  EXPECT_EQ(vc.protocol.variants, (std::map<std::string, V>{{"full", {"neural"}},
                                                            {"-tv", {"neural", "tv=0"}},
                                                            {"-pe", {"neural", "n_octaves=0"}}}));
  // Each row's regime is its base method's (the inverse-crime tags by label).
  for (const auto& [label, regime] : vc.protocol.regimes())
    EXPECT_EQ(regime, "cross-fidelity") << label;
  ASSERT_EQ(vc.rows.size(), 6u);
  CampaignSpec plain = spec;
  plain.methods = {"neural"};
  const auto rows = run_campaign(*inst, make_protocol(plain), co);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(vc.protocol.config, make_protocol(plain).config);
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
  // Shards whose rows apply other settings under one label do not merge
  // (a cumulative and an independent ablation share their labels).
  ShardFile a{vc.protocol, {0, 2}, {}}, b{vc.protocol, {1, 2}, {}};
  b.protocol.variants["-pe"] = {"neural", "tv=0", "n_octaves=0"};
  try {
    merge_shard_files({a, b}, false);
    ADD_FAILURE() << "shards of two ablations merged";
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("shards from one protocol"), std::string::npos)
        << e.what();
  }
  const std::string md = variants_md(vars, "t");
  EXPECT_NE(md.find("| -pe | neural | `n_octaves=0` |"), std::string::npos) << md;
}

}  // namespace
