// sweep.png: numeric values recognised whole, a figure from synthetic rows
// given out of value order decodes at the stated size, mismatched labels
// refused, a sweep's axis read back from its labels (for bench-merge).
#include "nefi/bench/sweep_png.h"

#include <gtest/gtest.h>
#include <stb/stb_image.h>

#include "fk/error.h"
#include "nefi/test_files.h"

namespace nefi::bench {
namespace {

TEST(SweepPng, NumericValuesAndFigure) {
  EXPECT_EQ(*numeric_values({"1e-3", "0.5", "2"}), (std::vector<double>{1e-3, 0.5, 2}));
  EXPECT_FALSE(numeric_values({"1e-3", "cosine"}));
  EXPECT_FALSE(numeric_values({"1e-3x"}));
  EXPECT_FALSE(numeric_values({""}));
  std::vector<Row> rows;
  const std::vector<std::string> labels{"lr=0.1", "lr=0.001", "lr=0.01"};
  for (const auto& l : labels)
    for (int s = 0; s < 3; ++s) {
      Row r;
      r.method = l;
      r.seed = s;
      r.metrics = {{"psnr", 20.0 + s + l.size()}, {"mse", 0.01 * (s + 1)}};
      rows.push_back(r);
    }
  const std::string path = (nefi::test::scratch() / "sweep.png").string();
  write_sweep_png(path, "t", "lr", {0.1, 0.001, 0.01}, labels, rows);
  int w = 0, h = 0, c = 0;
  unsigned char* px = stbi_load(path.c_str(), &w, &h, &c, 3);
  ASSERT_NE(px, nullptr);
  stbi_image_free(px);
  EXPECT_EQ(w, static_cast<int>(2 * (58 + 300 + 34) + 10));  // two metrics side by side
  EXPECT_EQ(h, static_cast<int>(44 + 34 + 220 + 44));
  EXPECT_THROW(write_sweep_png(path, "t", "lr", {0.1}, labels, rows), fk::Error);
}

TEST(SweepPng, TheAxisIsReadBackFromTheRowLabels) {
  const auto a = sweep_axis_of({"lr=0.1", "lr=1e-3"});
  ASSERT_TRUE(a);
  EXPECT_EQ(a->key, "lr");
  EXPECT_EQ(a->values, (std::vector<double>{0.1, 1e-3}));
  EXPECT_FALSE(sweep_axis_of({"lr=0.1", "tv=1e-3"}));                // two keys
  EXPECT_FALSE(sweep_axis_of({"full", "tv=1e-3"}));                  // an ablation
  EXPECT_FALSE(sweep_axis_of({"optimizer=adam", "optimizer=sgd"}));  // not numbers
  EXPECT_FALSE(sweep_axis_of({"neural", "grid"}));                   // a bench
  EXPECT_FALSE(sweep_axis_of({}));
}

}  // namespace
}  // namespace nefi::bench
