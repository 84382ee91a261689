#pragma once
// batch_invert's internals shared by its CPU loop (batch.cpp), its checks
// (batch_check.cpp) and its device loop (batch_device.cpp).
#include <optional>
#include <string>
#include <vector>

#include "nefi/solve/batch.h"

namespace nefi::detail {

// True when every set matches sets[0] term by term: the same loss names,
// zero weights in the same places, and the same batched loss wherever a
// weight is non-zero; `masked[b]`: problem b's measurement has a mask (all
// or none must). Non-zero weights may differ: they become row weights
// (term_row_weights).
bool loss_sets_match(const std::vector<const LossSet*>& sets, const std::vector<char>& masked);

// Term i's weight for each set, [i][b] (matching sets: loss_sets_match).
std::vector<std::vector<double>> term_row_weights(const std::vector<const LossSet*>& sets);

// The device loop (batch.h's header comment); batch_device_reason already
// passed. With options.device the CPU it runs the same loop on host tensors
// (the CPU batch's f64 gradient norms and adam_update): the tests check the
// loop's bookkeeping against the CPU batch where no GPU is.
std::vector<Result> batch_invert_device(std::vector<InverseProblem>& problems,
                                        const Curriculum& curriculum, const BatchOptions& options);

}  // namespace nefi::detail
