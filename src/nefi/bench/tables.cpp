#include "nefi/bench/tables.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fk/error.h"
#include "nefi/bench/json_io.h"
#include "nefi/bench/merge.h"
#include "nefi/bench/stats.h"
#include "nefi/bench/summary_png.h"

namespace nefi::bench {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Columns summarised besides the metrics: (row field, markdown header).
const std::vector<std::pair<std::string, std::string>> kCostColumns{
    {"time_s", "time (s)"},
    {"ms_per_step", "ms/step"},
    {"steps", "steps"},
    {"peak_mem_mb", "peak mem (MiB)"}};

double value(const Row& r, const std::string& column) {
  if (!r.error.empty()) return kNaN;
  if (column == "time_s") return r.time_s;
  if (column == "ms_per_step") return r.ms_per_step;
  if (column == "steps") return static_cast<double>(r.steps);
  if (column == "peak_mem_mb") return r.peak_mem_mb;
  const auto it = r.metrics.find(column);
  return it == r.metrics.end() ? kNaN : it->second;
}

std::string num(double v) {
  return fmt::format("{}", v);  // shortest round-trip; nan, inf
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string mean_ci_text(const MeanCI& m) {
  if (m.n == 0 || !std::isfinite(m.mean)) return "–";
  if (!std::isfinite(m.half)) return fmt::format("{:.4g}", m.mean);
  return fmt::format("{:.4g} ± {:.2g}", m.mean, m.half);
}

std::string one_line(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  std::replace(s.begin(), s.end(), '|', '/');
  return s;
}

// A name as a markdown table cell: a | or a line break would split the row.
std::string md_cell(const std::string& s) {
  std::string out;
  for (char c : s)
    out += c == '|' ? std::string("\\|") : c == '\n' || c == '\r' ? " " : std::string(1, c);
  return out;
}

struct Group {
  std::string method, cls;  // cls empty: all classes
  std::vector<const Row*> rows;
};

std::vector<Group> groups(const Protocol& p, const std::vector<Row>& rows, bool by_class) {
  std::vector<Group> out;
  if (by_class) {
    for (const auto& c : p.classes)
      for (const auto& m : p.methods) out.push_back({m, c, {}});
  } else {
    for (const auto& m : p.methods) out.push_back({m, "", {}});
  }
  for (const Row& r : rows)
    for (Group& g : out)
      if (g.method == r.method && (g.cls.empty() || g.cls == r.cls)) g.rows.push_back(&r);
  return out;
}

int failed(const Group& g) {
  return static_cast<int>(
      std::count_if(g.rows.begin(), g.rows.end(), [](const Row* r) { return !r->error.empty(); }));
}

MeanCI column_ci(const Group& g, const std::string& column, double level) {
  std::vector<double> v;
  for (const Row* r : g.rows) v.push_back(value(*r, column));
  return scene_mean_ci(v, scenes_of(g.rows), level);
}

// Paired differences (method - reference) per unit, over the units where
// both runs have the column, their interval over scenes.
MeanCI diff_ci(const std::vector<Row>& rows, const std::string& ref, const std::string& method,
               const std::string& column, double level, int* pairs = nullptr) {
  std::map<int64_t, const Row*> a, b;
  for (const Row& r : rows) {
    if (r.method == ref) a[r.unit] = &r;
    if (r.method == method) b[r.unit] = &r;
  }
  std::vector<const Row*> units;
  std::vector<double> d;
  for (const auto& [u, ra] : a)
    if (b.count(u)) {
      const double x = value(*ra, column), y = value(*b.at(u), column);
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      units.push_back(ra);
      d.push_back(y - x);
    }
  if (pairs) *pairs = static_cast<int>(d.size());
  return scene_mean_ci(d, scenes_of(units), level);
}

// The pairs of a comparison are the units both methods ran without error:
// those with a wall time (a metric may exist for one method only).
constexpr const char* kPairedColumn = "time_s";

// Whether `method` ran exactly as `ref` on every unit both solved (one or
// more): the same metrics, steps and final data loss. An ablation or sweep
// row of a setting its method does not read is its base row again.
bool same_as(const std::vector<Row>& rows, const std::string& ref, const std::string& method) {
  std::map<int64_t, const Row*> a;
  for (const Row& r : rows)
    if (r.method == ref && r.error.empty()) a[r.unit] = &r;
  const auto same = [](double x, double y) { return x == y || (std::isnan(x) && std::isnan(y)); };
  int pairs = 0;
  for (const Row& r : rows) {
    if (r.method != method || !r.error.empty() || !a.count(r.unit)) continue;
    const Row& b = *a.at(r.unit);
    if (r.metrics != b.metrics || r.steps != b.steps || !same(r.final_data_loss, b.final_data_loss))
      return false;
    ++pairs;
  }
  return pairs > 0;
}

std::vector<std::string> summary_columns(const std::vector<Row>& rows) {
  std::vector<std::string> cols = metric_names(rows);
  for (const auto& [c, h] : kCostColumns) cols.push_back(c);
  return cols;
}

std::string header_of(const std::string& col) {
  for (const auto& [c, h] : kCostColumns)
    if (c == col) return h;
  const int d = metric_direction(col);
  return d == 0 ? col : col + (d > 0 ? " ↑" : " ↓");
}

// Markdown table of groups; the best mean of each metric column in bold.
std::string md_table(const std::vector<Group>& gs, const std::vector<std::string>& metrics,
                     double level, bool with_class) {
  std::vector<std::string> cols = metrics;
  for (const auto& [c, h] : kCostColumns) cols.push_back(c);
  std::string s = with_class ? "| class | method | n | failed |" : "| method | n | failed |";
  std::string rule = with_class ? "|---|---|---:|---:|" : "|---|---:|---:|";
  for (const auto& c : cols) {
    s += " ";
    s += header_of(c) + " |";
    rule += "---:|";
  }
  s += "\n";
  s += rule + "\n";
  // Best per (class, metric); none when every method has the same mean (a
  // property of the data such as the blurred input's PSNR).
  // Only a method with the metric on every unit where any method has it
  // competes: a mean over the runs that have one (a depth error where a
  // defect was found, a match distance where a source was) or that did not
  // fail flatters the method; a unit no method scored (its data failed)
  // counts against none.
  std::map<std::pair<std::string, std::string>, std::set<int64_t>> scored;
  for (const Group& g : gs)
    for (const auto& m : metrics)
      for (const Row* r : g.rows)
        if (std::isfinite(value(*r, m))) scored[{g.cls, m}].insert(r->unit);
  const auto complete = [&](const Group& g, const std::string& m) {
    std::set<int64_t> mine;
    for (const Row* r : g.rows)
      if (std::isfinite(value(*r, m))) mine.insert(r->unit);
    return mine == scored[{g.cls, m}];
  };
  std::map<std::pair<std::string, std::string>, double> best;
  std::map<std::pair<std::string, std::string>, std::set<double>> distinct;
  for (const Group& g : gs)
    for (const auto& m : metrics) {
      const MeanCI ci = column_ci(g, m, level);
      const double v = ci.mean;
      if (!std::isfinite(v) || metric_direction(m) == 0) continue;
      distinct[{g.cls, m}].insert(v);
      if (!complete(g, m)) continue;
      auto [it, fresh] = best.emplace(std::make_pair(g.cls, m), v);
      if (!fresh && (metric_direction(m) > 0 ? v > it->second : v < it->second)) it->second = v;
    }
  for (const auto& [key, values] : distinct)
    if (values.size() < 2) best.erase(key);
  for (const Group& g : gs) {
    int n_ok = static_cast<int>(g.rows.size()) - failed(g);
    s += with_class ? fmt::format("| {} | {} |", md_cell(g.cls), md_cell(g.method))
                    : fmt::format("| {} |", md_cell(g.method));
    s += fmt::format(" {} | {} |", n_ok, failed(g));
    for (const auto& c : cols) {
      const MeanCI ci = column_ci(g, c, level);
      std::string cell = mean_ci_text(ci);
      if (ci.runs > 0 && ci.runs < n_ok) cell += fmt::format(" ({}/{})", ci.runs, n_ok);
      const auto b = best.find({g.cls, c});
      if (b != best.end() && std::isfinite(ci.mean) && ci.mean == b->second && complete(g, c))
        cell = fmt::format("**{}**", cell);
      s += " ";
      s += cell + " |";
    }
    s += "\n";
  }
  return s;
}

}  // namespace

std::vector<int64_t> scenes_of(const std::vector<const Row*>& rows) {
  std::map<std::pair<std::string, int64_t>, int64_t> ids;
  std::vector<int64_t> out;
  for (const Row* r : rows)
    out.push_back(ids.emplace(std::make_pair(r->cls, r->sample), ids.size()).first->second);
  return out;
}

std::vector<std::string> metric_names(const std::vector<Row>& rows) {
  std::set<std::string> names;
  for (const Row& r : rows)
    for (const auto& [k, v] : r.metrics) names.insert(k);
  return {names.begin(), names.end()};
}

int metric_direction(const std::string& m) {
  // What the data or a start gave, the same for every method or none of
  // its quality: the blurred input's PSNR, a field's value at its start.
  if (m.starts_with("blurred_") || m.ends_with("_init")) return 0;
  const auto has = [&m](std::initializer_list<const char*> parts) {
    return std::any_of(parts.begin(), parts.end(),
                       [&m](const char* p) { return m.find(p) != std::string::npos; });
  };
  if (has({"psnr", "ssim", "iou", "dice", "f1", "accuracy", "accepted", "in_band", "delta1"}))
    return 1;
  if (has({"mse", "error", "mae", "swd", "gmsd", "distance", "abs_rel"})) return -1;
  return 0;
}

std::string direction_note(const std::string& metric) {
  const int d = metric_direction(metric);
  return d > 0 ? " (higher is better)" : d < 0 ? " (lower is better)" : "";
}

std::string rows_csv(const Protocol& p, const std::vector<Row>& rows) {
  (void)p;
  const auto metrics = metric_names(rows);
  std::string s = "unit,method,class,sample,data_seed,seed";
  for (const auto& m : metrics) s += fmt::format(",{}", csv_field(m));
  s += ",steps,final_data_loss,n_params,stop,error,time_s,ms_per_step,ops_per_step,peak_mem_mb,"
       "threads,host,batch_size\n";
  for (const Row& r : rows) {
    s += fmt::format("{},{},{},{},{},{}", r.unit, csv_field(r.method), csv_field(r.cls), r.sample,
                     r.data_seed, r.seed);
    for (const auto& m : metrics) {
      const auto it = r.metrics.find(m);
      s += ",";
      s += (it == r.metrics.end() ? std::string() : num(it->second));
    }
    s += fmt::format(",{},{},{},{},{},{},{},{},{},{},{},{}\n", r.steps, num(r.final_data_loss),
                     r.n_params, csv_field(r.stop), csv_field(r.error), num(r.time_s),
                     num(r.ms_per_step), num(r.ops_per_step), num(r.peak_mem_mb), r.threads,
                     csv_field(r.host), r.batch_size);
  }
  return s;
}

std::string summary_csv(const Protocol& p, const std::vector<Row>& rows, const TableOptions& o) {
  const auto cols = summary_columns(rows);
  std::string s = "kind,method,class,n,failed";
  // <column>_runs: the runs (pairs) behind the mean; <column>_scenes: the
  // scenes its interval counts.
  for (const auto& c : cols)
    s += fmt::format(",{},{},{},{}", csv_field(c), csv_field(c + "_ci"), csv_field(c + "_runs"),
                     csv_field(c + "_scenes"));
  s += "\n";
  for (const Group& g : groups(p, rows, o.by_class)) {
    s += fmt::format("mean,{},{},{},{}", csv_field(g.method), csv_field(g.cls),
                     static_cast<int>(g.rows.size()) - failed(g), failed(g));
    for (const auto& c : cols) {
      const MeanCI ci = column_ci(g, c, o.level);
      s += fmt::format(",{},{},{},{}", num(ci.mean), num(ci.half), ci.runs, ci.n);
    }
    s += "\n";
  }
  const std::string& ref = p.methods.front();
  for (size_t mi = 1; mi < p.methods.size(); ++mi) {
    int pairs = 0;
    diff_ci(rows, ref, p.methods[mi], kPairedColumn, o.level, &pairs);
    // The whole field quoted ("diff_vs_"ne,u..." split the row).
    s += fmt::format("{},{},,{},", csv_field("diff_vs_" + ref), csv_field(p.methods[mi]), pairs);
    for (const auto& c : cols) {
      const MeanCI ci = diff_ci(rows, ref, p.methods[mi], c, o.level);
      s += fmt::format(",{},{},{},{}", num(ci.mean), num(ci.half), ci.runs, ci.n);
    }
    s += "\n";
  }
  return s;
}

std::string summary_md(const Protocol& p, const std::vector<Row>& rows, const TableOptions& o) {
  const auto metrics = metric_names(rows);
  const int64_t expected = p.n_units() * static_cast<int64_t>(p.methods.size());
  std::string s = fmt::format("# Benchmark: {}\n\n", p.instance);
  s += fmt::format(
      "{} samples × {} seeds × {} classes ({}), methods {}, budget scale {}; "
      "mean ± {:g} % CI (Student t over the scenes, class × sample, each the mean of its "
      "seeds); (k/n): the metric exists in k of the n runs, and only a method with it on every "
      "unit any method has it on can be best",
      p.n_samples, p.seeds.size(), p.classes.size(), fmt::join(p.classes, ", "),
      fmt::join(p.methods, ", "), p.budget_scale, 100 * o.level);
  if (static_cast<int64_t>(rows.size()) != expected)
    s += fmt::format("; **incomplete: {} of {} runs**", rows.size(), expected);
  s += ".\n";
  // The regime of each method that runs a solver: its operator against the
  // data generator (the inverse-crime guard's tags).
  std::string regimes;
  const auto by_method = p.regimes();
  for (const auto& m : p.methods)
    if (const std::string& r = by_method.at(m); r != "direct")
      regimes += fmt::format("{}{} {} ({})", regimes.empty() ? "" : ", ", m, r,
                             p.fidelity.at(m).empty() ? "no tag" : p.fidelity.at(m));
  if (!regimes.empty())
    s += fmt::format("Data `{}`; {}.\n", p.fidelity.count("data") ? p.fidelity.at("data") : "",
                     regimes);
  s += "\n";
  s += md_table(groups(p, rows, false), metrics, o.level, false);
  if (p.methods.size() > 1) {
    const std::string& ref = p.methods.front();
    const auto cols = summary_columns(rows);
    s += fmt::format("\nPaired differences against {} (method − {}, per unit):\n\n", one_line(ref),
                     one_line(ref));
    s += "| method | pairs |";
    std::string rule = "|---|---:|";
    for (const auto& c : cols) {
      s += " Δ ";
      s += header_of(c) + " |";
      rule += "---:|";
    }
    s += "\n";
    s += rule + "\n";
    for (size_t mi = 1; mi < p.methods.size(); ++mi) {
      int pairs = 0;
      diff_ci(rows, ref, p.methods[mi], kPairedColumn, o.level, &pairs);
      s += fmt::format("| {} | {} |", md_cell(p.methods[mi]), pairs);
      for (const auto& c : cols) {
        const MeanCI d = diff_ci(rows, ref, p.methods[mi], c, o.level);
        std::string cell = mean_ci_text(d);
        if (d.runs > 0 && d.runs < pairs) cell += fmt::format(" ({}/{})", d.runs, pairs);
        s += fmt::format(" {} |", cell);
      }
      s += "\n";
    }
    std::vector<std::string> unchanged;
    for (size_t mi = 1; mi < p.methods.size(); ++mi)
      if (same_as(rows, ref, p.methods[mi])) unchanged.push_back(md_cell(p.methods[mi]));
    if (!unchanged.empty())
      s += fmt::format(
          "\n**Identical to {} on every unit: {}.** Their runs changed nothing (the same "
          "metrics, steps and final loss): a setting the method does not read, or a part it "
          "does not have, has no effect to measure.\n",
          one_line(ref), fmt::join(unchanged, ", "));
  }
  if (p.classes.size() > 1) {
    s += "\nPer class:\n\n";
    s += md_table(groups(p, rows, true), metrics, o.level, true);
  }
  std::vector<const Row*> errors;
  for (const Row& r : rows)
    if (!r.error.empty()) errors.push_back(&r);
  if (!errors.empty()) {
    s += "\nFailed runs:\n\n";
    for (const Row* r : errors)
      s += fmt::format("- unit {} ({}, sample {}, seed {}) {}: {}\n", r->unit, one_line(r->cls),
                       r->sample, r->seed, one_line(r->method), one_line(r->error));
  }
  return s;
}

std::string benchmark_json(const Protocol& p, const std::vector<Row>& rows) {
  nlohmann::json j;
  j["format"] = "nefi-benchmark/1";
  j["protocol"] = to_json(p);
  j["regime"] = p.regimes();
  nlohmann::json directions = nlohmann::json::object();
  for (const auto& m : metric_names(rows)) {
    const int d = metric_direction(m);
    directions[m] = d > 0 ? "higher" : d < 0 ? "lower" : "none";
  }
  j["metric_directions"] = directions;
  nlohmann::json rj = nlohmann::json::array();
  std::set<std::string> hosts;
  std::set<int64_t> threads;
  for (const Row& r : rows) {
    rj.push_back(to_json(r));
    hosts.insert(r.host);
    threads.insert(r.threads);
  }
  j["rows"] = rj;
  // Where the batches trained (--batched --batch-device); the rest ran on the CPU.
  j["environment"] = {{"device", p.batch_device.empty() ? std::string("cpu") : p.batch_device},
                      {"hosts", std::vector<std::string>(hosts.begin(), hosts.end())},
                      {"threads", std::vector<int64_t>(threads.begin(), threads.end())},
                      {"environment_fields", kEnvironmentFields}};
  return j.dump(1) + "\n";
}

void write_tables(const std::string& dir, const Protocol& p, const std::vector<Row>& rows,
                  const TableOptions& o) {
  prepare_out_dir(dir);
  auto write = [&dir](const char* name, const std::string& text) {
    const std::string path = (std::filesystem::path(dir) / name).string();
    std::ofstream f(path);
    FK_CHECK(f.good(), "benchmark table", "a writable path", "'" + path + "'");
    f << text;
  };
  write("rows.csv", rows_csv(p, rows));
  write("summary.csv", summary_csv(p, rows, o));
  write("summary.md", summary_md(p, rows, o));
  write("benchmark.json", benchmark_json(p, rows));
  write_summary_png((std::filesystem::path(dir) / "summary.png").string(), p, rows, o.level);
}

}  // namespace nefi::bench
