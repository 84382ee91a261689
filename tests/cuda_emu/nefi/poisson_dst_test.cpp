// poisson_dst.cu's kernels run on the emulated device (emulated_device.h):
// the odd extension, the spectral scaling and the restriction to the box,
// 1-D to 3-D and batched, against host loops over coordinates (the mirror
// image of every axis negated, independent of poisson_dst_cells.h's index
// arithmetic), bit for bit, f32 and f64, in both thread orders; and the odd
// extension's defining property: its DFT vanishes wherever some axis is at
// frequency 0, and restricting it gives the field back.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "cuda_emu/emulated_device.h"
#include "cuda_emu/emulated_test_util.h"
#include "nefi/cuda/poisson_dst_kernels.h"

// The emulated launchers this file runs: poisson_dst_kernels.h's, in ::emu
// (a signature that drifts from its definition fails to link).
namespace nefi::cuda::emu {
template <typename T>
void launch_odd_extension(const T* f, const OddExtension& g, Complex* ext, void* stream);
void launch_scale_spectrum(Complex* spectrum, const double* scale, const OddExtension& g,
                           void* stream);
template <typename T>
void launch_restrict_to_box(const Complex* ext, const OddExtension& g, T* out, void* stream);
}  // namespace nefi::cuda::emu

namespace nc = nefi::cuda;
using c128 = std::complex<double>;
using fkemu_test::expect_same_bits;
using fkemu_test::in_both_orders;
using fkemu_test::random_values;

namespace {

const c128 kPoison{-999.0, 999.0};

size_t at(int64_t i) {
  return static_cast<size_t>(i);
}

std::vector<double> parts(const std::vector<c128>& f) {
  std::vector<double> p;
  for (const c128& v : f) p.insert(p.end(), {v.real(), v.imag()});
  return p;
}

nc::OddExtension extension(int64_t batch, std::vector<int64_t> n) {
  nc::OddExtension g;
  g.ndim = static_cast<int>(n.size());
  g.batch = batch;
  for (int a = 0; a < g.ndim; ++a) g.n[a] = n[at(a)];
  return g;
}

std::string name_of(const nc::OddExtension& g) {
  std::string s = std::to_string(g.batch);
  for (int a = 0; a < g.ndim; ++a) s += " x " + std::to_string(g.n[a]);
  return s;
}

// The C-order coordinates of cell k in a grid of the given extents (batch first).
std::vector<int64_t> coords_of(int64_t k, const std::vector<int64_t>& extents) {
  std::vector<int64_t> c(extents.size());
  for (size_t a = extents.size(); a-- > 0;) {
    c[a] = k % extents[a];
    k /= extents[a];
  }
  return c;
}
int64_t cell_at(const std::vector<int64_t>& c, const std::vector<int64_t>& extents) {
  int64_t k = 0;
  for (size_t a = 0; a < extents.size(); ++a) k = k * extents[a] + c[a];
  return k;
}

std::vector<int64_t> field_extents(const nc::OddExtension& g) {
  std::vector<int64_t> e{g.batch};
  for (int a = 0; a < g.ndim; ++a) e.push_back(g.n[a]);
  return e;
}
std::vector<int64_t> extended_extents(const nc::OddExtension& g) {
  std::vector<int64_t> e{g.batch};
  for (int a = 0; a < g.ndim; ++a) e.push_back(2 * g.n[a]);
  return e;
}

// Along every axis the field, then its mirror image negated.
template <typename T>
std::vector<c128> odd_extension_loop(const std::vector<T>& f, const nc::OddExtension& g) {
  const std::vector<int64_t> fe = field_extents(g), ee = extended_extents(g);
  std::vector<c128> ext(at(g.batch * g.extended_cells()));
  for (int64_t k = 0; k < static_cast<int64_t>(ext.size()); ++k) {
    std::vector<int64_t> c = coords_of(k, ee);
    double sign = 1;
    for (size_t a = 1; a < c.size(); ++a)
      if (c[a] >= fe[a]) {
        c[a] = 2 * fe[a] - 1 - c[a];
        sign = -sign;
      }
    ext[at(k)] = {sign * static_cast<double>(f[at(cell_at(c, fe))]), 0.0};
  }
  return ext;
}

std::vector<nc::OddExtension> geometries() {
  // 1-D across three blocks, 2-D with a one-cell axis, 3-D batched.
  return {extension(2, {150}), extension(3, {5, 7}), extension(1, {1, 9}), extension(2, {3, 4, 5}),
          extension(1, {1})};
}

template <typename T>
void check_extension_and_restriction() {
  for (const nc::OddExtension& g : geometries()) {
    SCOPED_TRACE(name_of(g));
    const std::vector<T> f = random_values<T>(g.batch * g.cells(), 1);
    const std::vector<c128> want_ext = odd_extension_loop(f, g);
    // The box of a random spectrum: the real part of the field's own cells.
    const std::vector<int64_t> fe = field_extents(g), ee = extended_extents(g);
    std::vector<c128> spectrum(want_ext.size());
    std::mt19937 rng(2);
    std::uniform_real_distribution<double> u(-1, 1);
    for (c128& v : spectrum) v = {u(rng), u(rng)};
    std::vector<T> want_box(f.size());
    for (int64_t k = 0; k < static_cast<int64_t>(f.size()); ++k)
      want_box[at(k)] = static_cast<T>(spectrum[at(cell_at(coords_of(k, fe), ee))].real());
    in_both_orders([&](fkemu::Order) {
      std::vector<c128> ext(want_ext.size(), kPoison);
      nc::emu::launch_odd_extension<T>(f.data(), g, ext.data(), nullptr);
      expect_same_bits(parts(ext), parts(want_ext), "odd extension");
      std::vector<T> box(f.size(), T(-7)), back(f.size(), T(-7));
      nc::emu::launch_restrict_to_box<T>(spectrum.data(), g, box.data(), nullptr);
      expect_same_bits(box, want_box, "restricted");
      nc::emu::launch_restrict_to_box<T>(ext.data(), g, back.data(), nullptr);
      expect_same_bits(back, f, "the field back from its extension");
    });
  }
}

TEST(EmulatedPoissonDst, OddExtensionAndRestrictionF64) {
  check_extension_and_restriction<double>();
}

TEST(EmulatedPoissonDst, OddExtensionAndRestrictionF32) {
  check_extension_and_restriction<float>();
}

TEST(EmulatedPoissonDst, ScaleSpectrumRepeatsTheTablePerBatchRow) {
  for (const nc::OddExtension& g : {extension(3, {5, 7}), extension(2, {3, 4, 5})}) {
    SCOPED_TRACE(name_of(g));
    const int64_t per_row = g.extended_cells();
    std::vector<c128> spectrum(at(g.batch * per_row));
    std::mt19937 rng(3);
    std::uniform_real_distribution<double> u(-1, 1);
    for (c128& v : spectrum) v = {u(rng), u(rng)};
    std::vector<double> scale(at(per_row));
    for (double& s : scale) s = u(rng);
    std::vector<c128> want(spectrum);
    for (int64_t k = 0; k < static_cast<int64_t>(want.size()); ++k)
      want[at(k)] = {want[at(k)].real() * scale[at(k % per_row)],
                     want[at(k)].imag() * scale[at(k % per_row)]};
    in_both_orders([&](fkemu::Order) {
      std::vector<c128> got(spectrum);
      nc::emu::launch_scale_spectrum(got.data(), scale.data(), g, nullptr);
      expect_same_bits(parts(got), parts(want), "scaled");
    });
  }
}

TEST(EmulatedPoissonDst, OddExtensionsSpectrumVanishesAtFrequencyZero) {
  // A brute-force 2-D DFT of the kernel's extension (4 x 6 field, 8 x 12 extension).
  const nc::OddExtension g = extension(1, {4, 6});
  const std::vector<double> f = random_values<double>(g.cells(), 4);
  std::vector<c128> ext(at(g.extended_cells()));
  nc::emu::launch_odd_extension<double>(f.data(), g, ext.data(), nullptr);
  const int64_t m0 = 8, m1 = 12;
  for (int64_t k0 = 0; k0 < m0; ++k0)
    for (int64_t k1 = 0; k1 < m1; ++k1) {
      if (k0 != 0 && k1 != 0) continue;
      c128 s = 0;
      for (int64_t p = 0; p < m0; ++p)
        for (int64_t q = 0; q < m1; ++q)
          s += ext[at(p * m1 + q)] * std::polar(1.0, -2 * std::numbers::pi *
                                                         (static_cast<double>(k0 * p) / m0 +
                                                          static_cast<double>(k1 * q) / m1));
      EXPECT_LT(std::abs(s), 1e-12) << "frequency (" << k0 << ", " << k1 << ")";
    }
}

}  // namespace
