// A bring-your-own problem (nefi fit, from_forward) solved on a CUDA device:
// a built-in Gaussian blur with a nonnegative, TV-regularised grid, neural,
// hash-grid or low-rank field, a smooth spectral one (L-BFGS: its
// evaluations on the device), or nonnegative blobs, ellipses, stars,
// polygons or layers, follows the same solve on the CPU; autotune's pilots
// train there as on the CPU, and a field or model without a device path is
// refused by name before any step; a batch of such problems follows the
// CPU batch. Without a usable device the tests skip (scripts/gpu-check runs
// them on one).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/random.h"
#include "fk/test_util.h"
#include "nefi/byop/auto_batch.h"
#include "nefi/byop/auto_problem.h"
#include "nefi/byop/byop_test_models.h"
#include "nefi/cuda/device_follows_cpu.h"
#include "nefi/cuda/device_test_util.h"
#include "nefi/host_only_field.h"
#include "nefi/operators/fft_convolution.h"
#include "nefi/tune/fit_autotune.h"

namespace {

using nefi::cuda_test::kGpu;
using nefi::cuda_test::NoTf32;

// A square of 1 in a 24 x 24 grid, blurred (sigma 1.5 cells), noise 0.01.
struct Scene {
  nefi::OperatorPtr op;
  nefi::Measurement m;
  fk::Dims shape{24, 24};
};

Scene blurred_square() {
  Scene s;
  const nefi::Domain d(s.shape, {1.0, 1.0});
  s.op = std::make_shared<nefi::FFTConvolution>(nefi::gaussian_psf(1.5 * d.spacing()[0]), d);
  fk::Tensor truth = fk::zeros(s.shape, {fk::DType::F64});
  for (int64_t i = 8; i < 16; ++i)
    for (int64_t j = 6; j < 14; ++j) truth.data<double>()[i * 24 + j] = 1.0;
  fk::Generator gen(4);
  s.m.data = fk::add(s.op->apply(truth), fk::mul(fk::randn(s.shape, {fk::DType::F64}, &gen), 0.01));
  return s;
}

nefi::AutoProblem problem(const Scene& s, const std::string& representation,
                          const std::string& prior = "nonnegative + tv") {
  nefi::AutoOptions o;
  o.prior = prior;
  o.representation = representation;
  o.budget = "40";
  o.noise_std = 0.01;
  o.discrepancy = false;  // the same step count on both
  return nefi::auto_problem(s.op, s.shape, s.m, o);
}

TEST(NefiAutoProblemDevice, ABlurFitOnTheDeviceFollowsTheCpu) {
  NEFI_SKIP_WITHOUT_GPU();
  NoTf32 no_tf32;
  const Scene s = blurred_square();
  // A hash grid starts nearly flat (a table of +-1e-4), where TV is
  // round-off (TV's gradient, the sign of each difference, too): its fit has
  // no TV. Its first Adam steps move every table entry by +-lr, a hundred
  // times its start, and its ReLU trunk turns with them: a round-off
  // difference (cuBLAS's sums against the CPU GEMM's; the gradients agree
  // to 1e-5, hash_grid_device_test.cpp) grows some 30x a step there, so its
  // rows are compared for the first steps only, and its fit by where it
  // ends (within half of the CPU's last data loss; 12 % apart on the
  // emulated device). A spectral fit's L-BFGS line search fits a cubic to
  // losses that differ in f32 round-off, where the loss along the first
  // direction is nearly linear: the device's second trial point differs
  // from the CPU's, so its rows are compared nowhere and its fit by where it
  // ends (ASpectralFitWithoutALineSearchFollowsTheCpu compares its
  // evaluations). Every parametric family runs the CPU op's f64 arithmetic
  // in one kernel each way (the same bits on the emulated device). Their
  // background starts at the data's constant fit, where its gradient is
  // round-off, and Adam's first step (g / (|g| + eps)) turns the two
  // machines' round-off into steps 0.56 and 0.66 of lr (emulated): the rows
  // part 2.5e-5 at once. Blobs stay within 1e-3 for all 40 steps;
  // ellipses (whose edges sharpen), the stars' and polygons' outlines, whose
  // gates open after half the steps, and layered fields (whose interfaces
  // move after a tenth) amplify it past 1e-3 (up to 1.6 % on the emulated
  // device; layered fields past row 5, under a head spanning the square's
  // departure from its mean), so their first 10 rows (layered: 5) are
  // compared, and their fits by where they end. 40 steps lower the
  // data loss by a fifth to a third (0.9 asked). All but the warm-up and
  // capture steps replay while the edge anneals and the outline gates open;
  // a layered background's steps replay once progress stays put. The low-rank field's 40 steps
  // lower the data loss by a fifth.
  struct Rep {
    std::string name, prior;
    size_t rows;     // the history rows that follow the CPU's to 1e-3
    double learned;  // the last step's data loss at most this times the first's
  };
  const std::string tv = "nonnegative + tv";
  for (const Rep& rep :
       {Rep{"grid", tv, SIZE_MAX, 0.5}, Rep{"neural", tv, SIZE_MAX, 0.5},
        Rep{"hash", "nonnegative", 3, 0.5}, Rep{"lowrank", tv, SIZE_MAX, 0.9},
        Rep{"spectral", "nonnegative + smooth", 0, 0.5}, Rep{"blobs", "nonnegative", SIZE_MAX, 0.9},
        Rep{"ellipses", "nonnegative", 10, 0.9}, Rep{"stars", "nonnegative", 10, 0.9},
        Rep{"polygons", "nonnegative", 10, 0.9}, Rep{"layers", "nonnegative", 5, 0.9},
        Rep{"layers+ellipses", "nonnegative", 5, 0.9}}) {
    SCOPED_TRACE(rep.name);
    const nefi::AutoProblem ap = problem(s, rep.name, rep.prior);
    const nefi::Result cpu = ap.solve({});
    nefi::SolverOptions so;
    so.device = kGpu;
    const nefi::Result gpu = ap.solve(so);
    EXPECT_EQ(gpu.device, kGpu.str());
    EXPECT_EQ(cpu.device, "cpu");
    nefi::cuda_test::expect_losses_follow(gpu, cpu, 1e-3, 1e-12, rep.rows);
    EXPECT_TRUE(gpu.fields.at("x").device().is_cpu());
    const double first = gpu.history.rows.front()[6], last = gpu.history.rows.back()[6];
    EXPECT_LT(last, rep.learned * first) << "data loss";
    EXPECT_NEAR(last, cpu.history.rows.back()[6], 0.5 * cpu.history.rows.back()[6])
        << "the CPU fit's last data loss";
    // One captured step replays while progress moves (a hash grid's levels
    // ramp in through its rewritten window); a spectral fit's L-BFGS
    // evaluations read the total back each time, so they run eagerly.
    ASSERT_FALSE(gpu.stages.empty());
    if (rep.name == "spectral") {
      EXPECT_NE(gpu.stages.back().device_note.find("L-BFGS"), std::string::npos)
          << gpu.stages.back().device_note;
      EXPECT_EQ(gpu.stages.back().graph_steps, 0);
    } else if (rep.name == "blobs" || rep.name == "ellipses" || rep.name == "stars" ||
               rep.name == "polygons") {
      EXPECT_GE(gpu.stages.back().graph_steps, gpu.stages.back().steps - 2)
          << gpu.stages.back().device_note;
    } else {
      EXPECT_GT(gpu.stages.back().graph_steps, 0) << gpu.stages.back().device_note;
    }
  }
}

// A spectral fit's L-BFGS with a fixed step (line_search none): the same
// directions from evaluations on the device as on the CPU, every row within
// 1e-3 (the line search's trial points are round-off sensitive, above).
TEST(NefiAutoProblemDevice, ASpectralFitWithoutALineSearchFollowsTheCpu) {
  NEFI_SKIP_WITHOUT_GPU();
  NoTf32 no_tf32;
  nefi::AutoProblem ap = problem(blurred_square(), "spectral", "nonnegative + smooth");
  ASSERT_EQ(ap.curriculum.optim.optimizer, "lbfgs");
  ap.curriculum.optim.lbfgs.line_search = "none";
  for (nefi::Stage& st : ap.curriculum.stages) st.steps = 3;
  const nefi::Result cpu = ap.solve({});
  nefi::SolverOptions so;
  so.device = kGpu;
  const nefi::Result gpu = ap.solve(so);
  EXPECT_EQ(gpu.device, kGpu.str());
  ASSERT_EQ(cpu.history.rows.size(), 3u);
  nefi::cuda_test::expect_losses_follow(gpu, cpu, 1e-3, 1e-12);
  // The evaluations moved the field (the loss changed each step).
  EXPECT_NE(gpu.history.rows[1][5], gpu.history.rows[0][5]);
}

// from_forward problems solved together on the device (Python's
// batch_invert of ForwardProblems with device=): each problem's own data and
// penalty weights weigh its row of one shared loss set, as on the CPU. The
// penalty is smoothness: TV from a flat start is round-off (the sign of
// each difference), where a device and the CPU part 1e-3 within 3 steps,
// batched or alone.
TEST(NefiAutoProblemDevice, ABatchOfBlurFitsOnTheDeviceFollowsTheCpuBatch) {
  NEFI_SKIP_WITHOUT_GPU();
  NoTf32 no_tf32;
  const Scene s = blurred_square();
  for (const std::string rep : {"grid", "neural"}) {
    SCOPED_TRACE(rep);
    std::vector<nefi::AutoInput> in;
    for (int k = 0; k < 3; ++k) {  // the square at three brightnesses, three noise levels
      nefi::AutoOptions o;
      o.prior = "nonnegative + smooth";
      o.representation = rep;
      o.budget = "40";
      o.noise_std = 0.01 * (1 + k);
      o.discrepancy = false;  // the same step count on both
      nefi::Measurement m = s.m;
      m.data = fk::mul(s.m.data, 1.0 + 0.4 * k);
      in.push_back({s.op, s.shape, m, o});
    }
    const std::vector<nefi::AutoProblem> aps = nefi::shared_start_problems(in);
    EXPECT_NE(aps[0].problem.losses.terms()[0].weight, aps[2].problem.losses.terms()[0].weight);
    const std::vector<nefi::Result> cpu = nefi::solve_together(aps);
    nefi::BatchOptions bo;
    bo.device = kGpu;
    const std::vector<nefi::Result> gpu = nefi::solve_together(aps, bo);
    // The row weights are device tensors the captured step reads: a replay
    // gives the eager step's bits.
    bo.cuda_graph = false;
    const std::vector<nefi::Result> eager = nefi::solve_together(aps, bo);
    ASSERT_EQ(gpu.size(), 3u);
    for (size_t b = 0; b < 3; ++b) {
      SCOPED_TRACE("problem " + std::to_string(b));
      EXPECT_EQ(gpu[b].error, "");
      EXPECT_EQ(gpu[b].device, kGpu.str());
      nefi::cuda_test::expect_losses_follow(gpu[b], cpu[b], 1e-3, 1e-12);
      ASSERT_FALSE(gpu[b].stages.empty());
      EXPECT_GT(gpu[b].stages.back().graph_steps, 0) << gpu[b].stages.back().device_note;
      EXPECT_EQ(eager[b].stages.back().graph_steps, 0);
      EXPECT_EQ(gpu[b].history.rows, eager[b].history.rows);
      EXPECT_EQ(gpu[b].fields.at("x").to_vector<double>(),
                eager[b].fields.at("x").to_vector<double>());
    }
  }
}

// nefi fit --autotune --device: the pilots train on the device, each as its
// CPU twin does (a grid field: round-off apart, so the same choices), and a
// model without a device path is refused once, by name, before any pilot.
TEST(NefiAutoProblemDevice, AutotunePilotsTrainOnTheDevice) {
  NEFI_SKIP_WITHOUT_GPU();
  NoTf32 no_tf32;
  const Scene s = blurred_square();
  nefi::AutoOptions o;
  o.prior = "nonnegative + tv";
  o.representation = "grid";
  o.budget = "40";
  o.noise_std = 0.01;
  o.discrepancy = false;
  const nefi::tune::LevelPlan plan = nefi::tune::level_plan("quick", "test");
  const auto cpu = nefi::tune::autotune_fit(s.op, s.shape, s.m, o, plan);
  const auto gpu = nefi::tune::autotune_fit(s.op, s.shape, s.m, o, plan, {}, {}, kGpu);
  ASSERT_EQ(gpu.decisions.size(), cpu.decisions.size());
  ASSERT_GE(gpu.decisions.size(), 2u);  // lr and tv
  for (size_t d = 0; d < cpu.decisions.size(); ++d) {
    const nefi::tune::Decision &a = cpu.decisions[d], &b = gpu.decisions[d];
    SCOPED_TRACE(a.key);
    EXPECT_EQ(b.chosen, a.chosen);
    ASSERT_EQ(b.pilots.size(), a.pilots.size());
    for (size_t p = 0; p < a.pilots.size(); ++p) {
      EXPECT_EQ(b.pilots[p].error, a.pilots[p].error) << a.pilots[p].value;
      EXPECT_NEAR(b.pilots[p].residual_rms, a.pilots[p].residual_rms,
                  1e-3 * a.pilots[p].residual_rms)
          << a.pilots[p].value;
    }
  }
  // A model of host functions (no device path) is refused before any pilot.
  const nefi::test::Blur1D host_model(32, 0.01);
  int pilots = 0;
  const std::string e = fk::test::error_of([&] {
    (void)nefi::tune::autotune_fit(
        host_model.op, fk::Dims{host_model.n}, host_model.measurement(), o, plan, {},
        [&](const std::string&) { ++pilots; }, kGpu);
  });
  EXPECT_NE(e.find("an operator with a device path"), std::string::npos) << e;
  EXPECT_EQ(pilots, 0);
}

TEST(NefiAutoProblemDevice, AFieldWithoutADevicePathIsRefusedByName) {
  NEFI_SKIP_WITHOUT_GPU();
  nefi::AutoProblem ap = problem(blurred_square(), "grid");
  ap.problem.field = std::make_shared<nefi::test::HostOnlyField>(blurred_square().shape);
  nefi::SolverOptions so;
  so.device = kGpu;
  const std::string e = fk::test::error_of([&] { (void)ap.solve(so); });
  EXPECT_NE(e.find("a field with a device path (every kind nefi makes has one; a field of your own "
                   "overrides Field::has_device_path and to), got a host_only field"),
            std::string::npos)
      << e;
}

// A multiscale problem's coarse stage sees the model through the host-side
// prolongation: refused at construction, naming the stage, not mid-solve.
TEST(NefiAutoProblemDevice, AMultiscaleCoarseStageIsRefusedByName) {
  NEFI_SKIP_WITHOUT_GPU();
  const Scene s = blurred_square();
  nefi::AutoOptions o;
  o.representation = "grid";
  o.budget = "40";
  o.multiscale = true;
  const nefi::AutoProblem ap = nefi::auto_problem(s.op, s.shape, s.m, o);
  ASSERT_EQ(ap.curriculum.stages.size(), 2u);
  nefi::SolverOptions so;
  so.device = kGpu;
  const std::string e = fk::test::error_of([&] { (void)ap.solve(so); });
  EXPECT_NE(e.find("at every stage's grid"), std::string::npos) << e;
  EXPECT_NE(e.find("prolongation"), std::string::npos) << e;
}

}  // namespace
