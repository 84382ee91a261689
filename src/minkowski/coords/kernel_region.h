#pragma once
// Kernel regions: which neighbor offsets a convolution visits, and their
// order, which is the order of the weight's first axis (K, C_in, C_out).
//
// Offset order (fixed, documented, shared with any future CUDA path):
//   HyperCube  (volume prod k_i): the kernel index is mixed-radix with spatial
//              axis 0 varying fastest. Odd k_i is centered: idx_i - k_i/2; even
//              k_i is not: idx_i in [0, k_i).
//   HyperCross (volume 1 + sum (k_i - 1), odd k_i only): index 0 is the center,
//              then for each axis in order +1..+r, then -r..-1 (r = k_i/2).
//   Custom     the given K x D integer offsets, in the given order.
// Each offset is then scaled per axis by dilation_i * tensor_stride_i, where the
// tensor stride is the input map's for a convolution and the output (finer)
// map's for a transposed one.
#include <cstdint>
#include <string>
#include <vector>

namespace minkowski {

enum class RegionType { HyperCube, HyperCross, Custom };

struct KernelRegion {
  RegionType type = RegionType::HyperCube;
  std::vector<int32_t> kernel_size{3};  // one value (all axes) or D values
  std::vector<int32_t> dilation{1};     // one value or D values
  std::vector<int32_t> custom_offsets;  // Custom: K*D values, row-major

  static KernelRegion cube(std::vector<int32_t> size, std::vector<int32_t> dilation = {1});
  static KernelRegion cross(std::vector<int32_t> size, std::vector<int32_t> dilation = {1});
  static KernelRegion custom(std::vector<int32_t> offsets, int dimension,
                             std::vector<int32_t> dilation = {1});

  // Validates against D and returns the number of offsets.
  int64_t volume(int dimension) const;
  // K x D offsets (row-major), scaled by dilation * tensor_stride.
  std::vector<int32_t> offsets(const std::vector<int32_t>& tensor_stride) const;
  // True when the only offset is zero (a 1x1 convolution).
  bool is_identity(int dimension) const;
  // A canonical text used in cache keys.
  std::string str(int dimension) const;
};

// Expands a one-value-or-D-values argument to D values; throws on a bad length
// or a non-positive value. `what` names the argument in the error.
std::vector<int32_t> expand_axes(const std::vector<int32_t>& v, int dimension, const char* where,
                                 const char* what);

}  // namespace minkowski
