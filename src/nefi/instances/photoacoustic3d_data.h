#pragma once
// The photoacoustic3d instance's scenes and sensor layout, independent of
// the inversion operator: initial pressures p0 ∈ [0, 1] drawn from the run's
// seed and point-sampled at cell centres of an (nx, ny, nz) slab (the last
// axis is depth, z = 0 the sensor face).
#include <cstdint>
#include <string>
#include <vector>

#include "fk/shape.h"

namespace nefi::pat {

// vessels: 3-5 tubes (straight segments across the slab at depths within
// the upper 3/4, radius 0.12-0.25 mm, Gaussian cross-section, amplitude
// 0.6-1); spheres: 3-6 smooth-edged balls (radius 0.3-0.7 mm, amplitude
// 0.5-1). p0 is the maximum over the objects. An unknown class is an
// fk::Error naming 'scene'.
std::vector<double> pressure_scene(const std::string& cls, const fk::Dims& shape,
                                   const std::vector<double>& extent, uint64_t seed);

// A sensors[0] × sensors[1] grid on the z = 0 face covering the central
// `span` fraction of each lateral side, (x, y, 0) per sensor.
std::vector<std::vector<double>> planar_sensors(const std::vector<double>& extent,
                                                const std::vector<double>& sensors, double span);

}  // namespace nefi::pat
