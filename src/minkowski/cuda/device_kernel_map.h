#pragma once
// Kernel maps built on a CUDA device (CUDA builds only: minkowski_cuda).
//
// build_device_kernel_map(in, out, offsets, device) finds the same pairs as
// build_kernel_map (kernel_map.h) in the same order, on the device:
//   1. both maps' coordinates are packed into 64-bit keys of
//      kernel_map_key_layout (each axis padded by the kernel's reach, so a
//      neighbour's key is out_key + delta(offset), no bounds checks);
//   2. the input keys go into an open-addressing hash table (2-4 slots per
//      key, linear probing; a key inserted twice keeps its first row);
//   3. the output rows are radix-sorted by key (the CPU build's pair order);
//   4. one thread per (offset, output) looks its neighbour up; an exclusive
//      scan of the hits in (offset, output key) order gives every pair its
//      place, so pairs are written without atomics.
// The result is bitwise the CPU map's (offset_begin, in_rows, out_rows), by
// construction and whatever the thread scheduling. by_out / by_in are CSRs of
// pair ids per output / input row, each row's pairs ascending (offset order),
// built by a stable sort; the deterministic scatter walks them.
//
// Limits (fk::Error otherwise): D <= 7 and keys of at most 63 bits (the
// CPU's 128-bit keys are not ported), fewer than 2^31 input and output rows,
// offset count x output rows < 2^31.
// The CoordinateMap overload uploads the maps' coordinates per build; the
// tensor overload takes coordinates already on the device (what
// device_coordinates.h's maps hold).
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "fk/tensor.h"
#include "minkowski/coords/coordinate_map.h"
#include "minkowski/coords/kernel_map.h"

namespace minkowski::cuda {

struct DeviceRowIndex {
  fk::Tensor begin;  // i32 (rows + 1), on the device
  fk::Tensor pair;   // i32 (pairs): pair ids grouped by row, ascending within a row
};

struct DeviceRowMasks;  // implicit_conv.h
// The implicit-GEMM convolution's per-row offset masks and mask order, per
// row index (by_out, by_in), made on first use.
struct DeviceRowMaskCache {
  std::mutex mu;
  std::shared_ptr<const DeviceRowMasks> by_out, by_in;
};

struct DeviceKernelMap {
  int device = 0;
  int64_t volume = 0, in_size = 0, out_size = 0;
  std::vector<int64_t> offset_begin;  // host copy, volume + 1
  fk::Tensor in_rows, out_rows;       // i32 (pairs), on the device, offset order
  DeviceRowIndex by_out, by_in;
  // Shared by copies of the map (a built map never changes); a copy that
  // changes its pairs or indices (cuda::transposed) takes a cache of its own.
  std::shared_ptr<DeviceRowMaskCache> row_masks = std::make_shared<DeviceRowMaskCache>();

  int64_t pairs() const { return offset_begin.empty() ? 0 : offset_begin.back(); }
  int64_t count(int64_t k) const { return offset_begin[k + 1] - offset_begin[k]; }
  // The map on the host: its pairs fetched from this map on their first host
  // read (pair_rows.h), its row indices built there on first use.
  std::shared_ptr<KernelMap> to_host() const;
};

DeviceKernelMap build_device_kernel_map(const CoordinateMap& in, const CoordinateMap& out,
                                        const std::vector<int32_t>& offsets, int device = 0);
// The same from the maps' rows on `device` (contiguous i32, n x (1 + D)
// each) and the layout kernel_map_key_layout gives for the maps they are.
DeviceKernelMap build_device_kernel_map(const fk::Tensor& in_coords, const fk::Tensor& out_coords,
                                        const KernelMapKeyLayout& layout,
                                        const std::vector<int32_t>& offsets, int device);

// The adjoint map: inputs and outputs (and their row indices) swapped, pairs
// in the same order: KernelMap::transposed() on the device. Shares the
// device arrays; no device work.
DeviceKernelMap transposed(const DeviceKernelMap& map);

// A map built on the host, uploaded (pairs and both row indices, built on the device).
DeviceKernelMap upload_kernel_map(const KernelMap& map, int device = 0);

// The host map's upload to `device`, made on first use and kept with the map
// (KernelMap::device_copy), so every op on the map shares one copy; the
// reference lives as long as the map.
const DeviceKernelMap& device_copy_of(const KernelMap& map, int device);

// The hash table alone, for tests: rows of `coords` (n x width, on the host)
// inserted under `layout`'s keys, then `queries` (m x width) looked up: the
// map row of each query (first occurrence), or -1.
std::vector<int32_t> device_hash_lookup(const std::vector<int32_t>& coords,
                                        const std::vector<int32_t>& queries, int width,
                                        const KernelMapKeyLayout& layout, int device = 0);

}  // namespace minkowski::cuda
