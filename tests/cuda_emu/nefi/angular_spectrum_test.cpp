// angular_spectrum.cu's kernels run on the emulated device
// (emulated_device.h): pad (edge and zero) and crop^T, the transfer-function
// multiply and its conjugate, crop and pad^T, against the loops of
// propagate() in operators/angular_spectrum.cpp (pad^T as that loop's
// scatter, whose per-cell order the kernel's gather documents), with
// std::complex products as the CPU takes them; and the holography
// operator's elementwise steps in f32 and f64. Bit for bit, both thread
// orders, batched grids whose cell counts are not multiples of the block.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "cuda_emu/emulated_device.h"
#include "cuda_emu/emulated_test_util.h"
#include "nefi/cuda/angular_spectrum_kernels.h"

// The emulated launchers this file runs: angular_spectrum_kernels.h's, in
// ::emu (a signature that drifts from its definition fails to link).
namespace nefi::cuda::emu {
void launch_pad_field(const Complex* u, const PadGeometry& g, bool adjoint, Complex* big,
                      void* stream);
void launch_apply_transfer(Complex* big, const Complex* H, const PadGeometry& g, bool conjugate,
                           void* stream);
void launch_crop_field(const Complex* big, const PadGeometry& g, bool adjoint, Complex* out,
                       void* stream);
template <typename T>
void launch_transmission(const T* phi, int64_t n, double amplitude, Complex* t, void* stream);
template <typename T>
void launch_store_plane(const Complex* ud, int64_t batch, int64_t planes, int64_t d, int64_t cells,
                        Complex* u_all, T* intensity, void* stream);
void launch_plane_source(const double* g, const Complex* u_all, int64_t batch, int64_t planes,
                         int64_t d, int64_t cells, Complex* src, void* stream);
void launch_accumulate(Complex* w, const Complex* back, int64_t n, void* stream);
template <typename T>
void launch_phase_gradient(const Complex* t, const Complex* w, int64_t n, T* dphi, void* stream);
}  // namespace nefi::cuda::emu

namespace nc = nefi::cuda;
using c128 = std::complex<double>;
using fkemu_test::expect_same_bits;
using fkemu_test::in_both_orders;
using fkemu_test::random_complex;

namespace {

const c128 kPoison{-999.0, 999.0};

size_t at(int64_t i) {
  return static_cast<size_t>(i);
}

// The real and imaginary parts, for bitwise comparison.
std::vector<double> parts(const std::vector<c128>& f) {
  std::vector<double> p;
  for (const c128& v : f) p.insert(p.end(), {v.real(), v.imag()});
  return p;
}
void expect_same_field(const std::vector<c128>& got, const std::vector<c128>& want,
                       const std::string& what) {
  expect_same_bits(parts(got), parts(want), what);
}

// propagate()'s index maps along an axis: the clamped (edge) or -1 (zero)
// source of padded position p, and the window cell or -1.
int64_t padded_from(int64_t p, int64_t n, int64_t off, bool edge) {
  const int64_t i = p - off;
  if (i >= 0 && i < n) return i;
  return !edge ? -1 : i < 0 ? 0 : n - 1;
}
int64_t window_of(int64_t p, int64_t n, int64_t off) {
  return p - off >= 0 && p - off < n ? p - off : -1;
}

// big = pad(u) (or crop^T(u)), as propagate()'s first loop.
std::vector<c128> pad_loop(const std::vector<c128>& u, const nc::PadGeometry& g, bool adjoint) {
  const int64_t off0 = (g.m0 - g.n0) / 2, off1 = (g.m1 - g.n1) / 2;
  std::vector<c128> big(at(g.batch * g.m0 * g.m1), 0.0);
  for (int64_t b = 0; b < g.batch; ++b)
    for (int64_t p = 0; p < g.m0; ++p)
      for (int64_t q = 0; q < g.m1; ++q) {
        const int64_t i = adjoint ? window_of(p, g.n0, off0) : padded_from(p, g.n0, off0, g.edge);
        const int64_t j = adjoint ? window_of(q, g.n1, off1) : padded_from(q, g.n1, off1, g.edge);
        if (i >= 0 && j >= 0) big[at((b * g.m0 + p) * g.m1 + q)] = u[at((b * g.n0 + i) * g.n1 + j)];
      }
  return big;
}

// out = crop(big) (or pad^T(big)), as propagate()'s last loop: a scatter.
std::vector<c128> crop_loop(const std::vector<c128>& big, const nc::PadGeometry& g, bool adjoint) {
  const int64_t off0 = (g.m0 - g.n0) / 2, off1 = (g.m1 - g.n1) / 2;
  std::vector<c128> out(at(g.batch * g.n0 * g.n1), 0.0);
  for (int64_t b = 0; b < g.batch; ++b)
    for (int64_t p = 0; p < g.m0; ++p)
      for (int64_t q = 0; q < g.m1; ++q) {
        const int64_t i = adjoint ? padded_from(p, g.n0, off0, g.edge) : window_of(p, g.n0, off0);
        const int64_t j = adjoint ? padded_from(q, g.n1, off1, g.edge) : window_of(q, g.n1, off1);
        if (i >= 0 && j >= 0)
          out[at((b * g.n0 + i) * g.n1 + j)] += big[at((b * g.m0 + p) * g.m1 + q)];
      }
  return out;
}

std::vector<nc::PadGeometry> geometries() {
  // Odd and even margins, a one-cell field, and no padding at all.
  return {{2, 5, 7, 12, 16, true},
          {2, 5, 7, 12, 16, false},
          {3, 1, 1, 4, 3, true},
          {1, 9, 30, 9, 30, true},
          {1, 6, 6, 13, 13, false}};
}

std::string name_of(const nc::PadGeometry& g) {
  return std::to_string(g.batch) + " x " + std::to_string(g.n0) + " x " + std::to_string(g.n1) +
         " in " + std::to_string(g.m0) + " x " + std::to_string(g.m1) +
         (g.edge ? " edge" : " zero");
}

TEST(EmulatedAngularSpectrum, PadAndCropFollowPropagatesLoops) {
  for (const nc::PadGeometry& g : geometries()) {
    SCOPED_TRACE(name_of(g));
    const std::vector<c128> u = random_complex(g.batch * g.n0 * g.n1, 1);
    const std::vector<c128> big = random_complex(g.batch * g.m0 * g.m1, 2);
    for (bool adjoint : {false, true}) {
      SCOPED_TRACE(adjoint ? "adjoint" : "forward");
      const std::vector<c128> want_big = pad_loop(u, g, adjoint);
      const std::vector<c128> want_out = crop_loop(big, g, adjoint);
      in_both_orders([&](fkemu::Order) {
        std::vector<c128> got_big(want_big.size(), kPoison), got_out(want_out.size(), kPoison);
        nc::emu::launch_pad_field(u.data(), g, adjoint, got_big.data(), nullptr);
        expect_same_field(got_big, want_big, "padded");
        nc::emu::launch_crop_field(big.data(), g, adjoint, got_out.data(), nullptr);
        expect_same_field(got_out, want_out, "cropped");
      });
    }
  }
}

TEST(EmulatedAngularSpectrum, PadTransposeIsPadsAdjoint) {
  // <pad u, v> = <u, pad^T v> from the kernels' results (edge padding).
  const nc::PadGeometry g{2, 5, 7, 12, 16, true};
  const std::vector<c128> u = random_complex(g.batch * g.n0 * g.n1, 3);
  const std::vector<c128> v = random_complex(g.batch * g.m0 * g.m1, 4);
  std::vector<c128> pu(v.size()), ptv(u.size());
  nc::emu::launch_pad_field(u.data(), g, false, pu.data(), nullptr);
  nc::emu::launch_crop_field(v.data(), g, true, ptv.data(), nullptr);
  c128 lhs = 0, rhs = 0;
  for (size_t k = 0; k < v.size(); ++k) lhs += pu[k] * std::conj(v[k]);
  for (size_t k = 0; k < u.size(); ++k) rhs += u[k] * std::conj(ptv[k]);
  EXPECT_NEAR(lhs.real(), rhs.real(), 1e-13 * std::abs(lhs));
  EXPECT_NEAR(lhs.imag(), rhs.imag(), 1e-13 * std::abs(lhs));
}

TEST(EmulatedAngularSpectrum, TransferMultipliesEveryBatchRow) {
  const nc::PadGeometry g{3, 5, 7, 12, 16, true};  // 576 cells: three blocks
  const std::vector<c128> big = random_complex(g.batch * g.m0 * g.m1, 5);
  const std::vector<c128> H = random_complex(g.m0 * g.m1, 6);
  for (bool conjugate : {false, true}) {
    std::vector<c128> want(big);
    for (int64_t k = 0; k < g.batch * g.m0 * g.m1; ++k)
      want[at(k)] *= conjugate ? std::conj(H[at(k % (g.m0 * g.m1))]) : H[at(k % (g.m0 * g.m1))];
    in_both_orders([&](fkemu::Order) {
      std::vector<c128> got(big);
      nc::emu::launch_apply_transfer(got.data(), H.data(), g, conjugate, nullptr);
      expect_same_field(got, want, conjugate ? "times conj H" : "times H");
    });
  }
}

template <typename T>
void check_holography_steps() {
  const int64_t batch = 2, planes = 3, cells = 150, n = batch * cells;  // 300: two blocks
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(-4, 4);
  std::vector<T> phi(at(cells));
  for (T& p : phi) p = static_cast<T>(u(rng));
  const double amplitude = 0.8;
  std::vector<c128> want_t;
  for (T p : phi)
    want_t.push_back({amplitude * std::cos(static_cast<double>(p)),
                      amplitude * std::sin(static_cast<double>(p))});
  const std::vector<c128> ud = random_complex(n, 8), back = random_complex(cells, 9);
  const std::vector<c128> w0 = random_complex(cells, 10);
  std::vector<double> g(at(batch * planes * cells));
  for (double& v : g) v = u(rng);
  in_both_orders([&](fkemu::Order) {
    std::vector<c128> t(at(cells), kPoison);
    nc::emu::launch_transmission<T>(phi.data(), cells, amplitude, t.data(), nullptr);
    expect_same_field(t, want_t, "transmission");
    // Plane 1 of 3 written, the others untouched.
    for (int64_t d : {int64_t{1}, int64_t{2}}) {
      std::vector<c128> u_all(at(batch * planes * cells), kPoison), want_all(u_all);
      std::vector<T> intensity(u_all.size(), static_cast<T>(-1)), want_i(intensity);
      std::vector<c128> src(at(n), kPoison), want_src(at(n));
      for (int64_t b = 0; b < batch; ++b)
        for (int64_t c = 0; c < cells; ++c) {
          const c128 v = ud[at(b * cells + c)];
          const int64_t k = (b * planes + d) * cells + c;
          want_all[at(k)] = v;
          want_i[at(k)] = static_cast<T>(v.real() * v.real() + v.imag() * v.imag());
          want_src[at(b * cells + c)] = {2.0 * g[at(k)] * v.real(), 2.0 * g[at(k)] * v.imag()};
        }
      nc::emu::launch_store_plane<T>(ud.data(), batch, planes, d, cells, u_all.data(),
                                     intensity.data(), nullptr);
      expect_same_field(u_all, want_all, "stored plane " + std::to_string(d));
      expect_same_bits(intensity, want_i, "intensity of plane " + std::to_string(d));
      nc::emu::launch_plane_source(g.data(), u_all.data(), batch, planes, d, cells, src.data(),
                                   nullptr);
      expect_same_field(src, want_src, "plane source " + std::to_string(d));
    }
    std::vector<c128> w(w0), want_w(w0);
    for (int64_t k = 0; k < cells; ++k) want_w[at(k)] += back[at(k)];
    nc::emu::launch_accumulate(w.data(), back.data(), cells, nullptr);
    expect_same_field(w, want_w, "accumulated");
    std::vector<T> dphi(at(cells), static_cast<T>(-1)), want_dphi(at(cells));
    for (int64_t k = 0; k < cells; ++k)
      want_dphi[at(k)] = static_cast<T>(-(want_t[at(k)] * std::conj(w[at(k)])).imag());
    nc::emu::launch_phase_gradient<T>(want_t.data(), w.data(), cells, dphi.data(), nullptr);
    expect_same_bits(dphi, want_dphi, "phase gradient");
  });
}

TEST(EmulatedAngularSpectrum, HolographyStepsF64) {
  check_holography_steps<double>();
}

TEST(EmulatedAngularSpectrum, HolographyStepsF32) {
  check_holography_steps<float>();
}

}  // namespace
