#include "nefi/bench/merge.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <vector>

#include "fk/error.h"
#include "nefi/bench/json_io.h"
#include "nefi/bench/tables.h"
#include "nefi/io/fnv.h"

namespace nefi::bench {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// The top-level protocol keys two protocols differ in (a key only one of them
// writes, max_total_steps or batch_device, included), quoted: the options given
// first, then "fidelity", which follows from them (shards of other
// --methods were named by it alone, as its key sorts first).
std::string differences(const json& a, const json& b) {
  std::vector<std::string> keys;
  for (const auto& [k, v] : a.items())
    if (!b.contains(k) || b.at(k) != v) keys.push_back(k);
  for (const auto& [k, v] : b.items())
    if (!a.contains(k)) keys.push_back(k);
  std::stable_partition(keys.begin(), keys.end(),
                        [](const std::string& k) { return k != "fidelity"; });
  std::string out;
  for (const std::string& k : keys) out += (out.empty() ? "'" : ", '") + k + "'";
  return out.empty() ? "'?'" : out;
}

}  // namespace

std::string shard_json(const ShardFile& s) {
  json rows = json::array();
  for (const Row& r : s.rows) rows.push_back(to_json(r));
  const json j{{"format", "nefi-bench-shard/1"},
               {"shard", {{"index", s.shard.index}, {"count", s.shard.count}}},
               {"protocol", to_json(s.protocol)},
               {"rows", rows}};
  return j.dump(1) + "\n";
}

ShardFile read_shard(const std::string& path) {
  std::ifstream f(path);
  FK_CHECK(f.good(), "shard file", "a readable file", "'" + path + "'");
  std::stringstream ss;
  ss << f.rdbuf();
  return parse_shard_json(ss.str(), path);
}

ShardFile parse_shard_json(const std::string& text, const std::string& path) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw fk::Error("shard file " + path, "complete JSON written by nefi bench --shard",
                    std::string("corrupt or truncated JSON (") + e.what() + ")");
  }
  ShardFile s;
  try {
    FK_CHECK(j.is_object() && j.value("format", "") == "nefi-bench-shard/1", "shard file " + path,
             "format nefi-bench-shard/1",
             j.is_object() && j.contains("format") ? j["format"].dump() : "no format key");
    s.shard.index = j.at("shard").at("index").get<int>();
    s.shard.count = j.at("shard").at("count").get<int>();
  } catch (const json::exception& e) {
    throw fk::Error("shard file " + path, "a shard index and count", e.what());
  }
  FK_CHECK(s.shard.count >= 1 && s.shard.index >= 0 && s.shard.index < s.shard.count,
           "shard file " + path, "a shard I/N with 0 <= I < N",
           fk::to_text(s.shard.index) + "/" + fk::to_text(s.shard.count));
  FK_CHECK(j.contains("protocol"), "shard file " + path, "a protocol", "none");
  s.protocol = protocol_from_json(j.at("protocol"), "shard file " + path);
  FK_CHECK(j.contains("rows") && j.at("rows").is_array(), "shard file " + path, "a rows array",
           "none");
  const int64_t n_units = s.protocol.n_units();
  const std::vector<Unit> all_units = units(s.protocol);
  for (const auto& rj : j.at("rows")) {
    Row r = row_from_json(rj, "shard file " + path);
    const std::string at =
        "shard file " + path + " row (unit " + std::to_string(r.unit) + ", " + r.method + ")";
    FK_CHECK(r.unit >= 0 && r.unit < n_units && r.unit % s.shard.count == s.shard.index, at,
             "a unit of shard " + fk::to_text(s.shard.index) + "/" + fk::to_text(s.shard.count) +
                 " below " + fk::to_text(n_units),
             fk::to_text(r.unit));
    FK_CHECK(std::find(s.protocol.methods.begin(), s.protocol.methods.end(), r.method) !=
                 s.protocol.methods.end(),
             at, "a method of the protocol", "'" + r.method + "'");
    const Unit& u = all_units[r.unit];
    FK_CHECK(
        r.cls == u.cls && r.sample == u.sample && r.seed == u.seed && r.data_seed == u.data_seed,
        at,
        "class " + u.cls + ", sample " + fk::to_text(u.sample) + ", seed " + fk::to_text(u.seed),
        "class " + r.cls + ", sample " + fk::to_text(r.sample) + ", seed " + fk::to_text(r.seed));
    s.rows.push_back(std::move(r));
  }
  return s;
}

std::string protocol_hash(const Protocol& p) {
  return fnv1a_hex(to_json(p).dump(), 12);  // as run folders' config_hash
}

std::vector<std::string> finish_campaign(const std::string& dir, const ShardFile& s,
                                         const TableOptions& o) {
  if (s.shard.count > 1) return {write_shard(dir, s)};
  const MergedCampaign m = merge_shard_files({parse_shard_json(shard_json(s), "campaign")});
  write_tables(dir, m.protocol, m.rows, o);
  std::vector<std::string> out;
  for (const char* f : {"summary.md", "summary.csv", "rows.csv", "benchmark.json", "summary.png"})
    out.push_back((fs::path(dir) / f).string());
  return out;
}

void prepare_out_dir(const std::string& dir, const std::string& what) {
  FK_CHECK(!dir.empty(), what, "a directory", "an empty path");
  std::error_code ec;
  FK_CHECK(!fs::exists(dir, ec) || fs::is_directory(dir, ec), what, "a directory",
           "'" + dir + "', which is a file");
  fs::create_directories(dir, ec);
  FK_CHECK(!ec, what, "a directory that can be created", "'" + dir + "' (" + ec.message() + ")");
}

std::string write_shard(const std::string& dir, const ShardFile& s) {
  prepare_out_dir(dir);
  const std::string path = (fs::path(dir) / shard_filename(s.shard)).string();
  std::ofstream f(path);
  FK_CHECK(f.good(), "shard file", "a writable path", "'" + path + "'");
  f << shard_json(s);
  FK_CHECK(f.good(), "shard file", "a complete write", "'" + path + "'");
  return path;
}

MergedCampaign merge_shard_files(const std::vector<ShardFile>& shards, bool allow_missing) {
  FK_CHECK(!shards.empty(), "bench-merge", "at least one shard file", "none");
  MergedCampaign m;
  m.protocol = shards.front().protocol;
  m.n_shards = shards.front().shard.count;
  const json ref = to_json(m.protocol);
  std::set<int> seen;
  std::set<std::pair<int64_t, std::string>> runs;
  for (const ShardFile& s : shards) {
    const std::string name = shard_filename(s.shard);
    FK_CHECK(s.shard.count == m.n_shards, "bench-merge",
             "shards of one count (" + fk::to_text(m.n_shards) + ")", name);
    const json pj = to_json(s.protocol);
    FK_CHECK(pj == ref, "bench-merge", "shards from one protocol",
             name + " differs from " + shard_filename(shards.front().shard) + " in " +
                 differences(ref, pj));
    FK_CHECK(seen.insert(s.shard.index).second, "bench-merge", "each shard once", name + " twice");
    for (const Row& r : s.rows) {
      FK_CHECK(runs.insert({r.unit, r.method}).second, "bench-merge", "each run once",
               "unit " + fk::to_text(r.unit) + " " + r.method + " twice");
      m.rows.push_back(r);
    }
  }
  for (int i = 0; i < m.n_shards; ++i) (seen.count(i) ? m.found : m.missing).push_back(i);
  if (!m.missing.empty() && !allow_missing) {
    std::string names;
    for (int i : m.missing) names += (names.empty() ? "" : ", ") + shard_filename({i, m.n_shards});
    throw fk::Error("bench-merge",
                    "all " + fk::to_text(m.n_shards) + " shards (or --allow-missing)",
                    "missing " + names);
  }
  sort_rows(m.protocol, m.rows);
  return m;
}

MergedCampaign merge_shards(const std::string& dir, bool allow_missing) {
  std::error_code ec;
  FK_CHECK(fs::is_directory(dir, ec), "bench-merge DIR", "a directory of shard files",
           "'" + dir + "'");
  static const std::regex kName(R"(shard-\d{3}-of-\d{3}\.json)");
  std::vector<std::string> paths;
  for (const auto& e : fs::directory_iterator(dir))
    if (std::regex_match(e.path().filename().string(), kName)) paths.push_back(e.path().string());
  std::sort(paths.begin(), paths.end());
  FK_CHECK(!paths.empty(), "bench-merge DIR", "shard-III-of-NNN.json files",
           "none in '" + dir + "'");
  std::vector<ShardFile> shards;
  for (const auto& p : paths) {
    shards.push_back(read_shard(p));
    const std::string expect = shard_filename(shards.back().shard);
    FK_CHECK(fs::path(p).filename() == expect, "shard file " + p, "the name " + expect,
             fs::path(p).filename().string());
  }
  return merge_shard_files(shards, allow_missing);
}

}  // namespace nefi::bench
