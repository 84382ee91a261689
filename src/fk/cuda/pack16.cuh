#pragma once
// Packs for elementwise kernels on flat operands (binary.cu, unary.cu).
#include <cstdint>

namespace fk::cuda::detail {

// Sixteen bytes of T: one vector load or store. Elementwise kernels on flat
// operands take a pack per thread where every operand is 16-byte aligned
// (aligned16; null, an absent operand, counts as aligned): one 4-byte element
// per thread left the f32 add at 0.62 of a device copy's bytes/s on the H200.
template <typename T>
struct alignas(16) Pack16 {
  static constexpr int kN = static_cast<int>(16 / sizeof(T));
  T v[kN];
};
inline bool aligned16(const void* p) {
  return p == nullptr || reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

}  // namespace fk::cuda::detail
