#pragma once
// The emulated device's cub::DeviceScan: the one overload fieldkit calls
// (ExclusiveSum from one array into another), with CUB's documented
// semantics: out[0] = 0, out[i] = in[0] + ... + in[i-1], summed in the input's
// type (integers wrap, as the device's adds do). d_in == d_out scans in
// place; any other overlap between them is refused (CUB's rule). Scratch
// follows CUB's two-phase protocol (emulated_temp_storage.h), and the work
// runs in the stream's order (fkemu::submit).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <type_traits>

#include "cub/detail/emulated_temp_storage.h"
#include "cuda_emu/emulated_device.h"

namespace cub {

struct DeviceScan {
  template <typename InputIteratorT, typename OutputIteratorT, typename NumItemsT>
  static cudaError_t ExclusiveSum(void* d_temp_storage, size_t& temp_storage_bytes,
                                  InputIteratorT d_in, OutputIteratorT d_out, NumItemsT num_items,
                                  cudaStream_t stream = 0) {
    using T = typename std::iterator_traits<InputIteratorT>::value_type;
    static_assert(std::is_pointer_v<InputIteratorT> && std::is_pointer_v<OutputIteratorT>,
                  "the emulated scan models device pointers only");
    static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>,
                  "the emulated scan models integer sums only");
    static_assert(std::is_integral_v<NumItemsT>);
    constexpr const char* kCall = "cub::DeviceScan::ExclusiveSum";
    const int64_t n = static_cast<int64_t>(num_items);
    // CUB's tile descriptors (one per 128 items on the device), grown per item
    // here so that a caller sizing its scratch for fewer items is caught.
    const size_t required =
        emulated::kFixedScratchBytes + static_cast<size_t>(std::max<int64_t>(n, 0)) * sizeof(T);
    if (d_temp_storage == nullptr) {
      temp_storage_bytes = required;
      return cudaSuccess;
    }
    if (n < 0) return emulated::refuse(kCall, "num_items is negative");
    using Out = std::remove_cv_t<std::remove_pointer_t<OutputIteratorT>>;
    const size_t in_bytes = static_cast<size_t>(n) * sizeof(T);
    const size_t out_bytes = static_cast<size_t>(n) * sizeof(Out);
    const bool in_place = static_cast<const void*>(d_in) == static_cast<const void*>(d_out);
    const cudaError_t e = emulated::check_work_call(
        kCall, temp_storage_bytes, required,
        {{"d_temp_storage", d_temp_storage, temp_storage_bytes},
         {"d_in", d_in, in_bytes},
         {"d_out", d_out, in_place ? 0 : out_bytes}});  // in place: d_in's range
    if (e != cudaSuccess) return e;
    const size_t scratch_bytes = temp_storage_bytes;
    ::fkemu::submit(stream, [=] {
      emulated::scribble(d_temp_storage, scratch_bytes);
      using Wrapping = std::make_unsigned_t<T>;
      Wrapping sum = 0;
      for (int64_t i = 0; i < n; ++i) {
        const T v = d_in[i];  // read before the write: d_in may be d_out
        d_out[i] = static_cast<T>(sum);
        sum = static_cast<Wrapping>(sum + static_cast<Wrapping>(v));
      }
    });
    return cudaSuccess;
  }
};

}  // namespace cub
