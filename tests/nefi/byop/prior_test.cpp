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
  EXPECT_NE(err("wiggly").find("'wiggly'"), std::string::npos);
  EXPECT_NE(err("wiggly").find("piecewise_constant"), std::string::npos);
  EXPECT_NE(err("wiggly").find("conserved(M)"), std::string::npos);
  EXPECT_NE(err("bounded(1, 0)").find("lo < hi"), std::string::npos);
  EXPECT_NE(err("bounded(0)").find("lo < hi"), std::string::npos);
  EXPECT_NE(err("tv(-1)").find("strength > 0 for tv, got -1"), std::string::npos);
  EXPECT_NE(err("tv(x)").find("finite numbers"), std::string::npos);
  EXPECT_NE(err("tv(1, 2)").find("at most one argument"), std::string::npos);
  // An empty list or a trailing comma (read once as tv and tv(1)).
  EXPECT_NE(err("tv()").find("tv without parentheses, or numbers in them"), std::string::npos);
  EXPECT_NE(err("tv(1,)").find("a trailing comma"), std::string::npos);
  EXPECT_NE(err("bounded(0, 1, )").find("a trailing comma"), std::string::npos);
  EXPECT_NE(err("tv + tv").find("each penalty once"), std::string::npos);
  EXPECT_NE(err("nonnegative(2)").find("without arguments"), std::string::npos);
  EXPECT_NE(err("tv(1").find("balanced parentheses"), std::string::npos);
  EXPECT_NE(err("nonnegative + ").find("an empty term"), std::string::npos);
  EXPECT_NE(err("positive + zero_mean").find("zero_mean with an unconstrained"), std::string::npos);
  // A head the caller never wrote is named with the term that implied it.
  EXPECT_NE(err("sparse + zero_mean").find("got zero_mean with nonnegative (implied by sparse)"),
            std::string::npos);
  EXPECT_NE(err("zero_mean + mass(2)").find("got zero_mean with nonnegative (implied by mass)"),
            std::string::npos);
  EXPECT_NE(err("binary + nonnegative").find("drop one of them"), std::string::npos);
  EXPECT_NE(err("binary(0, 1)").find("without arguments"), std::string::npos);
  EXPECT_NE(err("two_phase(2, 1)").find("lo < hi"), std::string::npos);
  EXPECT_NE(err("increasing(3)").find("axes 0, 1 or 2 in increasing, got 3"), std::string::npos);
  EXPECT_NE(err("increasing(0.5)").find("axes 0, 1 or 2"), std::string::npos);
  EXPECT_NE(err("increasing(0, 1, 2)").find("at most two arguments"), std::string::npos);
  EXPECT_NE(err("decreasing(1, -2)").find("strength > 0"), std::string::npos);
  EXPECT_NE(err("increasing + decreasing").find("one monotone term per axis"), std::string::npos);
  EXPECT_NE(err("conserved").find("conserved(M) with the field's total M > 0"), std::string::npos);
  EXPECT_NE(err("mass(0)").find("M > 0"), std::string::npos);
  EXPECT_NE(err("conserved(1) + mass(2)").find("one conserved term"), std::string::npos);
  EXPECT_NE(err("signed + conserved(1)").find("conserved with a nonnegative or positive field"),
            std::string::npos);
  EXPECT_NE(err("binary + conserved(1)").find("conserved with level_set"), std::string::npos);
  EXPECT_NE(err("symmetric(0, 0)").find("each axis once"), std::string::npos);
  EXPECT_NE(err("symmetric(0) + symmetric(1)").find("one symmetric term"), std::string::npos);
  EXPECT_NE(err("known_support(1)").find("without arguments"), std::string::npos);
  EXPECT_NE(err("periodic(1, 1)").find("each axis once in periodic"), std::string::npos);
  EXPECT_NE(err("periodic + periodic(0)").find("one periodic term"), std::string::npos);
  EXPECT_NE(err("scale(0)").find("scale(v) with v > 0"), std::string::npos);
  EXPECT_NE(err("bounded(0, 1) + scale(2)").find("scale with an unbounded field"),
            std::string::npos);
  EXPECT_NE(err("conserved(1) + scale(2)").find("scale or conserved"), std::string::npos);
}

TEST(NefiPrior, TwoPhaseMonotoneAndExactModifiers) {
  const auto b = parse_prior("binary");
  EXPECT_EQ(b.head, "level_set");
  EXPECT_EQ(b.lo, 0);
  EXPECT_EQ(b.hi, 1);
  EXPECT_TRUE(b.two_valued() && b.ranged());
  const auto t = parse_prior("two_phase(0.5, 2.5) + tv");
  EXPECT_EQ(t.head, "level_set");
  EXPECT_EQ(t.lo, 0.5);
  EXPECT_EQ(t.hi, 2.5);
  EXPECT_EQ(parse_prior("level_set(-1, 1)").head, "level_set");
  const auto ph = parse_prior("phases(1, 0.25, 3) + tv(0.5)");
  EXPECT_EQ(ph.head, "phases");
  EXPECT_EQ(ph.phases, (std::vector<double>{0.25, 1, 3}));  // ascending
  EXPECT_EQ(ph.lo, 0.25);
  EXPECT_EQ(ph.hi, 3);
  EXPECT_TRUE(ph.phased() && ph.ranged() && !ph.two_valued());
  EXPECT_EQ(ph.str(), "phases(0.25, 1, 3) + tv(0.5)");
  EXPECT_EQ(parse_prior(ph.str()).str(), ph.str());
  for (const char* bad : {"phases(1)", "phases(0, 1, 1)", "phases(0, 1, 2, 3, 4, 5, 6, 7, 8)"})
    EXPECT_NE(fk::test::error_of([&] {
                parse_prior(bad);
              }).find("phases(v1, ..., vK) with 2 to 8 distinct finite values"),
              std::string::npos)
        << bad;
  EXPECT_NE(fk::test::error_of([&] {
              parse_prior("phases(0, 1) + nonnegative");
            }).find("drop one of them"),
            std::string::npos);
  const auto m = parse_prior("increasing + decreasing(1, 3) + monotone(2)");
  ASSERT_EQ(m.penalties.size(), 3u);
  EXPECT_EQ(m.penalties[0].kind, "monotone");
  EXPECT_EQ(m.penalties[0].axis, 0);
  EXPECT_EQ(m.penalties[0].sign, 1);
  EXPECT_EQ(m.penalties[0].strength, 1.0);
  EXPECT_EQ(m.penalties[1].axis, 1);
  EXPECT_EQ(m.penalties[1].sign, -1);
  EXPECT_EQ(m.penalties[1].strength, 3.0);
  EXPECT_EQ(m.penalties[2].axis, 2);
  EXPECT_EQ(m.penalties[2].sign, 1);
  const auto c = parse_prior("conserved(2.5) + symmetric(1, 0) + known_support");
  EXPECT_EQ(c.head, "nonnegative");  // conserved alone implies it
  EXPECT_EQ(c.mass, 2.5);
  EXPECT_EQ(c.symmetric, (std::vector<int>{1, 0}));
  EXPECT_TRUE(c.known_support);
  EXPECT_EQ(parse_prior("positive + mass(1)").head, "positive");
  EXPECT_EQ(parse_prior("symmetric").symmetric, std::vector<int>{-1});  // every axis
  EXPECT_EQ(parse_prior("periodic").periodic, std::vector<int>{-1});
  EXPECT_EQ(parse_prior("periodic(2, 0) + tv").periodic, (std::vector<int>{2, 0}));
  EXPECT_EQ(parse_prior("nonnegative + scale(40)").scale, 40.0);
  EXPECT_FALSE(parse_prior("nonnegative").scale.has_value());
  for (const char* text :
       {"binary + tv(0.5)", "two_phase(-1, 3)", "conserved(3) + symmetric(0, 2) + known_support",
        "symmetric + smooth", "increasing(1, 0.25) + decreasing", "signed + scale(0.001)",
        "periodic + symmetric(1)", "periodic(1) + tv(2)"}) {
    const std::string canonical = parse_prior(text).str();
    EXPECT_EQ(parse_prior(canonical).str(), canonical) << text;
  }
  EXPECT_EQ(parse_prior("binary").str(), "two_phase(0, 1)");
  EXPECT_EQ(parse_prior("decreasing(1)").str(), "unconstrained + decreasing(1, 1)");
  // Every axis prints as the bare term; an axis as the integer it is.
  EXPECT_EQ(parse_prior("symmetric + periodic(1, 0)").str(),
            "unconstrained + symmetric + periodic(1, 0)");
}

}  // namespace
