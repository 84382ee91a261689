#pragma once
// The from_forward problem as the Python module holds it (ForwardProblem),
// and the binding of its studies (nefi_byop_studies.cpp): diagnose,
// hessian_spectrum, refine_edges and autotune.
#include <nanobind/nanobind.h>

#include <memory>
#include <mutex>

#include "nefi/byop/auto_problem.h"

namespace fkpy {

namespace nb = nanobind;

// One solve at a time per problem: its solves share the field object (its
// parameters and coordinate caches), so a second thread waits here. The
// lock is taken with the GIL released (the solving thread needs the GIL for
// the model's calls).
// What built it is kept so that autotune can rebuild it with other values.
struct ForwardProblem {
  nefi::AutoProblem ap;
  nefi::OperatorPtr op;
  fk::Dims shape;
  nefi::Measurement measurement;
  nefi::AutoOptions options;
  std::shared_ptr<std::mutex> solving = std::make_shared<std::mutex>();
};

void bind_forward_problem_studies(nb::class_<ForwardProblem>& problem);

}  // namespace fkpy
