#include "nefi/params.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <regex>
#include <string>

#include <yaml-cpp/yaml.h>

#include "fk/error.h"
#include "fk/test_util.h"

namespace {

using fk::test::error_of;

// YAML 1.1's float tag (yaml.org/type/float.html): a point is required, an
// exponent needs its sign. PyYAML follows it; 1.2 loaders accept a superset.
bool is_yaml11_float(const std::string& s) {
  static const std::regex number(R"([-+]?([0-9][0-9_]*)?\.[0-9.]*([eE][-+][0-9]+)?)");
  static const std::regex special(R"([-+]?\.(inf|Inf|INF)|\.(nan|NaN|NAN))");
  return std::regex_match(s, number) || std::regex_match(s, special);
}

TEST(NefiParams, FloatsAreYaml11FloatsAndRoundTripExactly) {
  EXPECT_EQ(nefi::yaml_float(1e-6), "1.0e-06");
  EXPECT_EQ(nefi::yaml_float(1.0), "1.0");
  EXPECT_EQ(nefi::yaml_float(0.02), "0.02");
  EXPECT_EQ(nefi::yaml_float(-250.0), "-250.0");
  EXPECT_EQ(nefi::yaml_float(1e21), "1.0e+21");
  EXPECT_EQ(nefi::yaml_float(std::numeric_limits<double>::infinity()), ".inf");
  const double values[] = {1e-6,   3e-3,   0.1,    1.0 / 3.0, 2.5e-4, 1e300, 5e-324,
                           -0.0,   100.0,  1.5e16, -7.25e-9,  0.3,    1e22,  123456789.125,
                           1e-320, 6.0e23, 2.0e-5, 1e15,      1e16,   -1e-7, 0.05};
  for (double v : values) {
    const std::string s = nefi::yaml_float(v);
    EXPECT_TRUE(is_yaml11_float(s)) << s;
    const double back = YAML::Load(s).as<double>();
    EXPECT_EQ(back, v) << s;
    EXPECT_EQ(std::signbit(back), std::signbit(v)) << s;
  }
  for (double v :
       {std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
        std::numeric_limits<double>::quiet_NaN()}) {
    const std::string s = nefi::yaml_float(v);
    EXPECT_TRUE(is_yaml11_float(s)) << s;
    const double back = YAML::Load(s).as<double>();
    EXPECT_TRUE(std::isnan(v) ? std::isnan(back) : back == v) << s;
  }
}

TEST(NefiParams, RenderedValuesReadBackThroughSet) {
  nefi::Params p;
  p.declare("eps", 1e-6, "a small float");
  p.declare("list", std::vector<double>{64, 0.1, 1e-6, -3}, "a list");
  p.declare("count", int64_t{7}, "an int");
  EXPECT_EQ(nefi::Params::render(p.entries()[0].value), "1.0e-06");
  EXPECT_EQ(nefi::Params::render(p.entries()[1].value), "[64, 0.1, 1.0e-06, -3]");
  nefi::Params q = p;
  q.set_value("eps", 0.0);
  q.set_value("list", std::vector<double>{});
  for (const auto& e : p.entries()) q.set(e.key, nefi::Params::render(e.value));
  EXPECT_EQ(q.d("eps"), 1e-6);
  EXPECT_EQ(q.list("list"), p.list("list"));
  EXPECT_EQ(q.i("count"), 7);
}

// Unknown keys and values of the wrong type are one-line errors naming the key.
TEST(NefiParams, ErrorsNameTheKey) {
  nefi::Params p;
  p.declare("sigma", 0.02, "a width");
  p.declare("n", int64_t{8}, "a size");
  p.declare("grid", std::vector<double>{1, 2}, "a list");
  const std::string unknown = error_of([&] { p.set("sigmaa", "0.1"); });
  EXPECT_NE(unknown.find("sigmaa"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("sigma, n, grid"), std::string::npos) << unknown;
  // Beside the wrong types: NaN and the infinities, which mean nothing to a
  // key (a NaN threshold scored a perfect IoU, an infinite pixel hung the
  // solve), and counts past 32 bits (2^32 + 1 iterations ran as 1).
  for (const auto& [key, text] : {std::pair{"n", "abc"},
                                  {"n", "1.5"},
                                  {"sigma", "[1, 2]"},
                                  {"grid", "{a: 1}"},
                                  {"sigma", "[unclosed"},
                                  {"sigma", ".nan"},
                                  {"sigma", ".inf"},
                                  {"sigma", "-.inf"},
                                  {"grid", "[1, .nan]"},
                                  {"n", "4294967297"},
                                  {"n", "-3000000000"}}) {
    const std::string m = error_of([&] { p.set(key, text); });
    EXPECT_NE(m.find(std::string("config key '") + key + "'"), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
  // A seed keeps int64's range.
  p.declare("init_seed", int64_t{0}, "a seed");
  EXPECT_THROW(p.set_value("sigma", std::numeric_limits<double>::quiet_NaN()), fk::Error);
  p.set("init_seed", "9007199254740993");
  EXPECT_EQ(p.i("init_seed"), 9007199254740993);
  p.set("sigma", "1e300");  // finite: the key's own check judges it
  EXPECT_EQ(p.d("sigma"), 1e300);
  const std::string typed = error_of([&] { p.set_value("n", std::string("x")); });
  EXPECT_NE(typed.find("'n'"), std::string::npos) << typed;
  EXPECT_THROW(p.declare("n", int64_t{1}, "twice"), fk::Error);
  p.declare("mode", std::string("fast"), "a choice");
  EXPECT_EQ(p.choice("mode", {"slow", "fast"}), "fast");
  const std::string choice = error_of([&] { p.choice("mode", {"slow", "exact"}); });
  EXPECT_NE(choice.find("'mode'"), std::string::npos) << choice;
  EXPECT_NE(choice.find("slow, exact"), std::string::npos) << choice;
}

}  // namespace
