#pragma once
// The prior of a bring-your-own problem, written as terms joined by '+':
// "nonnegative + piecewise_constant(0.3)". Exactly one term (or none:
// unconstrained) says what values the field takes, the head:
//   unconstrained | real | signed     any real value
//   nonnegative | nonneg              >= 0 (a scaled softplus)
//   positive | log                    > 0, spread over decades (a scaled exp)
//   bounded(lo, hi) | box | range     in (lo, hi) (a sigmoid whose slope is
//                                     floored, heads.h's level set leak)
//   binary | two_phase(lo, hi) |      two values, lo or hi (binary: 0 or 1):
//     level_set(lo, hi)               a sigmoid whose interface sharpens as
//                                     the fit anneals (heads.h's LevelSet)
//   phases(v1, ..., vK)               K known values (2 to 8, distinct, any
//                                     order): a softmax over K channels whose
//                                     interfaces sharpen as the fit anneals
//                                     (heads.h's MultiPhase)
// The others add a penalty of strength s (the penalty's share of the data
// misfit at the noise floor, so s = 1 weighs them equally; default below):
//   piecewise_constant | tv (s)       total variation, isotropic
//   smooth (s)                        squared Laplacian
//   sparse (s)                        L1; implies nonnegative when no head
//                                     term is given
//   increasing | monotone (axis, s)   the field never falls along axis
//   decreasing (axis, s)              (default 0), never rises (a squared
//                                     hinge on the differences)
// and modifiers, which hold exactly whatever the network outputs:
//   zero_mean          the field minus its mean (a gauge that data blind to
//                      constants cannot fix)
//   conserved(M) | mass(M)  the field's sum over its cells is M (a positive
//                      field scaled to it; implies nonnegative when no head
//                      term is given)
//   symmetric(a, ...)  mirror-symmetric about the middle of each axis listed
//                      (none listed: every axis of space, not one that
//                      indexes the model's components)
//   known_support      zero outside a support mask given beside the prior
//                      (the head's low bound for a bounded field that
//                      excludes 0); giving the mask implies the term
//   scale(v)           the field's expected magnitude: the head spans v
//                      instead of the best constant's magnitude
//   periodic(a, ...)   the domain's length is a period along each axis
//                      listed (none listed: every axis of space): the neural field's
//                      features are periodic there, tv and smooth wrap
// and terms registered by name (custom_prior.h: register_prior), each a
// penalty of strength s:
//   NAME (s)           the caller's own P(x)
// Unknown terms, two head terms, a bad argument list, a strength <= 0 or
// modifiers a head cannot take are an fk::Error naming the term and listing
// what is accepted.
#include <optional>
#include <string>
#include <vector>

namespace nefi {

struct PriorPenalty {
  std::string kind;  // tv | smooth | sparse | monotone | a registered term's name
  double strength = 0;
  int axis = 0, sign = 1;  // monotone only: +1 increasing, -1 decreasing
  bool custom = false;     // a registered term (custom_prior.h)
};

struct PriorSpec {
  // unconstrained | nonnegative | positive | bounded | level_set | phases
  std::string head = "unconstrained";
  double lo = 0, hi = 1;       // bounded, level_set and phases (its extremes)
  std::vector<double> phases;  // phases: the values, ascending
  bool zero_mean = false;
  std::optional<double> mass;   // conserved(M)
  std::vector<int> symmetric;   // mirror axes; {-1}: every axis
  std::vector<int> periodic;    // periodic axes; {-1}: every axis
  bool known_support = false;   // the mask comes beside the prior
  std::optional<double> scale;  // scale(v)
  std::vector<PriorPenalty> penalties;
  bool two_valued() const { return head == "level_set"; }
  // A field of a few known values, whose interfaces anneal.
  bool phased() const { return head == "level_set" || head == "phases"; }
  bool ranged() const { return head == "bounded" || head == "level_set" || head == "phases"; }
  std::string str() const;  // canonical text, parses back to the same spec
};

// Default strength 1 for each penalty (calibrated on 1-D deblurring at 1 %
// noise: tv and smooth gain 7-14 dB over no penalty at 64-256 cells).
PriorSpec parse_prior(const std::string& text);

// Whether `name` is one of the terms above (a registered term may not take it).
bool is_builtin_prior_term(const std::string& name);

// `prior` on an ndim-D field whose axes `components` index a model's
// components (a velocity's vx, vy; `model` names it): unlisted symmetric and
// periodic axes become the space axes; a listed component axis, or one a
// monotone term runs along, is an fk::Error naming `where`.
void keep_to_space_axes(PriorSpec& prior, const std::vector<int>& components, int ndim,
                        const std::string& model, const std::string& where);

}  // namespace nefi
