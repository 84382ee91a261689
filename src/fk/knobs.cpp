#include "fk/knobs.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <map>

#include "fk/error.h"

namespace fk {
namespace {

std::map<std::string, Knob*>& registry() {
  static auto* r = new std::map<std::string, Knob*>();
  return *r;
}
std::mutex& registry_mutex() {
  static auto* m = new std::mutex();
  return *m;
}

std::string accepts(KnobType t, const KnobRange& range, const std::vector<std::string>& words) {
  if (!words.empty()) {  // "one of a, b or c"
    std::string s = "one of ";
    for (size_t i = 0; i < words.size(); ++i)
      s += (i == 0 ? "" : i + 1 == words.size() ? " or " : ", ") + words[i];
    return s;
  }
  switch (t) {
    case KnobType::Bool:
      return "0, 1, true, false, on, off, yes or no";
    case KnobType::Int:
      return "an integer";
    case KnobType::Float:
      return fmt::format("a finite number in [{:g}, {:g}]", range.lo, range.hi);
    case KnobType::String:
      return "a string";
  }
  return "?";
}

// Whether `text` is `word`, or for a word "prefix:N" the prefix, a colon and
// a whole number in [0, 127] (a device index, as fk::parse_device takes it).
bool matches(const std::string& word, const std::string& text) {
  if (!word.ends_with(":N")) return word == text;
  const std::string prefix = word.substr(0, word.size() - 1);
  if (text.size() <= prefix.size() || text.size() > prefix.size() + 3 ||
      !text.starts_with(prefix) ||
      text.find_first_not_of("0123456789", prefix.size()) != std::string::npos)
    return false;
  return std::stoi(text.substr(prefix.size())) <= 127;
}

}  // namespace

Knob::Knob(const char* name, KnobType type, const char* default_value, const char* doc,
           KnobRead read, KnobRange range)
    : name_(name), type_(type), default_(default_value), doc_(doc), read_(read), range_(range) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  registry()[name_] = this;
}

Knob::Knob(const char* name, KnobChoices choices, const char* default_value, const char* doc,
           KnobRead read)
    : Knob(name, KnobType::String, default_value, doc, read) {
  choices_ = std::move(choices);
}

std::string Knob::raw() const {
  std::lock_guard<std::mutex> lock(mu_);
  return raw_locked();
}

std::string Knob::raw_locked() const {
  if (override_) return *override_;
  // An empty value is unset (the shell's `VAR= cmd`): the default, not a
  // Bool's false or a refusal.
  if (const char* v = std::getenv(name_); v != nullptr && *v != '\0') return v;
  return default_;
}

Knob::Parsed Knob::parse(const std::string& text) const {
  Parsed p;
  p.s = text;
  auto bad = [&]() {
    return Error(std::string("knob ") + name_, accepts(type_, range_, choices_.words),
                 "'" + text + "'");
  };
  switch (type_) {
    case KnobType::Bool: {
      std::string t = text;
      std::transform(t.begin(), t.end(), t.begin(), ::tolower);
      if (t == "1" || t == "true" || t == "on" || t == "yes") {
        p.b = true;
      } else if (t == "0" || t == "false" || t == "off" || t == "no") {
        p.b = false;
      } else {
        throw bad();
      }
      break;
    }
    case KnobType::Int: {
      // from_chars: the whole text a decimal number, no blank or sign '+' as
      // the word knobs take none (strtoll read " 5" and "+5")
      int64_t v = 0;
      const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
      if (text.empty() || ec != std::errc() || end != text.data() + text.size()) throw bad();
      p.i = v;
      break;
    }
    case KnobType::Float: {
      // from_chars (general format): no blank, sign '+' or hexadecimal, which
      // strtod read (" 5", "0x10" = 16); "nan", "inf" and an overflow are
      // refused with everything outside the knob's range.
      double v = 0;
      const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
      if (text.empty() || ec != std::errc() || end != text.data() + text.size() ||
          !std::isfinite(v) || v < range_.lo || v > range_.hi) {
        throw bad();
      }
      p.f = v;
      break;
    }
    case KnobType::String:
      if (!choices_.words.empty() &&
          std::none_of(choices_.words.begin(), choices_.words.end(),
                       [&](const std::string& w) { return matches(w, text); }))
        throw bad();
      break;
  }
  return p;
}

// Reads under the knob's lock: a read never sees an override half written,
// and an uncontended lock costs far less than the op that reads a knob.
const Knob::Parsed& Knob::current_locked() const {
  if (read_ == KnobRead::PerCall) {
    per_call_ = parse(raw_locked());
    return per_call_;
  }
  if (!latched_ready_) {
    latched_ = parse(raw_locked());
    latched_ready_ = true;
  }
  return latched_;
}

bool Knob::as_bool() const {
  std::lock_guard<std::mutex> lock(mu_);
  return current_locked().b;
}
int64_t Knob::as_int() const {
  std::lock_guard<std::mutex> lock(mu_);
  return current_locked().i;
}
double Knob::as_float() const {
  std::lock_guard<std::mutex> lock(mu_);
  return current_locked().f;
}
std::string Knob::as_string() const {
  std::lock_guard<std::mutex> lock(mu_);
  return current_locked().s;
}
void Knob::validate() const {
  (void)parse(raw());
}

void Knob::set_override(std::optional<std::string> value) {
  std::lock_guard<std::mutex> lock(mu_);
  if (value) (void)parse(*value);
  override_ = std::move(value);
  latched_ready_ = false;
  version_.fetch_add(1, std::memory_order_acq_rel);
}

std::optional<std::string> Knob::override_value() const {
  std::lock_guard<std::mutex> lock(mu_);
  return override_;
}

KnobOverride::KnobOverride(const std::string& name, std::optional<std::string> value)
    : knob_(mutable_knob(name)), replaced_(knob_.override_value()) {
  knob_.set_override(std::move(value));
}

// The replaced override parsed when it was set, so putting it back cannot throw.
KnobOverride::~KnobOverride() {
  knob_.set_override(std::move(replaced_));
}

std::vector<const Knob*> knobs() {
  std::lock_guard<std::mutex> lock(registry_mutex());
  std::vector<const Knob*> out;
  for (auto& [name, k] : registry()) out.push_back(k);
  return out;
}

Knob& mutable_knob(const std::string& name) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  auto it = registry().find(name);
  if (it == registry().end())
    throw Error("knob lookup", "the name of a registered knob", "'" + name + "'");
  return *it->second;
}

const Knob& knob(const std::string& name) {
  return mutable_knob(name);
}

}  // namespace fk
