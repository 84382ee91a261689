#include "nefi/byop/prior.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "fk/error.h"

namespace nefi {
namespace {

constexpr const char* kWhere = "prior";
constexpr const char* kAccepted =
    "terms joined by '+': unconstrained | nonnegative | positive | bounded(lo, hi), "
    "piecewise_constant(s) | tv(s), smooth(s), sparse(s), zero_mean";
constexpr double kDefaultStrength = 1.0;

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
  std::stringstream args(t.substr(open + 1, t.size() - open - 2));
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
           std::to_string(t.args.size()) + " arguments");
  const double s = t.args.empty() ? kDefaultStrength : t.args[0];
  FK_CHECK(s > 0, kWhere, "a strength > 0 for " + t.name, std::to_string(s));
  return s;
}

void no_args(const Term& t) {
  FK_CHECK(t.args.empty(), kWhere, t.name + " without arguments",
           std::to_string(t.args.size()) + " arguments");
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

PriorSpec parse_prior(const std::string& text) {
  PriorSpec p;
  if (trim(text).empty()) return p;  // no terms: unconstrained
  std::string head_term;             // the term that set the head, for the conflict message
  bool sparse = false;
  auto set_head = [&](const Term& t, const std::string& head) {
    FK_CHECK(head_term.empty(), kWhere,
             "one term that sets the field's values (unconstrained, nonnegative, positive or "
             "bounded); drop one of them",
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
    } else if (n == "piecewise_constant" || n == "tv") {
      p.penalties.push_back({"tv", strength_of(t)});
    } else if (n == "smooth") {
      p.penalties.push_back({"smooth", strength_of(t)});
    } else if (n == "sparse") {
      p.penalties.push_back({"sparse", strength_of(t)});
      sparse = true;
    } else if (n == "zero_mean") {
      no_args(t);
      p.zero_mean = true;
    } else {
      throw fk::Error(kWhere, kAccepted, "'" + n + "'");
    }
  }
  if (sparse && head_term.empty()) p.head = "nonnegative";
  for (size_t i = 0; i < p.penalties.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      FK_CHECK(p.penalties[i].kind != p.penalties[j].kind, kWhere, "each penalty once",
               p.penalties[i].kind + " twice");
  FK_CHECK(!(p.zero_mean && p.head != "unconstrained"), kWhere,
           "zero_mean with an unconstrained field (a mean-free field takes negative values)",
           "zero_mean with " + p.head);
  return p;
}

namespace {

// The shortest text that reads back as the same double.
std::string exact(double v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

}  // namespace

std::string PriorSpec::str() const {
  std::ostringstream o;
  o << head;
  if (head == "bounded") o << "(" << exact(lo) << ", " << exact(hi) << ")";
  for (const auto& pen : penalties) o << " + " << pen.kind << "(" << exact(pen.strength) << ")";
  if (zero_mean) o << " + zero_mean";
  return o.str();
}

}  // namespace nefi
