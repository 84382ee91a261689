#include "nefi/instances/diagnose_instance.h"

#include <optional>

#include "fk/autograd.h"
#include "fk/error.h"
#include "nefi/instances/run_method.h"

namespace nefi::diagnostics {

Diagnostics diagnose_instance(const Instance& inst, const RunConfig& cfg, const std::string& method,
                              bool solve, DiagnoseOptions opt) {
  FK_CHECK(cfg.data.empty(), "run.data",
           "no measured dataset (diagnose studies the instance's synthetic data; a run solves a "
           "measured one)",
           "'" + cfg.data + "'");
  opt.seed = cfg.seed;
  FK_CHECK(opt.hessian_k == 0 ||
               (opt.hessian_k > 0 && opt.hessian_iter >= opt.hessian_k && opt.hessian_iter <= 1000),
           "diagnose --hessian / --hessian-iter", "K >= 0 and K <= Lanczos steps <= 1000",
           fk::to_text(opt.hessian_k) + " and " + fk::to_text(opt.hessian_iter));
  std::optional<ProblemSetup> s = inst.setup(cfg.config, method, cfg.seed);
  FK_CHECK(s.has_value(), "diagnose method (--method)",
           "an instance and method that expose their inverse problem (a solver-loop method)",
           cfg.instance + " " + method + " does not");
  const InverseProblem& prob = s->problem;
  // The products where the method's run trains (a field without a device
  // path trains a method other than the instance's own on the CPU).
  opt.device = method_options(inst, method, *prob.field, solver_options(cfg)).device;
  fk::Tensor x;
  {
    fk::autograd::NoGradGuard ng;
    x = prob.field->forward(prob.domain, 0.0).at(prob.field->primary()).detach();
  }
  check_diagnose_options(opt, x.numel());  // before a solve that would be thrown away
  std::string at = "initialization";
  if (solve) {
    RunOutput out;
    if (opt.hessian_k > 0) {  // the setup's own field trained: the Hessian's parameters
      out = start_run_output(method, s->measurement, s->gt);
      solve_and_record(s->problem, s->curriculum, cfg.seed,
                       method_options(inst, method, *prob.field, solver_options(cfg)), out);
    } else {
      out = inst.run(cfg.config, method, cfg.seed, solver_options(cfg));
    }
    const auto raw = out.result.raw_fields.find(prob.field->primary());
    FK_CHECK(raw != out.result.raw_fields.end() && raw->second.shape() == x.shape(),
             "diagnose at the solution (--solve)",
             "the solved field at the grid " + x.shape().str(),
             raw == out.result.raw_fields.end() ? "none" : raw->second.shape().str());
    x = raw->second.to(x.dtype());
    at = "the solution (" + std::to_string(out.result.total_steps()) + " steps)";
  }
  Diagnostics d = diagnose(*prob.op, x, prob.measurement, opt);
  if (opt.hessian_k > 0 && !s->curriculum.stages.empty()) {
    // The loss its stage trains there: the first stage's weights at the
    // start, the last's at the solution.
    InverseProblem hp = prob;
    hp.losses = prob.losses.with_weights(solve ? s->curriculum.stages.back().loss_weights
                                               : s->curriculum.stages.front().loss_weights);
    d.hessian = hessian_spectrum(hp, opt.hessian_k, opt.hessian_iter, opt.seed, opt.device);
  }
  d.instance = cfg.instance;
  d.method = method;
  d.seed = cfg.seed;
  d.at = at;
  return d;
}

}  // namespace nefi::diagnostics
