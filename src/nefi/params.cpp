#include "nefi/params.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "fk/error.h"
#include "nefi/yaml_whole.h"

namespace nefi {

void Params::declare(const std::string& key, ParamValue value, std::string doc) {
  FK_CHECK(!has(key), "nefi::Params::declare", "a new key", key + " (declared twice)");
  entries_.push_back({key, std::move(value), std::move(doc)});
}

bool Params::has(const std::string& key) const {
  for (const auto& e : entries_)
    if (e.key == key) return true;
  return false;
}

std::string Params::keys() const {
  std::string out;
  for (const auto& e : entries_) out += (out.empty() ? "" : ", ") + e.key;
  return out;
}

namespace {

// No key means anything by NaN or an infinity (a threshold of NaN scored a
// perfect IoU, an infinite pixel size hung the solve), and counts are int in
// the instances' configs (2^32 + 1 iterations ran as 1): a value past them is
// refused by the key's name. Seeds keep int64's range.
void check_range(const std::string& key, const ParamValue& v) {
  const std::string where = "config key '" + key + "'";
  if (const auto* d = std::get_if<double>(&v))
    FK_CHECK(std::isfinite(*d), where, "a finite number", Params::render(v));
  if (const auto* l = std::get_if<std::vector<double>>(&v))
    for (double x : *l) FK_CHECK(std::isfinite(x), where, "finite numbers", Params::render(v));
  if (const auto* i = std::get_if<int64_t>(&v); i && !key.ends_with("seed"))
    FK_CHECK(*i >= std::numeric_limits<int32_t>::min() && *i <= std::numeric_limits<int32_t>::max(),
             where, "a whole number within +-(2^31 - 1)", Params::render(v));
}

}  // namespace

const Params::Entry& Params::get(const std::string& key) const {
  for (const auto& e : entries_)
    if (e.key == key) return e;
  throw fk::Error("config", "one of the keys " + keys(), "unknown key '" + key + "'");
}

Params::Entry& Params::get(const std::string& key) {
  return const_cast<Entry&>(static_cast<const Params*>(this)->get(key));
}

void Params::set_value(const std::string& key, ParamValue value) {
  Entry& e = get(key);
  // An int where a double is declared is fine; anything else must match.
  if (std::holds_alternative<double>(e.value) && std::holds_alternative<int64_t>(value))
    value = static_cast<double>(std::get<int64_t>(value));
  FK_CHECK(e.value.index() == value.index(), "config key '" + key + "'",
           "a value like " + render(e.value), render(value));
  check_range(key, value);
  e.value = std::move(value);
}

void Params::set(const std::string& key, const std::string& text) {
  Entry& e = get(key);
  const std::string where = "config key '" + key + "'";
  YAML::Node n;
  try {
    n = YAML::Load(text);
  } catch (const YAML::Exception&) {
    throw fk::Error(where, "a value like " + render(e.value), "'" + text + "'");
  }
  try {
    if (std::holds_alternative<bool>(e.value)) {
      e.value = n.as<bool>();
    } else if (std::holds_alternative<int64_t>(e.value)) {
      e.value = yaml_whole<int64_t>(n);
    } else if (std::holds_alternative<double>(e.value)) {
      e.value = n.as<double>();
    } else if (std::holds_alternative<std::string>(e.value)) {
      FK_CHECK(n.IsScalar(), where, "a string", "'" + text + "'");
      e.value = n.as<std::string>();
    } else {
      std::vector<double> v;
      if (n.IsSequence()) {
        for (const auto& x : n) v.push_back(x.as<double>());
      } else {
        v.push_back(n.as<double>());
      }
      e.value = v;
    }
  } catch (const YAML::Exception&) {
    throw fk::Error(where, "a value like " + render(e.value), "'" + text + "'");
  }
  check_range(key, e.value);
}

bool Params::b(const std::string& key) const {
  return std::get<bool>(get(key).value);
}
int64_t Params::i(const std::string& key) const {
  return std::get<int64_t>(get(key).value);
}
double Params::d(const std::string& key) const {
  const auto& v = get(key).value;
  if (std::holds_alternative<int64_t>(v)) return static_cast<double>(std::get<int64_t>(v));
  return std::get<double>(v);
}
const std::string& Params::s(const std::string& key) const {
  return std::get<std::string>(get(key).value);
}
std::vector<double> Params::list(const std::string& key) const {
  return std::get<std::vector<double>>(get(key).value);
}

const std::string& Params::choice(const std::string& key,
                                  const std::vector<std::string>& options) const {
  const std::string& v = s(key);
  std::string names;
  for (const auto& o : options) {
    if (o == v) return v;
    names += (names.empty() ? "" : ", ") + o;
  }
  throw fk::Error("config key '" + key + "'", "one of " + names, "'" + v + "'");
}

std::string yaml_float(double v) {
  if (std::isnan(v)) return ".nan";
  if (std::isinf(v)) return v > 0 ? ".inf" : "-.inf";
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);  // shortest round-trip text
  std::string s(buf, r.ptr);
  const size_t e = s.find('e');
  const std::string mantissa = s.substr(0, e);
  if (mantissa.find('.') == std::string::npos)
    s.insert(e == std::string::npos ? s.size() : e, ".0");
  return s;
}

namespace {

// A list entry: integers stay integers ([64, 64, 16]), anything else is a float.
std::string render_list_entry(double v) {
  constexpr double kExactInt = 9007199254740992.0;  // 2^53
  if (v == std::floor(v) && std::abs(v) < kExactInt && !(v == 0 && std::signbit(v)))
    return std::to_string(static_cast<int64_t>(v));
  return yaml_float(v);
}

}  // namespace

std::string Params::render(const ParamValue& v) {
  std::ostringstream os;
  if (std::holds_alternative<bool>(v)) {
    os << (std::get<bool>(v) ? "true" : "false");
  } else if (std::holds_alternative<int64_t>(v)) {
    os << std::get<int64_t>(v);
  } else if (std::holds_alternative<double>(v)) {
    os << yaml_float(std::get<double>(v));
  } else if (std::holds_alternative<std::string>(v)) {
    os << std::get<std::string>(v);
  } else {
    os << "[";
    const auto& l = std::get<std::vector<double>>(v);
    for (size_t i = 0; i < l.size(); ++i) os << (i ? ", " : "") << render_list_entry(l[i]);
    os << "]";
  }
  return os.str();
}

}  // namespace nefi
