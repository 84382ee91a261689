// The prior DSL: what each term means, canonical text, and the errors that
// tell a caller how to fix a prior.
#include "nefi/byop/prior.h"

#include <gtest/gtest.h>

#include "fk/test_util.h"

namespace {

using nefi::parse_prior;

TEST(NefiPrior, TermsSetTheHeadPenaltiesAndModifier) {
  EXPECT_EQ(parse_prior("").head, "unconstrained");
  EXPECT_EQ(parse_prior("signed").head, "unconstrained");
  EXPECT_EQ(parse_prior("nonneg").head, "nonnegative");
  EXPECT_EQ(parse_prior("log").head, "positive");
  const auto b = parse_prior(" Bounded(-1, +1) + tv(1e+2) ");
  EXPECT_EQ(b.head, "bounded");
  EXPECT_EQ(b.lo, -1);
  EXPECT_EQ(b.hi, 1);
  ASSERT_EQ(b.penalties.size(), 1u);
  EXPECT_EQ(b.penalties[0].kind, "tv");
  EXPECT_EQ(b.penalties[0].strength, 100);
  const auto s = parse_prior("sparse + smooth(0.05)");
  EXPECT_EQ(s.head, "nonnegative");  // sparse alone implies it
  ASSERT_EQ(s.penalties.size(), 2u);
  EXPECT_EQ(s.penalties[0].strength, 1.0);  // the default
  EXPECT_EQ(s.penalties[1].kind, "smooth");
  EXPECT_EQ(parse_prior("sparse + signed").head, "unconstrained");
  EXPECT_TRUE(parse_prior("zero_mean + piecewise_constant").zero_mean);
  // The canonical text parses back to itself.
  for (const char* t : {"bounded(0.5, 2) + tv(0.1) + sparse(3)", "zero_mean + smooth", "positive",
                        "bounded(0.1234567891, 2.000000001) + tv(1e-07)"})
    EXPECT_EQ(parse_prior(parse_prior(t).str()).str(), parse_prior(t).str()) << t;
  EXPECT_EQ(parse_prior("bounded(0.1234567891, 2)").lo, 0.1234567891);
  EXPECT_EQ(parse_prior(parse_prior("bounded(0.1234567891, 2)").str()).lo, 0.1234567891);
}

TEST(NefiPrior, ErrorsSayWhatToFix) {
  auto err = [](const std::string& t) { return fk::test::error_of([&] { (void)parse_prior(t); }); };
  EXPECT_NE(err("nonnegative + bounded(0, 1)").find("drop one of them"), std::string::npos);
  EXPECT_NE(err("monotone").find("'monotone'"), std::string::npos);
  EXPECT_NE(err("monotone").find("piecewise_constant"), std::string::npos);
  EXPECT_NE(err("bounded(1, 0)").find("lo < hi"), std::string::npos);
  EXPECT_NE(err("bounded(0)").find("lo < hi"), std::string::npos);
  EXPECT_NE(err("tv(-1)").find("strength > 0"), std::string::npos);
  EXPECT_NE(err("tv(x)").find("finite numbers"), std::string::npos);
  EXPECT_NE(err("tv(1, 2)").find("at most one argument"), std::string::npos);
  EXPECT_NE(err("tv + tv").find("each penalty once"), std::string::npos);
  EXPECT_NE(err("nonnegative(2)").find("without arguments"), std::string::npos);
  EXPECT_NE(err("tv(1").find("balanced parentheses"), std::string::npos);
  EXPECT_NE(err("nonnegative + ").find("an empty term"), std::string::npos);
  EXPECT_NE(err("positive + zero_mean").find("zero_mean with an unconstrained"), std::string::npos);
}

}  // namespace
