#pragma once
// What an instance's arrays are, in the words and units a figure prints: the
// primary field's quantity (thermal diffusivity α in mm²/s), the measured
// quantity (temperature rise ΔT in K), and what each array axis is, with its
// unit and span (x from 0 to 10 mm; time from 0.05 to 1.5 s; one frame per
// detector distance). Dimensionless instances measure lengths in grid cells
// ("px") and values in arbitrary units ("a.u.") or "dimensionless" for a true
// ratio; every entry names a unit, so a figure never prints a bare number.
#include <cstdint>
#include <string>
#include <vector>

namespace nefi {

struct Quantity {
  std::string name;    // "thermal diffusivity"
  std::string symbol;  // "α" (may be empty)
  std::string unit;    // "mm²/s", "a.u.", "dimensionless"
};

// One axis of a gridded array. An image axis gives the span its cells tile
// (cell i of n covers lo + [i, i + 1] (hi − lo) / n); an axis that stacks
// separate frames names each of its indices instead ("t = 0.25 s", "Re").
struct DataAxis {
  std::string name;  // "x", "time t", "detector position s"
  std::string unit;  // "mm", "s", "px"; empty only for named frames or numbered items
  double lo = 0, hi = 1;
  std::vector<std::string> frames = {};
  bool numbered = false;  // items numbered 1..n (receivers, gauges): whole-number ticks
};

struct DataLabels {
  Quantity field;                       // the primary field (the ground truth's quantity)
  std::vector<DataAxis> field_axes;     // one per axis of the field
  Quantity measured;                    // what the measurement records
  std::vector<DataAxis> measured_axes;  // one per axis of the measurement data
};

// "thermal diffusivity α (mm²/s)", and for its signed error "error Δα (mm²/s)".
std::string quantity_label(const Quantity& q);
std::string error_label(const Quantity& q);
// "x (mm)"; a stack axis without a unit is its name.
std::string axis_label(const DataAxis& a);
// What index i of n along a stack axis is: its named frame, else the axis
// at that cell's centre ("z = 0.15 µm").
std::string frame_label(const DataAxis& a, int64_t i, int64_t n);
// The centre of cell i of n along a: lo + (i + ½)(hi − lo)/n.
double cell_centre(const DataAxis& a, int64_t i, int64_t n);

// Building blocks for Instance::data_labels.
// An image axis [lo, hi] in `unit`.
DataAxis span_axis(std::string name, std::string unit, double lo, double hi);
// A stack axis whose frames are "<prefix><value> <unit>" for each value
// ("t = 0.25 s" from prefix "t = ").
DataAxis frames_axis(std::string name, const std::string& prefix, const std::vector<double>& values,
                     const std::string& unit);
// A stack axis of n frames "<name> 1", ..., "<name> n" (shots, patterns).
DataAxis counted_axis(const std::string& name, int64_t n);
// An image axis over n numbered items (receivers, gauges): "<name> no.",
// cell i centred on i + 1.
DataAxis index_axis(const std::string& name, int64_t n);
// The axes of a square image of side `side`: axis 0 "y" (rows), axis 1 "x".
std::vector<DataAxis> square_axes(double side, const std::string& unit);
// A lattice of n points from `first` to `last` (n >= 1) as the image span
// whose cells they centre: half a pitch beyond each end (pitch 1 for n = 1).
DataAxis lattice_axis(std::string name, std::string unit, double first, double last, int64_t n);
// `a` with `b` appended (a stack axis before a frame's axes).
std::vector<DataAxis> joined(std::vector<DataAxis> a, const std::vector<DataAxis>& b);
// v with 3 significant digits ("0.25", "1.5e+03").
std::string short_number(double v);
// n values lo, lo + step, ...
std::vector<double> evenly(double lo, double step, int64_t n);

}  // namespace nefi
