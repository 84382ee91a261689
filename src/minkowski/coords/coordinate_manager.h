#pragma once
// CoordinateManager: owns the coordinate maps of one sparse-tensor graph, keyed
// by (tensor stride, tag), and caches the kernel maps between them, keyed by
// (input map, output map, kernel region incl. sizes and dilation, direction;
// the stride is implied by the two maps' tensor strides). Everything lives as
// long as the manager (shared by the SparseTensors that use it) or until
// clear(). Thread-safe (one mutex); D >= 1.
//
// Coordinates on a CUDA device (insert of a device tensor) make a map that
// lives on both sides: the device map (cuda/device_coordinates.h, built there
// from the device rows) and the host CoordinateMap, which stays the canonical
// object every CPU op and size()/coordinates() read. What crosses, and when:
//   - insert: the unique rows are built on the device, then downloaded once
//     (M x (1+D) int32) with unique_rows and inverse (M + N int32, which
//     Inserted and SparseTensor hand out as host vectors); the host map is
//     built from those unique rows (same rows, same order), and the stride
//     multiples and coordinate range are checked on them;
//   - stride / expand of a device map: built on the device, its rows
//     downloaded once for the host map;
//   - kernel_map between two device maps of one device: built on the device
//     and cached; its host KernelMap has the sizes the ops read, and its
//     pairs are downloaded only when host code first reads them (a CPU op:
//     pair_rows.h's deferred pairs; a device step never does). Its device
//     copy (KernelMap::device_copy) is the device-built map itself, so the
//     device ops (conv_device.h, pooling_device.h) use it and nothing is
//     uploaded back. A transposed map is the device forward map's transpose,
//     also kept.
// Nothing is ever uploaded for a device map. A map with no device copy (CPU
// coordinates, insert_rows, a map either side of a kernel map lacks) takes
// the CPU path, its kernel maps uploaded on first device use as before (a
// transposed map's copy made from its forward map's, and back). The
// device maps live as long as the manager (or until clear()), as the host
// ones; autograd nodes that hold a kernel map keep its device copy alive.
// CPU-only builds cannot make device tensors (fk refuses the allocation);
// the device builders there are stubs that throw fk::Error.
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "fk/tensor.h"
#include "minkowski/coords/coordinate_map.h"
#include "minkowski/coords/kernel_map.h"
#include "minkowski/coords/kernel_region.h"
#include "minkowski/cuda/device_coordinates.h"

namespace minkowski {

struct MapKey {
  std::vector<int32_t> tensor_stride;
  std::string tag;
  auto operator<=>(const MapKey&) const = default;
  std::string str() const;
};

class CoordinateManager {
 public:
  explicit CoordinateManager(int dimension);
  int dimension() const { return dimension_; }

  struct Inserted {
    MapKey key;
    std::vector<int64_t> unique_rows;  // input row of each map row (first occurrence)
    std::vector<int64_t> inverse;      // map row of each input row
  };
  // Inserts N x (1+D) int32 coordinates, on the CPU or on a CUDA device (see
  // above; every spatial coordinate a multiple
  // of the tensor stride, which has 1 or D positive values, and within
  // [-2^30, 2^30]: see "Coordinate range" in coordinate_map.h). A new map always
  // gets a new key: the tag is made unique when (stride, tag) is taken.
  Inserted insert(const fk::Tensor& coordinates, const std::vector<int32_t>& tensor_stride,
                  const std::string& tag = "");
  // The same from a raw buffer (shape and multiples already validated; the
  // range is checked here).
  Inserted insert_rows(const int32_t* rows, int64_t n, const std::vector<int32_t>& tensor_stride,
                       const std::string& tag);

  bool has(const MapKey& key) const;
  std::shared_ptr<const CoordinateMap> map(const MapKey& key) const;
  int64_t size(const MapKey& key) const { return map(key)->size(); }
  // N x (1+D) int32 copy of a map's coordinates (on the CPU).
  fk::Tensor coordinates(const MapKey& key) const;
  // The map's device copy (same rows, same order), or null when it has none.
  std::shared_ptr<const cuda::DeviceCoordinateMap> device_map(const MapKey& key) const;

  // The map with tensor stride ts*stride holding floor(c / (ts*stride)) *
  // (ts*stride) of every coordinate (floor toward -inf, exact; ts*stride at
  // most 2^30). A map this call
  // creates has its rows in coordinate order, lexicographic in (batch, x_1,
  // .., x_D) (MinkowskiEngine promises no order here): kernel maps on it then
  // need no sort, and their pairs walk its rows sequentially. An existing map
  // of that key (same tag), e.g. one inserted by the caller, is reused as it
  // is, in its own order; stride 1 returns `in` itself.
  MapKey stride(const MapKey& in, const std::vector<int32_t>& stride);
  // A new map at tensor stride out_ts holding c + offset_k (offsets scaled by
  // out_ts) for every coordinate c of `in` and every offset of `region`: the
  // output coordinates of a generative transposed convolution.
  MapKey expand(const MapKey& in, const KernelRegion& region, const std::vector<int32_t>& out_ts);

  // Kernel map from `in` to `out`. Forward (transpose=false): pairs with
  // in = out + offset, offsets scaled by in's tensor stride. Transposed: the
  // adjoint of the forward map from `out` (finer) to `in` (coarser), reused
  // from the cache when the encoder built it.
  // Between two device maps of one device the map is built there (see above);
  // device_kernel_map gives that device-built map (null otherwise).
  std::shared_ptr<const KernelMap> kernel_map(const MapKey& in, const MapKey& out,
                                              const KernelRegion& region, bool transpose);
  std::shared_ptr<const cuda::DeviceKernelMap> device_kernel_map(const MapKey& in,
                                                                 const MapKey& out,
                                                                 const KernelRegion& region,
                                                                 bool transpose);

  void clear();
  // Coordinate maps + kernel maps, each storage once (a map and its
  // transpose share their row indices); host memory only (the device maps
  // count in fk::cuda::pool_stats).
  int64_t bytes() const;
  int64_t num_maps() const;
  int64_t num_kernel_maps() const;

 private:
  using DeviceMap = std::shared_ptr<const cuda::DeviceCoordinateMap>;
  using DeviceKernelMapPtr = std::shared_ptr<const cuda::DeviceKernelMap>;
  std::string unique_tag(const std::vector<int32_t>& ts, const std::string& tag) const;
  Inserted insert_on_device(const fk::Tensor& coordinates, const std::vector<int32_t>& ts,
                            const std::string& tag);
  // The host map of a device map's rows (downloaded), in `order`.
  std::shared_ptr<const CoordinateMap> host_map_of(const cuda::DeviceCoordinateMap& d,
                                                   RowOrder order) const;
  // The forward map fine -> coarse, built on the device when both have device
  // maps there (cached under key in device_kernel_maps_ too), else on the CPU.
  std::shared_ptr<const KernelMap> build_forward(const MapKey& fine, const MapKey& coarse,
                                                 const KernelRegion& region,
                                                 const std::string& key);

  int dimension_;
  mutable std::mutex mu_;
  std::map<MapKey, std::shared_ptr<const CoordinateMap>> maps_;
  std::map<std::string, std::shared_ptr<const KernelMap>> kernel_maps_;
  std::map<MapKey, DeviceMap> device_maps_;
  std::map<std::string, DeviceKernelMapPtr> device_kernel_maps_;
  int64_t counter_ = 0;
};

}  // namespace minkowski
