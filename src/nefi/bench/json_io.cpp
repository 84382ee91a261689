#include "nefi/bench/json_io.h"

#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "fk/error.h"

namespace nefi::bench {
namespace {

using json = nlohmann::json;

json number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

double read_number(const json& j) {
  if (j.is_string()) {
    const std::string s = j.get<std::string>();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
  }
  if (!j.is_number()) throw json::type_error::create(302, "expected a number", &j);
  return j.get<double>();
}

const json& field(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key))
    throw json::out_of_range::create(403, std::string("missing key '") + key + "'", &j);
  return j.at(key);
}

// A protocol's units are materialised (units()): a file must not make a
// reader allocate more than any campaign runs (~2^20 runs of seconds each).
constexpr int64_t kMaxUnits = int64_t{1} << 20;

json curriculum_json(const CurriculumOverrides& c) {
  json j = json::object();
  if (c.early_stop_patience) j["early_stop_patience"] = *c.early_stop_patience;
  if (c.early_stop_min_delta) j["early_stop_min_delta"] = *c.early_stop_min_delta;
  if (c.discrepancy_tau) j["discrepancy_tau"] = *c.discrepancy_tau;
  if (c.time_budget_s) j["time_budget_s"] = *c.time_budget_s;
  if (c.restarts) j["restarts"] = *c.restarts;
  if (c.ema) j["ema"] = *c.ema;
  if (c.betas) j["betas"] = {c.betas->first, c.betas->second};
  if (c.lr_mult) j["lr_mult"] = *c.lr_mult;
  if (c.freeze) j["freeze"] = *c.freeze;
  return j;
}

CurriculumOverrides curriculum_from_json(const json& j) {
  CurriculumOverrides c;
  if (j.contains("lr_mult")) c.lr_mult = j.at("lr_mult").get<std::map<std::string, double>>();
  if (j.contains("freeze")) c.freeze = j.at("freeze").get<std::vector<std::vector<std::string>>>();
  if (j.contains("early_stop_patience"))
    c.early_stop_patience = j.at("early_stop_patience").get<int>();
  if (j.contains("early_stop_min_delta"))
    c.early_stop_min_delta = read_number(j.at("early_stop_min_delta"));
  if (j.contains("discrepancy_tau")) c.discrepancy_tau = read_number(j.at("discrepancy_tau"));
  if (j.contains("time_budget_s")) c.time_budget_s = read_number(j.at("time_budget_s"));
  if (j.contains("restarts")) c.restarts = j.at("restarts").get<int>();
  if (j.contains("ema")) c.ema = read_number(j.at("ema"));
  if (j.contains("betas")) {
    const json& b = j.at("betas");
    c.betas = std::pair{read_number(b.at(0)), read_number(b.at(1))};
  }
  Curriculum probe;  // the ranges, with a stage per freeze list
  if (c.freeze && c.freeze->size() > 1) probe.stages.resize(c.freeze->size());
  c.applied_to(probe);
  return c;
}

}  // namespace

json to_json(const Protocol& p) {
  json config = json::array();
  for (const auto& [k, v] : p.config) config.push_back({k, v});
  json out = {{"instance", p.instance},
              {"config", config},
              {"methods", p.methods},
              {"classes", p.classes},
              {"n_samples", p.n_samples},
              {"seeds", p.seeds},
              {"budget_scale", p.budget_scale},
              {"data_seed_offset", p.data_seed_offset},
              {"solver",
               {{"nan_guard", p.nan_guard},
                {"checkpoint_every", p.checkpoint_every},
                {"max_bad_steps", p.max_bad_steps}}}};
  // Written only when set, so uncapped campaigns keep their files and hashes.
  if (p.max_total_steps > 0) out["max_total_steps"] = p.max_total_steps;
  if (!p.batch_device.empty()) out["batch_device"] = p.batch_device;
  if (!p.curriculum.empty()) out["curriculum"] = curriculum_json(p.curriculum);
  out["fidelity"] = p.fidelity;
  if (p.allow_inverse_crime) out["allow_inverse_crime"] = true;
  if (!p.metrics.empty()) out["metrics"] = p.metrics;
  if (!p.variants.empty()) out["variants"] = p.variants;
  return out;
}

Protocol protocol_from_json(const json& j, const std::string& where) {
  try {
    Protocol p;
    p.instance = field(j, "instance").get<std::string>();
    for (const auto& kv : field(j, "config"))
      p.config.emplace_back(kv.at(0).get<std::string>(), kv.at(1).get<std::string>());
    p.methods = field(j, "methods").get<std::vector<std::string>>();
    p.classes = field(j, "classes").get<std::vector<std::string>>();
    p.n_samples = field(j, "n_samples").get<int64_t>();
    p.seeds = field(j, "seeds").get<std::vector<uint64_t>>();
    p.budget_scale = read_number(field(j, "budget_scale"));
    p.data_seed_offset = field(j, "data_seed_offset").get<uint64_t>();
    p.max_total_steps = j.value("max_total_steps", int64_t{0});
    p.batch_device = j.value("batch_device", std::string());
    if (j.contains("curriculum")) p.curriculum = curriculum_from_json(j.at("curriculum"));
    if (j.contains("fidelity"))
      p.fidelity = j.at("fidelity").get<std::map<std::string, std::string>>();
    p.allow_inverse_crime = j.value("allow_inverse_crime", false);
    p.metrics = j.value("metrics", std::vector<std::string>());
    if (j.contains("variants"))
      p.variants = j.at("variants").get<std::map<std::string, std::vector<std::string>>>();
    const json& s = field(j, "solver");
    p.nan_guard = field(s, "nan_guard").get<bool>();
    p.checkpoint_every = field(s, "checkpoint_every").get<int64_t>();
    p.max_bad_steps = field(s, "max_bad_steps").get<int64_t>();
    FK_CHECK(!p.methods.empty() && !p.classes.empty() && !p.seeds.empty() && p.n_samples >= 1,
             where, "a protocol with methods, classes, seeds and samples", "an empty one");
    int64_t n = 0;
    const bool fits =
        !__builtin_mul_overflow(static_cast<int64_t>(p.classes.size()), p.n_samples, &n) &&
        !__builtin_mul_overflow(n, static_cast<int64_t>(p.seeds.size()), &n) && n <= kMaxUnits;
    FK_CHECK(fits, where, "a protocol of at most 2^20 units (classes x samples x seeds)",
             fk::to_text(p.classes.size()) + " x " + fk::to_text(p.n_samples) + " x " +
                 fk::to_text(p.seeds.size()));
    return p;
  } catch (const json::exception& e) {
    throw fk::Error(where, "a benchmark protocol", e.what());
  }
}

json to_json(const Row& r) {
  json metrics = json::object();
  for (const auto& [k, v] : r.metrics) metrics[k] = number(v);
  return {{"unit", r.unit},
          {"method", r.method},
          {"class", r.cls},
          {"sample", r.sample},
          {"data_seed", r.data_seed},
          {"seed", r.seed},
          {"metrics", metrics},
          {"steps", r.steps},
          {"final_data_loss", number(r.final_data_loss)},
          {"n_params", r.n_params},
          {"stop", r.stop},
          {"error", r.error},
          {"time_s", number(r.time_s)},
          {"ms_per_step", number(r.ms_per_step)},
          {"ops_per_step", number(r.ops_per_step)},
          {"peak_mem_mb", number(r.peak_mem_mb)},
          {"threads", r.threads},
          {"host", r.host},
          {"batch_size", r.batch_size}};
}

Row row_from_json(const json& j, const std::string& where) {
  try {
    Row r;
    r.unit = field(j, "unit").get<int64_t>();
    r.method = field(j, "method").get<std::string>();
    r.cls = field(j, "class").get<std::string>();
    r.sample = field(j, "sample").get<int64_t>();
    r.data_seed = field(j, "data_seed").get<uint64_t>();
    r.seed = field(j, "seed").get<uint64_t>();
    for (const auto& [k, v] : field(j, "metrics").items()) r.metrics[k] = read_number(v);
    r.steps = field(j, "steps").get<int64_t>();
    r.final_data_loss = read_number(field(j, "final_data_loss"));
    r.n_params = field(j, "n_params").get<int64_t>();
    r.stop = field(j, "stop").get<std::string>();
    r.error = field(j, "error").get<std::string>();
    r.time_s = read_number(field(j, "time_s"));
    r.ms_per_step = read_number(field(j, "ms_per_step"));
    r.ops_per_step = read_number(field(j, "ops_per_step"));
    r.peak_mem_mb = read_number(field(j, "peak_mem_mb"));
    r.threads = field(j, "threads").get<int64_t>();
    r.host = field(j, "host").get<std::string>();
    if (j.contains("batch_size")) r.batch_size = j.at("batch_size").get<int64_t>();
    FK_CHECK(r.batch_size >= 1, where, "a row with batch_size >= 1", fk::to_text(r.batch_size));
    return r;
  } catch (const json::exception& e) {
    throw fk::Error(where, "a benchmark row", e.what());
  }
}

}  // namespace nefi::bench
