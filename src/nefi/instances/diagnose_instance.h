#pragma once
// An instance's inverse problem diagnosed as `nefi diagnose` and Python's
// nefi.diagnose study it: `method`'s problem for the synthetic data of
// cfg.seed, its operator linearized at the field's start (progress 0) or,
// with `solve`, at the raw field a full run of the method reaches (the
// config's solver switches apply). opt.seed is set to cfg.seed, and
// opt.device to where the method's run trains (the config's run.device, else
// NEFI_DEVICE, else the CPU; the CPU for a method whose field has no device
// path): the operator's products run there, and the Hessian's gradients. With
// opt.hessian_k > 0 the training loss's Hessian spectrum at the same
// parameters (annealing done; the first stage's loss weights at the start,
// the last's at the solution) too; its solve then trains the method's own
// problem (the shared solver loop, without an instance's own run steps or
// after-solve steps) so that the field's parameters are at hand.
#include <string>

#include "nefi/diagnostics/diagnose.h"
#include "nefi/instances/instance.h"
#include "nefi/io/run_config.h"

namespace nefi::diagnostics {

Diagnostics diagnose_instance(const Instance& inst, const RunConfig& cfg, const std::string& method,
                              bool solve, DiagnoseOptions opt);

}  // namespace nefi::diagnostics
