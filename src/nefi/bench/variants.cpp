#include "nefi/bench/variants.h"

#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <optional>
#include <variant>

#include <fmt/format.h>

#include "fk/error.h"

namespace nefi::bench {
namespace {

std::string join(const std::vector<std::string>& v, const std::string& sep = ", ") {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

const Params::Entry* entry(const Params& p, const std::string& key) {
  for (const auto& e : p.entries())
    if (e.key == key) return &e;
  return nullptr;
}

// "NAME" of drop_loss:NAME or set_weight:NAME=W, checked against the config.
std::string weight_key(const RunConfig& cfg, const std::string& name, const std::string& mod) {
  const std::vector<std::string> keys = loss_weight_keys(cfg.config);
  FK_CHECK(std::find(keys.begin(), keys.end(), name) != keys.end(), "modifier '" + mod + "'",
           "a loss weight of " + cfg.instance + " (" + join(keys) + ")", "'" + name + "'");
  return name;
}

// The part after "prefix:" split at the first '=' (an error when missing).
std::pair<std::string, std::string> assignment(const std::string& mod, size_t colon) {
  const std::string body = mod.substr(colon + 1);
  const size_t eq = body.find('=');
  FK_CHECK(eq != std::string::npos && eq > 0, "modifier '" + mod + "'",
           mod.substr(0, colon) + ":NAME=VALUE", "no NAME=VALUE");
  return {body.substr(0, eq), body.substr(eq + 1)};
}

struct Step {
  std::string label;
  std::vector<std::string> sets;
  std::string method;  // empty: keep the current method
};

Step no_annealing(const RunConfig& cfg) {
  if (cfg.config.has("anneal_fraction")) return {"-annealing", {"anneal_fraction=1e-9"}, ""};
  if (cfg.config.has("anneal_steps")) return {"-annealing", {"anneal_steps=0"}, ""};
  throw fk::Error("modifier 'no_annealing'",
                  "an instance with an anneal_fraction or anneal_steps key",
                  cfg.instance + " has neither");
}

Step no_pe(const RunConfig& cfg) {
  FK_CHECK(cfg.config.has("n_octaves"), "modifier 'no_pe'", "an instance with an n_octaves key",
           cfg.instance + " has none");
  Step s{"-pe", {"n_octaves=0"}, ""};
  if (cfg.config.has("include_input")) s.sets.push_back("include_input=true");
  return s;
}

Step single_stage(const RunConfig& cfg) {
  const Params::Entry* e = entry(cfg.config, "steps");
  FK_CHECK(e && std::holds_alternative<std::vector<double>>(e->value), "modifier 'single_stage'",
           "an instance whose 'steps' key is a list of stage steps",
           cfg.instance + (e ? " has a single steps count" : " has no steps key"));
  const auto steps = std::get<std::vector<double>>(e->value);
  const double total = std::accumulate(steps.begin(), steps.end(), 0.0);
  return {"-multiscale", {"steps=[" + Params::render(total) + "]"}, ""};
}

// no_pe and no_annealing switch off the neural field's positional encoding
// and its band annealing: on another method's field (grid, a baseline) they
// would change nothing and the row would claim the part has no effect.
void check_neural(const Instance& inst, const std::string& method, const std::string& mod) {
  const std::string neural = default_method(inst);
  FK_CHECK(method == neural, "modifier '" + mod + "'",
           "the neural method (" + neural + ", whose field has a positional encoding)",
           "method " + method);
}

// stage.*, optim.* and curriculum.* settings override the default method's
// curriculum alone (campaign.h): on another method the rows would all be
// the base row, their differences zero.
void check_reaches(const Instance& inst, const std::string& method, const std::string& setting) {
  const std::string neural = default_method(inst);
  FK_CHECK(method == neural, setting,
           "a setting the method reads (stage., optim. and curriculum. settings reach only " +
               neural + ")",
           "method " + method);
}

// One modifier against the config as the earlier ones left it, for the
// method the earlier ones left.
Step modifier_step(const RunConfig& cfg, const Instance& inst, const std::string& method,
                   const std::string& mod) {
  if (mod == "no_annealing" || mod == "no_pe") check_neural(inst, method, mod);
  if (mod == "no_annealing") return no_annealing(cfg);
  if (mod == "no_pe") return no_pe(cfg);
  if (mod == "single_stage") return single_stage(cfg);
  if (mod == "no_gate") {
    FK_CHECK(cfg.config.has("gate"), "modifier 'no_gate'",
             "an instance with a gated head (a gate key)", cfg.instance + " has none");
    return {"-gate", {"gate=false"}, ""};
  }
  if (mod == "grid_field") {
    const auto m = inst.methods();
    FK_CHECK(std::find(m.begin(), m.end(), "grid") != m.end(), "modifier 'grid_field'",
             "an instance with a grid method", cfg.instance + " has " + join(m));
    return {"grid_field", {}, "grid"};
  }
  const size_t colon = mod.find(':');
  const std::string kind = mod.substr(0, colon);
  if (colon != std::string::npos && kind == "drop_loss") {
    const std::string name = weight_key(cfg, mod.substr(colon + 1), mod);
    // A term already off: the row would be the base row, claiming no effect.
    FK_CHECK(cfg.config.d(name) != 0, "modifier '" + mod + "'", "a loss term in use (weight not 0)",
             "'" + name + "' at 0 already");
    return {"-" + name, {name + "=0"}, ""};
  }
  if (colon != std::string::npos && kind == "set_weight") {
    const auto [name, value] = assignment(mod, colon);
    weight_key(cfg, name, mod);
    return {name + "=" + value, {name + "=" + value}, ""};
  }
  if (colon != std::string::npos && (kind == "set" || kind == "set_config")) {
    const auto [key, value] = assignment(mod, colon);
    FK_CHECK(cfg.config.has(key), "modifier '" + mod + "'",
             "a config key of " + cfg.instance + " (" + cfg.config.keys() + ")", "'" + key + "'");
    return {key + "=" + value, {key + "=" + value}, ""};
  }
  if (colon != std::string::npos && (kind == "stage" || kind == "optim")) {
    check_reaches(inst, method, "modifier '" + mod + "'");
    const auto [attr, value] = assignment(mod, colon);
    return {kind + "." + attr + "=" + value, {kind + "." + attr + "=" + value}, ""};
  }
  throw fk::Error(
      "--variants",
      "a modifier (no_annealing, no_pe, single_stage, grid_field, no_gate, drop_loss:NAME, "
      "set_weight:NAME=W, set:KEY=V, stage:ATTR=V, optim:ATTR=V)",
      "'" + mod + "'");
}

void check_method(const Instance& inst, const std::string& method) {
  const auto m = inst.methods();
  FK_CHECK(std::find(m.begin(), m.end(), method) != m.end(), "--base",
           "a method of " + inst.name() + " (" + join(m) + ")", "'" + method + "'");
}

}  // namespace

std::vector<std::string> split_list(const std::string& text, const std::string& what) {
  std::vector<std::string> items;
  std::string cur;
  int depth = 0;
  auto flush = [&] {
    const size_t a = cur.find_first_not_of(" \t"), b = cur.find_last_not_of(" \t");
    const std::string item = a == std::string::npos ? "" : cur.substr(a, b - a + 1);
    FK_CHECK(!item.empty(), what, "a comma list of non-empty items", "'" + text + "'");
    items.push_back(item);
    cur.clear();
  };
  for (const char c : text) {
    if (c == '[' || c == '{') ++depth;
    if (c == ']' || c == '}') --depth;
    if ((c == ',' && depth == 0) || c == '\n') {
      flush();
    } else {
      cur += c;
    }
  }
  FK_CHECK(depth == 0, what, "balanced brackets", "'" + text + "'");
  flush();
  return items;
}

std::vector<std::string> loss_weight_keys(const Params& config) {
  std::vector<std::string> keys;
  for (const auto& e : config.entries())
    if (std::holds_alternative<double>(e.value) && e.doc.find("weight") != std::string::npos &&
        e.doc.find("decay") == std::string::npos && e.doc.find("scale") == std::string::npos)
      keys.push_back(e.key);
  return keys;
}

std::vector<Variant> ablation_variants(const RunConfig& base, const Instance& inst,
                                       const std::string& base_method,
                                       const std::vector<std::string>& modifiers,
                                       bool independent) {
  check_method(inst, base_method);
  FK_CHECK(!modifiers.empty(), "--variants", "at least one modifier", "none");
  std::vector<Variant> out{{"full", base_method, {}, {}}};
  RunConfig cfg = base;
  for (const auto& mod : modifiers) {
    const Variant& prev = independent ? out.front() : out.back();
    if (independent) cfg = base;
    const Step s = modifier_step(cfg, inst, prev.method, mod);
    for (const auto& a : s.sets) apply_set(cfg, a);  // checks key and value now
    Variant v = prev;
    v.label = s.label;
    if (!s.method.empty()) v.method = s.method;
    v.sets.insert(v.sets.end(), s.sets.begin(), s.sets.end());
    v.modifiers.push_back(mod);
    for (const auto& earlier : out)
      FK_CHECK(earlier.label != v.label, "--variants", "each modifier once", "'" + mod + "' twice");
    out.push_back(std::move(v));
  }
  return out;
}

std::vector<Variant> sweep_variants(const RunConfig& base, const std::string& base_method,
                                    const std::string& axis,
                                    const std::vector<std::string>& values) {
  FK_CHECK(!axis.empty(), "--axis",
           "a config key, stage.ATTR, optim.ATTR, curriculum.ATTR or weight.NAME", "''");
  FK_CHECK(!values.empty(), "--values", "at least one value", "none");
  std::string key = axis;
  for (const char* prefix : {"stage.", "optim.", "curriculum."})
    if (axis.rfind(prefix, 0) == 0)
      check_reaches(*find_instance(base.instance), base_method, "--axis " + axis);
  if (axis.rfind("weight.", 0) == 0) {
    key = axis.substr(7);
    const std::vector<std::string> keys = loss_weight_keys(base.config);
    FK_CHECK(std::find(keys.begin(), keys.end(), key) != keys.end(), "--axis " + axis,
             "a loss weight of " + base.instance + " (" + join(keys) + ")", "'" + key + "'");
  }
  // Two spellings of one number (1e-3 and 0.001) are one value.
  const auto number = [](const std::string& v) {
    char* end = nullptr;
    const double x = std::strtod(v.c_str(), &end);
    return !v.empty() && end == v.c_str() + v.size() ? std::optional<double>(x) : std::nullopt;
  };
  // A config key's value as parsed ([10, 20] and [10,20] alike); other
  // axes by their text.
  std::vector<std::string> parsed;
  std::vector<Variant> out;
  for (size_t i = 0; i < values.size(); ++i) {
    const std::string& v = values[i];
    const std::string a = key + "=" + v;
    RunConfig cfg = base;
    apply_set(cfg, a);  // an unknown key or a mistyped value fails here
    const Params::Entry* e = entry(cfg.config, key);
    parsed.push_back(e ? Params::render(e->value) : v);
    for (size_t j = 0; j < i; ++j)
      FK_CHECK(parsed[j] != parsed[i] && !(number(v) && number(values[j]) == number(v)), "--values",
               "each value once", "'" + values[j] + "' and '" + v + "'");
    out.push_back({a, base_method, {a}, {a}});
  }
  return out;
}

VariantCampaign run_variants(const CampaignSpec& spec, const std::vector<Variant>& variants,
                             const CampaignOptions& options) {
  FK_CHECK(!variants.empty(), "nefi::bench::run_variants", "at least one variant", "none");
  VariantCampaign vc;
  // The campaign's own config (its --set, no row's), and what each row adds:
  // the first row's config stood for every row's once.
  CampaignSpec base = spec;
  base.methods = {variants.front().method};
  vc.protocol = make_protocol(base);
  std::map<std::string, std::string> fidelity;  // by row label, and the data's
  for (const Variant& v : variants) {
    CampaignSpec s = spec;
    s.methods = {v.method};
    s.sets.insert(s.sets.end(), v.sets.begin(), v.sets.end());
    const Protocol p = make_protocol(s);
    std::vector<std::string>& applies = vc.protocol.variants[v.label];
    applies = {v.method};
    applies.insert(applies.end(), v.sets.begin(), v.sets.end());
    fidelity.insert({"data", p.fidelity.at("data")});
    if (const auto f = p.fidelity.find(v.method); f != p.fidelity.end())
      fidelity[v.label] = f->second;
    const InstancePtr inst = find_instance(p.instance);
    for (Row& r : run_campaign(*inst, p, options)) {
      r.method = v.label;
      vc.rows.push_back(std::move(r));
    }
  }
  vc.protocol.methods.clear();
  for (const Variant& v : variants) vc.protocol.methods.push_back(v.label);
  vc.protocol.fidelity = fidelity;
  sort_rows(vc.protocol, vc.rows);
  return vc;
}

std::string variants_md(const std::vector<Variant>& variants, const std::string& title) {
  std::string s = "# " + title + "\n\n| row | method | applies |\n|---|---|---|\n";
  for (const Variant& v : variants) {
    std::string applies = "nothing";
    if (!v.sets.empty()) applies = fmt::format("`{}`", join(v.sets, "`, `"));
    s += fmt::format("| {} | {} | {} |\n", v.label, v.method, applies);
  }
  return s;
}

}  // namespace nefi::bench
