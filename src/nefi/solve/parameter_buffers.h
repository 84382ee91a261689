#pragma once
// The solver's whole-buffer moves of the trainable parameters: snapshots and
// restores (the NaN guard, restarts, checkpoints), the EMA shadow's update,
// and L-BFGS's flat host vector. Each works on every buffer of a stage in
// order (field first, then operator parameters).
#include <vector>

#include "fk/tensor.h"

namespace nefi::detail {

// Detached copies, on the parameters' devices.
std::vector<fk::Tensor> snapshot(const std::vector<fk::Tensor>& params);
// Copies snap into the parameters in place (their buffers stay).
void restore(std::vector<fk::Tensor>& params, const std::vector<fk::Tensor>& snap);
// shadow <- decay * shadow + (1 - decay) * p, in one pass per buffer (host).
void ema_update(std::vector<fk::Tensor>& shadow, const std::vector<fk::Tensor>& params,
                double decay);
// The parameters (or their gradients, 0 where undefined) as one f64 host vector.
std::vector<double> gather(const std::vector<fk::Tensor>& params, bool grads);
// The inverse of gather(params, false): x written back in place.
void scatter(std::vector<fk::Tensor>& params, const std::vector<double>& x);

}  // namespace nefi::detail
