// The label texts, and every registered instance's DataLabels at its
// defaults and its smoke config: named quantities with units (no "u"
// placeholder), an axis per array axis of its truth and its measurement.
#include "nefi/data_labels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "nefi/instances/instance.h"
#include "nefi/io/run_config.h"
#include "nefi/test_files.h"

namespace nefi {
namespace {

TEST(DataLabels, Texts) {
  const Quantity alpha{"thermal diffusivity", "α", "mm²/s"};
  EXPECT_EQ(quantity_label(alpha), "thermal diffusivity α (mm²/s)");
  EXPECT_EQ(error_label(alpha), "error Δα (mm²/s)");
  EXPECT_EQ(error_label({"phase", "", "rad"}), "error phase (rad)");
  EXPECT_EQ(axis_label(span_axis("x", "mm", 0, 10)), "x (mm)");
  const DataAxis t = frames_axis("time", "t = ", evenly(0.1, 0.1, 3), "s");
  EXPECT_EQ(t.frames, (std::vector<std::string>{"t = 0.1 s", "t = 0.2 s", "t = 0.3 s"}));
  EXPECT_EQ(frame_label(t, 2, 3), "t = 0.3 s");
  EXPECT_EQ(frames_axis("view", "θ = ", {0, 15}, "°").frames[1], "θ = 15°");
  EXPECT_EQ(frame_label(span_axis("z", "µm", 0, 1.6), 1, 8), "z = 0.3 µm");
  EXPECT_EQ(counted_axis("shot", 2).frames, (std::vector<std::string>{"shot 1", "shot 2"}));
  const DataAxis r = index_axis("receiver", 4);
  EXPECT_EQ(axis_label(r), "receiver no.");
  EXPECT_TRUE(r.numbered);
  EXPECT_DOUBLE_EQ(cell_centre(r, 0, 4), 1.0);
  EXPECT_DOUBLE_EQ(cell_centre(r, 3, 4), 4.0);
  // Detectors at 5 .. 35 mm, 4 of them: a 10 mm pitch, so the span is 0 .. 40.
  const DataAxis d = lattice_axis("detector x", "mm", 5, 35, 4);
  EXPECT_DOUBLE_EQ(d.lo, 0);
  EXPECT_DOUBLE_EQ(d.hi, 40);
  EXPECT_DOUBLE_EQ(cell_centre(d, 1, 4), 15);
}

void expect_named(const Quantity& q, const std::string& who) {
  EXPECT_FALSE(q.name.empty()) << who;
  EXPECT_FALSE(q.unit.empty()) << who;
  EXPECT_NE(q.unit, "u") << who;
  EXPECT_NE(q.name, "u") << who;
}

// An image axis spans a finite interval in a unit; a stack axis names its
// frames (one per index); an axis of numbered items says so.
void expect_axes(const std::vector<DataAxis>& axes, const fk::Dims& shape, const std::string& who) {
  ASSERT_EQ(axes.size(), shape.size()) << who << " " << shape.str();
  for (size_t a = 0; a < axes.size(); ++a) {
    const DataAxis& x = axes[a];
    EXPECT_FALSE(x.name.empty()) << who << " axis " << a;
    EXPECT_TRUE(std::isfinite(x.lo) && std::isfinite(x.hi) && x.lo < x.hi) << who << " axis " << a;
    EXPECT_TRUE(!x.unit.empty() || !x.frames.empty() || x.numbered) << who << " axis " << a;
    EXPECT_NE(x.unit, "u") << who;
    if (!x.frames.empty()) {
      EXPECT_EQ(static_cast<int64_t>(x.frames.size()), shape[a]) << who;
    }
  }
}

TEST(DataLabels, EveryInstanceNamesItsQuantitiesAndAxes) {
  for (const InstancePtr& inst : all_instances()) {
    const DataLabels d = inst->data_labels(inst->default_config());
    expect_named(d.field, inst->name() + " field");
    expect_named(d.measured, inst->name() + " measured");
    for (const DataAxis& a : d.field_axes) {
      EXPECT_FALSE(a.unit.empty()) << inst->name() << ": a field axis is a length";
      EXPECT_TRUE(a.frames.empty()) << inst->name();
    }
  }
}

// At the smoke config the labels have an axis per axis of the measurement
// and the truth that make_measurement returns.
TEST(DataLabels, SmokeMeasurementsHaveAnAxisPerAxis) {
  for (const InstancePtr& inst : all_instances()) {
    const std::string file = test::config_path(inst->name() + "_smoke.yaml");
    ASSERT_TRUE(std::filesystem::exists(file)) << file;
    const RunConfig c = load_run_config_file(file);
    const DataLabels d = inst->data_labels(c.config);
    const auto [meas, gt] = inst->make_measurement(c.config, 0);
    expect_axes(d.field_axes, gt.shape(), inst->name() + " field");
    expect_axes(d.measured_axes, meas.data.shape(), inst->name() + " measured");
  }
}

}  // namespace
}  // namespace nefi
