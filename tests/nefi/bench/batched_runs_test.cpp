// --batched campaigns: neural and grid rows solved by batch_invert against
// the same campaign run sequentially (the reference), a direct method's
// refusal, the batch size recorded in the rows and their JSON, and
// --batch-device: what a device batch refuses runs sequentially, and a device
// this process cannot use is refused before any work.
#include "nefi/bench/batched_runs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "fk/cuda/runtime.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "nefi/bench/json_io.h"
#include "nefi/instances/instance.h"
#include "nefi/test_files.h"

namespace {

using namespace nefi::bench;

CampaignSpec spec() {
  CampaignSpec s;
  s.target = nefi::test::config_path("toy1d_smoke.yaml");
  s.classes = {"bumps", "spikes"};
  s.n_samples = 2;
  s.seeds = {0, 1};
  s.budget_scale = 0.1;
  return s;
}

TEST(BenchBatched, NeuralAndGridRowsMatchTheSequentialCampaign) {
  const Protocol p = make_protocol(spec());
  const nefi::InstancePtr inst = nefi::find_instance(p.instance);
  CampaignOptions seq;
  seq.warmup = false;
  const std::vector<Row> a = run_campaign(*inst, p, seq);
  CampaignOptions bat = seq;
  bat.batch_size = 3;  // 8 units: batches of 3, 3 and 2
  std::vector<std::string> log;
  bat.on_log = [&log](const std::string& s) { log.push_back(s); };
  const std::vector<Row> b = run_campaign(*inst, p, bat);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_TRUE(log.empty()) << log[0];  // neural and grid both batch: no fallback
  int batched = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    SCOPED_TRACE(a[i].method + " unit " + std::to_string(a[i].unit));
    EXPECT_EQ(a[i].unit, b[i].unit);
    EXPECT_EQ(a[i].method, b[i].method);
    EXPECT_EQ(a[i].error, "");
    EXPECT_EQ(b[i].error, "");
    EXPECT_EQ(a[i].steps, b[i].steps);
    EXPECT_EQ(a[i].stop, b[i].stop);
    EXPECT_EQ(a[i].batch_size, 1);
    ASSERT_EQ(a[i].metrics.size(), b[i].metrics.size());
    for (const auto& [k, v] : a[i].metrics)
      EXPECT_NEAR(v, b[i].metrics.at(k), 1e-5 * (1 + std::abs(v))) << k;
    EXPECT_NEAR(a[i].final_data_loss, b[i].final_data_loss, 1e-5);
    ++batched;
    EXPECT_EQ(b[i].batch_size, b[i].unit < 6 ? 3 : 2);
  }
  EXPECT_EQ(batched, 16);
  // The batch size survives the shard file's JSON.
  const Row back = row_from_json(to_json(b.front()), "test");
  EXPECT_EQ(back.batch_size, b.front().batch_size);
}

// nv_relaxometry's medium/far scene cannot place its sources for some data
// seeds: such a unit fails at setup. In a batch it becomes the same failed
// row as in the sequential campaign, and the batch's other units are solved.
TEST(BenchBatched, AUnitWhoseSetupFailsIsAFailedRowAndTheBatchGoesOn) {
  CampaignSpec s;
  s.target = nefi::test::config_path("nv_relaxometry_smoke.yaml");
  s.classes = {"few/close", "medium/far"};
  s.n_samples = 2;
  s.seeds = {0};
  s.budget_scale = 0.02;
  const Protocol p = make_protocol(s);
  const nefi::InstancePtr inst = nefi::find_instance(p.instance);
  CampaignOptions seq;
  seq.warmup = false;
  const std::vector<Row> a = run_campaign(*inst, p, seq);
  CampaignOptions bat = seq;
  bat.batch_size = 2;  // a batch per class: medium/far's may have no unit left
  const std::vector<Row> b = run_campaign(*inst, p, bat);
  ASSERT_EQ(a.size(), b.size());
  int failed = 0, solved = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    SCOPED_TRACE("unit " + std::to_string(a[i].unit));
    EXPECT_EQ(a[i].stop, b[i].stop);
    EXPECT_EQ(a[i].error, b[i].error);
    failed += a[i].stop == "failed";
    solved += b[i].error.empty();
    // A batched row holds every metric the sequential one does (larmor_mae
    // included: evaluate redraws the sources from the data seed).
    ASSERT_EQ(b[i].metrics.size(), a[i].metrics.size());
    for (const auto& [k, v] : a[i].metrics)
      EXPECT_NEAR(b[i].metrics.at(k), v, 1e-5 * (1 + std::abs(v))) << k;
  }
  EXPECT_GT(failed, 0);
  EXPECT_GT(solved, 0);
  for (const Row& r : b) EXPECT_NO_THROW(row_from_json(to_json(r), "test"));  // batch_size >= 1
}

// toy1d, but the unit of data seed `odd` has an all-zero mask: its loss
// check refuses it, so batch_invert refuses its whole batch.
class OneUnmaskedUnit : public nefi::Instance {
 public:
  OneUnmaskedUnit(nefi::InstancePtr inner, uint64_t odd) : in_(std::move(inner)), odd_(odd) {}
  std::string name() const override { return in_->name(); }
  std::string summary() const override { return in_->summary(); }
  nefi::Params default_config() const override { return in_->default_config(); }
  std::vector<std::string> methods() const override { return in_->methods(); }
  std::vector<std::string> scenes() const override { return in_->scenes(); }
  nefi::DataLabels data_labels(const nefi::Params& c) const override { return in_->data_labels(c); }
  std::pair<nefi::Measurement, fk::Tensor> make_measurement(const nefi::Params& c,
                                                            uint64_t seed) const override {
    return in_->make_measurement(c, seed);
  }
  nefi::RunOutput run(const nefi::Params& c, const std::string& m, uint64_t seed,
                      const nefi::SolverOptions& so) const override {
    return in_->run(c, m, seed, so);
  }
  std::optional<nefi::ProblemSetup> setup_from(const nefi::Params& c, const std::string& m,
                                               uint64_t seed,
                                               const nefi::Measurement* measured) const override {
    auto s = in_->setup_from(c, m, seed, measured);
    if (s && seed == odd_) {
      s->problem.measurement.mask = fk::zeros_like(s->problem.measurement.data);
      s->measurement.mask = s->problem.measurement.mask;
    }
    return s;
  }
  std::map<std::string, double> evaluate(const nefi::Params& c,
                                         const nefi::RunOutput& o) const override {
    return in_->evaluate(c, o);
  }

 private:
  nefi::InstancePtr in_;
  uint64_t odd_;
};

// A batch refused as a whole for one member fails that member only: the
// others are solved alone, each the row its sequential run gives (they were
// all failed rows with the one member's error).
TEST(BenchBatched, AMemberThatSinksItsBatchFailsAlone) {
  const Protocol p = make_protocol(spec());
  const nefi::Params params = protocol_params(*nefi::find_instance(p.instance), p);
  // Units 0 and 2 share a measurement (a sample's seeds do), unit 1 has another.
  const std::vector<Unit> all = units(p);
  std::vector<Unit> us{all[0]};
  for (const Unit& u : all)
    if (u.data_seed != all[0].data_seed) {
      us.push_back(u);
      break;
    }
  for (size_t i = 1; i < all.size() && us.size() < 3; ++i)
    if (all[i].data_seed == all[0].data_seed) us.push_back(all[i]);
  ASSERT_EQ(us.size(), 3u);
  const OneUnmaskedUnit inst(nefi::find_instance(p.instance), us[1].data_seed);
  const auto rows = run_batched(inst, params, us, "grid", p, 3);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows.at(us[1].index).row.stop, "failed");
  EXPECT_NE(rows.at(us[1].index).row.error.find("an all-zero mask"), std::string::npos)
      << rows.at(us[1].index).row.error;
  const auto alone = run_batched(inst, params, {us[0]}, "grid", p, 1);
  for (const size_t k : {size_t{0}, size_t{2}}) {
    const Row& r = rows.at(us[k].index).row;
    EXPECT_EQ(r.error, "") << k;
    EXPECT_EQ(r.batch_size, 1) << k;  // solved alone
  }
  const Row &a = alone.at(us[0].index).row, &b = rows.at(us[0].index).row;
  for (const auto& [k, v] : a.metrics) EXPECT_EQ(v, b.metrics.at(k)) << k;
}

TEST(BenchBatched, DirectMethodsAreNotBatched) {
  CampaignSpec s;
  s.target = nefi::test::config_path("deconvolution_smoke.yaml");
  s.classes = {"phantom"};
  s.n_samples = 1;
  s.seeds = {0};
  const Protocol p = make_protocol(s);
  const nefi::InstancePtr inst = nefi::find_instance(p.instance);
  const auto reason =
      batched_method_reason(*inst, p, protocol_params(*inst, p), "wiener", units(p));
  ASSERT_TRUE(reason.has_value());
  EXPECT_NE(reason->find("direct method"), std::string::npos);
  EXPECT_FALSE(batched_method_reason(*inst, p, protocol_params(*inst, p), "neural", units(p)));
}

// The protocol's curriculum overrides go to the instance's own solver only:
// restarts (which batch_invert refuses) make neural run sequentially, with
// no failed rows, while the grid baseline keeps its own curriculum and
// batches.
TEST(BenchBatched, OverridesReachTheOwnSolverAndItFallsBackToSequentialRuns) {
  CampaignSpec s = spec();
  s.sets = {"curriculum.restarts=2"};
  s.max_total_steps = 0;
  const Protocol p = make_protocol(s);
  const nefi::InstancePtr inst = nefi::find_instance(p.instance);
  const nefi::Params params = protocol_params(*inst, p);
  const auto neural = batched_method_reason(*inst, p, params, "neural", units(p));
  ASSERT_TRUE(neural.has_value());
  EXPECT_NE(neural->find("restart"), std::string::npos) << *neural;
  EXPECT_FALSE(batched_method_reason(*inst, p, params, "grid", units(p)));
  EXPECT_EQ(campaign_curriculum(*inst, p, "grid", nefi::Curriculum{}).restarts, 1);
  EXPECT_EQ(campaign_curriculum(*inst, p, "neural", nefi::Curriculum{}).restarts, 2);
  CampaignOptions bat;
  bat.batch_size = 4;
  for (const Row& r : run_campaign(*inst, p, bat)) {
    EXPECT_EQ(r.error, "") << r.method;
    EXPECT_EQ(r.batch_size, r.method == "grid" ? 4 : 1) << r.method;
  }
}

// A pure check (no device needed): grid and neural fields both batch on a
// device, as on the CPU.
TEST(BenchBatched, ADeviceBatchTakesGridAndNeuralFields) {
  const Protocol p = make_protocol(spec());
  const nefi::InstancePtr inst = nefi::find_instance(p.instance);
  const nefi::Params params = protocol_params(*inst, p);
  for (const char* method : {"grid", "neural"}) {
    EXPECT_FALSE(batched_method_reason(*inst, p, params, method, units(p))) << method;
    EXPECT_FALSE(batched_method_reason(*inst, p, params, method, units(p), fk::cuda_device(0)))
        << method;
  }
}

TEST(BenchBatched, AnUnusableBatchDeviceIsRefusedBeforeAnyWork) {
  const Protocol p = make_protocol(spec());
  const nefi::InstancePtr inst = nefi::find_instance(p.instance);
  CampaignOptions bat;
  bat.batch_size = 2;
  bat.batch_device = fk::cuda_device(fk::cuda::device_count());
  int progress_calls = 0;
  bat.on_progress = [&progress_calls](const Progress&) { ++progress_calls; };
  try {
    run_campaign(*inst, p, bat);
    FAIL() << "no error";
  } catch (const fk::Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("--batch-device"), std::string::npos) << what;
    EXPECT_NE(what.find("expected cpu"), std::string::npos) << what;
    EXPECT_NE(what.find(bat.batch_device.str()), std::string::npos) << what;
  }
  EXPECT_EQ(progress_calls, 0);
}

}  // namespace
