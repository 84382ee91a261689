// move_in_place (Module::to's move), all or none: a copy that fails partway
// leaves every tensor's storage, version and gradient as they were; copies
// that all succeed replace each storage once. The copies here are CPU
// clones standing in for a device's (no device needed), and the failure is
// injected at the k-th copy, as memory running out partway would be.
#include "minkowski/nn/move_in_place.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "fk/fk.h"
#include "minkowski/nn/layers.h"
#include "minkowski/nn/norm.h"

namespace minkowski::nn {
namespace {

// What a move must keep or change of one tensor: where its values live, its
// version, and its gradient's storage.
struct Snapshot {
  const void* data;
  uint32_t version;
  const void* grad_data;
  std::vector<double> values;
};

Snapshot snapshot(const fk::Tensor& t) {
  const fk::Tensor g = t.requires_grad() ? t.grad() : fk::Tensor();
  return {t.data_ptr(), t.version(), g.defined() ? g.data_ptr() : nullptr, t.to_vector<double>()};
}

// A network's state with every parameter's gradient defined (one backward).
std::vector<fk::Tensor> state_with_grads(Module& m, Linear& first) {
  const auto x = fk::ones({4, 3}, {fk::DType::F64});
  fk::sum(first.forward_features(x)).backward();
  std::vector<fk::Tensor> out;
  for (const auto& [name, t] : m.state()) out.push_back(t);
  return out;
}

class TwoLayers : public Module {
 public:
  TwoLayers() {
    first = register_module("first", std::make_shared<Linear>(3, 2, true, fk::DType::F64));
    norm = register_module("norm", std::make_shared<BatchNorm>(2, 1e-5, 0.1, fk::DType::F64));
  }
  std::shared_ptr<Linear> first;
  std::shared_ptr<BatchNorm> norm;
};

TEST(NnMoveInPlace, ACopyFailingPartwayLeavesEveryTensorWhereItWas) {
  TwoLayers m;
  const std::vector<fk::Tensor> tensors = state_with_grads(m, *m.first);
  ASSERT_GE(tensors.size(), 4u);
  std::vector<Snapshot> before;
  for (const auto& t : tensors) before.push_back(snapshot(t));
  // Every tensor and gradient is copied (none is on cuda:0); each run fails
  // at its k-th copy, after k - 1 succeeded, up to the last.
  int copies = 0;
  for (const auto& b : before) copies += b.grad_data != nullptr ? 2 : 1;
  for (int fail_at = 1; fail_at <= copies; ++fail_at) {
    int calls = 0;
    const CopyOnDevice failing = [&](const fk::Tensor& t, fk::Device) {
      if (++calls == fail_at)
        throw fk::Error("injected: out of memory at copy " + std::to_string(fail_at));
      return t.detach().clone();
    };
    EXPECT_THROW(move_in_place(tensors, fk::cuda_device(0), failing), fk::Error) << fail_at;
    for (size_t i = 0; i < tensors.size(); ++i) {
      const Snapshot now = snapshot(tensors[i]);
      EXPECT_EQ(now.data, before[i].data) << "tensor " << i << ", failing at " << fail_at;
      EXPECT_EQ(now.version, before[i].version) << "tensor " << i << ", failing at " << fail_at;
      EXPECT_EQ(now.grad_data, before[i].grad_data) << "tensor " << i << ", failing at " << fail_at;
      EXPECT_EQ(now.values, before[i].values) << "tensor " << i << ", failing at " << fail_at;
    }
  }
}

TEST(NnMoveInPlace, CopiesThatAllSucceedReplaceEveryStorageOnce) {
  TwoLayers m;
  std::vector<fk::Tensor> tensors = state_with_grads(m, *m.first);
  tensors.push_back(tensors.front());  // listed twice: moved once
  std::vector<Snapshot> before;
  for (const auto& t : tensors) before.push_back(snapshot(t));
  int calls = 0;
  const CopyOnDevice counting = [&](const fk::Tensor& t, fk::Device) {
    ++calls;
    return t.detach().clone();
  };
  move_in_place(tensors, fk::cuda_device(0), counting);
  int grads = 0;
  for (size_t i = 0; i + 1 < tensors.size(); ++i) {
    const Snapshot now = snapshot(tensors[i]);
    EXPECT_NE(now.data, before[i].data) << i;
    EXPECT_EQ(now.version, before[i].version + 1) << i;
    EXPECT_EQ(now.values, before[i].values) << i;
    if (before[i].grad_data == nullptr) continue;
    ++grads;
    EXPECT_NE(now.grad_data, before[i].grad_data) << i;
  }
  EXPECT_EQ(calls, static_cast<int>(tensors.size()) - 1 + grads);
  EXPECT_TRUE(tensors.front().requires_grad());
}

TEST(NnMoveInPlace, ARefusedModuleMoveLeavesEveryStorageAndGradient) {
  // No machine has 64 CUDA devices; a CPU-only build has none.
  TwoLayers m;
  const std::vector<fk::Tensor> tensors = state_with_grads(m, *m.first);
  std::vector<Snapshot> before;
  for (const auto& t : tensors) before.push_back(snapshot(t));
  EXPECT_THROW(m.to(fk::cuda_device(63)), fk::Error);
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Snapshot now = snapshot(tensors[i]);
    EXPECT_EQ(now.data, before[i].data) << i;
    EXPECT_EQ(now.version, before[i].version) << i;
    EXPECT_EQ(now.grad_data, before[i].grad_data) << i;
    EXPECT_TRUE(tensors[i].device().is_cpu()) << i;
  }
}

}  // namespace
}  // namespace minkowski::nn
