#pragma once
// The wave_fwi instance's scenes and acquisition, independent of the
// inversion operator: velocity models drawn from the run's seed, point
// sampled at cell centres (axis 0 is depth, axis 1 lateral), and the
// source/receiver layouts with their near-offset mute.
#include <cstdint>
#include <string>
#include <vector>

namespace nefi::fwi {

struct MediumConfig {
  double extent = 1.0;        // side of the square (km)
  double c_background = 2.0;  // km/s
  double c_min = 1.5, c_max = 2.5;
  double anomaly = 0.4;  // peak contrast of the anomalies (km/s)
};

// smooth_anomaly (a fast and a slow Gaussian anomaly), layered (four layers
// with undulating interfaces, slow to fast with depth) or scatterers (4-6
// small smooth-edged discs of ±anomaly), on m × m cells (C order), clipped
// to [c_min, c_max]. An unknown class is an fk::Error naming 'scene'.
std::vector<double> velocity_scene(const std::string& cls, int64_t m, const MediumConfig& med,
                                   uint64_t seed);

struct Acquisition {
  std::vector<std::vector<double>> sources, receivers;  // (depth, lateral) in km
};

// surround: both spread evenly (receivers offset by half a spacing) around
// the square at `margin` from the edges; transmission: sources down the left
// side, receivers down the right; reflection: both along the top. An unknown
// kind is an fk::Error naming 'acquisition'.
Acquisition acquisition(const std::string& kind, double extent, int64_t n_src, int64_t n_rec,
                        double margin);

// Trace mask (n_src, n_rec, n_t) flattened: 0 where the source-receiver
// distance is below min_offset, else 1.
std::vector<double> offset_mask(const Acquisition& acq, double min_offset, int64_t n_t);

}  // namespace nefi::fwi
