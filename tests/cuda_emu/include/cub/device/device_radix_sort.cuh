#pragma once
// The emulated device's cub::DeviceRadixSort: the one overload fieldkit
// calls (SortPairs, keys and values in separate input and output arrays),
// with CUB's documented semantics. The sort is stable and compares only the
// key bits [begin_bit, end_bit) after CUB's transformation of signed keys
// (the sign bit inverted, so an i32 sort over all 32 bits orders negatives
// first, while a narrower range compares the low bits of the two's
// complement as unsigned); bits outside the range are carried, not compared.
// begin_bit == end_bit copies the pairs in input order (CUB >= 2.1). Inputs
// are not modified; no two of the four arrays may overlap (CUB's rule).
// Scratch follows CUB's two-phase protocol (emulated_temp_storage.h), and the
// work runs in the stream's order (fkemu::submit).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <type_traits>
#include <vector>

#include "cub/detail/emulated_temp_storage.h"
#include "cuda_emu/emulated_device.h"

namespace cub {

struct DeviceRadixSort {
  template <typename KeyT, typename ValueT, typename NumItemsT>
  static cudaError_t SortPairs(void* d_temp_storage, size_t& temp_storage_bytes,
                               const KeyT* d_keys_in, KeyT* d_keys_out, const ValueT* d_values_in,
                               ValueT* d_values_out, NumItemsT num_items, int begin_bit = 0,
                               int end_bit = sizeof(KeyT) * 8, cudaStream_t stream = 0) {
    static_assert(std::is_integral_v<KeyT> && !std::is_same_v<KeyT, bool>,
                  "the emulated radix sort models integer keys only");
    static_assert(std::is_integral_v<NumItemsT>);
    constexpr const char* kCall = "cub::DeviceRadixSort::SortPairs";
    const int64_t n = static_cast<int64_t>(num_items);
    // CUB's alternate key and value buffers, beside the fixed part.
    const size_t required =
        emulated::kFixedScratchBytes +
        static_cast<size_t>(std::max<int64_t>(n, 0)) * (sizeof(KeyT) + sizeof(ValueT));
    if (d_temp_storage == nullptr) {
      temp_storage_bytes = required;
      return cudaSuccess;
    }
    constexpr int kKeyBits = sizeof(KeyT) * 8;
    if (n < 0) return emulated::refuse(kCall, "num_items is negative");
    if (begin_bit < 0 || begin_bit > end_bit || end_bit > kKeyBits)
      return emulated::refuse(kCall, "the bit range is not within the key's bits");
    const size_t key_bytes = static_cast<size_t>(n) * sizeof(KeyT);
    const size_t value_bytes = static_cast<size_t>(n) * sizeof(ValueT);
    const cudaError_t e =
        emulated::check_work_call(kCall, temp_storage_bytes, required,
                                  {{"d_temp_storage", d_temp_storage, temp_storage_bytes},
                                   {"d_keys_in", d_keys_in, key_bytes},
                                   {"d_keys_out", d_keys_out, key_bytes},
                                   {"d_values_in", d_values_in, value_bytes},
                                   {"d_values_out", d_values_out, value_bytes}});
    if (e != cudaSuccess) return e;
    const size_t scratch_bytes = temp_storage_bytes;
    ::fkemu::submit(stream, [=] {
      emulated::scribble(d_temp_storage, scratch_bytes);
      using Bits = std::make_unsigned_t<KeyT>;
      const Bits sign = std::is_signed_v<KeyT> ? Bits(Bits(1) << (kKeyBits - 1)) : Bits(0);
      const int width = end_bit - begin_bit;
      const Bits mask = width == kKeyBits ? Bits(~Bits(0)) : Bits((Bits(1) << width) - 1);
      auto digits = [&](int64_t i) -> Bits {
        if (width == 0) return 0;
        return Bits((static_cast<Bits>(d_keys_in[i]) ^ sign) >> begin_bit) & mask;
      };
      std::vector<int64_t> order(static_cast<size_t>(n));
      std::iota(order.begin(), order.end(), int64_t{0});
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t a, int64_t b) { return digits(a) < digits(b); });
      for (int64_t i = 0; i < n; ++i) {
        d_keys_out[i] = d_keys_in[order[static_cast<size_t>(i)]];
        d_values_out[i] = d_values_in[order[static_cast<size_t>(i)]];
      }
    });
    return cudaSuccess;
  }
};

}  // namespace cub
