#pragma once
// The photoacoustic3d instance's scenes and sensor layout, independent of
// the inversion operator: initial pressures p0 ∈ [0, 1] drawn from the run's
// seed and point-sampled at cell centres of an (nx, ny, nz) slab (the last
// axis is depth, z = 0 the sensor face). The scenes are resolved at the
// instance's 0.25 mm voxels: every edge is a tanh of width kEdgeWidth and
// the thinnest vessel spans 2.4 voxels, so the order-2 inversion model and
// the finer generator agree on their traces (the reference's scene scales).
#include <cstdint>
#include <string>
#include <vector>

#include "fk/shape.h"

namespace nefi::pat {

inline constexpr double kEdgeWidth = 0.15;              // mm
inline constexpr double kVesselRadius[2] = {0.3, 0.6};  // mm
inline constexpr double kSphereRadius[2] = {0.6, 1.5};  // mm

// Objects are placed with centres in a box 10 % (vessels) or 15 % (spheres)
// in from each lateral side and at 15-80 % of the depth, narrowed so that
// each object with its edge (radius + 2 kEdgeWidth) stays inside the slab
// (nothing cut by the sensor face), and p0 is the sum
// of amplitude × ½(1 − tanh((d − r)/kEdgeWidth)) over them, clipped to
// [0, 1] (d the distance to the object's axis or centre).
//   vessels: 2-4 trees, each a trunk (persistent random walk of 8-13 steps
//     of 0.08 × the narrower side, mostly parallel to the surface, radius r
//     in kVesselRadius) and one branch from it (4-7 steps of 0.07 ×, radius
//     max(0.3, 0.7 r)), amplitude 0.6-1;
//   spheres: 3-6 balls, radius in kSphereRadius, amplitude 0.4-1.
// An unknown class is an fk::Error naming 'scene'.
std::vector<double> pressure_scene(const std::string& cls, const fk::Dims& shape,
                                   const std::vector<double>& extent, uint64_t seed);

// A sensors[0] × sensors[1] grid on the z = 0 face: the cell centres of an
// even split of the central `span` fraction of each lateral side, (x, y, 0)
// per sensor.
std::vector<std::vector<double>> planar_sensors(const std::vector<double>& extent,
                                                const std::vector<double>& sensors, double span);

}  // namespace nefi::pat
