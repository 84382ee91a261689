// CPU-only builds: FusedOptimizer cannot step parameters on a CUDA device.
#include "fk/error.h"
#include "nefi/solve/adam_device.h"

namespace nefi {
namespace {

[[noreturn]] void refuse(const fk::Tensor& t) {
  throw fk::Error("nefi::FusedOptimizer", "parameters on the CPU (this build has no CUDA backend)",
                  t.device().str());
}

}  // namespace

double device_grad_sq_sum(const std::vector<fk::Tensor>& grads) {
  for (const fk::Tensor& g : grads)
    if (g.defined()) refuse(g);
  return 0;
}

void adam_update_device(fk::Tensor& p, const fk::Tensor&, fk::Tensor&, fk::Tensor&, double, double,
                        const OptimizerOptions&, int64_t) {
  refuse(p);
}

void enqueue_grad_sq_sum(const std::vector<fk::Tensor>& grads, double*) {
  for (const fk::Tensor& g : grads)
    if (g.defined()) refuse(g);
}

void adam_update_device_gated(fk::Tensor& p, const fk::Tensor&, fk::Tensor&, fk::Tensor&,
                              const double*) {
  refuse(p);
}

void enqueue_gather_scalars(const std::vector<fk::Tensor>& scalars, double*) {
  for (const fk::Tensor& s : scalars)
    if (s.defined()) refuse(s);
}

}  // namespace nefi
