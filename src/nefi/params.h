#pragma once
// Params: an instance's typed configuration — every key declared once with a
// type, a default and a one-line doc. Setting an undeclared key, or a value
// that does not parse as the declared type, throws fk::Error naming the key
// (and, for unknown keys, the valid ones): a mistyped config never runs.
// Each instance reads its Params once into its own typed config struct.
// Params lives at the root of nefi, beside Domain and Measurement, because
// instances/ declare and read it and io/ (config files, run directories)
// loads and writes it: neither layer has to reach up into the other.
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace nefi {

using ParamValue = std::variant<bool, int64_t, double, std::string, std::vector<double>>;

class Params {
 public:
  void declare(const std::string& key, ParamValue value, std::string doc);
  bool has(const std::string& key) const;
  // Parses `text` (YAML scalar or flow list) as the key's declared type.
  void set(const std::string& key, const std::string& text);
  void set_value(const std::string& key, ParamValue value);

  bool b(const std::string& key) const;
  int64_t i(const std::string& key) const;
  double d(const std::string& key) const;  // ints are accepted
  const std::string& s(const std::string& key) const;
  std::vector<double> list(const std::string& key) const;
  // The string value of `key`, which must be one of `options` (else an error
  // naming the key and the options).
  const std::string& choice(const std::string& key, const std::vector<std::string>& options) const;

  struct Entry {
    std::string key;
    ParamValue value;
    std::string doc;
  };
  const std::vector<Entry>& entries() const { return entries_; }
  std::string keys() const;  // "a, b, c"
  // YAML flow text that reads back as exactly `v`: doubles via yaml_float,
  // integral list entries as integers.
  static std::string render(const ParamValue& v);

 private:
  const Entry& get(const std::string& key) const;
  Entry& get(const std::string& key);
  std::vector<Entry> entries_;
};

// The shortest text that reads back as exactly `v`, in a form every YAML
// loader reads as a float: a mantissa with a point and a signed exponent
// (1.0, 0.02, 1.0e-06, 1.0e+21) and .inf / -.inf / .nan. YAML 1.1 loaders
// (PyYAML) read `1e-06` or `1` as a string or an int.
std::string yaml_float(double v);

}  // namespace nefi
