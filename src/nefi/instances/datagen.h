#pragma once
// Data generation shared by the instances' generators, and deliberately by
// nothing on the inversion side (the inverse-crime guard): scenes are drawn
// on a supersampled grid in f64, blurred by a DIRECT spatial convolution
// (not an FFT) with a PSF sampled here at the fine spacing, area-averaged
// down to the measurement grid, and noise is drawn from this file's own
// generator. Fidelity tags name this discretisation.
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "fk/shape.h"

namespace nefi::datagen {

// Uniform and normal draws with a stable definition across standard libraries.
class Rng {
 public:
  explicit Rng(uint64_t seed) : eng_(seed * 0x9E3779B97F4A7C15ull + 12345) {}
  double uniform(double lo = 0, double hi = 1) {
    return lo + (hi - lo) * static_cast<double>(eng_() >> 11) * 0x1.0p-53;
  }
  int64_t integer(int64_t lo, int64_t hi) {  // inclusive
    return lo + static_cast<int64_t>(uniform() * (hi - lo + 1)) % (hi - lo + 1);
  }
  double normal();
  int64_t poisson(double lambda);

 private:
  std::mt19937_64 eng_;
};

// Zero-boundary direct convolution of a C-ordered f64 grid with a centred
// odd-sized kernel ('same' size).
std::vector<double> direct_convolve(const std::vector<double>& v, const fk::Dims& shape,
                                    const std::vector<double>& kernel, const fk::Dims& kshape);

// PSF kernels sampled at fine spacing h (per axis), normalised to unit sum.
// kind: gaussian (sigma), motion (length, angle_deg), disk (radius).
std::vector<double> sample_psf(const std::string& kind, const std::vector<double>& h, double sigma,
                               double length, double angle_deg, double radius, fk::Dims* kshape);

}  // namespace nefi::datagen
