// The operator catalogue `nefi list operators` prints agrees with the
// operators the instances really build: each instance's smoke problem has an
// operator whose kind() names a row listing that instance, with the row's
// batchability, homogeneity and device support (a "no" row is refused by a
// device solve before its first step, naming the operator; a "yes" row is not).
#include "nefi/operators/catalogue.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <set>

#include "fk/device.h"
#include "fk/factory.h"
#include "fk/thread_count.h"
#include "nefi/instances/instance.h"
#include "nefi/io/run_config.h"
#include "nefi/operators/advection_diffusion.h"
#include "nefi/operators/composite.h"
#include "nefi/operators/intensity.h"
#include "nefi/operators/pointwise.h"
#include "nefi/operators/sampling.h"
#include "nefi/test_files.h"

namespace {

const nefi::OperatorInfo* row_of(const std::string& kind) {
  for (const auto& o : nefi::operator_catalogue())
    if (o.kind == kind) return &o;
  return nullptr;
}

// The row's batchability, homogeneity and device support hold for `op`.
void expect_row_agrees(const nefi::Operator& op, const nefi::OperatorInfo& row,
                       const std::string& who) {
  if (row.batchable == "yes") {
    EXPECT_TRUE(op.batchable()) << row.kind;
  } else if (row.batchable == "no") {
    EXPECT_FALSE(op.batchable()) << row.kind;
  }
  const auto h = op.homogeneity();
  if (row.homogeneity == "-") {
    EXPECT_FALSE(h.has_value()) << row.kind << " declares homogeneity " << *h;
  } else if (std::isdigit(static_cast<unsigned char>(row.homogeneity[0]))) {  // else a rule
    ASSERT_TRUE(h.has_value()) << row.kind << " declares no homogeneity";
    char p[32];
    std::snprintf(p, sizeof p, "%g", *h);
    EXPECT_NE(row.homogeneity.find(p), std::string::npos)
        << row.kind << ": " << *h << " vs " << row.homogeneity;
  }
  const std::string refusal = nefi::device_solve_refusal(op, fk::cuda_device(0));
  if (row.device == "yes") {
    EXPECT_EQ(refusal, "") << who;
  } else if (row.device == "no") {
    EXPECT_NE(refusal.find("operator " + row.kind + " on cuda:0"), std::string::npos)
        << who << ": " << refusal;
  }
}

TEST(NefiOperatorCatalogue, RowsNameRegisteredInstancesOnce) {
  std::set<std::string> listed;
  std::set<std::string> kinds;
  for (const auto& o : nefi::operator_catalogue()) {
    EXPECT_TRUE(kinds.insert(o.kind).second) << o.kind << " twice";
    for (const auto& i : o.instances) {
      EXPECT_TRUE(listed.insert(i).second) << i << " under two operators";
      EXPECT_NO_THROW((void)nefi::find_instance(i)) << i;
    }
  }
  for (const auto& i : nefi::all_instances())
    EXPECT_TRUE(listed.count(i->name())) << i->name() << " is in no row";
}

TEST(NefiOperatorCatalogue, AgreesWithEveryInstancesOperator) {
  const fk::test::ThreadCount one_thread(1);
  for (const auto& inst : nefi::all_instances()) {
    const nefi::RunConfig c =
        nefi::load_run_config_file(nefi::test::config_path(inst->name() + "_smoke.yaml"));
    const auto m = inst->methods();
    const std::string method =
        std::find(m.begin(), m.end(), "neural") != m.end() ? "neural" : m.front();
    const auto s = inst->setup(c.config, method, 0);
    ASSERT_TRUE(s.has_value()) << inst->name() << " builds no problem for " << method;
    const nefi::Operator& op = *s->problem.op;
    const nefi::OperatorInfo* row = row_of(op.kind());
    ASSERT_NE(row, nullptr) << inst->name() << ": operator kind '" << op.kind()
                            << "' is not catalogued";
    EXPECT_NE(std::find(row->instances.begin(), row->instances.end(), inst->name()),
              row->instances.end())
        << inst->name() << " is not listed under " << row->kind;
    expect_row_agrees(op, *row, inst->name());
  }
}

// The operators no instance builds (the zoo from_forward and nefi fit
// offer) agree with their rows too.
TEST(NefiOperatorCatalogue, AgreesWithTheOperatorZoo) {
  const fk::Tensor mask = fk::full({6, 4}, 1.0, {fk::DType::F64});
  auto path = std::make_shared<nefi::AxisIntegralOperator>(fk::Dims{6, 4}, 0);
  const std::vector<nefi::OperatorPtr> zoo{
      std::make_shared<nefi::IdentityOperator>(),
      std::make_shared<nefi::PointwiseOperator>(mask),
      std::make_shared<nefi::SaturationOperator>(1.0),
      std::make_shared<nefi::SamplingOperator>(mask),
      std::make_shared<nefi::FourierSamplingOperator>(mask),
      std::make_shared<nefi::DownsampleOperator>(std::vector<int64_t>{2, 2}),
      std::make_shared<nefi::PhaseRetrievalOperator>(2),
      path,
      std::make_shared<nefi::BeerLambertOperator>(path),
      std::make_shared<nefi::StackOperator>(std::vector<nefi::OperatorPtr>{path, path},
                                            fk::Dims{6, 4}),
      std::make_shared<nefi::AdvectionDiffusionOperator>(nefi::Domain({6, 4}),
                                                         nefi::AdvectionDiffusionOptions{})};
  for (const auto& op : zoo) {
    const nefi::OperatorInfo* row = row_of(op->kind());
    ASSERT_NE(row, nullptr) << op->kind() << " is not catalogued";
    expect_row_agrees(*op, *row, op->kind());
  }
}

// advection_diffusion runs on a device whatever its unknown (the
// diffusivity's steps are not captured as a graph, and say why).
TEST(NefiOperatorCatalogue, AdvectionDiffusionRunsOnADeviceForEveryUnknown) {
  EXPECT_EQ(row_of("advection_diffusion")->device, "yes");
  const nefi::Domain domain({6, 4});
  for (auto unknown : {nefi::TransportUnknown::kInitial, nefi::TransportUnknown::kSource,
                       nefi::TransportUnknown::kDiffusivity, nefi::TransportUnknown::kVelocity}) {
    nefi::AdvectionDiffusionOptions o;
    o.unknown = unknown;
    const bool coefficient = unknown == nefi::TransportUnknown::kDiffusivity ||
                             unknown == nefi::TransportUnknown::kVelocity;
    if (coefficient) o.release = fk::ones({6, 4}, {fk::DType::F64});
    const nefi::AdvectionDiffusionOperator op(domain, o);
    EXPECT_EQ(nefi::device_solve_refusal(op, fk::cuda_device(0)), "");
    EXPECT_EQ(op.graph_capturable(), !coefficient);
    if (coefficient) {
      EXPECT_NE(op.not_capturable_reason().find("back to the host"), std::string::npos)
          << op.not_capturable_reason();
    }
  }
}

// The elliptic rows' device condition, per instance: darcy_flow (cg,
// jacobi, ift) solves on a device; dot3d solves there with its default
// multigrid preconditioner (the device V-cycle) and with precond jacobi,
// noting no substitution for either; eit
// with its default linear_solver banded is refused naming it, with the CG
// (its flux trace's term included) it is not.
TEST(NefiOperatorCatalogue, EllipticDeviceConditionHoldsPerInstance) {
  const fk::test::ThreadCount one_thread(1);
  auto refusal = [](const std::string& name, const std::string& key, const std::string& value) {
    nefi::RunConfig c = nefi::load_run_config_file(nefi::test::config_path(name + "_smoke.yaml"));
    if (!key.empty()) c.config.set(key, value);
    const auto s = nefi::find_instance(name)->setup(c.config, "neural", 0);
    EXPECT_TRUE(s.has_value()) << name;
    return s ? nefi::device_solve_refusal(*s->problem.op, fk::cuda_device(0)) : std::string("?");
  };
  EXPECT_EQ(refusal("darcy_flow", "", ""), "");
  EXPECT_EQ(refusal("dot3d", "", ""), "");
  EXPECT_EQ(refusal("dot3d", "precond", "jacobi"), "");
  auto note = [](const std::string& precond) {
    nefi::RunConfig c = nefi::load_run_config_file(nefi::test::config_path("dot3d_smoke.yaml"));
    if (!precond.empty()) c.config.set("precond", precond);
    const auto s = nefi::find_instance("dot3d")->setup(c.config, "neural", 0);
    EXPECT_TRUE(s.has_value());
    return s ? s->problem.op->device_note() : std::string("?");
  };
  EXPECT_EQ(note(""), "");
  EXPECT_EQ(note("jacobi"), "");
  EXPECT_NE(refusal("eit", "", "").find("operator elliptic on cuda:0: linear_solver banded"),
            std::string::npos);
  EXPECT_EQ(refusal("eit", "linear_solver", "cg"), "");
  nefi::RunConfig flux = nefi::load_run_config_file(nefi::test::config_path("eit_smoke.yaml"));
  flux.config.set("linear_solver", "cg");
  flux.config.set("trace", "flux");
  const auto s = nefi::find_instance("eit")->setup(flux.config, "neural", 0);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(nefi::device_solve_refusal(*s->problem.op, fk::cuda_device(0)), "");
  EXPECT_TRUE(s->problem.op->graph_capturable());
}

// thermal_tomography's pinn_soft method (not the instance's default, so not
// met above): its operator's row says it runs on a device, and a device solve
// does not refuse it although it has trainable weights (they follow the
// field there); its steps are eager (fresh collocation points at each).
TEST(NefiOperatorCatalogue, PinnSoftSurrogateRunsOnADevice) {
  const fk::test::ThreadCount one_thread(1);
  const nefi::RunConfig c =
      nefi::load_run_config_file(nefi::test::config_path("thermal_tomography_smoke.yaml"));
  const auto s = nefi::find_instance("thermal_tomography")->setup(c.config, "pinn_soft", 0);
  ASSERT_TRUE(s.has_value());
  const nefi::Operator& op = *s->problem.op;
  const nefi::OperatorInfo* row = row_of(op.kind());
  ASSERT_NE(row, nullptr) << op.kind() << " is not catalogued";
  EXPECT_EQ(row->device, "yes");
  EXPECT_FALSE(op.parameters().empty());
  EXPECT_TRUE(op.parameters_follow_device());
  EXPECT_EQ(nefi::device_solve_refusal(op, fk::cuda_device(0)), "");
  EXPECT_EQ(row->batchable, "no");
  EXPECT_FALSE(op.batchable());
  EXPECT_EQ(row->homogeneity, "-");
  EXPECT_FALSE(op.homogeneity().has_value());
  EXPECT_FALSE(op.graph_capturable());
}

}  // namespace
