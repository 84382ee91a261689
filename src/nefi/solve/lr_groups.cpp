#include "nefi/solve/lr_groups.h"

#include <string>

#include "fk/error.h"

namespace nefi {
namespace {

bool starts_with(const std::string& name, const std::string& prefix) {
  return name.compare(0, prefix.size(), prefix) == 0;
}

std::string listed(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

}  // namespace

std::vector<std::string> parameter_names(const Field& field, const Operator& op) {
  std::vector<std::string> names;
  for (int i = 0; i < field.params().size(); ++i)
    names.push_back("field." + field.params().name(i));
  for (size_t k = 0; k < op.parameters().size(); ++k)
    names.push_back("operator." + std::to_string(k));
  return names;
}

void check_lr_groups(const Field& field, const Operator& op, const OptimConfig& optim,
                     const std::vector<Stage>& stages) {
  const std::vector<std::string> names = parameter_names(field, op);
  // The names of every field kind and of operator parameters: a prefix
  // written for another method's field (one config, several methods) is
  // not a typo; it trains nothing here.
  static const std::vector<std::string> kKnown{"field.values", "field.table", "field.layer",
                                               "field.out", "operator."};
  auto check = [&](const std::string& prefix, const std::string& what) {
    for (const auto& n : names)
      if (starts_with(n, prefix)) return;
    for (const auto& k : kKnown)
      if (starts_with(k, prefix) || starts_with(prefix, k)) return;
    throw fk::Error(what,
                    "a prefix of a parameter name (this " + field.kind() + " field's: " +
                        listed(names) + "; other fields': field.values, field.table)",
                    "'" + prefix + "'");
  };
  for (const auto& [prefix, mult] : optim.lr_mult) check(prefix, "optim.lr_mult");
  for (const Stage& st : stages)
    for (const auto& prefix : st.freeze) check(prefix, "stage '" + st.name + "' freeze");
}

std::vector<std::vector<LrSegment>> lr_segments(const Field& field, const Operator& op,
                                                const OptimConfig& optim, const Stage& stage) {
  check_lr_groups(field, op, optim, {stage});
  const std::vector<std::string> names = parameter_names(field, op);
  auto mult_of = [&](const std::string& name) {
    for (const auto& prefix : stage.freeze)
      if (starts_with(name, prefix)) return 0.0;
    double m = 1;
    size_t best = 0;
    for (const auto& [prefix, v] : optim.lr_mult)
      if (starts_with(name, prefix) && prefix.size() >= best) {
        best = prefix.size();
        m = v;
      }
    return m;
  };
  const FlatParams& fp = field.params();
  const size_t n_ops = op.parameters().size();
  std::vector<std::vector<LrSegment>> out(1 + n_ops);
  bool any = false;
  for (int i = 0; i < fp.size(); ++i) {
    const double m = mult_of(names[i]);
    any = any || m != 1;
    out[0].push_back({fp.offset(i), fp.shape(i).numel(), m});
  }
  for (size_t k = 0; k < n_ops; ++k) {
    const double m = mult_of(names[fp.size() + k]);
    any = any || m != 1;
    out[1 + k].push_back({0, op.parameters()[k].numel(), m});
  }
  if (!any) return std::vector<std::vector<LrSegment>>(1 + n_ops);
  // The flat buffer's entries are laid out in order with no gaps (flat_params.h).
  return out;
}

}  // namespace nefi
