#pragma once
// The files of `nefi autotune`: autotune.md (the decisions, each with its
// pilots' residuals; the comparison with --compare), autotune.json (the same
// numbers) and tuned_config.yaml (re-runnable with `nefi run`).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nefi/tune/autotune.h"

namespace nefi::tune {

// `written`: the files are written beside it (its last line names
// tuned_config.yaml).
std::string autotune_md(const AutotuneReport& r, bool written = true);
// One section per decision: its rule and reason, and a table of its pilots
// (the chosen value in bold).
std::string decisions_md(const std::vector<Decision>& decisions);
// The decisions as autotune.json holds them: key, rule, before, chosen,
// reason and each pilot's evidence (non-finite numbers as null).
nlohmann::json decisions_json(const std::vector<Decision>& decisions);
std::string autotune_json(const AutotuneReport& r);
// The three files into `dir` (created); returns their paths.
std::vector<std::string> write_autotune(const std::string& dir, const AutotuneReport& r);

}  // namespace nefi::tune
