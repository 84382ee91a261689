// fieldkit._core.nefi: filled in by the nefi slice.
#include "tensor_bridge.h"

namespace fkpy {
void bind_nefi(nb::module_& parent) {
  parent.def_submodule("nefi", "nefi's inverse solvers, on fk");
}
}  // namespace fkpy
