#pragma once
// Prior terms of the caller's own (the reference's register_prior): a
// penalty P(x) of one field, brought as a host function that gives its
// value and gradient, registered under a name the prior text then uses like
// a built-in penalty: "nonnegative + my_term(0.5)". It is weighed as tv and
// smooth are (strength x the data term at the noise floor / its value on a
// 25-step probe), so P should be >= 0 and grow with what it penalizes.
// Registration is process-wide (a name stays until unregistered) and
// thread safe; a solve keeps the term it was built with.
//
// The function runs on a host f64 copy of the field every step, so a step
// through it syncs a device field to the host (it runs, but is never
// captured as a CUDA graph).
#include <functional>
#include <string>
#include <vector>

#include "fk/tensor.h"
#include "nefi/losses/loss.h"

namespace nefi {

// x: the field, f64, contiguous, on the CPU -> P(x); writes dP/dx (x's
// shape, any real dtype) to *grad when grad is not null.
using PenaltyFunction = std::function<double(const fk::Tensor& x, fk::Tensor* grad)>;

// name: lower-case letters, digits and '_', starting with a letter, not a
// built-in term's name. Registering a name again replaces its function.
void register_prior_term(const std::string& name, PenaltyFunction f);
// Whether it was registered (and is now gone).
bool unregister_prior_term(const std::string& name);
bool is_registered_prior_term(const std::string& name);
std::vector<std::string> registered_prior_terms();

// The registered term `term` on field `field` as a loss named `name`: its
// value differentiable in the field through the function's gradient. A
// non-finite value or a gradient of the wrong size is an fk::Error naming
// the term. Throws when `term` is not registered.
LossPtr custom_penalty_loss(const std::string& term, const std::string& field,
                            const std::string& name);

}  // namespace nefi
