#include "minkowski/data/point_cloud.h"

#include <cmath>
#include <numbers>

namespace minkowski::data {

uint64_t Rng::next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

double Rng::uniform() {
  return static_cast<double>(next() >> 11) * 0x1.0p-53;
}

double Rng::normal() {
  const double u = 1.0 - uniform();  // (0, 1]
  return std::sqrt(-2.0 * std::log(u)) * std::cos(2.0 * std::numbers::pi * uniform());
}

int64_t Rng::below(int64_t n) {
  return static_cast<int64_t>(uniform() * static_cast<double>(n));
}

}  // namespace minkowski::data
