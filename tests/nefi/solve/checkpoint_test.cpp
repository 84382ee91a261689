#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <stdexcept>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "nefi/field/grid_field.h"
#include "nefi/field/neural_field.h"
#include "nefi/losses/data_losses.h"
#include "nefi/operators/pointwise.h"
#include "nefi/solve/checkpoint.h"
#include "nefi/solve/solver.h"
#include "scratch_dir.h"

namespace {

namespace fs = std::filesystem;

fs::path temp_path(const std::string& name) {
  return fieldkit_test::scratch_dir() / name;
}

// A two-stage neural-field fit through the identity: small, but it exercises
// the multiscale curriculum, annealing and Adam's moments.
nefi::InverseProblem problem(std::optional<fk::DType> autocast = std::nullopt) {
  nefi::InverseProblem p;
  p.domain = nefi::Domain({16});
  nefi::NeuralFieldConfig cfg;
  cfg.hidden = 8;
  cfg.depth = 2;
  cfg.n_octaves = 3;
  cfg.autocast = autocast;
  p.field = std::make_shared<nefi::NeuralField>(
      1, std::vector<nefi::HeadPtr>{nefi::identity_head("x")}, cfg);
  p.op = std::make_shared<nefi::IdentityOperator>();
  p.losses.add(nefi::mse_loss(), 1.0);
  std::vector<double> y;
  for (int i = 0; i < 16; ++i) y.push_back(std::sin(0.4 * i));
  p.measurement.data = fk::from_vector(y).to(fk::DType::F32);
  return p;
}

nefi::Curriculum curriculum() {
  return nefi::Curriculum::multiscale({16}, {12, 18}, 1e-2, 0.5, 8);
}

TEST(NefiCheckpoint, ResumedRunFinishesBitIdentical) {
  const nefi::Result full = nefi::Solver(problem(), curriculum()).run();

  // Stop after global step 16 (stage 1, step 3) with a checkpoint every 8 steps.
  const fs::path ck = temp_path("resume.ckpt");
  nefi::SolverOptions first;
  first.checkpoint_path = ck.string();
  first.checkpoint_interval = 8;
  first.callbacks.push_back([](const nefi::StepInfo& s) { return s.global_step < 16; });
  nefi::Solver(problem(), curriculum(), first).run();
  const nefi::Checkpoint saved = nefi::load_checkpoint(ck.string());
  EXPECT_EQ(saved.stage, 1);
  EXPECT_EQ(saved.step, 3);
  EXPECT_EQ(saved.global_step, 16);
  EXPECT_EQ(saved.field_kind, "neural");
  EXPECT_EQ(saved.adam_steps, 4);

  nefi::SolverOptions second;
  second.resume_from = ck.string();
  const nefi::Result resumed = nefi::Solver(problem(), curriculum(), second).run();
  const auto a = full.fields.at("x").to_vector<double>();
  const auto b = resumed.fields.at("x").to_vector<double>();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i], b[i]) << i;
  // The resumed run reports the whole run: every history row (the ones
  // before the checkpoint from it) and every stage with its full step count.
  EXPECT_EQ(full.history.rows, resumed.history.rows);
  ASSERT_EQ(resumed.stages.size(), 2u);
  for (size_t s = 0; s < 2; ++s) {
    EXPECT_EQ(resumed.stages[s].name, full.stages[s].name);
    EXPECT_EQ(resumed.stages[s].steps, full.stages[s].steps) << s;
    EXPECT_EQ(resumed.stages[s].final_total, full.stages[s].final_total) << s;
    EXPECT_GT(resumed.stages[s].seconds, 0) << s;
  }
  EXPECT_EQ(resumed.total_steps(), 30);
  EXPECT_GE(resumed.total_s, resumed.stages[0].seconds);

  // Resuming a finished run's last checkpoint runs nothing and returns the
  // same field (evaluated at the progress the run ended with) and history.
  nefi::SolverOptions save_all;
  save_all.checkpoint_path = ck.string();
  nefi::Solver(problem(), curriculum(), save_all).run();
  const nefi::Result again = nefi::Solver(problem(), curriculum(), second).run();
  EXPECT_EQ(again.history.rows, full.history.rows);
  EXPECT_EQ(again.total_steps(), 30);
  const auto c = again.fields.at("x").to_vector<double>();
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i], c[i]) << i;
  fs::remove(ck);
}

// A checkpoint that kept no run so far (written before format 3) resumes
// with this process's steps only, and the checkpoints the resumed run
// writes keep none either (they kept a partial one the reader refused).
TEST(NefiCheckpoint, AResumeFromAFileWithoutTheRunSoFarWritesLoadableCheckpoints) {
  const fs::path ck = temp_path("older.ckpt");
  nefi::SolverOptions first;
  first.checkpoint_path = ck.string();
  first.checkpoint_interval = 8;
  first.callbacks.push_back([](const nefi::StepInfo& s) { return s.global_step < 16; });
  nefi::Solver(problem(), curriculum(), first).run();
  nefi::Checkpoint older = nefi::load_checkpoint(ck.string());
  ASSERT_EQ(older.stage, 1);
  older.history.reset();
  older.stages_done.clear();
  nefi::save_checkpoint(ck.string(), older);

  nefi::SolverOptions second;
  second.resume_from = ck.string();
  second.checkpoint_path = temp_path("older-resumed.ckpt").string();
  second.checkpoint_interval = 4;
  const nefi::Result resumed = nefi::Solver(problem(), curriculum(), second).run();
  EXPECT_EQ(resumed.history.rows.size(), 30u - 16u);
  const nefi::Checkpoint again = nefi::load_checkpoint(second.checkpoint_path);
  EXPECT_FALSE(again.history.has_value());
  fs::remove(ck);
  fs::remove(second.checkpoint_path);
}

// What else a run keeps across steps is checkpointed too, so the resumed
// run still finishes bit-identical: an EMA shadow, L-BFGS's history, an f16
// trunk's loss scaler.
struct Variant {
  const char* name;
  void (*apply)(nefi::InverseProblem&, nefi::Curriculum&);
};

class NefiCheckpointState : public testing::TestWithParam<Variant> {};

TEST_P(NefiCheckpointState, ResumedRunFinishesBitIdentical) {
  auto problem_of = [] {
    nefi::InverseProblem p = problem();
    nefi::Curriculum c = curriculum();
    GetParam().apply(p, c);
    return std::pair{p, c};
  };
  const auto [p0, c0] = problem_of();
  const nefi::Result full = nefi::Solver(p0, c0).run();
  const fs::path ck = temp_path(std::string("state-") + GetParam().name + ".ckpt");
  nefi::SolverOptions first;
  first.checkpoint_path = ck.string();
  first.checkpoint_interval = 5;
  first.callbacks.push_back([](const nefi::StepInfo& s) { return s.global_step < 16; });
  const auto [p1, c1] = problem_of();
  nefi::Solver(p1, c1, first).run();
  nefi::SolverOptions second;
  second.resume_from = ck.string();
  const auto [p2, c2] = problem_of();
  const nefi::Result resumed = nefi::Solver(p2, c2, second).run();
  const auto a = full.fields.at("x").to_vector<double>();
  const auto b = resumed.fields.at("x").to_vector<double>();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i], b[i]) << i;
  EXPECT_EQ(full.history.rows, resumed.history.rows);
  fs::remove(ck);
}

INSTANTIATE_TEST_SUITE_P(
    , NefiCheckpointState,
    testing::Values(Variant{"ema",
                            [](nefi::InverseProblem&, nefi::Curriculum& c) { c.optim.ema = 0.8; }},
                    Variant{"lbfgs",
                            [](nefi::InverseProblem&, nefi::Curriculum& c) {
                              c.optim.optimizer = "lbfgs";
                              c.optim.lbfgs.max_iter = 2;
                              for (nefi::Stage& st : c.stages) st.lr = 0.5;
                            }},
                    Variant{"f16",
                            [](nefi::InverseProblem& p, nefi::Curriculum&) {
                              p = problem(fk::DType::F16);
                              // Data this large overflow the f16 gradients at the
                              // scaler's first scale: it backs off within the run.
                              p.measurement.data = fk::mul(p.measurement.data, 3e3);
                            }}),
    [](const testing::TestParamInfo<Variant>& i) { return std::string(i.param.name); });

// With early stopping on, a resume from any checkpoint stops where the
// uninterrupted run stops: the stopping state (best loss, steps since) is
// kept, and a checkpoint written at the stopping step says the stage ended.
TEST(NefiCheckpoint, ResumedRunStopsEarlyWhereTheUninterruptedOneDid) {
  nefi::Curriculum cur = curriculum();
  cur.early_stop_patience = 2;
  cur.early_stop_min_delta = 1e9;  // no step improves enough: the stage ends 2 steps in
  for (nefi::Stage& st : cur.stages) st.anneal_fraction = 0.01;  // progress 1 at once
  const nefi::Result full = nefi::Solver(problem(), cur).run();
  ASSERT_EQ(full.stages.back().stop, "early_stop");
  const int total = full.total_steps();
  const fs::path ck = temp_path("early.ckpt");
  for (int cut = 1; cut < total; ++cut) {
    // A crash after global step `cut` (a callback returning false would end
    // the stage, a stop of the run's own): the last checkpoint is that step's.
    nefi::SolverOptions first;
    first.checkpoint_path = ck.string();
    first.checkpoint_interval = 1;
    first.callbacks.push_back([cut](const nefi::StepInfo& s) {
      if (s.global_step > cut) throw std::runtime_error("interrupted");
      return true;
    });
    EXPECT_THROW(nefi::Solver(problem(), cur, first).run(), std::runtime_error);
    nefi::SolverOptions second;
    second.resume_from = ck.string();
    const nefi::Result resumed = nefi::Solver(problem(), cur, second).run();
    EXPECT_EQ(resumed.fields.at("x").to_vector<double>(), full.fields.at("x").to_vector<double>())
        << "cut at " << cut;
    EXPECT_EQ(resumed.stages.back().stop, "early_stop") << cut;
    // The whole run is reported, the steps before the crash included.
    EXPECT_EQ(resumed.history.rows, full.history.rows) << cut;
    EXPECT_EQ(resumed.total_steps(), total) << cut;
  }
  // A callback that ends the last stage early (an interruption from outside)
  // still leaves the early-stopping state of its step in the checkpoint.
  for (int cut = full.total_steps() - full.stages.back().steps + 1; cut < total; ++cut) {
    nefi::SolverOptions first;
    first.checkpoint_path = ck.string();
    first.callbacks.push_back([cut](const nefi::StepInfo& s) { return s.global_step < cut; });
    nefi::Solver(problem(), cur, first).run();
    nefi::SolverOptions second;
    second.resume_from = ck.string();
    const nefi::Result resumed = nefi::Solver(problem(), cur, second).run();
    EXPECT_EQ(resumed.fields.at("x").to_vector<double>(), full.fields.at("x").to_vector<double>())
        << "callback at " << cut;
  }
  // One checkpoint cannot say which of several restarts wrote it.
  nefi::Curriculum restarts = curriculum();
  restarts.restarts = 2;
  nefi::SolverOptions resume;
  resume.resume_from = ck.string();
  EXPECT_THROW(nefi::Solver(problem(), restarts, resume), fk::Error);
  fs::remove(ck);
}

// A checkpoint knows the run that wrote it: another run's is refused.
TEST(NefiCheckpoint, AnotherRunsCheckpointIsRefused) {
  const fs::path ck = temp_path("identity.ckpt");
  nefi::SolverOptions first;
  first.checkpoint_path = ck.string();
  first.run_identity = "aaaa";
  first.callbacks.push_back([](const nefi::StepInfo& s) { return s.global_step < 4; });
  nefi::Solver(problem(), curriculum(), first).run();
  EXPECT_EQ(nefi::load_checkpoint(ck.string()).run_identity, "aaaa");
  nefi::SolverOptions other;
  other.resume_from = ck.string();
  other.run_identity = "bbbb";
  try {
    nefi::Solver(problem(), curriculum(), other).run();
    ADD_FAILURE() << "resumed another run's checkpoint";
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("a checkpoint this run wrote (run bbbb"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("got one of run aaaa"), std::string::npos) << e.what();
  }
  other.run_identity = "aaaa";  // the same run resumes
  EXPECT_NO_THROW(nefi::Solver(problem(), curriculum(), other).run());
  // With the identities' texts kept, the refusal names the keys that
  // changed (it gave two hashes: which of thirty keys was it?).
  first.run_identity_text = "instance: toy1d\nconfig:\n  lr: 0.01\n  n: 64\nseed: 0\n";
  nefi::Solver(problem(), curriculum(), first).run();
  EXPECT_EQ(nefi::load_checkpoint(ck.string()).run_identity_text, first.run_identity_text);
  other.run_identity = "bbbb";
  other.run_identity_text = "instance: toy1d\nconfig:\n  lr: 0.03\n  n: 64\nrun:\n  x: 1\n";
  const auto refusal = [&] {
    try {
      nefi::Solver(problem(), curriculum(), other).run();
    } catch (const fk::Error& e) {
      return std::string(e.what());
    }
    return std::string("resumed another run's checkpoint");
  };
  EXPECT_NE(refusal().find("; changed since: config.lr: 0.03 (was 0.01); run.x: 1 (new); seed "
                           "(gone; was 0))"),
            std::string::npos)
      << refusal();
  // Nested sections are named whole (curriculum.optim.ema was
  // "curriculum.ema", beside a line for the empty optim header).
  first.run_identity_text = "curriculum:\n  optim:\n    ema: 0.9\n    betas: [0.9, 0.999]\n";
  nefi::Solver(problem(), curriculum(), first).run();
  other.run_identity_text = "curriculum:\n  optim:\n    ema: 0.99\n    betas: [0.9, 0.99]\n";
  EXPECT_NE(refusal().find("changed since: curriculum.optim.ema: 0.99 (was 0.9); "
                           "curriculum.optim.betas: [0.9, 0.99] (was [0.9, 0.999]))"),
            std::string::npos)
      << refusal();
  // The same text under another identity: what the text leaves out changed.
  other.run_identity_text = first.run_identity_text;
  EXPECT_NE(refusal().find("changed since: the measured data's bytes (run.data, run.mask))"),
            std::string::npos)
      << refusal();
  fs::remove(ck);
}

TEST(NefiCheckpoint, RoundTripAndBadFiles) {
  nefi::Checkpoint ck;
  ck.stage = 2;
  ck.step = 7;
  ck.global_step = 40;
  ck.field_kind = "grid";
  ck.lr_mult = 0.25;
  ck.adam_steps = 11;
  ck.params = {fk::from_vector(std::vector<double>{1, 2, 3}),
               fk::from_vector(std::vector<float>{4, 5}, {1, 2})};
  ck.adam_m = ck.params;
  ck.adam_v = ck.params;
  ck.ema = ck.params;
  ck.loss_scale = 1024;
  ck.loss_scale_tracker = 3;
  ck.lbfgs = nefi::LbfgsState{
      {{1, 2}, {3, 4}}, {{5, 6}, {7, 8}}, {0.5, 0.25}, {9, 10}, {11, 12}, 0.125, 0.75, 6, 9};
  ck.lbfgs_x = {13, 14};
  ck.history = nefi::History{{"step", "total"}, {{0, 0.5}, {1, 0.25}}};
  ck.stages_done.resize(2);
  ck.stages_done[0].name = "coarse";
  ck.stages_done[0].shape = fk::Dims({4});
  ck.stages_done[0].steps = 12;
  ck.stages_done[0].final_total = std::numeric_limits<double>::infinity();  // JSON has none
  ck.stages_done[1].ops = int64_t{1} << 40;
  ck.stage_steps = 8;
  ck.stage_seconds = 1.5;
  ck.run_seconds = 2.5;
  ck.stage_ops = 99;
  const fs::path p = temp_path("roundtrip.ckpt");
  nefi::save_checkpoint(p.string(), ck);
  const nefi::Checkpoint back = nefi::load_checkpoint(p.string());
  ASSERT_EQ(back.ema.size(), 2u);
  EXPECT_EQ(back.ema[1].to_vector<double>(), (std::vector<double>{4, 5}));
  EXPECT_EQ(back.loss_scale, 1024);
  EXPECT_EQ(back.loss_scale_tracker, 3);
  ASSERT_TRUE(back.lbfgs.has_value());
  EXPECT_EQ(back.lbfgs->s, ck.lbfgs->s);
  EXPECT_EQ(back.lbfgs->y, ck.lbfgs->y);
  EXPECT_EQ(back.lbfgs->rho, ck.lbfgs->rho);
  EXPECT_EQ(back.lbfgs->d, ck.lbfgs->d);
  EXPECT_EQ(back.lbfgs->prev_g, ck.lbfgs->prev_g);
  EXPECT_EQ(back.lbfgs->t, 0.125);
  EXPECT_EQ(back.lbfgs->h_diag, 0.75);
  EXPECT_EQ(back.lbfgs->n_iter, 6);
  EXPECT_EQ(back.lbfgs->n_eval, 9);
  EXPECT_EQ(back.lbfgs_x, (std::vector<double>{13, 14}));
  EXPECT_EQ(back.stage, 2);
  EXPECT_EQ(back.step, 7);
  EXPECT_EQ(back.global_step, 40);
  EXPECT_EQ(back.field_kind, "grid");
  EXPECT_EQ(back.lr_mult, 0.25);
  EXPECT_EQ(back.adam_steps, 11);
  ASSERT_EQ(back.params.size(), 2u);
  EXPECT_EQ(back.params[0].to_vector<double>(), (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(back.params[1].dtype(), fk::DType::F32);
  EXPECT_EQ(back.params[1].shape(), fk::Dims({1, 2}));
  EXPECT_EQ(back.adam_v[1].to_vector<double>(), (std::vector<double>{4, 5}));
  ASSERT_TRUE(back.history.has_value());
  EXPECT_EQ(back.history->columns, ck.history->columns);
  EXPECT_EQ(back.history->rows, ck.history->rows);
  ASSERT_EQ(back.stages_done.size(), 2u);
  EXPECT_EQ(back.stages_done[0].name, "coarse");
  EXPECT_EQ(back.stages_done[0].shape, fk::Dims({4}));
  EXPECT_EQ(back.stages_done[0].steps, 12);
  EXPECT_TRUE(std::isnan(back.stages_done[0].final_total));
  EXPECT_EQ(back.stages_done[1].ops, int64_t{1} << 40);
  EXPECT_EQ(back.stage_steps, 8);
  EXPECT_EQ(back.stage_seconds, 1.5);
  EXPECT_EQ(back.run_seconds, 2.5);
  EXPECT_EQ(back.stage_ops, 99);
  // A summary for each stage before the checkpoint's, no fewer.
  nefi::Checkpoint short_run = ck;
  short_run.stages_done.pop_back();
  const fs::path sr = temp_path("short.ckpt");
  nefi::save_checkpoint(sr.string(), short_run);
  try {
    nefi::load_checkpoint(sr.string());
    ADD_FAILURE() << "loaded a run so far missing a stage";
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("each of the 2 stages"), std::string::npos) << e.what();
  }
  fs::remove(sr);

  auto expect_error = [](const std::string& path, const std::string& needle) {
    try {
      nefi::load_checkpoint(path);
      ADD_FAILURE() << "no error for " << path;
    } catch (const fk::Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error(temp_path("missing.ckpt").string(), "readable");
  // Truncated: drop the last bytes.
  const auto size = fs::file_size(p);
  const fs::path cut = temp_path("cut.ckpt");
  fs::copy_file(p, cut, fs::copy_options::overwrite_existing);
  fs::resize_file(cut, size - 12);
  expect_error(cut.string(), "truncated");
  // Bytes after the payload count (they were read as nothing).
  const fs::path longer = temp_path("longer.ckpt");
  fs::copy_file(p, longer, fs::copy_options::overwrite_existing);
  std::ofstream(longer, std::ios::app | std::ios::binary) << "tail";
  expect_error(longer.string(), "expected the file to end after its payload count");
  // Foreign: an .npy-like file.
  const fs::path foreign = temp_path("foreign.ckpt");
  std::ofstream(foreign) << "\x93NUMPY this is not a checkpoint";
  expect_error(foreign.string(), "NEFICKPT");
  // A header's counts are checked (a crafted negative step would resume
  // before the stage's start).
  nefi::Checkpoint negative = ck;
  negative.step = -5;
  const fs::path neg = temp_path("negative.ckpt");
  nefi::save_checkpoint(neg.string(), negative);
  expect_error(neg.string(), "step a whole number in [0, 2147483647], got -5");
  // ... and read whole: nlohmann would wrap 2^32 + 4 to 4 in an int.
  nefi::Checkpoint wrapped = ck;
  wrapped.global_step = 4;
  nefi::save_checkpoint(neg.string(), wrapped);
  {
    std::fstream f(neg, std::ios::in | std::ios::out | std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    const size_t at = bytes.find("\"global_step\":4");
    ASSERT_NE(at, std::string::npos);
    // 4 -> 2^32 + 4 in the JSON header, nine digits longer: the u64 header
    // length after the magic and the version grows by 9.
    bytes.replace(at, 15, "\"global_step\":4294967300");
    uint64_t len = 0;
    std::memcpy(&len, bytes.data() + 12, 8);
    len += 9;
    std::memcpy(bytes.data() + 12, &len, 8);
    std::ofstream(neg, std::ios::binary | std::ios::trunc) << bytes;
  }
  expect_error(neg.string(), "global_step a whole number in [0, 2147483647], got 4294967300");
  fs::remove(neg);
  // A resume into another field kind is refused by the solver.
  nefi::InverseProblem prob = problem();
  nefi::SolverOptions so;
  so.resume_from = p.string();
  try {
    nefi::Solver(prob, curriculum(), so).run();
    ADD_FAILURE() << "resumed a grid checkpoint into a neural field";
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("'neural'"), std::string::npos) << e.what();
  }
  for (const auto& f : {p, cut, foreign}) fs::remove(f);
}

// A header whose tensor shapes claim more than the file holds (4 TB), wrap
// 64 bits or exceed fk's dimensions is refused before anything is allocated
// (found by the checkpoint fuzz harness, tests/fuzz).
TEST(NefiCheckpoint, ClaimedShapesAreCheckedBeforeAllocating) {
  auto file_with = [](const std::string& name, const std::string& shape) {
    const std::string header =
        R"({"stage":0,"step":0,"global_step":0,"field_kind":"mlp","lr_mult":1.0,)"
        R"("adam_steps":0,"adam_m":[],"adam_v":[],"params":[{"dtype":"f32","shape":)" +
        shape + "}]}";
    const fs::path p = temp_path(name);
    std::ofstream f(p, std::ios::binary);
    const uint32_t version = 1;
    const uint64_t len = header.size(), payload = 0;
    f.write("NEFICKPT", 8);
    f.write(reinterpret_cast<const char*>(&version), 4);
    f.write(reinterpret_cast<const char*>(&len), 8);
    f << header;
    f.write(reinterpret_cast<const char*>(&payload), 8);
    return p;
  };
  const std::pair<std::string, std::string> cases[] = {
      {"[1000000000000]", "a tensor of 4000000000000 bytes, 8 left"},
      {"[4294967296, 4294967296]", "fits 63 bits"},
      {"[0, 4611686018427387904]", "fits 63 bits"},
      {"[-3]", "non-negative"},
      {"[1, 1, 1, 1, 1, 1, 1, 1, 1]", "at most 8 dimensions"}};
  for (const auto& [shape, needle] : cases) {
    const fs::path p = file_with("claims.ckpt", shape);
    try {
      nefi::load_checkpoint(p.string());
      ADD_FAILURE() << "loaded " << shape;
    } catch (const fk::Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
    fs::remove(p);
  }
  // A version this build does not know (a later one) is named as such.
  const fs::path later = temp_path("later.ckpt");
  {
    std::ofstream f(later, std::ios::binary);
    const uint32_t version = 4;
    f.write("NEFICKPT", 8);
    f.write(reinterpret_cast<const char*>(&version), 4);
  }
  try {
    nefi::load_checkpoint(later.string());
    ADD_FAILURE() << "loaded a version 4 checkpoint";
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("format version 1 to 3, got 4"), std::string::npos)
        << e.what();
  }
  fs::remove(later);
}

}  // namespace
