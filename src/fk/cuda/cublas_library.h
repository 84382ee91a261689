#pragma once
// cuBLAS, opened at the first GEMM on a device rather than linked. A linked
// libcublas runs libcublasLt's static initialisers in every process that
// loads fk, GPU or not: about 70 ms and 210 MB of resident memory before
// main. Every CPU test process paid that at start, and so did each
// `import fieldkit`. The entry points fk calls are looked up by name in the
// library the compiled-in headers describe (libcublas.so.<CUBLAS_VER_MAJOR>).
// The emulated device supplies the same table from its own cuBLAS
// (tests/cuda_emu/libraries/cublas_library.cpp).
#include <cublas_v2.h>

#include <string>
#include <vector>

namespace fk::cuda {

// (member, exported symbol): the cuBLAS calls fk makes. cublas_v2.h's macros
// map cublasCreate and friends to their _v2 symbols, which are what the
// library exports.
#define FK_CUBLAS_ENTRY_POINTS(X)                        \
  X(create, cublasCreate_v2)                             \
  X(destroy, cublasDestroy_v2)                           \
  X(set_stream, cublasSetStream_v2)                      \
  X(set_workspace, cublasSetWorkspace_v2)                \
  X(set_math_mode, cublasSetMathMode)                    \
  X(status_name, cublasGetStatusName)                    \
  X(status_string, cublasGetStatusString)                \
  X(gemm, cublasGemmEx_64)                               \
  X(gemm_strided_batched, cublasGemmStridedBatchedEx_64) \
  X(gemm_grouped_batched, cublasGemmGroupedBatchedEx_64)

struct CublasLibrary {
#define FK_CUBLAS_MEMBER(member, symbol) decltype(&::symbol) member = nullptr;
  FK_CUBLAS_ENTRY_POINTS(FK_CUBLAS_MEMBER)
#undef FK_CUBLAS_MEMBER
  std::string path;  // what it was opened as
};

// The places cublas_library() tries, in order: FK_CUBLAS_LIBRARY when set,
// else libcublas.so.<major> in libcudart's directory, then the bare soname
// (the loader's search: LD_LIBRARY_PATH, the caller's runpath, ld.so.cache).
std::vector<std::string> cublas_library_candidates();

// Opens `path` and resolves every entry point, uncached (the library itself
// stays loaded). Throws fk::Error naming the path and the loader's message
// when it cannot be opened or lacks an entry point.
CublasLibrary open_cublas_library(const std::string& path);

// The library every GEMM goes through, opened once, thread-safely, from the
// first candidate that opens. Throws fk::Error listing each candidate and why
// it failed (a failure is not cached: the next call tries again).
const CublasLibrary& cublas_library();

}  // namespace fk::cuda
