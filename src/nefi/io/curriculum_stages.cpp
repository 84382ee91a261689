#include "nefi/io/curriculum_stages.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <map>

#include "fk/error.h"

namespace nefi {
namespace {

constexpr const char* kKeys =
    "name, shape, steps, lr, lr_schedule, lr_min_ratio, lr_step_size, lr_gamma, lr_warmup "
    "(warmup_steps), anneal, anneal_fraction, loss_weights, freeze";

Stage stage_from(const YAML::Node& n, const std::string& where) {
  FK_CHECK(n.IsMap(), where, "a stage: a mapping of " + std::string(kKeys),
           YAML::Dump(n).empty() ? "nothing" : YAML::Dump(n));
  Stage s;
  for (const auto& kv : n) {
    const std::string k = kv.first.as<std::string>();
    const YAML::Node& v = kv.second;
    try {
      if (k == "name") {
        s.name = v.as<std::string>();
      } else if (k == "shape") {
        s.shape = v.IsNull() ? fk::Dims{} : fk::Dims(v.as<std::vector<int64_t>>());
      } else if (k == "steps") {
        s.steps = v.as<int>();
      } else if (k == "lr") {
        s.lr = v.as<double>();
      } else if (k == "lr_schedule") {
        s.lr_schedule = v.as<std::string>();
      } else if (k == "lr_min_ratio") {
        s.lr_min_ratio = v.as<double>();
      } else if (k == "lr_step_size") {
        s.lr_step_size = v.as<int>();
      } else if (k == "lr_gamma") {
        s.lr_gamma = v.as<double>();
      } else if (k == "lr_warmup" || k == "warmup_steps") {
        s.lr_warmup = v.as<int>();
      } else if (k == "anneal") {
        s.anneal = v.as<bool>();
      } else if (k == "anneal_fraction") {
        s.anneal_fraction = v.as<double>();
      } else if (k == "loss_weights") {
        s.loss_weights =
            v.IsNull() ? std::map<std::string, double>{} : v.as<std::map<std::string, double>>();
      } else if (k == "freeze") {
        s.freeze = v.IsNull() ? std::vector<std::string>{} : v.as<std::vector<std::string>>();
      } else {
        throw fk::Error(where, std::string("one of the stage keys ") + kKeys,
                        "unknown key '" + k + "'");
      }
    } catch (const YAML::Exception&) {
      throw fk::Error(where + "." + k, "a value of the right type", YAML::Dump(v));
    }
  }
  try {
    s.validate();
  } catch (const fk::Error& e) {
    throw fk::Error(where + ": " + e.where(), e.expected(), e.given());
  }
  return s;
}

}  // namespace

std::vector<Stage> stages_from_yaml(const std::string& text, const std::string& where) {
  YAML::Node n;
  try {
    n = YAML::Load(text);
  } catch (const YAML::Exception&) {
    throw fk::Error(where, "a list of stages", "'" + text + "'");
  }
  FK_CHECK(n.IsSequence() && n.size() >= 1, where, "a list of at least one stage",
           "'" + text + "'");
  std::vector<Stage> out;
  for (size_t i = 0; i < n.size(); ++i)
    out.push_back(stage_from(n[i], where + "[" + std::to_string(i) + "]"));
  return out;
}

std::string stages_yaml(const std::vector<Stage>& stages) {
  // Doubles as their shortest exact text (0.003, not 0.0030000000000000001).
  const auto num = [](double v) { return fmt::format("{}", v); };
  YAML::Emitter e;
  e << YAML::Flow << YAML::BeginSeq;
  for (const Stage& s : stages) {
    e << YAML::BeginMap << YAML::Key << "name" << YAML::Value << s.name << YAML::Key << "shape"
      << YAML::Value;
    if (s.shape.empty()) {
      e << YAML::Null;
    } else {
      e << YAML::BeginSeq;
      for (int64_t d : s.shape) e << d;
      e << YAML::EndSeq;
    }
    e << YAML::Key << "steps" << YAML::Value << s.steps << YAML::Key << "lr" << YAML::Value
      << num(s.lr) << YAML::Key << "lr_schedule" << YAML::Value << s.lr_schedule << YAML::Key
      << "lr_min_ratio" << YAML::Value << num(s.lr_min_ratio) << YAML::Key << "lr_step_size"
      << YAML::Value << s.lr_step_size << YAML::Key << "lr_gamma" << YAML::Value << num(s.lr_gamma)
      << YAML::Key << "lr_warmup" << YAML::Value << s.lr_warmup << YAML::Key << "anneal"
      << YAML::Value << s.anneal << YAML::Key << "anneal_fraction" << YAML::Value
      << num(s.anneal_fraction) << YAML::Key << "loss_weights" << YAML::Value << YAML::BeginMap;
    for (const auto& [k, w] : s.loss_weights) e << YAML::Key << k << YAML::Value << num(w);
    e << YAML::EndMap << YAML::Key << "freeze" << YAML::Value << YAML::BeginSeq;
    for (const std::string& f : s.freeze) e << f;
    e << YAML::EndSeq << YAML::EndMap;
  }
  e << YAML::EndSeq;
  return e.c_str();
}

}  // namespace nefi
