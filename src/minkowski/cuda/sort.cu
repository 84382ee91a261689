// Radix sorts and scans through CUB: the one translation unit that includes
// it (CUB headers cost seconds of nvcc time per file). Scratch comes from
// cudaMallocAsync on the caller's stream and is freed there.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include "fk/cuda/common.cuh"
#include "minkowski/cuda/kernels.h"

namespace minkowski::cuda {

namespace {

using fk::cuda::detail::as_stream;
using fk::cuda::detail::check_cuda;

// Runs a CUB call twice: the size query, then the work on stream-ordered scratch.
template <typename Call>
void with_scratch(void* stream, const char* where, Call&& call) {
  size_t bytes = 0;
  check_cuda(call(nullptr, bytes), where);
  void* scratch = nullptr;
  check_cuda(cudaMallocAsync(&scratch, bytes > 0 ? bytes : 1, as_stream(stream)), where);
  cudaError_t e = call(scratch, bytes);
  cudaError_t f = cudaFreeAsync(scratch, as_stream(stream));
  check_cuda(e, where);
  check_cuda(f, where);
}

int checked_count(int64_t n, const char* where) {
  FK_CHECK(n >= 0 && n < (int64_t{1} << 31), where, "fewer than 2^31 items",
           fk::to_text(n) + " items");
  return static_cast<int>(n);
}

template <typename Key>
void check_bits(int bits, const char* where) {
  constexpr int kWidth = sizeof(Key) * 8;
  FK_CHECK(bits >= 0 && bits <= kWidth, where, "0.." + fk::to_text(kWidth) + " key bits",
           fk::to_text(bits));
}

// No key bit to compare: the pairs in input order. Copied rather than sorted
// with begin_bit == end_bit, which CUB before 2.1 answered by writing nothing.
template <typename Key>
void copy_pairs(const Key* keys, const int32_t* values, Key* keys_out, int32_t* values_out, int m,
                void* stream, const char* where) {
  check_cuda(
      cudaMemcpyAsync(keys_out, keys, sizeof(Key) * m, cudaMemcpyDeviceToDevice, as_stream(stream)),
      where);
  check_cuda(cudaMemcpyAsync(values_out, values, sizeof(int32_t) * m, cudaMemcpyDeviceToDevice,
                             as_stream(stream)),
             where);
}

}  // namespace

void sort_pairs_u64(const uint64_t* keys, const int32_t* values, uint64_t* keys_out,
                    int32_t* values_out, int64_t n, int bits, void* stream) {
  const char* where = "minkowski::cuda::sort_pairs_u64";
  const int m = checked_count(n, where);
  check_bits<uint64_t>(bits, where);
  if (m == 0) return;
  if (bits == 0) return copy_pairs(keys, values, keys_out, values_out, m, stream, where);
  with_scratch(stream, where, [&](void* scratch, size_t& bytes) {
    return cub::DeviceRadixSort::SortPairs(scratch, bytes, keys, keys_out, values, values_out, m, 0,
                                           bits, as_stream(stream));
  });
}

void sort_pairs_i32(const int32_t* keys, const int32_t* values, int32_t* keys_out,
                    int32_t* values_out, int64_t n, int bits, void* stream) {
  const char* where = "minkowski::cuda::sort_pairs_i32";
  const int m = checked_count(n, where);
  check_bits<int32_t>(bits, where);
  if (m == 0) return;
  if (bits == 0) return copy_pairs(keys, values, keys_out, values_out, m, stream, where);
  with_scratch(stream, where, [&](void* scratch, size_t& bytes) {
    return cub::DeviceRadixSort::SortPairs(scratch, bytes, keys, keys_out, values, values_out, m, 0,
                                           bits, as_stream(stream));
  });
}

void exclusive_sum_i32(const int32_t* in, int32_t* out, int64_t n, void* stream) {
  const char* where = "minkowski::cuda::exclusive_sum_i32";
  const int m = checked_count(n, where);
  if (m == 0) return;
  with_scratch(stream, where, [&](void* scratch, size_t& bytes) {
    return cub::DeviceScan::ExclusiveSum(scratch, bytes, in, out, m, as_stream(stream));
  });
}

}  // namespace minkowski::cuda
