#pragma once
// What the host (elliptic_solve.cpp) and device (cuda/elliptic_device.cpp)
// elliptic autograd nodes share: the operands they save and the κ gradient.
#include <functional>

#include "fk/autograd.h"
#include "fk/tensor.h"
#include "nefi/operators/elliptic/elliptic_solve.h"

namespace nefi::elliptic {

// t detached and contiguous on its own device: the raw operand a solve reads.
fk::Tensor solve_operand(const fk::Tensor& t);

// scale · a⊙b in κ's shape, summed over the systems when κ is shared.
fk::Tensor kappa_gradient(const fk::Tensor& kappa, const fk::Tensor& a, const fk::Tensor& b,
                          const SolveLayout& L, double scale);

// A node that saves σ, κ (when the solve has one) and the solution u.
struct SavedOperandsNode : fk::autograd::Node {
  fk::autograd::SavedTensor sigma, kappa, u;
  bool has_kappa = false;

  // u detached by the caller: a node holding its own output is a cycle.
  void save(const fk::Tensor& s, const fk::Tensor& k, const fk::Tensor& x) {
    sigma = s;
    has_kappa = k.defined();
    if (has_kappa) kappa = k;
    u = x;
  }
  void for_each_saved(const std::function<void(fk::autograd::SavedTensor&)>& fn) override {
    fn(sigma);
    fn(kappa);
    fn(u);
  }
  struct Operands {
    fk::Tensor sigma, kappa, u;  // kappa undefined without one
  };
  Operands unpack_operands() {
    return {sigma.unpack(name()), has_kappa ? kappa.unpack(name()) : fk::Tensor(),
            u.unpack(name())};
  }
};

}  // namespace nefi::elliptic
