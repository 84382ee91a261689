#pragma once
// The prior of a bring-your-own problem, written as terms joined by '+':
// "nonnegative + piecewise_constant(0.3)". Exactly one term (or none:
// unconstrained) says what values the field takes, the head:
//   unconstrained | real | signed     any real value
//   nonnegative | nonneg              >= 0 (a scaled softplus)
//   positive | log                    > 0, spread over decades (a scaled exp)
//   bounded(lo, hi) | box | range     in (lo, hi) (a sigmoid)
// The others add a penalty of strength s (the penalty's share of the data
// misfit at the noise floor, so s = 1 weighs them equally; default below):
//   piecewise_constant | tv (s)       total variation, isotropic
//   smooth (s)                        squared Laplacian
//   sparse (s)                        L1; implies nonnegative when no head
//                                     term is given
// and one modifier: zero_mean (the field minus its mean: a gauge that data
// blind to constants cannot fix). Unknown terms, two head terms, a bad
// argument list or a strength <= 0 are an fk::Error naming the term and
// listing what is accepted.
#include <string>
#include <vector>

namespace nefi {

struct PriorPenalty {
  std::string kind;  // tv | smooth | sparse
  double strength = 0;
};

struct PriorSpec {
  std::string head = "unconstrained";  // unconstrained | nonnegative | positive | bounded
  double lo = 0, hi = 1;               // bounded only
  bool zero_mean = false;
  std::vector<PriorPenalty> penalties;
  std::string str() const;  // canonical text, parses back to the same spec
};

// Default strength 1 for each penalty (calibrated on 1-D deblurring at 1 %
// noise: tv and smooth gain 7-14 dB over no penalty at 64-256 cells).
PriorSpec parse_prior(const std::string& text);

}  // namespace nefi
