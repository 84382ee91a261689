// The run panel's unit-bearing texts (colour bars, axis labels, the shown
// measurement frame) for three instances at their smoke configs, built from
// their real measurements: what a reader of panel.png sees, without pixels.
#include "nefi/io/run_figures.h"

#include <gtest/gtest.h>

#include "nefi/test_files.h"

namespace nefi {
namespace {

PanelLabels smoke_labels(const std::string& instance) {
  const RunConfig c = load_run_config_file(test::config_path(instance + "_smoke.yaml"));
  auto [meas, gt] = find_instance(instance)->make_measurement(c.config, 0);
  RunOutput out = start_run_output("neural", meas, gt);
  out.reconstruction = gt;
  return panel_labels(run_panel_input(c, {out}));
}

TEST(RunFigures, ThermalPanelNamesDiffusivityAndTemperatureInTheirUnits) {
  const PanelLabels l = smoke_labels("thermal_tomography");
  EXPECT_EQ(l.field_bar, "thermal diffusivity α (mm²/s)");
  EXPECT_EQ(l.error_bar, "error Δα (mm²/s)");
  EXPECT_EQ(l.field_vertical, "x (mm)");
  EXPECT_EQ(l.field_horizontal, "y (mm)");
  EXPECT_EQ(l.measured_bar, "surface temperature rise ΔT (K)");
  EXPECT_EQ(l.measured_vertical, "x (mm)");
  EXPECT_EQ(l.measured_frame, "t = 0.1 s");  // first_frame 1 at dt 0.1
}

TEST(RunFigures, WaveFwiPanelNamesVelocityAndATimeAxis) {
  const PanelLabels l = smoke_labels("wave_fwi");
  EXPECT_EQ(l.field_bar, "P-wave velocity c (km/s)");
  EXPECT_EQ(l.field_vertical, "depth z (km)");
  EXPECT_EQ(l.field_horizontal, "x (km)");
  EXPECT_EQ(l.measured_vertical, "receiver no.");
  EXPECT_EQ(l.measured_horizontal, "time t (s)");
  EXPECT_EQ(l.measured_frame, "shot 1");
}

TEST(RunFigures, EitPanelNamesConductivityAndBoundaryVoltages) {
  const PanelLabels l = smoke_labels("eit");
  EXPECT_EQ(l.field_bar, "conductivity σ (S/m)");
  EXPECT_EQ(l.error_bar, "error Δσ (S/m)");
  EXPECT_EQ(l.field_vertical, "x (m)");
  EXPECT_EQ(l.measured_bar, "boundary voltage U (V)");
  EXPECT_EQ(l.measured_vertical, "current pattern no.");
  EXPECT_NE(l.measured_horizontal.find("(m)"), std::string::npos);
  EXPECT_EQ(l.measured_frame, "");
}

TEST(RunFigures, SparseViewCtSinogramHasAngleAndDetectorAxes) {
  const PanelLabels l = smoke_labels("sparse_view_ct");
  EXPECT_EQ(l.field_bar, "attenuation μ (a.u.)");
  EXPECT_EQ(l.field_vertical, "y (px)");
  EXPECT_EQ(l.measured_vertical, "view angle θ (°)");
  EXPECT_EQ(l.measured_horizontal, "detector position s (px)");
}

}  // namespace
}  // namespace nefi
