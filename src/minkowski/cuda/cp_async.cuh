#pragma once
// cp.async (sm_80 and newer, PTX ISA "cp.async"): 16-byte copies from global
// to shared memory that proceed while the thread computes, committed in
// groups and awaited by how many groups may stay pending. Device code only.
// Included by its bare name from the .cu beside it: the emulated device's
// rewritten copy, elsewhere, finds tests/cuda_emu/include/cp_async.cuh, its
// stand-in, instead.

namespace minkowski::cuda {

__device__ inline void copy_16_bytes(void* shared, const void* global, bool present) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(shared));
  // src-size 0 reads nothing and fills the 16 bytes with zeros.
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(global),
               "r"(present ? 16 : 0));
}
__device__ inline void commit_copies() {
  asm volatile("cp.async.commit_group;\n" ::);
}
template <int kPending>
__device__ inline void wait_copies() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}

}  // namespace minkowski::cuda
