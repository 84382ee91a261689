// The fk runtime's process-wide switches from Python: TF32 for fp32 GEMMs on
// CUDA (torch's torch.backends.cuda.matmul.allow_tf32 does not reach fk, whose
// GEMMs are its own cuBLAS calls) and fk's caching allocator (torch's
// torch.cuda.empty_cache frees torch's cache, not fk's); and Ctrl-C during a
// long C++ solve (fk/interrupt.h), which otherwise waited for its end.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <string>

#include "fk/amp.h"
#include "fk/device.h"
#include "fk/interrupt.h"
#include "fk/memory.h"
#include "interrupt.h"

namespace nb = nanobind;

namespace fkpy {
namespace {

// The exception Python's signal handlers raised (KeyboardInterrupt), kept
// from the check to the translator: the solve unwinds between them. Signals
// reach the main thread only, so one is enough.
struct Pending {
#if PY_VERSION_HEX >= 0x030C0000
  PyObject* exc = nullptr;
  void take() {
    exc = PyErr_GetRaisedException();
  }
  bool restore() {
    if (exc == nullptr) return false;
    PyErr_SetRaisedException(exc);
    exc = nullptr;
    return true;
  }
#else
  PyObject *type = nullptr, *value = nullptr, *trace = nullptr;
  void take() {
    PyErr_Fetch(&type, &value, &trace);
  }
  bool restore() {
    if (type == nullptr) return false;
    PyErr_Restore(type, value, trace);
    type = value = trace = nullptr;
    return true;
  }
#endif
} g_pending;

// Signals reach Python's main thread only: a solve on another thread (a
// daemon thread at exit too) does not take the GIL to ask.
unsigned long g_main_thread = 0;

// The solve released the GIL: take it, let Python run its signal handlers.
bool python_interrupt() {
  if (PyThread_get_thread_ident() != g_main_thread || !Py_IsInitialized()) return false;
  nb::gil_scoped_acquire gil;
  if (PyErr_CheckSignals() == 0) return false;
  g_pending.take();
  return true;
}

}  // namespace

void interrupt_with(nb::python_error& e) {
  e.restore();
  g_pending.take();
  throw fk::Interrupted{};
}

void bind_runtime(nb::module_& m) {
  g_main_thread = nb::cast<unsigned long>(
      nb::module_::import_("threading").attr("main_thread")().attr("ident"));
  fk::set_interrupt_check(&python_interrupt);
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const fk::Interrupted&) {
      if (!g_pending.restore()) PyErr_SetNone(PyExc_KeyboardInterrupt);
    }
  });
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
