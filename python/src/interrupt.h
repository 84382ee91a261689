#pragma once
// Ctrl-C through a Python model called from a C++ solve: the model call
// raised KeyboardInterrupt (or SystemExit). Kept for the translator that
// raises it where the call returns to Python (runtime_bindings.cpp), the
// solve unwinds as fk::Interrupted, which no catch of errors takes for a
// failed pilot or row (nb::python_error is a std::exception: autotune's
// pilots caught it and went on). The GIL must be held.
#include <nanobind/nanobind.h>

namespace fkpy {

[[noreturn]] void interrupt_with(nanobind::python_error& e);

}  // namespace fkpy
