// fk's cuBLAS table on the emulated device: the emulated cuBLAS (cublas.cpp)
// is linked in, so the entry points are its functions, taken directly. It
// stands in for src/fk/cuda/cublas_library.cpp, whose dlopen would find
// CUDA's real library.
#include "fk/cuda/cublas_library.h"

namespace fk::cuda {

const CublasLibrary& cublas_library() {
  static const CublasLibrary lib = [] {
    CublasLibrary l;
#define FK_CUBLAS_EMULATED(member, symbol) l.member = &::symbol;
    FK_CUBLAS_ENTRY_POINTS(FK_CUBLAS_EMULATED)
#undef FK_CUBLAS_EMULATED
    l.path = "emulated";
    return l;
  }();
  return lib;
}

}  // namespace fk::cuda
