// scattering.cu's kernels run on the emulated device (emulated_device.h):
// the modulation, the unpacking of the scattered field (Born, and Rytov's
// rotation), the conjugation of the data and the demodulation over views,
// against the loops of BornOperator::project and ::adjoint
// (operators/scattering.cpp) around their complex GEMMs, with std::complex
// products as the CPU takes them. Bit for bit on this emulator (a host
// compile, no contraction), f32 and f64, batched, in both thread orders.
#include <gtest/gtest.h>

#include <complex>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "cuda_emu/emulated_device.h"
#include "cuda_emu/emulated_test_util.h"
#include "nefi/cuda/scattering_kernels.h"

// The emulated launchers this file runs: scattering_kernels.h's, in ::emu
// (a signature that drifts from its definition fails to link).
namespace nefi::cuda::emu {
template <typename T>
void launch_scattering_modulate(const ScatteringDims& d, const double* phase, const T* x, double* q,
                                void* stream);
template <typename T>
void launch_scattering_receive(const ScatteringDims& d, const double* u, const double* rotation,
                               T* out, void* stream);
template <typename T>
void launch_scattering_conjugate(const ScatteringDims& d, const T* data, const double* rotation,
                                 double* g, void* stream);
template <typename T>
void launch_scattering_demodulate(const ScatteringDims& d, const double* phase, const double* p,
                                  T* out, void* stream);
}  // namespace nefi::cuda::emu

namespace nc = nefi::cuda;
using c128 = std::complex<double>;
using fkemu_test::expect_same_bits;
using fkemu_test::in_both_orders;
using fkemu_test::random_complex;
using fkemu_test::random_values;

namespace {

constexpr double kPoison = -999.0;

size_t at(int64_t i) {
  return static_cast<size_t>(i);
}

// Interleaved (re, im), the kernels' layout of complex f64.
const double* interleaved(const std::vector<c128>& v) {
  return reinterpret_cast<const double*>(v.data());
}
std::vector<double> parts(const std::vector<c128>& v) {
  std::vector<double> p;
  for (const c128& e : v) p.insert(p.end(), {e.real(), e.imag()});
  return p;
}

template <typename T>
void check_passes(const nc::ScatteringDims& d) {
  SCOPED_TRACE(std::string(d.rytov ? "Rytov " : "Born ") + std::to_string(d.batch) + " x " +
               std::to_string(d.views) + " views x " + std::to_string(d.cells) + " cells x " +
               std::to_string(d.receivers) + " receivers");
  const int64_t B = d.batch, V = d.views, N = d.cells, R = d.receivers;
  const std::vector<c128> phase = random_complex(V * N, 1), rotation = random_complex(V * R, 2);
  const std::vector<c128> u = random_complex(B * V * R, 3), p = random_complex(B * V * N, 4);
  const std::vector<T> chi = random_values<T>(B * N, 5), data = random_values<T>(B * 2 * V * R, 6);

  // BornOperator::project's loops before and after its GEMM.
  std::vector<c128> want_q(at(B * V * N));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t l = 0; l < V; ++l)
      for (int64_t j = 0; j < N; ++j)
        want_q[at((b * V + l) * N + j)] =
            phase[at(l * N + j)] * static_cast<double>(chi[at(b * N + j)]);
  std::vector<T> want_out(at(B * 2 * V * R));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t k = 0; k < V * R; ++k) {
      c128 v = u[at(b * V * R + k)];
      if (d.rytov) v *= rotation[at(k)];
      want_out[at(b * 2 * V * R + k)] = static_cast<T>(v.real());
      want_out[at(b * 2 * V * R + V * R + k)] = static_cast<T>(v.imag());
    }
  // BornOperator::adjoint's.
  std::vector<c128> want_g(at(B * V * R));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t k = 0; k < V * R; ++k) {
      const T* re = data.data() + b * 2 * V * R;
      c128 v(static_cast<double>(re[k]), -static_cast<double>(re[V * R + k]));
      if (d.rytov) v *= rotation[at(k)];
      want_g[at(b * V * R + k)] = v;
    }
  std::vector<double> x(at(B * N), 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t l = 0; l < V; ++l)
      for (int64_t j = 0; j < N; ++j) {
        const c128 a = phase[at(l * N + j)], pl = p[at((b * V + l) * N + j)];
        x[at(b * N + j)] += a.real() * pl.real() - a.imag() * pl.imag();
      }
  const std::vector<T> want_x(x.begin(), x.end());

  in_both_orders([&](fkemu::Order) {
    std::vector<double> q(at(2 * B * V * N), kPoison), g(at(2 * B * V * R), kPoison);
    std::vector<T> out(want_out.size(), T(kPoison)), back(want_x.size(), T(kPoison));
    nc::emu::launch_scattering_modulate<T>(d, interleaved(phase), chi.data(), q.data(), nullptr);
    expect_same_bits(q, parts(want_q), "modulated");
    nc::emu::launch_scattering_receive<T>(d, interleaved(u), interleaved(rotation), out.data(),
                                          nullptr);
    expect_same_bits(out, want_out, "received");
    nc::emu::launch_scattering_conjugate<T>(d, data.data(), interleaved(rotation), g.data(),
                                            nullptr);
    expect_same_bits(g, parts(want_g), "conjugated");
    nc::emu::launch_scattering_demodulate<T>(d, interleaved(phase), interleaved(p), back.data(),
                                             nullptr);
    expect_same_bits(back, want_x, "demodulated");
  });
}

TEST(EmulatedScattering, BornPassesF64) {
  check_passes<double>({2, 3, 50, 45, false});  // 300 modulated cells, 540 received values
}

TEST(EmulatedScattering, RytovPassesF64) {
  check_passes<double>({2, 3, 50, 45, true});
}

TEST(EmulatedScattering, BornAndRytovPassesF32) {
  check_passes<float>({3, 2, 70, 33, false});
  check_passes<float>({1, 5, 17, 61, true});
}

TEST(EmulatedScattering, EmptyPassesWriteNothing) {
  const nc::ScatteringDims none{2, 0, 5, 4, true};
  std::vector<double> q(4, kPoison);
  std::vector<float> out(4, -1.f);
  nc::emu::launch_scattering_modulate<float>(none, nullptr, nullptr, q.data(), nullptr);
  nc::emu::launch_scattering_receive<float>(none, nullptr, nullptr, out.data(), nullptr);
  nc::emu::launch_scattering_conjugate<float>(none, nullptr, nullptr, q.data(), nullptr);
  EXPECT_EQ(q, std::vector<double>(4, kPoison));
  EXPECT_EQ(out, std::vector<float>(4, -1.f));
  // No views but cells: the demodulated sums are empty, 0.
  std::vector<float> x(10, -1.f);
  nc::emu::launch_scattering_demodulate<float>(none, nullptr, nullptr, x.data(), nullptr);
  EXPECT_EQ(x, std::vector<float>(10, 0.f));
}

}  // namespace
