#include "nefi/byop/prior.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "fk/error.h"
#include "nefi/byop/custom_prior.h"

namespace nefi {
namespace {

constexpr const char* kWhere = "prior";
constexpr const char* kAccepted =
    "terms joined by '+': unconstrained | nonnegative | positive | bounded(lo, hi) | binary | "
    "two_phase(lo, hi) | phases(v1, ..., vK), piecewise_constant(s) | tv(s), smooth(s), sparse(s), "
    "increasing(axis, s) "
    "| decreasing(axis, s), zero_mean, conserved(M), symmetric(axes), periodic(axes), "
    "known_support, "
    "scale(v), or a registered term NAME(s)";
constexpr double kDefaultStrength = 1.0;

// The shortest text that reads back as the same double.
std::string exact(double v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

std::string trim(const std::string& s) {
  size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  return s.substr(a, b - a);
}

struct Term {
  std::string name;
  std::vector<double> args;
};

Term parse_term(const std::string& raw) {
  const std::string t = trim(raw);
  FK_CHECK(!t.empty(), kWhere, kAccepted, "an empty term");
  Term term;
  const size_t open = t.find('(');
  term.name = trim(t.substr(0, open));
  for (char& c : term.name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (open == std::string::npos) return term;
  FK_CHECK(t.back() == ')', kWhere, "an argument list closed by ')'", "'" + t + "'");
  const std::string inside = t.substr(open + 1, t.size() - open - 2);
  // getline drops a trailing empty part: tv(1,) and tv() read as tv(1) and tv.
  FK_CHECK(!trim(inside).empty(), kWhere, term.name + " without parentheses, or numbers in them",
           "'" + t + "'");
  FK_CHECK(trim(inside).back() != ',', kWhere, "finite numbers as arguments of " + term.name,
           "'" + t + "' (a trailing comma)");
  std::stringstream args(inside);
  std::string a;
  while (std::getline(args, a, ',')) {
    const std::string v = trim(a);
    char* end = nullptr;
    const double d = std::strtod(v.c_str(), &end);
    FK_CHECK(!v.empty() && end == v.c_str() + v.size() && std::isfinite(d), kWhere,
             "finite numbers as arguments of " + term.name, "'" + v + "' in '" + t + "'");
    term.args.push_back(d);
  }
  return term;
}

double strength_of(const Term& t) {
  FK_CHECK(t.args.size() <= 1, kWhere, t.name + "(strength) with at most one argument",
           fk::to_text(t.args.size()) + " arguments");
  const double s = t.args.empty() ? kDefaultStrength : t.args[0];
  FK_CHECK(s > 0, kWhere, "a strength > 0 for " + t.name, exact(s));
  return s;
}

// A term's axis argument: an integer in 0..2.
int axis_of(const Term& t, double v) {
  FK_CHECK(v >= 0 && v <= 2 && v == std::floor(v), kWhere, "axes 0, 1 or 2 in " + t.name, exact(v));
  return static_cast<int>(v);
}

void no_args(const Term& t) {
  FK_CHECK(t.args.empty(), kWhere, t.name + " without arguments",
           fk::to_text(t.args.size()) + " arguments");
}

// The text split at the '+' signs outside parentheses ("bounded(-1, +1)"
// and "tv(1e+2)" are one term each).
std::vector<std::string> split_terms(const std::string& text) {
  std::vector<std::string> out(1);
  int depth = 0;
  for (char c : text) {
    depth += c == '(' ? 1 : c == ')' ? -1 : 0;
    FK_CHECK(depth >= 0, kWhere, "balanced parentheses", "'" + text + "'");
    if (c == '+' && depth == 0)
      out.emplace_back();
    else
      out.back() += c;
  }
  FK_CHECK(depth == 0, kWhere, "balanced parentheses", "'" + text + "'");
  return out;
}

}  // namespace

bool is_builtin_prior_term(const std::string& name) {
  static const std::string kNames =
      " unconstrained real signed nonnegative nonneg positive log bounded box range binary "
      "two_phase level_set phases increasing monotone decreasing conserved mass symmetric periodic "
      "known_support scale piecewise_constant tv smooth sparse zero_mean ";
  return !name.empty() && kNames.find(" " + name + " ") != std::string::npos;
}

PriorSpec parse_prior(const std::string& text) {
  PriorSpec p;
  if (trim(text).empty()) return p;  // no terms: unconstrained
  std::string head_term;             // the term that set the head, for the conflict message
  std::string implied_by;            // sparse or conserved: nonnegative without a head term
  auto set_head = [&](const Term& t, const std::string& head) {
    FK_CHECK(head_term.empty(), kWhere,
             "one term that sets the field's values (unconstrained, nonnegative, positive, "
             "bounded, binary or phases); drop one of them",
             "'" + head_term + "' and '" + t.name + "'");
    head_term = t.name;
    p.head = head;
  };
  for (const std::string& raw : split_terms(text)) {
    const Term t = parse_term(raw);
    const std::string& n = t.name;
    if (n == "unconstrained" || n == "real" || n == "signed") {
      no_args(t);
      set_head(t, "unconstrained");
    } else if (n == "nonnegative" || n == "nonneg") {
      no_args(t);
      set_head(t, "nonnegative");
    } else if (n == "positive" || n == "log") {
      no_args(t);
      set_head(t, "positive");
    } else if (n == "bounded" || n == "box" || n == "range") {
      FK_CHECK(t.args.size() == 2 && t.args[0] < t.args[1], kWhere, n + "(lo, hi) with lo < hi",
               "'" + trim(raw) + "'");
      set_head(t, "bounded");
      p.lo = t.args[0];
      p.hi = t.args[1];
    } else if (n == "binary" || n == "two_phase" || n == "level_set") {
      if (n == "binary") {
        no_args(t);
      } else {
        FK_CHECK(t.args.size() == 2 && t.args[0] < t.args[1], kWhere, n + "(lo, hi) with lo < hi",
                 "'" + trim(raw) + "'");
        p.lo = t.args[0];
        p.hi = t.args[1];
      }
      set_head(t, "level_set");
    } else if (n == "phases") {
      std::vector<double> v = t.args;
      std::sort(v.begin(), v.end());
      FK_CHECK(
          v.size() >= 2 && v.size() <= 8 && std::adjacent_find(v.begin(), v.end()) == v.end() &&
              std::all_of(v.begin(), v.end(), [](double e) { return std::isfinite(e); }),
          kWhere, "phases(v1, ..., vK) with 2 to 8 distinct finite values", "'" + trim(raw) + "'");
      set_head(t, "phases");
      p.phases = v;
      p.lo = v.front();
      p.hi = v.back();
    } else if (n == "increasing" || n == "monotone" || n == "decreasing") {
      FK_CHECK(t.args.size() <= 2, kWhere, n + "(axis, strength) with at most two arguments",
               fk::to_text(t.args.size()) + " arguments");
      PriorPenalty pen{"monotone", kDefaultStrength, 0, n == "decreasing" ? -1 : 1};
      if (!t.args.empty()) pen.axis = axis_of(t, t.args[0]);
      if (t.args.size() == 2) pen.strength = strength_of({n, {t.args[1]}});
      p.penalties.push_back(pen);
    } else if (n == "conserved" || n == "mass") {
      FK_CHECK(t.args.size() == 1 && t.args[0] > 0, kWhere, n + "(M) with the field's total M > 0",
               "'" + trim(raw) + "'");
      FK_CHECK(!p.mass, kWhere, "one conserved term", "two");
      p.mass = t.args[0];
      if (implied_by.empty()) implied_by = t.name;
    } else if (n == "symmetric" || n == "periodic") {
      std::vector<int>& axes = n == "symmetric" ? p.symmetric : p.periodic;
      FK_CHECK(axes.empty(), kWhere, "one " + n + " term", "two");
      for (double a : t.args) {
        const int axis = axis_of(t, a);
        FK_CHECK(std::find(axes.begin(), axes.end(), axis) == axes.end(), kWhere,
                 "each axis once in " + n, "axis " + fk::to_text(axis) + " twice");
        axes.push_back(axis);
      }
      if (axes.empty()) axes = {-1};
    } else if (n == "known_support") {
      no_args(t);
      p.known_support = true;
    } else if (n == "scale") {
      FK_CHECK(t.args.size() == 1 && t.args[0] > 0, kWhere, "scale(v) with v > 0",
               "'" + trim(raw) + "'");
      p.scale = t.args[0];
    } else if (n == "piecewise_constant" || n == "tv") {
      p.penalties.push_back({"tv", strength_of(t)});
    } else if (n == "smooth") {
      p.penalties.push_back({"smooth", strength_of(t)});
    } else if (n == "sparse") {
      p.penalties.push_back({"sparse", strength_of(t)});
      if (implied_by.empty()) implied_by = t.name;
    } else if (n == "zero_mean") {
      no_args(t);
      p.zero_mean = true;
    } else if (is_registered_prior_term(n)) {
      p.penalties.push_back({n, strength_of(t)});
      p.penalties.back().custom = true;
    } else {
      throw fk::Error(kWhere, kAccepted, "'" + n + "'");
    }
  }
  // The head as the messages below name it: one the caller never wrote says
  // which term implied it.
  std::string head_named = p.head;
  if (!implied_by.empty() && head_term.empty()) {
    p.head = "nonnegative";
    head_named = "nonnegative (implied by " + implied_by + ")";
  }
  for (size_t i = 0; i < p.penalties.size(); ++i)
    for (size_t j = 0; j < i; ++j) {
      const PriorPenalty &a = p.penalties[i], &b = p.penalties[j];
      const bool monotone = a.kind == "monotone";
      FK_CHECK(a.kind != b.kind || (monotone && a.axis != b.axis), kWhere,
               monotone ? "one monotone term per axis" : "each penalty once",
               monotone ? "two on axis " + fk::to_text(a.axis) : a.kind + " twice");
    }
  FK_CHECK(!p.mass || p.head == "nonnegative" || p.head == "positive", kWhere,
           "conserved with a nonnegative or positive field (the total is kept by scaling)",
           "conserved with " + p.head);
  FK_CHECK(!(p.scale && p.ranged()), kWhere,
           "scale with an unbounded field (bounds already set the scale)", "scale with " + p.head);
  FK_CHECK(!(p.scale && p.mass), kWhere, "scale or conserved (the total sets the scale)", "both");
  FK_CHECK(!(p.zero_mean && p.head != "unconstrained"), kWhere,
           "zero_mean with an unconstrained field (a mean-free field takes negative values)",
           "zero_mean with " + head_named);
  return p;
}

std::string PriorSpec::str() const {
  std::ostringstream o;
  o << (head == "level_set" ? "two_phase" : head);
  if (head == "phases") {
    o << "(";
    for (size_t i = 0; i < phases.size(); ++i) o << (i ? ", " : "") << exact(phases[i]);
    o << ")";
  } else if (ranged()) {
    o << "(" << exact(lo) << ", " << exact(hi) << ")";
  }
  for (const auto& pen : penalties) {
    if (pen.kind == "monotone")
      o << " + " << (pen.sign > 0 ? "increasing(" : "decreasing(") << pen.axis << ", "
        << exact(pen.strength) << ")";
    else
      o << " + " << pen.kind << "(" << exact(pen.strength) << ")";
  }
  if (zero_mean) o << " + zero_mean";
  if (mass) o << " + conserved(" << exact(*mass) << ")";
  for (const auto& [term, axes] : {std::pair{"symmetric", &symmetric}, {"periodic", &periodic}}) {
    if (axes->empty()) continue;
    o << " + " << term;
    if (*axes == std::vector<int>{-1}) continue;  // every axis
    o << "(";
    for (size_t i = 0; i < axes->size(); ++i) o << (i ? ", " : "") << (*axes)[i];
    o << ")";
  }
  if (known_support) o << " + known_support";
  if (scale) o << " + scale(" << exact(*scale) << ")";
  return o.str();
}

// Axes that index a model's components are no space: a mirror, a period or
// a trend across them mixed the components (plain symmetric averaged vx
// with vy).
void keep_to_space_axes(PriorSpec& prior, const std::vector<int>& components, int ndim,
                        const std::string& model, const std::string& where) {
  if (components.empty()) return;
  auto is_component = [&](int a) {
    return std::find(components.begin(), components.end(), a) != components.end();
  };
  for (std::vector<int>* axes : {&prior.symmetric, &prior.periodic})
    if (*axes == std::vector<int>{-1}) {  // unlisted: every axis of space
      axes->clear();
      for (int a = 0; a < ndim; ++a)
        if (!is_component(a)) axes->push_back(a);
    }
  auto refuse = [&](int a, const std::string& what) {
    FK_CHECK(!is_component(a), where,
             what + " of space (" + model + "'s field indexes its components along axis " +
                 fk::to_text(a) + ")",
             "axis " + fk::to_text(a));
  };
  for (int a : prior.symmetric) refuse(a, "symmetric axes");
  for (int a : prior.periodic) refuse(a, "periodic axes");
  for (const PriorPenalty& pen : prior.penalties)
    if (pen.kind == "monotone") refuse(pen.axis, "a monotone axis");
}

}  // namespace nefi
