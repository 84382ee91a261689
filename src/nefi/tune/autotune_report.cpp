#include "nefi/tune/autotune_report.h"

#include <cmath>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "fk/error.h"

namespace nefi::tune {
namespace {

nlohmann::json number(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json();
}

std::string metrics_text(const std::map<std::string, double>& m) {
  std::string s;
  for (const auto& [k, v] : m) s += fmt::format("{}{} {:.4g}", s.empty() ? "" : ", ", k, v);
  return s;
}

}  // namespace

std::string decisions_md(const std::vector<Decision>& decisions) {
  std::string s;
  for (const Decision& d : decisions) {
    s += fmt::format("\n## {}: {} -> {}\n\nRule: {}. {}.\n", d.key, d.before, d.chosen, d.rule,
                     d.reason);
    if (d.pilots.empty()) continue;
    s += "\n| value | residual RMS | residual / sigma | steps | ground truth (not used) |\n"
         "|---|---|---|---|---|\n";
    for (const Pilot& p : d.pilots) {
      const std::string mark = p.value == d.chosen ? "**" : "";
      s += p.error.empty()
               ? fmt::format("| {0}{1}{0} | {2:.4e} | {3:.3f} | {4} | {5} |\n", mark, p.value,
                             p.residual_rms, p.misfit_ratio, p.steps, metrics_text(p.oracle))
               : fmt::format("| {} | failed: {} | | | |\n", p.value, p.error);
    }
  }
  return s;
}

nlohmann::json decisions_json(const std::vector<Decision>& decisions) {
  nlohmann::json out = nlohmann::json::array();
  for (const Decision& d : decisions) {
    nlohmann::json e{{"key", d.key},       {"rule", d.rule},
                     {"before", d.before}, {"chosen", d.chosen},
                     {"reason", d.reason}, {"evidence", nlohmann::json::array()}};
    for (const Pilot& p : d.pilots)
      e["evidence"].push_back({{"value", p.value},
                               {"residual_rms", number(p.residual_rms)},
                               {"misfit_ratio", number(p.misfit_ratio)},
                               {"steps", p.steps},
                               {"error", p.error},
                               {"ground_truth_not_used", p.oracle}});
    out.push_back(e);
  }
  return out;
}

// The tuner's own criterion on the full solves of --compare: the residual at
// the noise level (residual / sigma near 1; above underfits, below overfits).
bool default_fits_nearer(const AutotuneReport& r) {
  if (!r.comparison || !(r.noise_std > 0)) return false;
  const double chi_d = r.comparison->default_residual / r.noise_std,
               chi_t = r.comparison->tuned_residual / r.noise_std;
  return std::abs(chi_t - 1) > std::abs(chi_d - 1) + 0.1;
}

std::string autotune_md(const AutotuneReport& r, bool written) {
  std::string s = fmt::format(
      "# Autotune: {} ({}, seed {}), level {}\n\n"
      "Learning-rate and weight pilots of at most {} steps each (the budget in 'steps': {}; "
      "the budget pilots run each budget); noise sigma {}. "
      "Decisions read the data residual only; the ground-truth metrics are shown for the "
      "reader.\n",
      r.instance, r.method, r.seed, r.level, r.pilot_steps, r.total_steps,
      r.noise_std > 0 ? fmt::format("{:.4e}", r.noise_std) : std::string("unknown"));
  s += decisions_md(r.decisions);
  const bool keep_default = default_fits_nearer(r);
  if (r.comparison) {
    const Comparison& c = *r.comparison;
    s += fmt::format(
        "\n## Comparison (full solves)\n\n| config | steps | residual RMS | metrics |\n"
        "|---|---|---|---|\n| default | {} | {:.4e} | {} |\n| tuned | {} | {:.4e} | {} |\n",
        c.default_steps, c.default_residual, metrics_text(c.default_metrics), c.tuned_steps,
        c.tuned_residual, metrics_text(c.tuned_metrics));
    if (r.noise_std > 0) {
      const double chi_d = c.default_residual / r.noise_std, chi_t = c.tuned_residual / r.noise_std;
      s += fmt::format("\nResidual / sigma: default {:.3f}, tuned {:.3f}{}\n", chi_d, chi_t,
                       keep_default
                           ? ": **the default fits the data nearer the noise level; keep it** "
                             "(the pilots were too short to show the full solve's behaviour: "
                             "try a higher --level)"
                           : ".");
    }
  }
  if (written)
    s += keep_default ? "\nThe tuned config, not recommended: `nefi run tuned_config.yaml`.\n"
                      : "\nReproduce the tuned solve: `nefi run tuned_config.yaml`.\n";
  return s;
}

std::string autotune_json(const AutotuneReport& r) {
  nlohmann::json j;
  j["instance"] = r.instance;
  j["method"] = r.method;
  j["seed"] = r.seed;
  j["level"] = r.level;
  j["pilot_steps"] = r.pilot_steps;
  j["total_steps"] = r.total_steps;
  j["noise_std"] = r.noise_std >= 0 ? nlohmann::json(r.noise_std) : nlohmann::json();
  j["discrepancy_tau"] = kDiscrepancyTau;
  j["decisions"] = decisions_json(r.decisions);
  j["applied_in_process"] = nlohmann::json::array();  // no gauge fixes are applied
  if (r.comparison) {
    const Comparison& c = *r.comparison;
    j["comparison"] = {{"default",
                        {{"metrics", c.default_metrics},
                         {"residual_rms", number(c.default_residual)},
                         {"steps", c.default_steps}}},
                       {"tuned",
                        {{"metrics", c.tuned_metrics},
                         {"residual_rms", number(c.tuned_residual)},
                         {"steps", c.tuned_steps}}},
                       {"default_fits_nearer_the_noise", default_fits_nearer(r)}};
  }
  j["tuned_config"] = "tuned_config.yaml";
  return j.dump(2) + "\n";
}

std::vector<std::string> write_autotune(const std::string& dir, const AutotuneReport& r) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  FK_CHECK(!ec && std::filesystem::is_directory(dir), "nefi autotune --out",
           "a directory that can be created", dir);
  const std::vector<std::string> files{dir + "/autotune.md", dir + "/autotune.json",
                                       dir + "/tuned_config.yaml"};
  std::ofstream(files[0]) << autotune_md(r);
  std::ofstream(files[1]) << autotune_json(r);
  std::ofstream(files[2]) << "# nefi autotune (" << r.level << "): " << r.instance << ", tuned for "
                          << r.method << "\n"
                          << to_yaml(r.tuned);
  return files;
}

}  // namespace nefi::tune
