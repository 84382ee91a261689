#include "fk/plot/colormap.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace fk::plot {
namespace {

constexpr Rgb hex(unsigned v) {
  return {((v >> 16) & 255) / 255.0, ((v >> 8) & 255) / 255.0, (v & 255) / 255.0};
}

// Nine evenly spaced anchors per map.
constexpr std::array<Rgb, 9> kViridis = {hex(0x440154), hex(0x472d7b), hex(0x3b528b),
                                         hex(0x2c728e), hex(0x21918c), hex(0x28ae80),
                                         hex(0x5ec962), hex(0xaddc30), hex(0xfde725)};
constexpr std::array<Rgb, 9> kMagma = {hex(0x000004), hex(0x1c1044), hex(0x4f127b),
                                       hex(0x812581), hex(0xb5367a), hex(0xe55064),
                                       hex(0xfb8761), hex(0xfec287), hex(0xfcfdbf)};
constexpr std::array<Rgb, 9> kDiverging = {hex(0x1a3f8c), hex(0x2f6db5), hex(0x6a9fd0),
                                           hex(0xb3d1ea), hex(0xf4f4f4), hex(0xf2bfa7),
                                           hex(0xdc7e64), hex(0xb53f37), hex(0x7d1020)};

Rgb lerp(const std::array<Rgb, 9>& a, double t) {
  const double x = t * (a.size() - 1);
  const size_t i = std::min(static_cast<size_t>(x), a.size() - 2);
  const double f = x - static_cast<double>(i);
  return {a[i].r + f * (a[i + 1].r - a[i].r), a[i].g + f * (a[i + 1].g - a[i].g),
          a[i].b + f * (a[i + 1].b - a[i].b)};
}

double linear(double c) {
  return c <= 0.04045 ? c / 12.92 : std::pow((c + 0.055) / 1.055, 2.4);
}

}  // namespace

Rgb colormap(Colormap map, double t) {
  if (std::isnan(t)) return {0.5, 0.5, 0.5};
  t = std::clamp(t, 0.0, 1.0);
  switch (map) {
    case Colormap::Viridis:
      return lerp(kViridis, t);
    case Colormap::Magma:
      return lerp(kMagma, t);
    case Colormap::Diverging:
      return lerp(kDiverging, t);
  }
  return {};
}

double lightness(const Rgb& c) {
  const double y = 0.2126 * linear(c.r) + 0.7152 * linear(c.g) + 0.0722 * linear(c.b);
  return y > 216.0 / 24389 ? 116 * std::cbrt(y) - 16 : y * 24389.0 / 27;
}

}  // namespace fk::plot
