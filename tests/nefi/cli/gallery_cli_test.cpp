// nefi gallery on two instances at a tenth of their smoke budget: the page
// references only files that exist, gallery.json holds each run's metrics,
// a headless browser renders the page with its figures, and bad options are
// one-line errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <regex>

#include <stb/stb_image.h>
#include <nlohmann/json.hpp>

#include "nefi/cli/cli_output.h"
#include "nefi/test_files.h"

namespace {

using nefi::test::nefi_built;
using nefi::test::nefi_stdout;
namespace fs = std::filesystem;

TEST(GalleryCli, PageReferencesFilesThatExist) {
  if (!nefi_built()) GTEST_SKIP() << "nefi_cli not built";
  const fs::path out = nefi::test::fresh_dir("gallery_cli");
  const auto r =
      nefi_stdout("gallery --instances toy1d,deconvolution --budget 0.1 -o " + out.string());
  ASSERT_EQ(r.status, 0) << r.out;
  const std::string html = nefi::test::slurp(out / "index.html");
  const std::regex ref(R"re((?:src|href)="([^"#][^"]*)")re");
  int images = 0, links = 0;
  for (auto it = std::sregex_iterator(html.begin(), html.end(), ref); it != std::sregex_iterator();
       ++it) {
    const std::string target = (*it)[1];
    EXPECT_TRUE(fs::exists(out / target)) << target;
    images += target.ends_with(".png");
    ++links;
  }
  EXPECT_EQ(images, 4);  // panel and history of each
  EXPECT_GE(links, 6);
  EXPECT_GT(fs::file_size(out / "toy1d" / "panel.png"), 10000u);
  const auto j = nlohmann::json::parse(nefi::test::slurp(out / "gallery.json"));
  ASSERT_EQ(j["instances"].size(), 2u);
  EXPECT_EQ(j["instances"][0]["instance"], "toy1d");
  EXPECT_EQ(j["instances"][0]["error"], "");
  EXPECT_GT(j["instances"][1]["methods"]["neural"]["metrics"]["psnr"].get<double>(), 10.0);
  EXPECT_TRUE(j["instances"][1]["methods"].contains("wiener"));
  // A direct method has a solve time too (it had 0: no solver timed it).
  EXPECT_GT(j["instances"][1]["methods"]["wiener"]["total_s"].get<double>(), 0.0);
  // The budget scales the smoke preset's steps (toy1d's 180) both ways.
  EXPECT_EQ(j["instances"][0]["methods"]["neural"]["steps"], 18);
  const fs::path twice = nefi::test::fresh_dir("gallery_cli_twice");
  ASSERT_EQ(nefi_stdout("gallery --instances toy1d --budget 2 -o " + twice.string()).status, 0);
  const auto k = nlohmann::json::parse(nefi::test::slurp(twice / "gallery.json"));
  EXPECT_EQ(k["instances"][0]["methods"]["neural"]["steps"], 360);
}

// Pixels of a warm, saturated colour (channel spread > 100, red over blue):
// the figures' orange and red traces; page text is grey and links are blue.
int64_t warm_pixels(const unsigned char* rgb, int64_t n) {
  int64_t warm = 0;
  for (int64_t i = 0; i < n; ++i) {
    const unsigned char* p = rgb + 3 * i;
    const int hi = std::max({p[0], p[1], p[2]}), lo = std::min({p[0], p[1], p[2]});
    warm += hi - lo > 100 && p[0] > p[2];
  }
  return warm;
}

// The page as a browser draws it: chromium-headless-shell (scripts/bootstrap
// installs it) screenshots the gallery; the first screen holds toy1d's
// table and its panel figure, whose warm traces a text-only page lacks.
TEST(GalleryCli, HeadlessBrowserRendersPage) {
  if (!nefi_built()) GTEST_SKIP() << "nefi_cli not built";
  if (std::system("command -v chromium-headless-shell >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "chromium-headless-shell not installed (scripts/bootstrap installs it)";
  const fs::path out = nefi::test::fresh_dir("gallery_browser");
  ASSERT_EQ(nefi_stdout("gallery --instances toy1d --budget 0.1 -o " + out.string()).status, 0);
  const fs::path shot = out / "screenshot.png", page = fs::absolute(out / "index.html");
  // --no-sandbox: the tests may run as root, where chromium's sandbox refuses to start.
  const std::string cmd =
      "timeout 120 chromium-headless-shell --headless --no-sandbox --disable-gpu "
      "--window-size=1200,900 --screenshot=" +
      shot.string() + " file://" + page.string() + " >" + (out / "browser.log").string() + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << nefi::test::slurp(out / "browser.log");
  ASSERT_TRUE(fs::exists(shot));
  EXPECT_GT(fs::file_size(shot), 20000u);  // a blank page is about 5 KB
  int w = 0, h = 0, c = 0;
  unsigned char* px = stbi_load(shot.string().c_str(), &w, &h, &c, 3);
  ASSERT_NE(px, nullptr) << shot;
  const int64_t warm = warm_pixels(px, int64_t{w} * h);
  stbi_image_free(px);
  EXPECT_EQ(w, 1200);
  EXPECT_EQ(h, 900);
  EXPECT_GT(warm, 500) << "the panel figure did not render";  // ~1600; without its figures ~60
}

TEST(GalleryCli, BadInputPrintsOneLine) {
  if (!nefi_built()) GTEST_SKIP() << "nefi_cli not built";
  nefi::test::expect_one_line_errors(
      {{"gallery --budget 0", "--budget"}, {"gallery --instances toy2d", "toy2d"}},
      nefi::test::scratch());
}

}  // namespace
