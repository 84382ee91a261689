#pragma once
// The device side of kernels.h's HashTable: the slot hash and the probe of a
// lookup, shared by the kernel-map kernels (hash_map.cu) and the coordinate
// kernels (coordinates.cu).
#include <cstdint>

#include "minkowski/cuda/kernels.h"

namespace minkowski::cuda {

// MurmurHash3's 64-bit finalizer: every key bit reaches every slot bit.
__device__ inline uint64_t hash_slot_mix(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdull;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ull;
  k ^= k >> 33;
  return k;
}

// The value of `key`, or -1: linear probing up to the first empty slot. kEmptyKey
// itself is never stored (a coordinate packed out of its layout's range can
// read as it) and would otherwise match the first empty slot.
__device__ inline int32_t hash_find(const HashTable& t, uint64_t key) {
  if (key == kEmptyKey) return -1;
  const uint64_t mask = static_cast<uint64_t>(t.capacity) - 1;
  for (uint64_t s = hash_slot_mix(key) & mask;; s = (s + 1) & mask) {
    const uint64_t seen = t.keys[s];
    if (seen == key) return t.values[s];
    if (seen == kEmptyKey) return -1;
  }
}

}  // namespace minkowski::cuda
