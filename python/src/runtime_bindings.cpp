// The fk runtime's process-wide switches from Python: TF32 for fp32 GEMMs on
// CUDA (torch's torch.backends.cuda.matmul.allow_tf32 does not reach fk, whose
// GEMMs are its own cuBLAS calls) and fk's caching allocator (torch's
// torch.cuda.empty_cache frees torch's cache, not fk's).
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <string>

#include "fk/amp.h"
#include "fk/device.h"
#include "fk/memory.h"

namespace nb = nanobind;

namespace fkpy {

void bind_runtime(nb::module_& m) {
  m.def("set_allow_tf32", &fk::amp::set_allow_tf32, nb::arg("allow"));
  m.def("allow_tf32", &fk::amp::allow_tf32);
  m.def(
      "empty_cache",
      [](const std::string& device) {
        const fk::Device d = fk::parse_device(device);
        fk::check_usable(d, "fieldkit.empty_cache device");
        nb::gil_scoped_release unlocked;
        fk::empty_cache(d);
      },
      nb::arg("device"));
  m.def(
      "memory_stats",
      [](const std::string& device) {
        const fk::Device dev = fk::parse_device(device);
        fk::check_usable(dev, "fieldkit.memory_stats device");
        const fk::MemoryStats s = fk::memory_stats(dev);
        nb::dict d;
        d["allocated"] = s.allocated;
        d["peak"] = s.peak;
        d["reserved"] = s.reserved;
        d["num_allocs"] = s.num_allocs;
        d["cache_hits"] = s.cache_hits;
        return d;
      },
      nb::arg("device"));
}

}  // namespace fkpy
