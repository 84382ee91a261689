#pragma once
// A curriculum's whole stage list as YAML text: a config file's
// `curriculum: {stages: [...]}` (the reference's layout A, each stage a
// mapping of Stage's fields), as config.yaml writes it back and as a bench
// protocol keeps it. Keys: name, shape (a list, or null for the domain's),
// steps, lr, lr_schedule, lr_min_ratio, lr_step_size, lr_gamma, lr_warmup
// (or the reference's warmup_steps), anneal, anneal_fraction, loss_weights
// (a mapping) and freeze (a list of prefixes); a stage leaves the others at
// Stage's defaults.
#include <string>
#include <vector>

#include "nefi/solve/curriculum.h"

namespace nefi {

// At least one stage, each valid (Stage::validate); fk::Error naming
// `where` and the stage's key otherwise.
std::vector<Stage> stages_from_yaml(const std::string& text, const std::string& where);
// Every field of every stage, as one flow list stages_from_yaml reads back.
std::string stages_yaml(const std::vector<Stage>& stages);

}  // namespace nefi
