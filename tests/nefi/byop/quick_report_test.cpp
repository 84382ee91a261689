// quick_report's chi verdicts at the band edges (the report itself is
// checked on a solve in auto_problem_test.cpp).
#include "nefi/byop/quick_report.h"

#include <gtest/gtest.h>

#include "fk/factory.h"
#include "fk/test_util.h"
#include "nefi/diagnostics/data_fit.h"

namespace {

TEST(NefiQuickReport, ChiVerdictBands) {
  EXPECT_NE(nefi::diagnostics::misfit_verdict(0.5, true).find("below the noise"),
            std::string::npos);
  EXPECT_EQ(nefi::diagnostics::misfit_verdict(1.15, true), "at the noise floor");
  EXPECT_NE(nefi::diagnostics::misfit_verdict(1.15, false).find("slightly above"),
            std::string::npos);
  EXPECT_NE(nefi::diagnostics::misfit_verdict(3, false).find("underfit"), std::string::npos);
}

TEST(NefiQuickReport, GroundTruthsOfUnknownFieldsOrSizesAreRefused) {
  nefi::AutoProblem ap;
  ap.fields = {"x"};
  ap.priors = {nefi::parse_prior("")};
  ap.problem.domain = nefi::Domain({4});
  std::string e = fk::test::error_of([&] {
    nefi::check_ground_truth(ap, {{"x", fk::zeros({5})}});
  });
  EXPECT_NE(e.find("field's shape [4]"), std::string::npos) << e;
  e = fk::test::error_of([&] { nefi::check_ground_truth(ap, {{"y", fk::zeros({4})}}); });
  EXPECT_NE(e.find("one of the fields (x)"), std::string::npos) << e;
  EXPECT_NO_THROW(nefi::check_ground_truth(ap, {{"x", fk::zeros({2, 2})}}));
}

}  // namespace
