#pragma once
// The operands the device convolution tests share: a convolution's CPU
// kernel map with the device map built from the same offsets, random CPU
// features, weight and output gradient for a map, and values rounded to a
// lower-precision dtype with their exact f64 widening (the reference the
// rounding bounds are taken against).
#include <cmath>
#include <cstdint>
#include <memory>
#include <utility>

#include "device_test_util.h"
#include "minkowski/cuda/device_kernel_map.h"

namespace minkowski::cuda_test {

// One convolution's kernel map on the CPU and on the device.
struct ConvMaps {
  std::shared_ptr<const KernelMap> cpu;
  cuda::DeviceKernelMap dev;
};

inline ConvMaps conv_maps(const CoordinateMap& in, const CoordinateMap& out,
                          const KernelRegion& region) {
  const auto off = region.offsets(in.tensor_stride());
  return {build_kernel_map(in, out, off), cuda::build_device_kernel_map(in, out, off)};
}

// 1/√(K C_in): a weight scale that keeps the outputs of unit inputs O(1).
inline double fan_in_scale(int64_t volume, int64_t cin) {
  return 1.0 / std::sqrt(static_cast<double>(volume * cin));
}

// Random f32 operands of a convolution on `map`, on the CPU: features
// (in_size × cin, seed), weight (K × cin × cout, scaled, seed + 1) and
// output gradient (out_size × cout, seed + 2).
struct ConvValues {
  fk::Tensor f, w, g;
};

inline ConvValues random_conv_values(const KernelMap& map, int64_t cin, int64_t cout, uint64_t seed,
                                     double weight_scale) {
  return {random_values({map.in_size, cin}, 1.0, seed),
          random_values({map.volume, cin, cout}, weight_scale, seed + 1),
          random_values({map.out_size, cout}, 1.0, seed + 2)};
}

// Maps and values of a convolution from `in` to `out`, the weight at the
// fan-in scale.
struct ConvOperands : ConvMaps, ConvValues {};

inline ConvOperands conv_operands(const CoordinateMap& in, const CoordinateMap& out,
                                  const KernelRegion& region, int64_t cin, int64_t cout,
                                  uint64_t seed) {
  ConvMaps maps = conv_maps(in, out, region);
  ConvValues values =
      random_conv_values(*maps.cpu, cin, cout, seed, fan_in_scale(maps.cpu->volume, cin));
  return {std::move(maps), std::move(values)};
}

// f32 values rounded to a dtype (on the CPU), their exact f64 widening and
// its magnitude.
struct Rounded {
  fk::Tensor stored, exact, magnitude;  // dtype, f64, |f64|
};

inline Rounded rounded(const fk::Tensor& f32, fk::DType dtype) {
  Rounded r;
  r.stored = f32.to(dtype);
  r.exact = r.stored.to(fk::DType::F64);
  r.magnitude = fk::abs(r.exact);
  return r;
}

// A convolution's values, each rounded.
struct RoundedValues {
  Rounded f, w, g;
};

inline RoundedValues rounded(const ConvValues& v, fk::DType dtype) {
  return {rounded(v.f, dtype), rounded(v.w, dtype), rounded(v.g, dtype)};
}

}  // namespace minkowski::cuda_test
