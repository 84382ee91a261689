// nefi gallery on two instances at a tenth of their smoke budget: the page
// references only files that exist, gallery.json holds each run's metrics,
// and bad options are one-line errors.
#include <gtest/gtest.h>

#include <regex>

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
}

TEST(GalleryCli, BadInputPrintsOneLine) {
  if (!nefi_built()) GTEST_SKIP() << "nefi_cli not built";
  nefi::test::expect_one_line_errors(
      {{"gallery --budget 0", "--budget"}, {"gallery --instances toy2d", "toy2d"}},
      nefi::test::scratch());
}

}  // namespace
