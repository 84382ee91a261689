// Shard files and their merge: round trips, corrupt and truncated files,
// rows in the wrong shard, foreign protocols and missing shards.
#include "nefi/bench/merge.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "fk/error.h"
#include "nefi/io/fnv.h"
#include "nefi/test_files.h"

// GCC 12 reports a false -Wrestrict inside std::string assignment once the
// test body is inlined (GCC bug 105329).
#pragma GCC diagnostic ignored "-Wrestrict"

namespace {

using nefi::test::scratch;

std::filesystem::path fresh_dir(const std::string& name) {
  return nefi::test::fresh_dir("nefi_merge_" + name);
}

namespace fs = std::filesystem;
using namespace nefi::bench;

Protocol tiny_protocol() {
  CampaignSpec s;
  s.target = nefi::test::config_path("toy1d_smoke.yaml");
  s.classes = {"bumps", "spikes"};
  s.n_samples = 2;
  s.seeds = {0, 1};
  s.budget_scale = 0.05;
  return make_protocol(s);
}

TEST(Fnv1a, MatchesThePublishedTestVectors) {
  // Protocol and config hashes are written into shards and run directories,
  // so they must not change between builds: FNV-1a 64's reference values.
  EXPECT_EQ(nefi::fnv1a("", 0), 0xcbf29ce484222325ull);
  EXPECT_EQ(nefi::fnv1a("a", 1), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(nefi::fnv1a("foobar", 6), 0x85944171f73967e8ull);
  EXPECT_EQ(nefi::fnv1a_hex8("foobar"), "85944171");
}

TEST(BenchMerge, CorruptTruncatedAndForeignShardsAreRejected) {
  const Protocol p = tiny_protocol();
  Row r;
  r.unit = 2;
  r.method = "grid";
  r.cls = "bumps";
  r.sample = 1;
  r.data_seed = 1;
  r.seed = 0;
  r.metrics = {{"psnr", 20.5}, {"mse", std::numeric_limits<double>::infinity()}};
  r.stop = "completed";
  r.host = "h";
  const std::string good = shard_json({p, {0, 2}, {r}});
  // A valid file round-trips, non-finite numbers included.
  const ShardFile back = parse_shard_json(good, "good");
  ASSERT_EQ(back.rows.size(), 1u);
  EXPECT_EQ(back.rows[0].metrics, r.metrics);
  // Truncated and corrupted text.
  for (const std::string& text :
       {good.substr(0, good.size() / 2), std::string("{\"format\": \"nefi-bench-shard/1\""),
        std::string("not json"), std::string("{\"format\": \"other\"}"),
        std::string("{\"format\": \"nefi-bench-shard/1\", \"shard\": {\"index\": 0}}")}) {
    try {
      parse_shard_json(text, "s.json");
      FAIL() << text;
    } catch (const fk::Error& e) {
      EXPECT_NE(std::string(e.what()).find("s.json"), std::string::npos);
    }
  }
  // A row that belongs to another shard (unit 2 is shard 0 of 2, not 1).
  EXPECT_THROW(parse_shard_json(shard_json({p, {1, 2}, {r}}), "wrong"), fk::Error);
  // A row whose class does not match its unit.
  Row r2 = r;
  r2.cls = "spikes";
  EXPECT_THROW(parse_shard_json(shard_json({p, {0, 2}, {r2}}), "wrong"), fk::Error);

  // Shards from different protocols.
  const fs::path d = fresh_dir("foreign");
  Protocol other = p;
  other.seeds = {0, 1, 2};
  write_shard(d.string(), {p, {0, 2}, {}});
  write_shard(d.string(), {other, {1, 2}, {}});
  try {
    merge_shards(d.string());
    FAIL();
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("seeds"), std::string::npos) << e.what();
  }
  // A missing shard is an error unless allowed; the tables then say so.
  fs::remove(d / shard_filename({1, 2}));
  try {
    merge_shards(d.string());
    FAIL();
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("shard-001-of-002.json"), std::string::npos);
  }
  write_shard(d.string(), {p, {0, 2}, {r}});
  const MergedCampaign m = merge_shards(d.string(), true);
  EXPECT_EQ(m.missing, std::vector<int>{1});
  EXPECT_NE(summary_md(m.protocol, m.rows, {}).find("incomplete: 1 of 16 runs"), std::string::npos);
  // A corrupt file in the directory names its path.
  std::ofstream(d / shard_filename({1, 2})) << good.substr(0, 40);
  try {
    merge_shards(d.string(), true);
    FAIL();
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("shard-001-of-002.json"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos);
  }
  EXPECT_THROW(merge_shards((d / "nope").string()), fk::Error);
  EXPECT_THROW(merge_shards(fresh_dir("empty").string()), fk::Error);
}

// Found by the shard fuzz harness (tests/fuzz): a shard without a protocol,
// and a protocol claiming more units than any campaign (their list is built
// while checking rows), are fk::Errors naming the file.
TEST(BenchMerge, MissingOrOversizedProtocolsAreRejected) {
  const Protocol p = tiny_protocol();
  nlohmann::json j = nlohmann::json::parse(shard_json({p, {0, 1}, {}}));
  nlohmann::json no_protocol = j;
  no_protocol.erase("protocol");
  try {
    parse_shard_json(no_protocol.dump(), "s.json");
    ADD_FAILURE() << "parsed a shard without a protocol";
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("shard file s.json: expected a protocol"),
              std::string::npos)
        << e.what();
  }
  for (int64_t n : {int64_t{1} << 62, int64_t{100000000}}) {
    j["protocol"]["n_samples"] = n;
    try {
      parse_shard_json(j.dump(), "s.json");
      ADD_FAILURE() << n;
    } catch (const fk::Error& e) {
      EXPECT_NE(std::string(e.what()).find("at most 2^20 units"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
