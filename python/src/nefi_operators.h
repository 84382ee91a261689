#pragma once
// fieldkit._core.nefi.Operator: one of nefi's built-in forward models
// (operators/sampling.h, operators/intensity.h) held for Python, which
// from_forward hands to the solve as it is: no Python call per step.
#include <nanobind/nanobind.h>

#include "nefi/operators/operator.h"

namespace fkpy {

namespace nb = nanobind;

struct NativeOperator {
  nefi::OperatorPtr op;
};

// Binds the Operator class and its factories (sampling_operator, ...).
void bind_nefi_operators(nb::module_& m);

}  // namespace fkpy
