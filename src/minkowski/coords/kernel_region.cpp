#include "minkowski/coords/kernel_region.h"

#include <limits>

#include "fk/error.h"
#include "minkowski/coords/coordinate_map.h"

namespace minkowski {

namespace {
std::string join(const std::vector<int32_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(v[i]);
  }
  return s;
}
}  // namespace

std::vector<int32_t> expand_axes(const std::vector<int32_t>& v, int dimension, const char* where,
                                 const char* what) {
  FK_CHECK(v.size() == 1 || static_cast<int>(v.size()) == dimension, where,
           std::string(what) + " with 1 or " + fk::to_text(dimension) + " values",
           fk::to_text(v.size()) + " values");
  for (int32_t x : v)
    FK_CHECK(x > 0 && x <= kCoordinateLimit, where,
             std::string("positive ") + what + " of at most 2^30", "[" + join(v) + "]");
  if (v.size() == 1) return std::vector<int32_t>(dimension, v[0]);
  return v;
}

KernelRegion KernelRegion::cube(std::vector<int32_t> size, std::vector<int32_t> dilation) {
  KernelRegion r;
  r.type = RegionType::HyperCube;
  r.kernel_size = std::move(size);
  r.dilation = std::move(dilation);
  return r;
}

KernelRegion KernelRegion::cross(std::vector<int32_t> size, std::vector<int32_t> dilation) {
  KernelRegion r = cube(std::move(size), std::move(dilation));
  r.type = RegionType::HyperCross;
  return r;
}

KernelRegion KernelRegion::custom(std::vector<int32_t> offsets, int dimension,
                                  std::vector<int32_t> dilation) {
  KernelRegion r;
  r.type = RegionType::Custom;
  r.custom_offsets = std::move(offsets);
  r.kernel_size = {1};
  r.dilation = std::move(dilation);
  FK_CHECK(dimension > 0 && !r.custom_offsets.empty() && r.custom_offsets.size() % dimension == 0,
           "minkowski::KernelRegion::custom", "a non-empty K x D offset list",
           fk::to_text(r.custom_offsets.size()) + " values for D=" + fk::to_text(dimension));
  return r;
}

int64_t KernelRegion::volume(int dimension) const {
  const char* where = "minkowski::KernelRegion";
  auto dil = expand_axes(dilation, dimension, where, "dilation");
  (void)dil;
  if (type == RegionType::Custom) {
    FK_CHECK(!custom_offsets.empty() && custom_offsets.size() % dimension == 0, where,
             "custom offsets of K x " + fk::to_text(dimension) + " values",
             fk::to_text(custom_offsets.size()) + " values");
    return static_cast<int64_t>(custom_offsets.size()) / dimension;
  }
  auto ks = expand_axes(kernel_size, dimension, where, "kernel size");
  int64_t v = 1;
  if (type == RegionType::HyperCube) {
    // Kernel indices are int32 (kernel maps, weights' first axis); each
    // size is at most 2^30, so a product checked at every step cannot wrap.
    for (int32_t k : ks) {
      v *= k;
      FK_CHECK(v <= std::numeric_limits<int32_t>::max(), where,
               "a kernel volume (the product of the kernel sizes) of at most 2^31 - 1",
               "[" + join(ks) + "] for D=" + fk::to_text(dimension));
    }
  } else {
    for (int32_t k : ks) {
      FK_CHECK(k % 2 == 1, where, "odd kernel sizes for a hypercross", "[" + join(ks) + "]");
      v += k - 1;
    }
  }
  return v;
}

std::vector<int32_t> KernelRegion::offsets(const std::vector<int32_t>& tensor_stride) const {
  int d = static_cast<int>(tensor_stride.size());
  int64_t vol = volume(d);
  auto dil = expand_axes(dilation, d, "minkowski::KernelRegion", "dilation");
  std::vector<int64_t> scale(d);
  for (int i = 0; i < d; ++i) scale[i] = int64_t{dil[i]} * tensor_stride[i];
  std::vector<int32_t> out(static_cast<size_t>(vol) * d, 0);
  // Offset index c of axis i, scaled; |offset| <= 2^30 keeps every neighbour
  // of an in-range coordinate exact (see coordinate_map.h).
  auto scaled = [&](int64_t c, int i) {
    const int64_t v = c * scale[i];
    FK_CHECK(v >= -kCoordinateLimit && v <= kCoordinateLimit, "minkowski::KernelRegion",
             "kernel offsets (offset x dilation x tensor stride) of at most 2^30",
             fk::to_text(c) + " x " + fk::to_text(scale[i]) + " on axis " + fk::to_text(i));
    return static_cast<int32_t>(v);
  };
  if (type == RegionType::Custom) {
    for (int64_t k = 0; k < vol; ++k)
      for (int i = 0; i < d; ++i) out[k * d + i] = scaled(custom_offsets[k * d + i], i);
    return out;
  }
  auto ks = expand_axes(kernel_size, d, "minkowski::KernelRegion", "kernel size");
  if (type == RegionType::HyperCube) {
    for (int64_t k = 0; k < vol; ++k) {
      int64_t rem = k;
      for (int i = 0; i < d; ++i) {
        int32_t idx = static_cast<int32_t>(rem % ks[i]);
        rem /= ks[i];
        int32_t c = ks[i] % 2 == 1 ? idx - ks[i] / 2 : idx;
        out[k * d + i] = scaled(c, i);
      }
    }
    return out;
  }
  int64_t k = 1;  // index 0 is the center (all zeros)
  for (int i = 0; i < d; ++i) {
    int32_t r = ks[i] / 2;
    for (int32_t s = 1; s <= r; ++s) out[(k++) * d + i] = scaled(s, i);
    for (int32_t s = -r; s <= -1; ++s) out[(k++) * d + i] = scaled(s, i);
  }
  return out;
}

bool KernelRegion::is_identity(int dimension) const {
  if (volume(dimension) != 1) return false;
  for (int32_t v : offsets(std::vector<int32_t>(dimension, 1)))
    if (v != 0) return false;
  return true;
}

std::string KernelRegion::str(int dimension) const {
  std::string s = type == RegionType::HyperCube    ? "cube"
                  : type == RegionType::HyperCross ? "cross"
                                                   : "custom";
  auto dil = expand_axes(dilation, dimension, "minkowski::KernelRegion", "dilation");
  const std::vector<int32_t>& body =
      type == RegionType::Custom
          ? custom_offsets
          : expand_axes(kernel_size, dimension, "minkowski::KernelRegion", "kernel size");
  s.append(1, '[').append(join(body)).append("]d[").append(join(dil)).append(1, ']');
  return s;
}

}  // namespace minkowski
