#pragma once
// The --batched half of a campaign: one method's units solved in batches of
// B by batch_invert, each batch's problems built by Instance::setup exactly
// as Instance::run builds them (data seed, scene class, initialisation seed),
// so a batched row pairs with the sequential rows of the other methods. Each
// solved problem is then finished and scored as run() does
// (finish_solved_output: the instance's after_solve stage, then evaluate),
// so a row holds the sequential row's metrics. A row's time_s is its batch's
// wall clock divided by B plus its own finishing, its peak memory the
// batch's peak divided by B; batch_size records B (the last batch of a shard
// may be smaller). A problem that fails in its batch becomes a failed row, and
// so does a unit whose setup throws (the batch goes on without it). A batch
// that batch_invert refuses as a whole (one member's measurement refused by
// its losses, a member that cannot batch with the first) is solved member by
// member, set up afresh (batch_size 1, own time and peak): only the members
// whose own solve fails are failed rows.
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "nefi/bench/campaign.h"

namespace nefi::bench {

// Why `method` cannot run batched on these units on `device` (nullopt: it
// can): batchable_reason, then on a CUDA device batch_device_reason, on the
// curriculum the protocol's runs solve (campaign_curriculum).
std::optional<std::string> batched_method_reason(const Instance& instance, const Protocol& proto,
                                                 const Params& params, const std::string& method,
                                                 const std::vector<Unit>& units,
                                                 fk::Device device = fk::kCPU);

// fk::Error unless `device` is the CPU or a CUDA device this process can use
// (naming the devices there are, or that the build has no CUDA backend).
void check_batch_device(fk::Device device);

struct BatchedRow {
  Row row;
  uint64_t fingerprint = 0;  // of the measurement (the campaign's pairing check)
};

// Rows of `method` on `units`, keyed by unit index.
std::map<int64_t, BatchedRow> run_batched(const Instance& instance, const Params& params,
                                          const std::vector<Unit>& units, const std::string& method,
                                          const Protocol& protocol, int batch_size,
                                          fk::Device device = fk::kCPU);

}  // namespace nefi::bench
