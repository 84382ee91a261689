#pragma once
// The small toy1d that the batch tests and the device solve tests train
// (solve/batch_test_setups.h, cuda/solver_device_test.cpp,
// cuda/step_graph_test.cpp): 64 cells, a 32-wide field of depth 3 with 5
// octaves, lr 0.02, each stage's bands opened over its first 30 %. Each test
// sets its own steps and regularisers.
#include "nefi/instances/instance.h"
#include "nefi/params.h"

namespace nefi::toy1d_test {

inline Params toy1d_smoke_params() {
  Params p = find_instance("toy1d")->default_config();
  p.set("n", "64");
  p.set("hidden", "32");
  p.set("depth", "3");
  p.set("n_octaves", "5");
  p.set("lr", "0.02");
  p.set("anneal_fraction", "0.3");
  return p;
}

}  // namespace nefi::toy1d_test
