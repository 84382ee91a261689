#pragma once
// CoordinateManager: owns the coordinate maps of one sparse-tensor graph, keyed
// by (tensor stride, tag), and caches the kernel maps between them, keyed by
// (input map, output map, kernel region incl. sizes and dilation, direction;
// the stride is implied by the two maps' tensor strides). Everything lives as
// long as the manager (shared by the SparseTensors that use it) or until
// clear(). Thread-safe (one mutex); CPU only; D >= 1.
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
  // Inserts N x (1+D) int32 CPU coordinates (every spatial coordinate a multiple
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
  // N x (1+D) int32 copy of a map's coordinates.
  fk::Tensor coordinates(const MapKey& key) const;

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
  std::shared_ptr<const KernelMap> kernel_map(const MapKey& in, const MapKey& out,
                                              const KernelRegion& region, bool transpose);

  void clear();
  // Coordinate maps + kernel maps, each storage once (a map and its
  // transpose share their row indices).
  int64_t bytes() const;
  int64_t num_maps() const;
  int64_t num_kernel_maps() const;

 private:
  std::string unique_tag(const std::vector<int32_t>& ts, const std::string& tag) const;

  int dimension_;
  mutable std::mutex mu_;
  std::map<MapKey, std::shared_ptr<const CoordinateMap>> maps_;
  std::map<std::string, std::shared_ptr<const KernelMap>> kernel_maps_;
  int64_t counter_ = 0;
};

}  // namespace minkowski
