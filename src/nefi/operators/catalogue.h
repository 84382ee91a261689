#pragma once
// The operator catalogue `nefi list operators` prints: each inversion
// operator's kind() with what a user choosing or batching one needs to know
// (how its gradient is formed, whether batch_invert takes it, its
// homogeneity, whether it trains on a CUDA device) and the instances built on
// it. The table is written by hand; a test builds every instance's problem
// and checks that its operator's kind(), batchable(), homogeneity and device
// refusal agree with the row that names it.
#include <string>
#include <vector>

namespace nefi {

struct OperatorInfo {
  std::string kind;         // Operator::kind()
  std::string summary;      // the physics, in one line
  std::string gradient;     // how its vector-Jacobian product is formed
  std::string batchable;    // "yes", "no", or the condition under which it is
  std::string homogeneity;  // p with F(c x) = c^p F(x), or "-" when none
  std::vector<std::string> instances;
  // "yes", "no" (host-only: a device solve refuses it up front,
  // device_solve_refusal), or the condition under which it runs on a device.
  std::string device;
};

const std::vector<OperatorInfo>& operator_catalogue();

}  // namespace nefi
