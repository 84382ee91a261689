// transport.cu's advection-diffusion kernels run on the emulated device
// (emulated_device.h): one Euler step of a factor against
// transport::euler_step (operators/transport_steps.cpp) with StepWeights'
// per-substep weights, each batch row alone (a one-row block there), with and
// without a source and a per-substep part; the observation gather, its
// transpose and the source's gradient sum against plain loops. Bit for bit
// (transport_cells.h: separately rounded products and sums in the CPU's
// order), in both thread orders.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "cuda_emu/emulated_device.h"
#include "cuda_emu/emulated_test_util.h"
#include "nefi/cuda/transport_kernels.h"
#include "nefi/operators/sparse_rows.h"
#include "nefi/operators/transport_steps.h"

// The emulated launchers this file runs: transport_kernels.h's, in ::emu (a
// signature that drifts from its definition fails to link).
namespace nefi::cuda::emu {
void launch_transport_step(const TransportRows& m, int64_t batch, int64_t cells, double tau,
                           const double* c, const double* s, double* out, void* stream);
void launch_transport_observe(int64_t batch, int64_t cells, int64_t observed, int64_t K, int64_t k,
                              const int64_t* sensors, const double* c, double* y, void* stream);
void launch_transport_inject(int64_t batch, int64_t cells, int64_t observed, int64_t K, int64_t k,
                             const int64_t* sensors, const double* g, double* lam, void* stream);
void launch_transport_accumulate(int64_t n, double tau, const double* v, double* acc, void* stream);
}  // namespace nefi::cuda::emu

namespace nc = nefi::cuda;
using fkemu_test::expect_same_bits;
using fkemu_test::in_both_orders;
using fkemu_test::random_values;

namespace {

size_t at(int64_t i) {
  return static_cast<size_t>(i);
}

// A square stencil-like matrix: 0 to 5 entries a row (some rows empty),
// columns anywhere, weights of both signs.
nefi::SparseRows random_rows(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  nefi::SparseRows m;
  m.n_cols = n;
  for (int64_t r = 0; r < n; ++r) {
    const int entries = rng() % 9 == 0 ? 0 : static_cast<int>(rng() % 5) + 1;
    for (int e = 0; e < entries; ++e) {
      m.col.push_back(static_cast<int32_t>(rng() % n));
      m.weight.push_back(u(rng));
    }
    m.row_start.push_back(static_cast<int64_t>(m.col.size()));
  }
  return m;
}

void check_step(int64_t batch, int64_t n, bool per_tau, bool source) {
  SCOPED_TRACE(std::to_string(batch) + " rows of " + std::to_string(n) + (per_tau ? ", T" : "") +
               (source ? ", source" : ""));
  const nefi::SparseRows m = random_rows(n, static_cast<uint32_t>(n + batch));
  std::vector<double> t;
  if (per_tau) t = random_values<double>(std::ssize(m.weight), 3);
  const double tau = 0.0371;
  const std::vector<double> c = random_values<double>(batch * n, 1);
  const std::vector<double> s =
      source ? random_values<double>(batch * n, 2) : std::vector<double>();
  // The CPU: StepWeights' weights, then each row alone through euler_step.
  std::vector<double> w = m.weight;
  for (size_t e = 0; e < w.size(); ++e)
    if (per_tau) w[e] = m.weight[e] + tau * t[e];
  std::vector<double> want(at(batch * n));
  for (int64_t b = 0; b < batch; ++b)
    nefi::transport::euler_step(m, w.data(), tau, 1, c.data() + b * n,
                                source ? s.data() + b * n : nullptr, want.data() + b * n);
  const nc::TransportRows rows{m.row_start.data(), m.col.data(), m.weight.data(),
                               per_tau ? t.data() : nullptr};
  in_both_orders([&](fkemu::Order) {
    std::vector<double> got(want.size(), -7.0);
    nc::emu::launch_transport_step(rows, batch, n, tau, c.data(), source ? s.data() : nullptr,
                                   got.data(), nullptr);
    expect_same_bits(got, want, "step");
  });
}

TEST(EmulatedTransport, StepEqualsTheCpuEulerStep) {
  check_step(1, 300, false, false);  // two blocks, the second partial
  check_step(3, 70, true, false);
  check_step(2, 90, false, true);
  check_step(4, 41, true, true);
}

TEST(EmulatedTransport, ObserveInjectAndAccumulateEqualTheLoops) {
  const int64_t batch = 3, n = 50, K = 4, k = 2;
  const std::vector<int64_t> sensors{0, 9, 17, 33, 49};
  const std::vector<double> c = random_values<double>(batch * n, 5);
  for (bool all : {true, false}) {
    SCOPED_TRACE(all ? "every cell" : "sensors");
    const int64_t m = all ? n : std::ssize(sensors);
    auto cell = [&](int64_t q) { return all ? q : sensors[at(q)]; };
    const std::vector<double> g = random_values<double>(batch * K * m, 6);
    std::vector<double> want_y(at(batch * K * m), -7.0), want_lam = c;
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t q = 0; q < m; ++q) {
        want_y[at((b * K + k) * m + q)] = c[at(b * n + cell(q))];
        want_lam[at(b * n + cell(q))] += g[at((b * K + k) * m + q)];
      }
    in_both_orders([&](fkemu::Order) {
      std::vector<double> y(want_y.size(), -7.0), lam = c;
      const int64_t* s = all ? nullptr : sensors.data();
      nc::emu::launch_transport_observe(batch, n, m, K, k, s, c.data(), y.data(), nullptr);
      expect_same_bits(y, want_y, "observe");
      nc::emu::launch_transport_inject(batch, n, m, K, k, s, g.data(), lam.data(), nullptr);
      expect_same_bits(lam, want_lam, "inject");
    });
  }
  const double tau = 0.013;
  const std::vector<double> v = random_values<double>(n, 7);
  std::vector<double> want = c;
  for (int64_t i = 0; i < n; ++i) want[at(i)] += tau * v[at(i)];
  in_both_orders([&](fkemu::Order) {
    std::vector<double> acc = c;
    nc::emu::launch_transport_accumulate(n, tau, v.data(), acc.data(), nullptr);
    expect_same_bits(std::vector<double>(acc.begin(), acc.begin() + n),
                     std::vector<double>(want.begin(), want.begin() + n), "accumulate");
    expect_same_bits(std::vector<double>(acc.begin() + n, acc.end()),
                     std::vector<double>(c.begin() + n, c.end()), "past n untouched");
  });
}

}  // namespace
