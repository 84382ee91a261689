#pragma once
// What the elliptic instances (eit, darcy_flow, dot3d) share: the solver keys
// and their read, the data solver's options, the curriculum rule "both
// stages at n when n/2 < min_coarse" (nefi.md §6.9), the uniform baseline
// and the support IoU metric.
#include <cstdint>
#include <string>
#include <vector>

#include "fk/tensor.h"
#include "nefi/instances/instance.h"
#include "nefi/operators/elliptic/elliptic_operator.h"
#include "nefi/params.h"

namespace nefi {

// tol, check_every, grad_mode (ift | unrolled | none), warm_start, face_mean
// (harmonic | arithmetic), max_iter, linear_solver (cg | banded), precond
// (jacobi | multigrid).
void declare_elliptic_solver_keys(Params& p, int64_t check_every);
// The defaults of the inversion keys below; eit and darcy_flow take them as
// they are.
struct EllipticInversionDefaults {
  double tv = 1e-5, tv_eps = 1e-3;
  int64_t hidden = 256, depth = 6, skip_at = 3;
  std::vector<double> steps{1000, 3000};
  double lr = 5e-3, anneal_fraction = 0.5;
  int64_t min_coarse = 12;
};
// tv, tv_eps, the MLP keys (hidden, depth, skip_at; activation relu,
// n_octaves 4, out_init_scale 0.1, autocast none), the curriculum keys and
// grid_lr (0.05).
void declare_elliptic_inversion_keys(Params& p, const EllipticInversionDefaults& d = {});
// The inversion operator's options from those keys (boundary and transform
// are the instance's); checked, an error names the key.
EllipticOperatorOptions elliptic_options_from(const Params& p);
// The data generator's options: `inversion`'s boundary and transform, solved
// by the PCG in f64 to 1e-10 checking every iteration (automatic cap, harmonic face
// means, no gradient, no warm start; the inversion's preconditioner) under
// the fidelity tag `data_tag`.
EllipticOperatorOptions elliptic_data_options(EllipticOperatorOptions inversion,
                                              const char* data_tag);
// curriculum_from at n×n, every stage coarser than min_coarse raised to n.
Curriculum elliptic_curriculum(const Params& p, int64_t n, const std::string& lr_key,
                               const std::string& steps_key = "steps");
// IoU of two boolean masks given as 0/1 values (0 when both are empty).
double mask_iou(const std::vector<bool>& a, const std::vector<bool>& b);
// The uniform baseline's output: `value` everywhere on `shape` as the
// primary field `name`, with the operator's prediction; the metrics are left
// to the caller.
void uniform_output(const Operator& op, const std::string& name, double value,
                    const fk::Dims& shape, RunOutput& out);

}  // namespace nefi
