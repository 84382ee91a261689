// The tables on hand-made rows, against values worked out by hand.
#include "nefi/bench/tables.h"

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

// GCC 12 reports a false -Wrestrict inside std::string assignment once the
// helpers are inlined (GCC bug 105329).
#pragma GCC diagnostic ignored "-Wrestrict"

namespace {

using namespace nefi::bench;

Protocol two_methods() {
  Protocol p;
  p.instance = "toy1d";
  p.methods = {"a", "b"};
  p.classes = {"bumps"};
  p.n_samples = 3;
  p.seeds = {0};
  return p;
}

Row row(int64_t unit, const std::string& method, double psnr) {
  Row r;
  r.unit = unit;
  r.method = method;
  r.cls = "bumps";
  r.sample = unit;
  r.data_seed = static_cast<uint64_t>(unit);
  r.metrics = {{"psnr", psnr}};
  r.steps = 10;
  r.time_s = 1.0 + unit;
  r.stop = "completed";
  r.host = "h";
  return r;
}

// Field `col` of the summary.csv line that starts with `prefix`.
double csv_value(const std::string& csv, const std::string& prefix, const std::string& col) {
  std::istringstream in(csv);
  std::string header, line;
  std::getline(in, header);
  std::vector<std::string> names;
  std::stringstream hs(header);
  for (std::string c; std::getline(hs, c, ',');) names.push_back(c);
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) != 0) continue;
    std::vector<std::string> cells;
    std::stringstream ls(line);
    for (std::string c; std::getline(ls, c, ',');) cells.push_back(c);
    for (size_t i = 0; i < names.size(); ++i)
      if (names[i] == col) return std::stod(cells.at(i));
  }
  ADD_FAILURE() << prefix << " / " << col << " not in\n" << csv;
  return NAN;
}

TEST(BenchTables, MeansIntervalsAndPairedDifferencesByHand) {
  const Protocol p = two_methods();
  std::vector<Row> rows{row(0, "a", 10), row(1, "a", 12), row(2, "a", 14),
                        row(0, "b", 11), row(1, "b", 15), row(2, "b", 0)};
  rows[5].metrics.clear();
  rows[5].error = "boom, \"x\"";
  rows[5].stop = "failed";
  const std::string csv = summary_csv(p, rows, {});
  // a: 10, 12, 14 -> mean 12, s = 2, half = t(0.975, 2) * 2 / sqrt(3).
  EXPECT_DOUBLE_EQ(csv_value(csv, "mean,a,", "psnr"), 12.0);
  EXPECT_NEAR(csv_value(csv, "mean,a,", "psnr_ci"), 4.30265273 * 2 / std::sqrt(3.0), 1e-6);
  // b: 11, 15 (the failed run drops out) -> mean 13, half = t(0.975, 1) * sqrt(8) / sqrt(2).
  EXPECT_DOUBLE_EQ(csv_value(csv, "mean,b,", "psnr"), 13.0);
  EXPECT_NEAR(csv_value(csv, "mean,b,", "psnr_ci"), 12.7062047 * 2, 1e-5);
  EXPECT_DOUBLE_EQ(csv_value(csv, "mean,b,", "failed"), 1);
  EXPECT_DOUBLE_EQ(csv_value(csv, "mean,b,", "n"), 2);
  // b - a on the two complete units: 1, 3 -> mean 2, half = t(0.975, 1) * sqrt(2) / sqrt(2).
  EXPECT_DOUBLE_EQ(csv_value(csv, "diff_vs_a,b,", "psnr"), 2.0);
  EXPECT_NEAR(csv_value(csv, "diff_vs_a,b,", "psnr_ci"), 12.7062047, 1e-5);
  EXPECT_DOUBLE_EQ(csv_value(csv, "diff_vs_a,b,", "n"), 2);
  // Time is summarised like a metric: a took 1, 2, 3 s.
  EXPECT_DOUBLE_EQ(csv_value(csv, "mean,a,", "time_s"), 2.0);

  // Markdown: b has the higher PSNR mean, in bold; the failure is listed.
  const std::string md = summary_md(p, rows, {});
  EXPECT_NE(md.find("**13 ± 25**"), std::string::npos) << md;
  EXPECT_NE(md.find("| a | 3 | 0 | 12 ± 5 |"), std::string::npos) << md;
  EXPECT_NE(md.find("boom"), std::string::npos);
  // rows.csv quotes fields with commas and doubles quotes; a failed run has
  // empty metric cells.
  const std::string rc = rows_csv(p, rows);
  EXPECT_NE(rc.find(",failed,\"boom, \"\"x\"\"\","), std::string::npos) << rc;
  EXPECT_NE(rc.find("2,b,bumps,2,2,0,,10,"), std::string::npos) << rc;
}

TEST(BenchTables, PairsCountUnitsBothMethodsRanAndDiagnosticsGetNoBest) {
  // A metric only the first method reports (its iterations, first by name)
  // must not make the pairs 0: they are the units both ran.
  Protocol p = two_methods();
  std::vector<Row> rows{row(0, "a", 10), row(1, "a", 12), row(0, "b", 11), row(1, "b", 13)};
  rows[0].metrics["admm_iterations"] = 30;
  rows[1].metrics["admm_iterations"] = 40;
  const std::string csv = summary_csv(p, rows, {});
  EXPECT_DOUBLE_EQ(csv_value(csv, "diff_vs_a,b,", "n"), 2) << csv;
  const std::string md = summary_md(p, rows, {});
  EXPECT_NE(md.find("| b | 2 |"), std::string::npos) << md;
  // No arrow and no bold for the iteration count; psnr keeps both.
  EXPECT_NE(md.find("| admm_iterations |"), std::string::npos) << md;
  EXPECT_EQ(md.find("**35"), std::string::npos) << md;
  EXPECT_NE(md.find("psnr ↑"), std::string::npos) << md;
  EXPECT_NE(md.find("**12 ±"), std::string::npos) << md;
  EXPECT_NE(benchmark_json(p, rows).find("\"admm_iterations\": \"none\""), std::string::npos);
}

TEST(BenchTables, DirectionsAndMetricNames) {
  EXPECT_EQ(metric_direction("psnr"), 1);
  EXPECT_EQ(metric_direction("ssim"), 1);
  EXPECT_EQ(metric_direction("hungarian_f1"), 1);
  EXPECT_EQ(metric_direction("mse"), -1);
  EXPECT_EQ(metric_direction("relative_error"), -1);
  // What the data or a method reports ranks nothing.
  for (const char* m : {"blurred_psnr", "surface_psnr_init", "admm_iterations", "admm_mu",
                        "wiener_snr", "refine_levels"})
    EXPECT_EQ(metric_direction(m), 0) << m;
  EXPECT_EQ(direction_note("psnr"), " (higher is better)");
  EXPECT_EQ(direction_note("admm_mu"), "");
  Row a = row(0, "a", 1), b = row(1, "b", 2);
  b.metrics["ssim"] = 0.5;
  EXPECT_EQ(metric_names({a, b}), (std::vector<std::string>{"psnr", "ssim"}));
  // With by_class, summary.csv has one line per (class, method).
  Protocol p = two_methods();
  p.classes = {"bumps", "spikes"};
  b.cls = "spikes";
  const std::string csv = summary_csv(p, {a, b}, {true});
  EXPECT_NE(csv.find("mean,a,bumps,1,0,"), std::string::npos) << csv;
  EXPECT_NE(csv.find("mean,b,spikes,1,0,"), std::string::npos) << csv;
}

}  // namespace
