// fieldkit._core: the native half of the fieldkit package. C++ errors reach
// Python as exceptions carrying the C++ message: fk::Error (bad shape, dtype,
// device, coordinates, config) as fieldkit.Error, a ValueError; anything else
// nanobind's default (std::exception -> RuntimeError).
#include <nanobind/nanobind.h>
#include "fk/error.h"
#include "tensor_bridge.h"

namespace fkpy {
void bind_minkowski(nb::module_& m);
void bind_nefi(nb::module_& m);
void bind_runtime(nb::module_& m);
}  // namespace fkpy

NB_MODULE(_core, m) {
  namespace nb = nanobind;
  // Kernel maps held by autograd graphs still alive at interpreter exit are
  // reclaimed by the OS; nanobind would list each as a leak.
  nb::set_leak_warnings(false);
  nb::exception<fk::Error>(m, "Error", PyExc_ValueError);
  fkpy::bind_tensor(m);
  fkpy::bind_runtime(m);
  fkpy::bind_minkowski(m);
  fkpy::bind_nefi(m);
}
