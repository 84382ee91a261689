// Opens libcublas at run time (see cublas_library.h).
#include "fk/cuda/cublas_library.h"

#include <cuda_runtime.h>
#include <dlfcn.h>

#include <link.h>

#include <atomic>
#include <mutex>

#include "fk/error.h"
#include "fk/knobs.h"

namespace fk::cuda {
namespace {

Knob kCublasLibrary("FK_CUBLAS_LIBRARY", KnobType::String, "",
                    "CUDA: the libcublas fk opens at its first GEMM (a path or a soname); empty: "
                    "libcublas.so.<major> beside libcudart, then the loader's search",
                    KnobRead::Latched);

const std::string kSoname = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);

// The loader's message, which names the path itself as a rule.
std::string loader_message(const std::string& path) {
  const char* m = dlerror();
  const std::string message = m != nullptr ? m : "no message from the loader";
  return message.find(path) != std::string::npos ? message : path + ": " + message;
}

// The directory of the libcudart this process loaded ("" when none is
// loaded by that name: a static cudart). Asked of the loader by soname, not
// by a symbol's address, which in a non-PIE program is its own PLT stub.
std::string cudart_directory() {
  const std::string soname = "libcudart.so." + std::to_string(CUDART_VERSION / 1000);
  void* h = dlopen(soname.c_str(), RTLD_LAZY | RTLD_NOLOAD);
  if (h == nullptr) return "";
  link_map* map = nullptr;
  std::string dir;
  if (dlinfo(h, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr) {
    const std::string path = map->l_name;
    const size_t slash = path.rfind('/');
    if (slash != std::string::npos) dir = path.substr(0, slash + 1);
  }
  dlclose(h);  // drops only the reference NOLOAD took
  return dir;
}

}  // namespace

std::vector<std::string> cublas_library_candidates() {
  const std::string chosen = kCublasLibrary.as_string();
  if (!chosen.empty()) return {chosen};
  std::vector<std::string> out;
  if (const std::string dir = cudart_directory(); !dir.empty()) out.push_back(dir + kSoname);
  out.push_back(kSoname);
  return out;
}

CublasLibrary open_cublas_library(const std::string& path) {
  // RTLD_LOCAL: its symbols stay out of the global scope (no other library
  // binds to them by accident). A library that serves is never closed:
  // handles made from it live until exit.
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) throw Error("cuBLAS", "a libcublas that opens", loader_message(path));
  CublasLibrary out;
  out.path = path;
#define FK_CUBLAS_RESOLVE(member, symbol)                                                      \
  dlerror();                                                                                   \
  out.member = reinterpret_cast<decltype(out.member)>(dlsym(lib, #symbol));                    \
  if (out.member == nullptr) {                                                                 \
    Error missing(                                                                             \
        "cuBLAS",                                                                              \
        "a libcublas exporting " #symbol " (cuBLAS " + std::to_string(CUBLAS_VER_MAJOR) + ")", \
        loader_message(path));                                                                 \
    dlclose(lib);                                                                              \
    throw missing;                                                                             \
  }
  FK_CUBLAS_ENTRY_POINTS(FK_CUBLAS_RESOLVE)
#undef FK_CUBLAS_RESOLVE
  return out;
}

const CublasLibrary& cublas_library() {
  static std::atomic<const CublasLibrary*> ready{nullptr};
  if (const CublasLibrary* lib = ready.load(std::memory_order_acquire)) return *lib;
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  if (const CublasLibrary* lib = ready.load(std::memory_order_relaxed)) return *lib;
  std::string tried;
  for (const std::string& path : cublas_library_candidates()) {
    try {
      // Never freed: a GEMM or a handle's release in another thread or a
      // static destructor may still read it at exit.
      const auto* lib = new CublasLibrary(open_cublas_library(path));
      ready.store(lib, std::memory_order_release);
      return *lib;
    } catch (const Error& e) {
      tried += (tried.empty() ? "" : "; ") + e.given();
    }
  }
  throw Error("cuBLAS",
              "a libcublas that opens (FK_CUBLAS_LIBRARY when set, else " + kSoname +
                  " beside libcudart, else by the loader's search)",
              tried);
}

}  // namespace fk::cuda
