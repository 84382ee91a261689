// batch_invert on the instances whose operators are declared batchable (the
// catalogue's "yes" rows), each on its smoke config cut to a few steps, and
// on the variants that change the operator (Rytov, an NV-projected field
// component), the field (grid baselines with zero_mean / support_masked
// heads) or its precision (bf16 autocast): the batch equals two sequential
// solves (seeds 0 and 1) per step to 1e-5 (history rows, stop reasons,
// final fields), or is refused with batchable_reason's message, which must
// name why (the test pins the expected reason word). And a batched bench
// row (nefi bench --batched) reports every metric the sequential run() of
// its problem does, to 1e-6: after_solve's stage (the 3-D refinement) and
// the scores evaluate() redraws from the data seed (source counts, Larmor
// errors, the noiseless field) included.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "fk/thread_count.h"
#include "nefi/bench/batched_runs.h"
#include "nefi/instances/instance.h"
#include "nefi/io/run_config.h"
#include "nefi/operators/catalogue.h"
#include "nefi/solve/batch.h"
#include "nefi/solve/solver.h"
#include "nefi/test_files.h"

namespace {

struct Case {
  std::string name;  // the test's name
  std::string instance;
  std::vector<std::pair<std::string, std::string>> set = {};  // config overrides
  std::string method = "neural";
  std::string refusal = "";  // empty: batchable; else a word the reason must contain
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name;
}

struct Smoke {
  std::vector<nefi::InverseProblem> problems;
  nefi::Curriculum curriculum;
};

// The smoke problems of seeds 0 and 1, every stage cut to 3 steps (two stages
// at most, so a stage change with its new grid and loss weights is covered).
Smoke smoke(const Case& k) {
  nefi::RunConfig c =
      nefi::load_run_config_file(nefi::test::config_path(k.instance + "_smoke.yaml"));
  for (const auto& [key, value] : k.set) c.config.set(key, value);
  const auto inst = nefi::find_instance(k.instance);
  Smoke s;
  for (uint64_t seed : {0, 1}) {
    auto su = inst->setup(c.config, k.method, seed);
    EXPECT_TRUE(su.has_value()) << k.name;
    s.problems.push_back(su->problem);
    s.curriculum = su->curriculum;
  }
  if (s.curriculum.stages.size() > 2) s.curriculum.stages.resize(2);
  for (auto& st : s.curriculum.stages) st.steps = 3;
  s.curriculum.time_budget_s.reset();
  return s;
}

class NefiBatchInstance : public testing::TestWithParam<Case> {};

TEST_P(NefiBatchInstance, EqualsSequentialOrIsRefusedWithItsReason) {
  const fk::test::ThreadCount one_thread(1);
  const Case& k = GetParam();
  Smoke s = smoke(k);
  const auto why = nefi::batchable_reason(s.problems, s.curriculum);
  if (!k.refusal.empty()) {
    ASSERT_TRUE(why.has_value()) << k.instance << " was expected to be refused";
    EXPECT_NE(why->find(k.refusal), std::string::npos) << *why;
    try {
      nefi::batch_invert(s.problems, s.curriculum);
      FAIL() << k.instance;
    } catch (const fk::Error& e) {
      EXPECT_NE(std::string(e.what()).find(*why), std::string::npos) << e.what();
    }
    return;
  }
  ASSERT_FALSE(why.has_value()) << *why;
  std::vector<nefi::Result> seq;
  for (uint64_t b = 0; b < 2; ++b) {
    nefi::SolverOptions so;
    so.seed = b;
    seq.push_back(nefi::Solver(s.problems[b], s.curriculum, so).run());
  }
  Smoke fresh = smoke(k);
  nefi::BatchOptions bo;
  bo.seeds = {0, 1};
  const auto bat = nefi::batch_invert(fresh.problems, s.curriculum, bo);
  ASSERT_EQ(bat.size(), 2u);
  for (size_t b = 0; b < 2; ++b) {
    SCOPED_TRACE(k.name + " problem " + std::to_string(b));
    ASSERT_EQ(seq[b].stages.size(), bat[b].stages.size());
    for (size_t i = 0; i < seq[b].stages.size(); ++i)
      EXPECT_EQ(seq[b].stages[i].stop, bat[b].stages[i].stop) << "stage " << i;
    ASSERT_EQ(seq[b].history.rows.size(), bat[b].history.rows.size());
    for (size_t r = 0; r < seq[b].history.rows.size(); ++r) {
      const auto& x = seq[b].history.rows[r];
      const auto& y = bat[b].history.rows[r];
      ASSERT_EQ(x.size(), y.size());
      for (size_t j = 0; j < x.size(); ++j)
        EXPECT_NEAR(x[j], y[j], 1e-5 * std::max(1.0, std::abs(x[j])))
            << "row " << r << " col " << j;
    }
    for (const auto& [name, f] : seq[b].fields) {
      const auto u = f.to_vector<double>(), v = bat[b].fields.at(name).to_vector<double>();
      ASSERT_EQ(u.size(), v.size());
      double d = 0, scale = 1;
      for (size_t i = 0; i < u.size(); ++i) {
        d = std::max(d, std::abs(u[i] - v[i]));
        scale = std::max(scale, std::abs(u[i]));
      }
      EXPECT_LE(d, 1e-5 * scale) << name;
    }
  }
}

// The case's smoke config, its refinement (if any) cut to 5 steps.
nefi::Params smoke_params(const Case& k) {
  nefi::RunConfig c =
      nefi::load_run_config_file(nefi::test::config_path(k.instance + "_smoke.yaml"));
  for (const auto& [key, value] : k.set) c.config.set(key, value);
  if (c.config.has("refine_steps")) c.config.set("refine_steps", "5");
  return c.config;
}

TEST_P(NefiBatchInstance, BatchedBenchRowHasTheSequentialRunsMetrics) {
  const fk::test::ThreadCount one_thread(1);
  const Case& k = GetParam();
  if (!k.refusal.empty()) GTEST_SKIP() << "not batchable";
  const nefi::Params p = smoke_params(k);
  const auto inst = nefi::find_instance(k.instance);
  nefi::bench::Protocol proto;
  proto.max_total_steps = 6;
  std::vector<nefi::bench::Unit> units;
  for (uint64_t s : {0, 1})
    units.push_back({static_cast<int64_t>(s), p.has("scene") ? p.s("scene") : "", 0, s, s});
  const auto rows = nefi::bench::run_batched(*inst, p, units, k.method, proto, 2);
  const nefi::bench::Row& bat = rows.at(1).row;
  ASSERT_EQ(bat.error, "");
  ASSERT_EQ(bat.batch_size, 2);
  nefi::SolverOptions so;
  so.seed = 1;
  so.init_seed = 1;
  so.max_total_steps = 6;
  const nefi::RunOutput seq = inst->run(p, k.method, 1, so);
  std::vector<std::string> seq_keys, bat_keys;
  for (const auto& [key, v] : seq.metrics) seq_keys.push_back(key);
  for (const auto& [key, v] : bat.metrics) bat_keys.push_back(key);
  ASSERT_EQ(seq_keys, bat_keys);
  for (const auto& [key, v] : seq.metrics)
    EXPECT_NEAR(bat.metrics.at(key), v, 1e-6 * std::max(1.0, std::abs(v))) << key;
}

const std::vector<Case>& cases() {
  static const std::vector<Case> all{
      Case{"toy1d", "toy1d"},
      Case{"deconvolution", "deconvolution"},
      Case{"poisson_source", "poisson_source"},
      Case{"holography", "holography"},
      Case{"holography_grid", "holography", {}, "grid"},
      Case{"current_density", "current_density"},
      Case{"current_density_nv",
           "current_density",
           {{"component", "nv"}, {"nv_axis", "[0.5, 0, 0.866]"}}},
      Case{"nv_relaxometry", "nv_relaxometry"},
      Case{"nv_relaxometry_grid", "nv_relaxometry", {}, "grid"},
      Case{"sparse_view_ct", "sparse_view_ct"},
      Case{"ct3d", "ct3d", {{"n_z", "8"}}},
      Case{"deconvolution3d", "deconvolution3d", {{"n_z", "8"}}},
      Case{"diffraction_tomography", "diffraction_tomography"},
      Case{"diffraction_tomography_rytov", "diffraction_tomography", {{"rytov", "true"}}},
      Case{"deconvolution_bf16", "deconvolution", {{"autocast", "bf16"}}},
      Case{"sparse_view_ct_bf16", "sparse_view_ct", {{"autocast", "bf16"}}},
      Case{"poisson_source_bf16", "poisson_source", {{"autocast", "bf16"}}},
      Case{"deconvolution_fp16", "deconvolution", {{"autocast", "fp16"}}, "neural", "f16"}};
  return all;
}

INSTANTIATE_TEST_SUITE_P(Catalogue, NefiBatchInstance, testing::ValuesIn(cases()),
                         [](const testing::TestParamInfo<Case>& i) { return i.param.name; });

// Every instance of an operator the catalogue marks batchable (its rows are
// held to the real operators by catalogue_test) has a case above, so an
// instance added later cannot skip this check.
TEST(NefiBatchInstanceList, CoversEveryCatalogueBatchableInstance) {
  for (const nefi::OperatorInfo& op : nefi::operator_catalogue()) {
    if (op.batchable != "yes") continue;
    for (const std::string& inst : op.instances) {
      const bool listed = std::any_of(cases().begin(), cases().end(), [&](const Case& c) {
        return c.instance == inst && c.refusal.empty();
      });
      EXPECT_TRUE(listed) << inst << " (operator " << op.kind << ")";
    }
  }
}

}  // namespace
