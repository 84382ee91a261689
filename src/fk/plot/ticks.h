#pragma once
// Axis ticks: round numbers (1, 2, 2.5 or 5 times a power of ten) that cover
// a range, decades for log axes, and tick labels with as many decimals as the
// step needs.
#include <string>
#include <vector>

namespace fk::plot {

// About `target` ticks inside [lo, hi] (lo > hi is swapped; an empty range
// is widened around its value). The first tick is less than one step above
// lo and the last less than one step below hi. `integer`: whole-number
// steps only (1, 2, 5, 10, 20, 25, ...), for axes that count items.
std::vector<double> nice_ticks(double lo, double hi, int target = 5, bool integer = false);
// The step nice_ticks uses for that range.
double nice_step(double lo, double hi, int target = 5, bool integer = false);
// Powers of ten within [lo, hi] (both > 0); when fewer than two fit, the
// 1-2-5 values within the range instead.
std::vector<double> log_ticks(double lo, double hi);
// A label for tick value v on an axis whose ticks are `step` apart.
std::string tick_label(double v, double step);
// A label for a decade or 1-2-5 tick on a log axis ("1e-3", "0.01", "200").
std::string log_tick_label(double v);

}  // namespace fk::plot
