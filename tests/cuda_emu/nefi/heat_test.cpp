// heat.cu's sweeps on the emulated device (emulated_device.h), its
// cooperative launch included: k sweeps in one launch with grid syncs
// between them must give the bits of k one-sweep launches (kernels.h says
// both paths share each cell's arithmetic), when the grid covers the cells
// and when its blocks stride over them; the Chebyshev weights from the
// device's row-sum bound must be heat_cells.h's from the host's maximum.
// Both thread (and block) orders.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "cuda_emu/emulated_device.h"
#include "nefi/cuda/heat_cells.h"
#include "nefi/cuda/kernels.h"

// The emulated launchers this file runs: kernels.h's, in ::emu (a signature
// that drifts from its definition fails to link).
namespace nefi::cuda::emu {
template <typename T>
void launch_chebyshev_weights(const T* row_sums, int64_t n, T* omega, int k, void* stream);
template <typename T>
void launch_face_sweep(const T* in, T* out, const T* c, const T* faces, Grid g, const T* omega,
                       int j, bool lerp, void* stream);
template <typename T>
void launch_fused_sweeps(T* buf0, T* buf1, int cur, const T* c, const T* faces, Grid g,
                         const T* omega, int k, int lerp_from, void* stream);
}  // namespace nefi::cuda::emu

namespace nc = nefi::cuda;

namespace {

template <typename T>
std::vector<T> uniform(size_t n, double lo, double hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<T> v(n);
  for (T& x : v) x = static_cast<T>(u(rng));
  return v;
}

template <typename T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

// k sweeps from (bufs[cur], bufs[1 - cur]) fused in one cooperative launch
// against k launches of one sweep each, on emulated device `device` with
// `sms` SMs (the fused grid is at most one block of 512 threads per SM; the
// grid is remembered per device).
template <typename T>
void check_fused(nc::Grid g, int k, int lerp_from, int cur, int device, int sms) {
  const size_t n = static_cast<size_t>(g.numel());
  // Faces scaled so the iteration contracts, as build_system's do.
  const std::vector<T> faces = uniform<T>(3 * n, 0.0, 1.0 / 7, 1), c = uniform<T>(n, -1, 1, 2);
  const std::vector<T> omega = uniform<T>(static_cast<size_t>(k), 0.8, 1.9, 3);
  const std::vector<T> b0 = uniform<T>(n, -1, 1, 4), b1 = uniform<T>(n, -1, 1, 5);
  fkemu::set_device(device, sms);
  for (fkemu::Order order : {fkemu::Order::kAscending, fkemu::Order::kDescending}) {
    fkemu::set_order(order);
    std::vector<T> want[2] = {b0, b1};
    for (int j = 0; j < k; ++j) {
      const int in = nc::sweep_input(cur, j);
      nc::emu::launch_face_sweep<T>(want[in].data(), want[1 - in].data(), c.data(), faces.data(), g,
                                    omega.data(), j, j >= lerp_from, nullptr);
    }
    std::vector<T> got0 = b0, got1 = b1;
    nc::emu::launch_fused_sweeps<T>(got0.data(), got1.data(), cur, c.data(), faces.data(), g,
                                    omega.data(), k, lerp_from, nullptr);
    EXPECT_TRUE(same_bits(got0, want[0]) && same_bits(got1, want[1]))
        << g.nx << " x " << g.ny << " x " << g.nz << ", k " << k << ", lerp from " << lerp_from
        << ", cur " << cur << ", " << sms << " SMs, order "
        << (order == fkemu::Order::kAscending ? "ascending" : "descending");
  }
  fkemu::set_order(fkemu::Order::kAscending);
  fkemu::set_device(0);
}

TEST(EmulatedHeat, FusedSweepsGiveTheOneSweepLaunchesBits) {
  // 9 x 7 x 5 = 315 cells: one block; Jacobi only, then Chebyshev from sweep 2.
  check_fused<double>({9, 7, 5}, 4, 4, 0, 0, 132);
  check_fused<double>({9, 7, 5}, 5, 2, 1, 0, 132);
  check_fused<float>({9, 7, 5}, 5, 0, 0, 0, 132);
}

TEST(EmulatedHeat, FusedSweepsWhereTheBlocksStrideOverTheCells) {
  // 13 x 11 x 8 = 1144 cells: three blocks of 512 with 132 SMs; one block
  // striding three times with one SM, two blocks striding with two.
  check_fused<double>({13, 11, 8}, 4, 1, 0, 0, 132);
  check_fused<double>({13, 11, 8}, 4, 1, 1, 1, 1);
  check_fused<float>({13, 11, 8}, 3, 3, 0, 2, 2);
}

TEST(EmulatedHeat, ChebyshevWeightsFromTheDevicesBound) {
  for (int64_t n : {1, 511, 512, 1300}) {
    std::vector<double> row_sums = uniform<double>(static_cast<size_t>(n), 0.1, 0.9, 7);
    row_sums[static_cast<size_t>(n / 2)] = 0.97;  // the maximum, away from the ends
    std::vector<double> want(9), got(9, -1.0);
    nc::chebyshev_weights_from(*std::max_element(row_sums.begin(), row_sums.end()), want.data(), 9);
    for (fkemu::Order order : {fkemu::Order::kAscending, fkemu::Order::kDescending}) {
      fkemu::set_order(order);
      nc::emu::launch_chebyshev_weights<double>(row_sums.data(), n, got.data(), 9, nullptr);
      EXPECT_TRUE(same_bits(got, want)) << n << " row sums";
    }
    fkemu::set_order(fkemu::Order::kAscending);
  }
}

}  // namespace
