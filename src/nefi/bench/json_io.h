#pragma once
// JSON forms of a protocol and of rows, shared by shard files and
// benchmark.json. Numbers round-trip exactly (shortest round-trip printing);
// non-finite ones are written as the strings "nan", "inf", "-inf".
// Readers throw fk::Error naming `where` and the bad field.
#include <string>

#include <nlohmann/json.hpp>

#include "nefi/bench/campaign.h"

namespace nefi::bench {

nlohmann::json to_json(const Protocol& p);
Protocol protocol_from_json(const nlohmann::json& j, const std::string& where);
nlohmann::json to_json(const Row& r);
Row row_from_json(const nlohmann::json& j, const std::string& where);

}  // namespace nefi::bench
