// nefi's benchmark rows and `nefi bench-merge` inputs: the input is up to
// four shard files separated by lines "----"; each is parsed
// (parse_shard_json: protocol, shard, rows), the parsed ones are merged with
// and without allow_missing, and the merged rows rendered as the tables
// bench-merge writes. Results or fk::Error, never a crash or another
// exception.
//
// Calls (nefi/bench/merge.h): parse_shard_json, merge_shard_files;
// (nefi/bench/tables.h): rows_csv, summary_csv, summary_md, benchmark_json.
#include <cstdint>
#include <string_view>
#include <vector>

#include "fk/error.h"
#include "fuzz/fuzz_input.h"
#include "nefi/bench/merge.h"
#include "nefi/bench/tables.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace nefi::bench;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<ShardFile> shards;
  for (const std::string& part : fieldkit_fuzz::split(text, "\n----\n", 4)) {
    try {
      shards.push_back(parse_shard_json(part, "fuzz shard"));
    } catch (const fk::Error&) {
    }
  }
  if (shards.empty()) return 0;
  for (bool allow_missing : {false, true}) {
    try {
      const MergedCampaign m = merge_shard_files(shards, allow_missing);
      TableOptions o;
      o.by_class = size % 2 == 1;
      rows_csv(m.protocol, m.rows);
      summary_csv(m.protocol, m.rows, o);
      summary_md(m.protocol, m.rows, o);
      benchmark_json(m.protocol, m.rows);
    } catch (const fk::Error&) {
    }
  }
  return 0;
}
