// The gallery page: escaping, one section per entry, failures shown, every
// image referenced, gallery.json's numbers (non-finite metrics as null).
#include "nefi/io/gallery_html.h"

#include <gtest/gtest.h>

#include <cmath>

#include <nlohmann/json.hpp>

namespace nefi {
namespace {

TEST(GalleryHtml, SectionsTablesImagesAndErrors) {
  std::vector<GalleryEntry> e(2);
  e[0].instance = "toy1d";
  e[0].summary = "1-D <deblurring> & more";
  e[0].dir = "toy1d";
  e[0].images = {"toy1d/panel.png", "toy1d/history.png"};
  e[0].methods = {{"neural", {{"psnr", 31.234}, {"mse", NAN}}, 0.5, 180},
                  {"grid", {{"psnr", 29.0}}, 0.25, 90}};
  e[0].wall_s = 1.0;
  e[1].instance = "broken";
  e[1].error = "config key 'n': an integer";
  e[1].wall_s = 0.5;
  const std::string h = gallery_html(e, "t");
  EXPECT_NE(h.find("1-D &lt;deblurring&gt; &amp; more"), std::string::npos);
  EXPECT_NE(h.find("<img src=\"toy1d/panel.png\""), std::string::npos);
  EXPECT_NE(h.find("<img src=\"toy1d/history.png\""), std::string::npos);
  EXPECT_NE(h.find("31.23 dB"), std::string::npos);
  EXPECT_NE(h.find("<td>180</td>"), std::string::npos);
  EXPECT_NE(h.find("failed: config key &#39;n&#39;"), std::string::npos);
  EXPECT_NE(h.find("2 instances, 1.5 s"), std::string::npos);
  EXPECT_EQ(h.find("broken/"), std::string::npos);  // a failed run links no files
  const auto j = nlohmann::json::parse(gallery_json(e));
  EXPECT_EQ(j["instances"][0]["methods"]["neural"]["steps"], 180);
  EXPECT_TRUE(j["instances"][0]["methods"]["neural"]["metrics"]["mse"].is_null());
  EXPECT_EQ(j["instances"][1]["error"], "config key 'n': an integer");
  EXPECT_EQ(html_escape("a\"b"), "a&quot;b");
}

}  // namespace
}  // namespace nefi
