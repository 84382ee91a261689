#pragma once
// The Gray-Scott operator cases the CPU cells test (gray_scott_cells_test.cpp)
// and the device test (cuda/gray_scott_device_test.cpp) share: each unknown
// on both boundaries, u and/or v observed, several checkpoint intervals; a
// case's options and the range its unknown's test fields are drawn from; and
// one substep's setting, which the cells test and the emulated kernels test
// (cuda_emu/nefi/gray_scott_test.cpp) share.
#include <cstdint>
#include <string>
#include <vector>

#include "fk/random.h"
#include "nefi/cuda/gray_scott_kernels.h"

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

// n values drawn uniformly from [lo, hi).
inline std::vector<double> uniform(int64_t n, double lo, double hi, uint64_t seed) {
  fk::Generator gen(seed);
  auto v = fk::rand({n}, {fk::DType::F64}, &gen).to_vector<double>();
  for (double& x : v) x = lo + (hi - lo) * x;
  return v;
}

// The kernels' coefficients for a grid, the rates and the scalar F.
inline cuda::GrayScottCoefficients coefficients_of(const gray_scott::Grid& g,
                                                   const gray_scott::Rates& r, double F,
                                                   double tau) {
  cuda::GrayScottCoefficients k;
  k.n0 = static_cast<int>(g.n0);
  k.n1 = static_cast<int>(g.n1);
  k.wrap = g.boundary == gray_scott::Boundary::kPeriodic;
  k.s0 = 1.0 / (g.h0 * g.h0);
  k.s1 = 1.0 / (g.h1 * g.h1);
  k.tau = tau;
  k.F = F;
  k.k = r.k;
  k.Du = r.Du;
  k.Dv = r.Dv;
  return k;
}

// One substep's setting: a random state near the pattern regime, random
// cotangents and the unknown's field (F, k or Du); the other two scalars.
struct StepCase {
  gray_scott::Grid grid;
  gray_scott::Rates rates{0.06, 2e-3, 1e-3};
  double F = 0.04, tau = 0.3;
  RDUnknown unknown = RDUnknown::kF;
  std::vector<double> field, state, cot, add;

  StepCase(gray_scott::Boundary b, RDUnknown u, int64_t n0, int64_t n1, uint64_t seed)
      : unknown(u) {
    grid = {n0, n1, 0.02, 0.03, b};
    const int64_t n = grid.size();
    field = u == RDUnknown::kF   ? uniform(n, 0.02, 0.07, seed)
            : u == RDUnknown::kK ? uniform(n, 0.04, 0.08, seed)
                                 : uniform(n, 1e-3, 4e-3, seed);
    state = uniform(2 * n, 0.05, 0.9, seed + 1);
    cot = uniform(2 * n, -1, 1, seed + 2);
    add = uniform(2 * n, -1, 1, seed + 3);
  }
  // The CPU's per-cell coefficients (F a field in every case, as the operator passes it).
  std::vector<double> F_cells() const {
    return unknown == RDUnknown::kF ? field : std::vector<double>(grid.size(), F);
  }
  gray_scott::Fields cpu_fields(const std::vector<double>& Fc) const {
    return {Fc.data(), unknown == RDUnknown::kK ? field.data() : nullptr,
            unknown == RDUnknown::kDu ? field.data() : nullptr};
  }
  cuda::GrayScottFields cell_fields() const {
    cuda::GrayScottFields f;
    (unknown == RDUnknown::kF ? f.F : unknown == RDUnknown::kK ? f.k : f.Du) = field.data();
    return f;
  }
  cuda::GrayScottCoefficients coefficients() const { return coefficients_of(grid, rates, F, tau); }
  std::string name() const {
    return std::string(name_of(unknown)) +
           (grid.boundary == gray_scott::Boundary::kPeriodic ? " periodic " : " neumann ") +
           std::to_string(grid.n0) + "x" + std::to_string(grid.n1);
  }
};

}  // namespace nefi::gray_scott_test
