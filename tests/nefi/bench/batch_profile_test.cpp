// nefi profile --batch (profile_batch): the config's curriculum overrides
// reach the batch (batch_invert's refusal of restarts shows it: they were
// dropped), the reported chunk is the one that ran, and bad sizes are named.
#include "nefi/bench/batch_profile.h"

#include <gtest/gtest.h>

#include <string>

#include "fk/error.h"
#include "fk/test_util.h"
#include "nefi/solve/batch_test_setups.h"

namespace {

using nefi::bench::BatchProfileOptions;
using nefi::bench::profile_batch;

BatchProfileOptions options(int batch, int chunk) {
  BatchProfileOptions o;
  o.batch = batch;
  o.chunk = chunk;
  o.steps = 3;
  o.warmup = 1;
  return o;
}

TEST(NefiBatchProfile, CurriculumOverridesReachTheBatch) {
  const nefi::Params p = nefi::batch_test::smoke_params("toy1d", {10, 10});
  const nefi::InstancePtr inst = nefi::find_instance("toy1d");
  BatchProfileOptions o = options(2, 0);
  o.curriculum.restarts = 2;
  EXPECT_NE(fk::test::error_of([&] { profile_batch(*inst, p, o); }).find("restarts 2"),
            std::string::npos);
  o.curriculum.restarts.reset();
  o.curriculum.ema = 0.9;
  EXPECT_GT(profile_batch(*inst, p, o).batch_ms, 0.0);
}

TEST(NefiBatchProfile, TheReportedChunkIsTheOneThatRan) {
  const nefi::Params p = nefi::batch_test::smoke_params("toy1d", {10, 10});
  const nefi::InstancePtr inst = nefi::find_instance("toy1d");
  EXPECT_EQ(profile_batch(*inst, p, options(2, 5)).chunk, 0);  // one chunk: the whole batch
  EXPECT_EQ(profile_batch(*inst, p, options(3, 2)).chunk, 2);
  EXPECT_THROW(profile_batch(*inst, p, options(0, 0)), fk::Error);
}

// The reference's names for the instance's own solver, as nefi profile takes
// them without --batch ("ours" was refused with --batch).
TEST(NefiBatchProfile, MethodAliasesAreTheInstancesOwnSolver) {
  const nefi::Params p = nefi::batch_test::smoke_params("toy1d", {10, 10});
  const nefi::InstancePtr inst = nefi::find_instance("toy1d");
  BatchProfileOptions o = options(2, 0);
  o.method = "ours";
  EXPECT_EQ(profile_batch(*inst, p, o).method, "neural");
  o.method = "Neural";
  EXPECT_NE(fk::test::error_of([&] { profile_batch(*inst, p, o); }).find("--method"),
            std::string::npos);
}

}  // namespace
