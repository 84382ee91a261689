#pragma once
// Shard files and their merge. A shard file (shard-III-of-NNN.json) holds the
// protocol, the shard and its rows. merge_shards reads every
// shard-*-of-*.json in a directory, checks that they share one protocol and one
// shard count, that each row belongs to its shard and appears once, and
// returns the rows in canonical order, exactly as the unsharded run holds them.
#include <string>
#include <vector>

#include "nefi/bench/campaign.h"
#include "nefi/bench/tables.h"

namespace nefi::bench {

struct ShardFile {
  Protocol protocol;
  Shard shard;
  std::vector<Row> rows;
};

std::string shard_json(const ShardFile& s);
// Parses and checks shard JSON; corrupt, truncated or inconsistent text is an
// fk::Error naming `where`.
ShardFile parse_shard_json(const std::string& text, const std::string& where);
ShardFile read_shard(const std::string& path);
// Writes dir/shard-III-of-NNN.json (the directory is created).
std::string write_shard(const std::string& dir, const ShardFile& s);

struct MergedCampaign {
  Protocol protocol;
  std::vector<Row> rows;
  int n_shards = 0;
  std::vector<int> found, missing;  // shard indices
};
// A missing shard is an fk::Error unless allow_missing.
MergedCampaign merge_shards(const std::string& dir, bool allow_missing = false);
MergedCampaign merge_shard_files(const std::vector<ShardFile>& shards, bool allow_missing = false);

// 12 hex digits over the protocol (default output directories; 8 met by
// chance among many campaigns).
std::string protocol_hash(const Protocol& p);

// Ends a campaign run: with one shard, the four tables in `dir` (through the
// shard JSON and the merge, the path bench-merge takes, so both write the same
// bytes); with several, dir/shard-III-of-NNN.json. Returns the files written.
std::vector<std::string> finish_campaign(const std::string& dir, const ShardFile& s,
                                         const TableOptions& o);

// Checks that `dir` is a directory or can be created as one; creates it.
void prepare_out_dir(const std::string& dir, const std::string& what = "--out");

}  // namespace nefi::bench
