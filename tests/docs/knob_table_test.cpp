// docs/performance.md's knob table against fk's knob registry: every
// registered knob has exactly one row, with the registry's default and read
// mode, and every row but the build-time ones names a registered knob. The
// binary links minkowski and nefi whole (as fk-info does), so every knob
// object is in the registry.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "fk/cuda/runtime.h"
#include "fk/knobs.h"

namespace {

struct Row {
  std::string name, default_value, read;
};

// The cells of a Markdown table row "| a | b | c |", trimmed.
std::vector<std::string> cells(const std::string& line) {
  std::vector<std::string> out;
  size_t start = 1;  // past the leading '|'
  for (size_t bar = line.find('|', start); bar != std::string::npos;
       start = bar + 1, bar = line.find('|', start)) {
    std::string c = line.substr(start, bar - start);
    const size_t b = c.find_first_not_of(' '), e = c.find_last_not_of(' ');
    out.push_back(b == std::string::npos ? "" : c.substr(b, e - b + 1));
  }
  return out;
}

// The rows of the table under "## Knobs", in order (duplicates kept).
std::vector<Row> knob_table() {
  std::ifstream doc(FK_PERFORMANCE_DOC);
  EXPECT_TRUE(doc.good()) << "cannot read " << FK_PERFORMANCE_DOC;
  std::vector<Row> rows;
  bool in_section = false;
  for (std::string line; std::getline(doc, line);) {
    if (line.rfind("## ", 0) == 0) {
      if (in_section) break;
      in_section = line == "## Knobs";
      continue;
    }
    if (!in_section || line.rfind("| `", 0) != 0) continue;
    const std::vector<std::string> c = cells(line);
    EXPECT_EQ(c.size(), 4u) << "knob row without 4 cells: " << line;
    if (c.size() < 3) continue;
    rows.push_back({c[0].substr(1, c[0].size() - 2), c[1], c[2]});
  }
  return rows;
}

// The table writes two defaults in words.
std::string registry_default(const std::string& table_default) {
  if (table_default == "(empty)") return "";
  if (table_default == "cores") return "0";  // OMP_NUM_THREADS=0: every core
  return table_default;
}

// Registered only where the device code is built (fk/cuda/runtime.cpp,
// fk/cuda/cublas_library.cpp and minkowski/cuda/implicit_conv.cpp have no
// CPU-build counterpart with their knobs).
const std::set<std::string> kCudaOnly = {"FK_CUBLAS_LIBRARY", "ME_CONV_DATAFLOW",
                                         "ME_CONV_IMPLICIT_MMA", "ME_LAZY_SYNC"};

TEST(KnobTable, ReadsTheKnobsSection) {
  const std::vector<Row> rows = knob_table();
  ASSERT_GE(rows.size(), 10u);
  EXPECT_EQ(rows.front().name, "OMP_NUM_THREADS");
}

TEST(KnobTable, EachRowOnce) {
  std::map<std::string, int> seen;
  for (const Row& r : knob_table()) ++seen[r.name];
  for (const auto& [name, n] : seen) EXPECT_EQ(n, 1) << name << " has " << n << " rows";
}

TEST(KnobTable, EveryRegisteredKnobHasARowThatAgrees) {
  std::map<std::string, Row> table;
  for (const Row& r : knob_table()) table.emplace(r.name, r);
  for (const fk::Knob* k : fk::knobs()) {
    SCOPED_TRACE(k->name());
    const auto it = table.find(k->name());
    ASSERT_TRUE(it != table.end()) << "registered but not in docs/performance.md";
    EXPECT_EQ(registry_default(it->second.default_value), k->default_value());
    EXPECT_EQ(it->second.read, k->read() == fk::KnobRead::Latched ? "latched" : "per call");
  }
}

TEST(KnobTable, EveryRowIsARegisteredKnob) {
  std::set<std::string> registered;
  for (const fk::Knob* k : fk::knobs()) registered.insert(k->name());
  for (const Row& r : knob_table()) {
    if (r.read == "build") continue;  // build-time options (make), no knob
    if (!fk::cuda::built_with_cuda() && kCudaOnly.count(r.name)) continue;
    EXPECT_TRUE(registered.count(r.name)) << r.name << " is in the table but not registered";
  }
}

}  // namespace
