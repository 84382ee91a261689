// A config file's `curriculum: {stages: [...]}` (the reference's layout A):
// the stages read back from the text config.yaml and a bench protocol keep,
// bad stages are one-line errors naming the stage and key, and a run solves
// exactly the stages given (the instance's own replaced, baselines kept).
#include "nefi/io/curriculum_stages.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "fk/error.h"
#include "fk/test_util.h"
#include "nefi/bench/campaign.h"
#include "nefi/bench/json_io.h"
#include "nefi/instances/instance.h"
#include "nefi/io/run_config.h"
#include "nefi/test_files.h"

namespace {

namespace fs = std::filesystem;
using fk::test::error_of;

TEST(NefiCurriculumStages, StagesReadBackFromTheirText) {
  const auto st = nefi::stages_from_yaml(
      "[{name: coarse, shape: [32], steps: 5, lr: 0.003, warmup_steps: 2}, "
      "{steps: 7, lr_schedule: constant, anneal: false, loss_weights: {tv: 0.5}, "
      "freeze: [field.out]}]",
      "curriculum.stages");
  ASSERT_EQ(st.size(), 2u);
  EXPECT_EQ(st[0].name, "coarse");
  EXPECT_EQ(st[0].shape, fk::Dims({32}));
  EXPECT_EQ(st[0].lr_warmup, 2);
  EXPECT_EQ(st[1].shape, fk::Dims{});  // the domain's
  EXPECT_EQ(st[1].lr_schedule, "constant");
  EXPECT_FALSE(st[1].anneal);
  EXPECT_EQ(st[1].loss_weights.at("tv"), 0.5);
  EXPECT_EQ(st[1].freeze, std::vector<std::string>{"field.out"});
  const auto back = nefi::stages_from_yaml(nefi::stages_yaml(st), "x");
  ASSERT_EQ(back.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(back[i].name, st[i].name);
    EXPECT_EQ(back[i].shape, st[i].shape);
    EXPECT_EQ(back[i].steps, st[i].steps);
    EXPECT_EQ(back[i].lr, st[i].lr);
    EXPECT_EQ(back[i].lr_schedule, st[i].lr_schedule);
    EXPECT_EQ(back[i].lr_warmup, st[i].lr_warmup);
    EXPECT_EQ(back[i].anneal, st[i].anneal);
    EXPECT_EQ(back[i].anneal_fraction, st[i].anneal_fraction);
    EXPECT_EQ(back[i].loss_weights, st[i].loss_weights);
    EXPECT_EQ(back[i].freeze, st[i].freeze);
  }
}

TEST(NefiCurriculumStages, BadStagesNameTheStageAndKey) {
  const std::pair<const char*, const char*> cases[] = {
      {"[]", "at least one stage"},
      {"{steps: 5}", "a list of at least one stage"},
      {"[{steps: 5}, {stepz: 5}]", "unknown key 'stepz'"},
      {"[{steps: five}]", "curriculum.stages[0].steps"},
      {"[{steps: 0}]", "curriculum.stages[0]"},
      {"[{steps: 5}, 7]", "curriculum.stages[1]"}};
  for (const auto& [text, needle] : cases) {
    const std::string e = error_of([&] { nefi::stages_from_yaml(text, "curriculum.stages"); });
    EXPECT_NE(e.find(needle), std::string::npos) << text << ": " << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
}

TEST(NefiCurriculumStages, ARunSolvesTheStagesGiven) {
  const fs::path f = nefi::test::scratch() / "layout_a_stages.yaml";
  std::ofstream(f) << "instance: toy1d\nconfig:\n  n: 32\ncurriculum:\n  stages:\n"
                      "    - {name: coarse, shape: [16], steps: 4, lr: 0.003}\n"
                      "    - {name: fine, steps: 6, lr: 0.001}\n  restarts: 1\n";
  const nefi::RunConfig c = nefi::load_run_config_file(f.string());
  ASSERT_TRUE(c.curriculum.stages.has_value());
  const nefi::InstancePtr inst = nefi::find_instance("toy1d");
  const nefi::RunOutput out = inst->run(c.config, "neural", 0, nefi::solver_options(c));
  ASSERT_EQ(out.result.stages.size(), 2u);
  EXPECT_EQ(out.result.stages[0].steps, 4);
  EXPECT_EQ(out.result.stages[1].steps, 6);
  EXPECT_EQ(out.curriculum.stages[0].shape, fk::Dims({16}));
  EXPECT_EQ(out.curriculum.stages[1].name, "fine");
  // config.yaml writes them back: the same overrides and hash.
  const fs::path again = nefi::test::scratch() / "layout_a_stages_again.yaml";
  std::ofstream(again) << nefi::to_yaml(c);
  const nefi::RunConfig back = nefi::load_run_config_file(again.string());
  EXPECT_EQ(nefi::config_hash(back), nefi::config_hash(c));
  EXPECT_NE(nefi::config_hash(c), nefi::config_hash(nefi::default_run_config("toy1d")));
  // A bench protocol keeps them (with lr_mult and freeze) through its JSON.
  nefi::CurriculumOverrides o = c.curriculum;
  o.lr_mult = std::map<std::string, double>{{"field.out", 0.5}};
  o.freeze = std::vector<std::vector<std::string>>{{"field.out"}, {}};
  nefi::bench::Protocol p;
  p.instance = "toy1d";
  p.methods = {"neural"};
  p.classes = {"bumps"};
  p.curriculum = o;
  const nefi::bench::Protocol q = nefi::bench::protocol_from_json(nefi::bench::to_json(p), "test");
  ASSERT_TRUE(q.curriculum.stages.has_value());
  EXPECT_EQ(nefi::stages_yaml(*q.curriculum.stages), nefi::stages_yaml(*o.stages));
  EXPECT_EQ(q.curriculum.lr_mult, o.lr_mult);
  EXPECT_EQ(q.curriculum.freeze, o.freeze);
  // A bad stage in a file: one line naming the file's section and the key.
  std::ofstream(f) << "instance: toy1d\ncurriculum:\n  stages: [{steps: 0}]\n";
  const std::string e = error_of([&] { nefi::load_run_config_file(f.string()); });
  EXPECT_NE(e.find("stages[0]"), std::string::npos) << e;
}

}  // namespace
