#pragma once
// The Gray-Scott operator cases the CPU cells test (gray_scott_cells_test.cpp)
// and the device test (cuda/gray_scott_device_test.cpp) share: each unknown
// on both boundaries, u and/or v observed, several checkpoint intervals; a
// case's options and the range its unknown's test fields are drawn from.
#include <cstdint>
#include <vector>

#include "nefi/operators/reaction_diffusion/gray_scott.h"
#include "nefi/operators/reaction_diffusion/reaction_diffusion_operator.h"

namespace nefi::gray_scott_test {

struct Case {
  RDUnknown unknown;
  gray_scott::Boundary boundary;
  bool observe_u, observe_v;
  int64_t every;  // checkpoint interval, 0 for the default
};

// The six cases; k_periodic_every is the k, periodic case's interval.
inline std::vector<Case> cases(int64_t k_periodic_every) {
  using gray_scott::Boundary;
  return {
      {RDUnknown::kF, Boundary::kNeumann, true, true, 0},
      {RDUnknown::kF, Boundary::kPeriodic, false, true, 1},
      {RDUnknown::kK, Boundary::kNeumann, true, false, 3},
      {RDUnknown::kK, Boundary::kPeriodic, true, true, k_periodic_every},
      {RDUnknown::kDu, Boundary::kNeumann, true, true, 4},
      {RDUnknown::kDu, Boundary::kPeriodic, true, true, 0},
  };
}

inline const char* name_of(RDUnknown u) {
  return u == RDUnknown::kF ? "F" : u == RDUnknown::kK ? "k" : "Du";
}

// Three observations; strong diffusion, so the gradient reaches neighbours.
inline ReactionDiffusionOptions options_for(const Case& c) {
  ReactionDiffusionOptions o;
  o.obs_times = {2, 3, 5};
  o.rates = {0.06, 2e-3, 1e-3};
  o.unknown = c.unknown;
  o.F = 0.04;
  o.field_max = c.unknown == RDUnknown::kF ? 0.07 : c.unknown == RDUnknown::kK ? 0.08 : 4e-3;
  o.boundary = c.boundary;
  o.observe_u = c.observe_u;
  o.observe_v = c.observe_v;
  o.checkpoint_every = c.every;
  return o;
}

// The lower end of the unknown's test fields (field_max the upper).
inline double field_floor(RDUnknown u) {
  return u == RDUnknown::kF ? 0.02 : u == RDUnknown::kK ? 0.04 : 1e-3;
}

}  // namespace nefi::gray_scott_test
