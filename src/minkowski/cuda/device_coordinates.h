#pragma once
// Coordinate maps built on a CUDA device from device coordinates: the
// deduplication of inserted rows (with the inverse map), strided
// downsampling, the expansion of a generative transposed convolution, lookups,
// and kernel maps between such maps. CPU-only builds compile stubs that throw
// fk::Error (device_coordinates_stub.cpp).
//
// Contract: every map equals, row for row, the CoordinateMap the CPU builds
// from the same rows in the same row order (coordinate_map.h), and every
// kernel map equals build_kernel_map's on those maps bit for bit (offset
// ranges, then pairs in order); so do unique_rows and inverse. Nothing depends
// on thread scheduling, so there is no separate deterministic mode: the
// results are the same run to run and on any GPU.
//
// How the row order is kept (unique_coordinates):
//   1. each row is packed into a 63-bit key of the CPU packer's layout (per
//      column the bits of its extent, the batch on top: key order is
//      lexicographic row order);
//   2. (key, input row) pairs are radix-sorted, stably: in each run of equal
//      keys the first occurrence comes first;
//   3. run heads are flagged and scanned: run r's first input row, and the
//      run of every input row;
//   4. kKeys order: map row = run (ascending keys). kFirstOccurrence order:
//      the input rows that open their run are flagged and scanned in input
//      order; map row = that scan, i.e. first occurrences in input order;
//   5. the map's coordinates are gathered from those input rows, and its
//      keys go into a hash table (key -> map row) for lookups.
// Limits (fk::Error otherwise): D <= 7, keys of at most 63 bits (the CPU's
// 128-bit keys are not ported: 3-D rows spanning fewer than 2^20 values per
// axis in up to 8 batches fit, 20 + 20 + 20 + 3 bits), fewer than 2^31 rows.
#include <cstdint>
#include <vector>

#include "fk/tensor.h"
#include "minkowski/coords/coordinate_map.h"
#include "minkowski/cuda/device_kernel_map.h"

namespace minkowski::cuda {

struct DeviceCoordinateMap {
  int device = 0;
  int width = 0;  // 1 + D
  int64_t size = 0;
  std::vector<int32_t> tensor_stride;  // D values
  fk::Tensor coordinates;              // i32 size x width on the device, the CPU map's row order
  std::vector<int32_t> lo, hi;         // per column bounds (0 and 0 when empty), as its packer's
  // The index: an open-addressing table (kernels.h's HashTable) of the rows'
  // packed keys, value = map row.
  fk::Tensor table_keys, table_values;

  int dimension() const { return width - 1; }
};

struct DeviceUnique {
  DeviceCoordinateMap map;
  fk::Tensor unique_rows;  // i32 (map.size), on the device: input row of each map row
  fk::Tensor inverse;      // i32 (rows inserted): map row of each input row
};

// The map of `coordinates` (N x (1 + D) int32 on a CUDA device; any int32
// values), duplicates kept at their first occurrence, rows in `order`:
// CoordinateMap(rows, N, 1 + D, ts, &unique_rows, &inverse, order) on the
// device. tensor_stride: 1 or D positive values (recorded, not checked
// against the coordinates).
DeviceUnique unique_coordinates(const fk::Tensor& coordinates,
                                const std::vector<int32_t>& tensor_stride,
                                RowOrder order = RowOrder::kFirstOccurrence);

// The map with tensor stride ts * stride (stride: 1 or D positive values,
// ts * stride <= 2^30) of floor(c / (ts * stride)) * (ts * stride) for every
// row c of `in`, the batch kept: CoordinateManager::stride's map (rows in
// kKeys order) by default. All-ones strides return `in`. A floored
// coordinate below int32 is an fk::Error.
DeviceCoordinateMap stride_coordinates(const DeviceCoordinateMap& in,
                                       const std::vector<int32_t>& stride,
                                       RowOrder order = RowOrder::kKeys);

// The map at tensor stride out_ts (1 or D values) of c + offset_k for every
// row c of `in` (in row order) and every offset k of `offsets` (K x D,
// already scaled), first occurrences kept: CoordinateManager::expand's map
// for offsets = region.offsets(out_ts). A coordinate leaving int32 is an
// fk::Error.
DeviceCoordinateMap expand_coordinates(const DeviceCoordinateMap& in,
                                       const std::vector<int32_t>& offsets,
                                       const std::vector<int32_t>& out_ts);

// The map row of every row of `queries` (Q x (1 + D) int32 on the map's
// device), or -1: i32 (Q) on the device. CoordinateMap::find on the device.
fk::Tensor lookup_coordinates(const DeviceCoordinateMap& map, const fk::Tensor& queries);

// build_kernel_map(in, out, offsets) between device maps, on their device
// (offsets K x D, already scaled: KernelRegion::offsets of the finer map's
// tensor stride). Submanifold (out = in), strided (out =
// stride_coordinates(in)) and, through transposed() (device_kernel_map.h),
// transposed (the forward map fine -> coarse, swapped) and generative
// transposed maps (out = expand_coordinates(in), forward map out -> in,
// swapped), as the CoordinateManager composes them.
DeviceKernelMap build_device_kernel_map(const DeviceCoordinateMap& in,
                                        const DeviceCoordinateMap& out,
                                        const std::vector<int32_t>& offsets);

}  // namespace minkowski::cuda
