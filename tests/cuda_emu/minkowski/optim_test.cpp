// optim.cu's kernels run on the emulated device (emulated_device.h): a few
// SGD and Adam steps on f32 and f64 parameters against nn::Sgd and nn::Adam
// stepping the same parameters on the CPU. optim_device.h promises the host
// step's values bit for bit, so parameters and f64 moment buffers are
// compared bit for bit, in both thread orders, at sizes that leave the last
// block partial.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cuda_emu/emulated_device.h"
#include "cuda_emu/emulated_test_util.h"
#include "fk/factory.h"
#include "fk/tensor.h"
#include "minkowski/cuda/optim_kernels.h"
#include "minkowski/nn/optim.h"

// The emulated launchers this file runs: optim_kernels.h's, in ::emu (a
// signature that drifts from its definition fails to link).
namespace minkowski::cuda::emu {
template <typename T>
void launch_sgd_update(T* p, const T* g, double* v, int64_t n, double lr, double momentum,
                       double weight_decay, bool nesterov, void* stream);
template <typename T>
void launch_adam_update(const minkowski::cuda::AdamList<T>& list,
                        const minkowski::cuda::AdamScalars& s, void* stream);
}  // namespace minkowski::cuda::emu

namespace mc = minkowski::cuda;
namespace nn = minkowski::nn;

using fkemu_test::expect_same_bits;
using fkemu_test::in_both_orders;
using fkemu_test::order_name;
using fkemu_test::random_values;

namespace {

constexpr int kSteps = 3;
// The starting parameter and one gradient per step.
template <typename T>
struct Run {
  std::vector<T> start;
  std::vector<std::vector<T>> grads;
};
template <typename T>
Run<T> random_run(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  Run<T> r{random_values<T>(n, -2, 2, rng), {}};
  for (int s = 0; s < kSteps; ++s) r.grads.push_back(random_values<T>(n, -2, 2, rng));
  return r;
}

// Steps `opt` (over the one parameter p) through the run's gradients on the CPU.
template <typename T>
void step_on_cpu(nn::Optimizer& opt, fk::Tensor& p, const Run<T>& r) {
  for (const auto& g : r.grads) {
    p.set_grad(fk::from_vector(g, fk::Dims{static_cast<int64_t>(g.size())}));
    opt.step();
  }
}

fk::Tensor cpu_param(const auto& start) {
  return fk::from_vector(start, fk::Dims{static_cast<int64_t>(start.size())})
      .set_requires_grad(true);
}

// The CPU optimizer's buffer `name` (of its one parameter).
std::vector<double> buffer_of(nn::Optimizer& opt, const std::string& name) {
  for (const auto& [key, t] : opt.state())
    if (key == "0." + name) return t.to_vector<double>();
  ADD_FAILURE() << "no buffer " << name;
  return {};
}

template <typename T>
void check_sgd(const nn::SgdOptions& o, int64_t n, uint32_t seed) {
  const Run<T> r = random_run<T>(n, seed);
  fk::Tensor p = cpu_param(r.start);
  nn::Sgd sgd({p}, o);
  step_on_cpu(sgd, p, r);
  const std::string what = "sgd n " + std::to_string(n) + " momentum " +
                           std::to_string(o.momentum) + (o.nesterov ? " nesterov" : "");
  in_both_orders([&](fkemu::Order order) {
    std::vector<T> got = r.start;
    std::vector<double> v(static_cast<size_t>(n), 0.0);
    for (const auto& g : r.grads)
      mc::emu::launch_sgd_update<T>(got.data(), g.data(), o.momentum > 0 ? v.data() : nullptr, n,
                                    o.lr, o.momentum, o.weight_decay, o.nesterov, nullptr);
    expect_same_bits(got, p.to_vector<T>(), what + " (" + order_name(order) + ")");
    if (o.momentum > 0)
      expect_same_bits(v, buffer_of(sgd, "momentum"), what + " buffer (" + order_name(order) + ")");
  });
}

template <typename T>
void check_adam(const nn::AdamOptions& o, int64_t n, uint32_t seed) {
  const Run<T> r = random_run<T>(n, seed);
  fk::Tensor p = cpu_param(r.start);
  nn::Adam adam({p}, o);
  step_on_cpu(adam, p, r);
  const std::string what = "adam n " + std::to_string(n) + (o.decoupled ? " decoupled" : "") +
                           " decay " + std::to_string(o.weight_decay);
  in_both_orders([&](fkemu::Order order) {
    std::vector<T> got = r.start;
    std::vector<double> m(static_cast<size_t>(n), 0.0), v(static_cast<size_t>(n), 0.0);
    for (int t = 1; t <= kSteps; ++t) {
      // The bias corrections as nn::Adam forms them on the host.
      const double bias1 = 1.0 - std::pow(o.beta1, static_cast<double>(t));
      const double bias2 = 1.0 - std::pow(o.beta2, static_cast<double>(t));
      mc::AdamList<T> list;
      list.p[0] = got.data();
      list.g[0] = r.grads[static_cast<size_t>(t - 1)].data();
      list.m[0] = m.data();
      list.v[0] = v.data();
      list.n[0] = n;
      list.count = 1;
      mc::emu::launch_adam_update<T>(
          list, {o.lr, o.beta1, o.beta2, o.eps, o.weight_decay, bias1, bias2, o.decoupled},
          nullptr);
    }
    expect_same_bits(got, p.to_vector<T>(), what + " (" + order_name(order) + ")");
    expect_same_bits(m, buffer_of(adam, "exp_avg"), what + " exp_avg (" + order_name(order) + ")");
    expect_same_bits(v, buffer_of(adam, "exp_avg_sq"),
                     what + " exp_avg_sq (" + order_name(order) + ")");
  });
}

TEST(EmulatedOptim, SgdStepsAreTheCpuStepsBitForBit) {
  const nn::SgdOptions plain{0.1, 0.0, 0.0, false}, decayed{0.05, 0.0, 0.01, false};
  const nn::SgdOptions momentum{0.05, 0.9, 0.01, false}, nesterov{0.05, 0.9, 0.01, true};
  for (const auto& o : {plain, decayed, momentum, nesterov}) {
    check_sgd<float>(o, 300, 1);  // one full block of 256, one partial
    check_sgd<double>(o, 300, 2);
  }
  check_sgd<float>(momentum, 1, 3);
  check_sgd<double>(nesterov, 513, 4);
}

TEST(EmulatedOptim, AdamAndAdamWStepsAreTheCpuStepsBitForBit) {
  const nn::AdamOptions adam{1e-2, 0.9, 0.999, 1e-8, 0.0, false};
  const nn::AdamOptions coupled{1e-2, 0.8, 0.99, 1e-6, 0.1, false};
  const nn::AdamOptions adamw{1e-2, 0.8, 0.99, 1e-6, 0.1, true};
  for (const auto& o : {adam, coupled, adamw}) {
    check_adam<float>(o, 300, 5);
    check_adam<double>(o, 300, 6);
  }
  check_adam<double>(adamw, 1, 7);
  check_adam<float>(coupled, 513, 8);
}

}  // namespace
