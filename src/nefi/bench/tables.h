#pragma once
// The tables of a campaign, each a pure function of (protocol, rows), so an
// unsharded run and a merge of its shards write the same bytes:
//   rows.csv        one line per (unit, method): ids, metrics, steps, timings,
//                   memory, stop reason, error, threads, host
//   summary.csv     per method (per class and method with by_class): n, failed,
//                   mean, 95 % CI half-width, the runs behind the mean and the
//                   scenes the interval counts, of every metric and of time_s,
//                   ms_per_step, steps, peak_mem_mb; then the paired
//                   differences against the first method
//   summary.md      the same as markdown (best mean in bold), the paired
//                   differences, a per-class table when there are several classes
//   benchmark.json  protocol, metric names and directions, rows, environment
//                   (the distinct hosts and thread counts found in the rows)
//   summary.png     per metric, each method's runs and mean with its interval
// Metrics are the union of the rows' metric names, sorted.
#include <cstdint>
#include <string>
#include <vector>

#include "nefi/bench/campaign.h"

namespace nefi::bench {

struct TableOptions {
  bool by_class = false;  // summary.csv per (class, method)
  double level = 0.95;
};

std::vector<std::string> metric_names(const std::vector<Row>& rows);
// Each row's scene, its (class, sample) numbered in order of first
// appearance: the unit the intervals count (stats.h's scene_mean_ci).
std::vector<int64_t> scenes_of(const std::vector<const Row*>& rows);
// +1 for a quality metric better high (psnr, ssim, iou, dice, *f1*, ...),
// -1 better low (mse, *error*, mae, ...), 0 for a number a method or the data
// reports that ranks nothing (admm_iterations, wiener_snr, blurred_psnr,
// *_init): tables give it no arrow and no best, figures no direction.
int metric_direction(const std::string& metric);
// " (higher is better)", " (lower is better)" or "": a figure title's end.
std::string direction_note(const std::string& metric);

std::string rows_csv(const Protocol& p, const std::vector<Row>& rows);
std::string summary_csv(const Protocol& p, const std::vector<Row>& rows, const TableOptions& o);
std::string summary_md(const Protocol& p, const std::vector<Row>& rows, const TableOptions& o);
std::string benchmark_json(const Protocol& p, const std::vector<Row>& rows);

// Writes the five files into `dir` (created; a file there is an fk::Error).
void write_tables(const std::string& dir, const Protocol& p, const std::vector<Row>& rows,
                  const TableOptions& o = {});

}  // namespace nefi::bench
