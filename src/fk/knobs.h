#pragma once
// The knob registry: every environment switch of fieldkit is registered once,
// with its type, default, a one-line doc and whether it is latched (read once,
// at first use) or read at every call. `fk::knobs()` and `fk-info` list them.
// A malformed value is an fk::Error naming the knob, what it accepts and what
// was given; an empty value is the same as unset (the default).
#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace fk {

enum class KnobType { Bool, Int, Float, String };
enum class KnobRead { Latched, PerCall };

// The values a Float knob accepts: finite numbers in [lo, hi]. fieldkit's float
// knobs are sizes and caps, so the default is [0, 1e9]: never nan or inf, and
// small enough that a product with a byte count still fits an int64.
struct KnobRange {
  double lo = 0.0;
  double hi = 1e9;
};

// The words a String knob takes (empty: any text): another value is refused
// when read or validated, so fk-info vouches for no value a reader would
// refuse later, and a latched knob never latches one. A word ending in ":N"
// takes its prefix and a device index in [0, 127] ("cuda:N": cuda:0, cuda:12).
struct KnobChoices {
  std::vector<std::string> words;
};

class Knob {
 public:
  // Registers the knob; define knobs as namespace-scope objects in the .cpp
  // that reads them. `range` applies to Float knobs only.
  Knob(const char* name, KnobType type, const char* default_value, const char* doc, KnobRead read,
       KnobRange range = {});
  // A String knob taking one of `choices`.
  Knob(const char* name, KnobChoices choices, const char* default_value, const char* doc,
       KnobRead read);
  Knob(const Knob&) = delete;
  Knob& operator=(const Knob&) = delete;

  bool as_bool() const;
  int64_t as_int() const;
  double as_float() const;
  std::string as_string() const;

  const char* name() const { return name_; }
  KnobType type() const { return type_; }
  const char* default_value() const { return default_; }
  const char* doc() const { return doc_; }
  KnobRead read() const { return read_; }
  const KnobRange& range() const { return range_; }
  const std::vector<std::string>& choices() const { return choices_.words; }
  // The raw text in force: the environment's value, else the default.
  std::string raw() const;
  // Validates the current value (throws fk::Error when malformed).
  void validate() const;
  // Tests and programs may override the environment; std::nullopt clears it.
  // Also resets a latched value so the next read sees the override.
  void set_override(std::optional<std::string> value);
  // The override in force, std::nullopt when there is none.
  std::optional<std::string> override_value() const;
  // Bumped by every set_override: lets a hot path cache what it derived from
  // a latched knob and re-derive only when an override changed it.
  uint64_t version() const { return version_.load(std::memory_order_acquire); }

 private:
  struct Parsed {
    bool b = false;
    int64_t i = 0;
    double f = 0;
    std::string s;
  };
  Parsed parse(const std::string& text) const;
  // Both need mu_ held.
  std::string raw_locked() const;
  const Parsed& current_locked() const;

  const char* name_;
  KnobType type_;
  const char* default_;
  const char* doc_;
  KnobRead read_;
  KnobRange range_;
  KnobChoices choices_;
  mutable std::mutex mu_;
  mutable bool latched_ready_ = false;  // guarded by mu_, as are the three below
  mutable Parsed latched_;
  mutable Parsed per_call_;
  std::atomic<uint64_t> version_{0};
  std::optional<std::string> override_;
};

// Every registered knob, sorted by name.
std::vector<const Knob*> knobs();
// The knob called `name`; throws fk::Error when there is none.
const Knob& knob(const std::string& name);
Knob& mutable_knob(const std::string& name);

// A knob's override for a scope: set on construction, and the override it
// replaced (or none) put back on destruction, also when an exception or a
// failed test assertion leaves the scope early. For tests, benchmarks and
// programs that run one code path against another.
class KnobOverride {
 public:
  KnobOverride(const std::string& name, std::optional<std::string> value);
  ~KnobOverride();
  KnobOverride(const KnobOverride&) = delete;
  KnobOverride& operator=(const KnobOverride&) = delete;

 private:
  Knob& knob_;
  std::optional<std::string> replaced_;
};

}  // namespace fk
