// diagnose_instance: an instance's problem diagnosed at its start and at its
// solution (the solve fits the data: its residual is under half the start's),
// with the study's labels filled in; and its refusals.
#include "nefi/instances/diagnose_instance.h"

#include <gtest/gtest.h>

#include "fk/error.h"
#include "fk/thread_count.h"
#include "nefi/instances/run_method.h"

namespace nefi::diagnostics {
namespace {

RunConfig toy(uint64_t seed) {
  RunConfig cfg = default_run_config("toy1d");
  apply_set(cfg, "n=32");
  apply_set(cfg, "steps=[40, 80]");
  cfg.seed = seed;
  return cfg;
}

// A few probes and Lanczos steps: the tests' settings.
DiagnoseOptions small() {
  DiagnoseOptions o;
  o.probes = 4;
  o.k = 3;
  o.n_iter = 8;
  return o;
}

TEST(DiagnoseInstance, AtTheStartAndAtTheSolution) {
  const fk::test::ThreadCount one(1);
  const InstancePtr inst = find_instance("toy1d");
  DiagnoseOptions o = small();
  o.seed = 99;  // replaced by the config's seed
  const Diagnostics start = diagnose_instance(*inst, toy(2), "neural", false, o);
  EXPECT_EQ(start.instance, "toy1d");
  EXPECT_EQ(start.method, "neural");
  EXPECT_EQ(start.seed, 2u);
  EXPECT_EQ(start.options.seed, 2u);
  EXPECT_EQ(start.at, "initialization");
  ASSERT_EQ(start.spectrum.singular_values.size(), 3u);
  EXPECT_EQ(start.field_shape, fk::Dims({32}));
  const Diagnostics solved = diagnose_instance(*inst, toy(2), "neural", true, o);
  EXPECT_EQ(solved.at, "the solution (120 steps)");
  // toy1d's blur is linear: the same operator wherever it is linearized.
  EXPECT_EQ(solved.spectrum.singular_values, start.spectrum.singular_values);
  EXPECT_LT(solved.residual_rms, 0.5 * start.residual_rms);
}

// --hessian: at the start, the loss Hessian of the method's own problem as
// hessian_spectrum gives it on a fresh setup; at the solution, the trained
// field's (the solve fits the data, and the curvature there differs).
TEST(DiagnoseInstance, TheLossHessianAtTheStartAndAtTheSolution) {
  const fk::test::ThreadCount one(1);
  const InstancePtr inst = find_instance("toy1d");
  DiagnoseOptions o = small();
  o.hessian_k = 2;
  o.hessian_iter = 12;
  const Diagnostics start = diagnose_instance(*inst, toy(2), "neural", false, o);
  ASSERT_TRUE(start.hessian.has_value());
  std::optional<ProblemSetup> s = inst->setup(toy(2).config, "neural", 2);
  ASSERT_TRUE(s.has_value());
  const HessianSpectrum fresh = hessian_spectrum(s->problem, 2, 12, 2);
  EXPECT_EQ(start.hessian->eigenvalues.largest, fresh.eigenvalues.largest);
  EXPECT_EQ(start.hessian->parameters, s->problem.field->n_parameters());
  ASSERT_EQ(start.hessian->eigenvalues.largest.size(), 2u);
  EXPECT_GT(start.hessian->eigenvalues.largest[0], 0.0);
  const Diagnostics solved = diagnose_instance(*inst, toy(2), "neural", true, o);
  ASSERT_TRUE(solved.hessian.has_value());
  EXPECT_EQ(solved.at, "the solution (120 steps)");
  EXPECT_LT(solved.residual_rms, 0.5 * start.residual_rms);
  EXPECT_NE(solved.hessian->eigenvalues.largest, start.hessian->eigenvalues.largest);
  // ... and it is the trained field's: the same solve, then the Hessian.
  std::optional<ProblemSetup> t = inst->setup(toy(2).config, "neural", 2);
  RunOutput out = start_run_output("neural", t->measurement, t->gt);
  solve_and_record(t->problem, t->curriculum, 2,
                   method_options(*inst, "neural", *t->problem.field, solver_options(toy(2))), out);
  InverseProblem hp = t->problem;
  hp.losses = t->problem.losses.with_weights(t->curriculum.stages.back().loss_weights);
  EXPECT_EQ(solved.hessian->eigenvalues.largest,
            hessian_spectrum(hp, 2, 12, 2).eigenvalues.largest);
  // Without --hessian there is none; and K above the steps is refused first.
  EXPECT_FALSE(diagnose_instance(*inst, toy(2), "neural", false, {}).hessian.has_value());
  o.hessian_iter = 1;
  try {
    diagnose_instance(*inst, toy(2), "neural", true, o);
    FAIL() << "hessian_iter < hessian_k was taken";
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("--hessian"), std::string::npos) << e.what();
  }
}

TEST(DiagnoseInstance, RefusesMeasuredDataAndDirectMethods) {
  const InstancePtr inst = find_instance("toy1d");
  RunConfig measured = toy(0);
  measured.data = "y.npy";
  EXPECT_THROW(diagnose_instance(*inst, measured, "neural", false, {}), fk::Error);
  const InstancePtr ct = find_instance("sparse_view_ct");
  try {
    diagnose_instance(*ct, default_run_config("sparse_view_ct"), "fbp", false, {});
    FAIL() << "a direct method was diagnosed";
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("--method"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace nefi::diagnostics
