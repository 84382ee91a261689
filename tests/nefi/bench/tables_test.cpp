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

// A row that ran exactly as the reference on every unit (a setting its
// method does not read) is named in summary.md, not left as a row of zero
// differences that reads as "no effect".
TEST(BenchTables, RowsIdenticalToTheReferenceAreNamed) {
  Protocol p = two_methods();
  p.methods = {"a", "b", "c"};
  std::vector<Row> rows;
  for (int64_t u = 0; u < 3; ++u) {
    rows.push_back(row(u, "a", 20 + u));
    rows.push_back(row(u, "b", 20 + u));  // identical but for the time
    rows.back().time_s += 0.5;
    rows.push_back(row(u, "c", 20 + u + (u == 2 ? 0.001 : 0)));
  }
  const std::string md = summary_md(p, rows, {});
  EXPECT_NE(md.find("**Identical to a on every unit: b.**"), std::string::npos) << md;
  rows[1].steps = 11;  // one unit differs
  EXPECT_EQ(summary_md(p, rows, {}).find("Identical to"), std::string::npos);
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

  // Markdown: b has the higher PSNR mean but failed a run, so a's mean, over
  // every run, is the best; the failure is listed.
  const std::string md = summary_md(p, rows, {});
  EXPECT_NE(md.find("| b | 2 | 1 | 13 ± 25 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| a | 3 | 0 | **12 ± 5** |"), std::string::npos) << md;
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

TEST(BenchTables, IntervalsCountScenesAndAMetricSomeRunsLackIsNeverBest) {
  // Two samples x three seeds. a is deterministic (10 on sample 0, 14 on
  // sample 1 whatever the seed): its interval is the one of two scene means,
  // t(0.975, 1) * sqrt(8) / sqrt(2), not of six runs.
  Protocol p = two_methods();
  p.n_samples = 2;
  p.seeds = {0, 1, 2};
  std::vector<Row> rows;
  const double b_psnr[6] = {11, 12, 13, 15, 16, 17};
  for (int64_t u = 0; u < 6; ++u) {
    Row a = row(u, "a", u < 3 ? 10 : 14), b = row(u, "b", b_psnr[u]);
    a.sample = b.sample = u / 3;
    a.seed = b.seed = static_cast<uint64_t>(u % 3);
    a.metrics["match_distance"] = 0.5;              // lower is better
    if (u == 0) b.metrics["match_distance"] = 0.1;  // b matched a source once
    rows.push_back(a);
    rows.push_back(b);
  }
  const std::string csv = summary_csv(p, rows, {});
  EXPECT_DOUBLE_EQ(csv_value(csv, "mean,a,", "psnr"), 12.0);
  EXPECT_NEAR(csv_value(csv, "mean,a,", "psnr_ci"), 12.7062047 * 2, 1e-5) << csv;
  EXPECT_DOUBLE_EQ(csv_value(csv, "mean,a,", "psnr_runs"), 6);
  EXPECT_DOUBLE_EQ(csv_value(csv, "mean,a,", "psnr_scenes"), 2);
  EXPECT_DOUBLE_EQ(csv_value(csv, "mean,b,", "match_distance_runs"), 1);
  // b - a per unit: 1, 2, 3 on sample 0 and 1, 2, 3 on sample 1: scene means
  // 2 and 2, an interval of width 0 (the seeds' spread is within scenes).
  EXPECT_DOUBLE_EQ(csv_value(csv, "diff_vs_a,b,", "psnr"), 2.0);
  EXPECT_DOUBLE_EQ(csv_value(csv, "diff_vs_a,b,", "psnr_ci"), 0.0);
  EXPECT_DOUBLE_EQ(csv_value(csv, "diff_vs_a,b,", "n"), 6);
  const std::string md = summary_md(p, rows, {});
  // b's match distance comes from 1 of its 6 runs: shown so, and not best.
  EXPECT_NE(md.find("| 0.1 (1/6) |"), std::string::npos) << md;
  EXPECT_NE(md.find("| **0.5 ± 0** |"), std::string::npos) << md;
  EXPECT_NE(md.find("-0.4 (1/6)"), std::string::npos) << md;  // the paired difference
  EXPECT_NE(md.find("Student t over the scenes"), std::string::npos) << md;
  // A unit whose data failed every method counts against none: b, with the
  // metric wherever a has it, competes again.
  for (Row& r : rows)
    if (r.unit == 0) {
      r.metrics.clear();
      r.error = "data generation failed";
      r.stop = "failed";
    }
  const std::string md2 = summary_md(p, rows, {});
  EXPECT_NE(md2.find("| **14.25 ± 22** |"), std::string::npos) << md2;
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

namespace {

// A CSV text's fields per record, quotes honoured (RFC 4180).
std::vector<std::vector<std::string>> csv_records(const std::string& text) {
  std::vector<std::vector<std::string>> out(1);
  std::string field;
  bool quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"')
        field += c, ++i;
      else if (c == '"')
        quoted = false;
      else
        field += c;
    } else if (c == '"' && field.empty()) {  // a quote opens only a field
      quoted = true;
    } else if (c == ',') {
      out.back().push_back(field), field.clear();
    } else if (c == '\n') {
      out.back().push_back(field), field.clear();
      out.emplace_back();
    } else {
      field += c;
    }
  }
  if (out.back().empty()) out.pop_back();
  return out;
}

// Names with a comma, quote, | or line break keep every table whole: each
// summary.csv record as wide as its header, each summary.md row one line.
TEST(BenchTables, NamesThatNeedQuotingKeepTheTablesWhole) {
  Protocol p = two_methods();
  p.methods = {"ne,u\"ral|x", "b\nc"};
  std::vector<Row> rows{row(0, p.methods[0], 10), row(1, p.methods[0], 12),
                        row(0, p.methods[1], 11), row(1, p.methods[1], 13)};
  const auto records = csv_records(summary_csv(p, rows, {}));
  ASSERT_GE(records.size(), 3u);
  for (const auto& r : records) EXPECT_EQ(r.size(), records[0].size());
  EXPECT_EQ(records.back()[0], "diff_vs_ne,u\"ral|x");
  const std::string md = summary_md(p, rows, {});
  std::istringstream in(md);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("| ", 0) != 0) continue;
    int bars = 0;
    for (size_t i = 0; i < line.size(); ++i)
      bars += line[i] == '|' && (i == 0 || line[i - 1] != '\\');
    EXPECT_GE(bars, 3) << line;
    EXPECT_EQ(line.back(), '|') << line;
  }
}

}  // namespace
