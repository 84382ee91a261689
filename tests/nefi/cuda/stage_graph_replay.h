#pragma once
// One check shared by the imaging operators' device tests: a small neural
// stage of an instance on GPU 0, run eagerly and captured as one CUDA graph,
// must give the same history and field bit for bit, with the stage's steps
// (all but the warm-up and capture ones) replayed from the graph. An edit
// may change the set-up problem first (its losses, its field).
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "nefi/cuda/device_test_util.h"
#include "nefi/instances/instance.h"
#include "nefi/solve/solver.h"

namespace nefi::cuda_test {

using ConfigOverrides = std::vector<std::pair<std::string, std::string>>;
// Changes the problem an instance set up (given the config it was set up from).
using ProblemEdit = std::function<void(const nefi::Params&, nefi::ProblemSetup&)>;

// `instance`'s default config with a 32x2 field, 4 octaves, one stage of
// `steps` and `overrides`, set up for its neural method, edited by `edit`
// (when given) and solved on GPU 0 (seed 3).
inline nefi::Result solve_stage_on_gpu(const std::string& instance,
                                       const ConfigOverrides& overrides, int64_t steps, bool graph,
                                       const ProblemEdit& edit = {}) {
  nefi::Params p = nefi::find_instance(instance)->default_config();
  p.set("hidden", "32");
  p.set("depth", "2");
  p.set("n_octaves", "4");
  for (const auto& [key, value] : overrides) p.set(key, value);
  p.set_value("steps", std::vector<double>{static_cast<double>(steps)});
  auto su = nefi::find_instance(instance)->setup(p, "neural", 3);
  if (edit) edit(p, *su);
  nefi::SolverOptions so;
  so.seed = 3;
  so.device = kGpu;
  so.cuda_graph = graph;
  return nefi::Solver(su->problem, su->curriculum, so).run();
}

inline void expect_captured_stage_replays_eager(const std::string& instance,
                                                const ConfigOverrides& overrides,
                                                const std::string& field,
                                                const ProblemEdit& edit = {}) {
  constexpr int64_t kSteps = 16;
  const nefi::Result eager = solve_stage_on_gpu(instance, overrides, kSteps, false, edit);
  const nefi::Result graph = solve_stage_on_gpu(instance, overrides, kSteps, true, edit);
  ASSERT_EQ(graph.history.rows.size(), eager.history.rows.size());
  for (size_t r = 0; r < eager.history.rows.size(); ++r)
    EXPECT_EQ(graph.history.rows[r], eager.history.rows[r]) << instance << " row " << r;
  EXPECT_EQ(graph.fields.at(field).to_vector<double>(), eager.fields.at(field).to_vector<double>())
      << instance;
  const nefi::StageResult& st = graph.stages.at(0);
  EXPECT_GE(st.graph_steps, kSteps - 4) << st.device_note;
  EXPECT_EQ(st.device_note.find("capture failed"), std::string::npos) << st.device_note;
}

}  // namespace nefi::cuda_test
