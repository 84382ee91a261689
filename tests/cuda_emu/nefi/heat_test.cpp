// heat.cu's sweeps on the emulated device (emulated_device.h), its
// cooperative launch included: k sweeps in one launch with grid syncs
// between them must give the bits of k one-sweep launches (kernels.h says
// both paths share each cell's arithmetic), when the grid covers the cells
// and when its blocks stride over them; the Chebyshev weights from the
// device's row-sum bound must be heat_cells.h's from the host's maximum.
// The other launchers against the CPU heat operator, bit for bit as
// kernels.h claims: the system (faces, D^½, D^-½, row sums) against
// build_system + symmetric_faces, one sweep against a plain host loop with
// the documented fused multiply-adds and, scaled in and out as the device
// sweeper does, against FlatSweeper's AVX2+FMA Jacobi sweep; the scalings
// and the surface source against plain loops; the face products and dJ/dα
// against the CPU adjoint's. Grids of more cells than one block of 256 but
// not a multiple of it, axes of one cell, periodic and closed sides,
// harmonic and arithmetic faces, a back sink, unequal h per axis, f32 and
// f64. Both thread (and block) orders.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "cuda_emu/emulated_device.h"
#include "fk/cpu_isa.h"
#include "fk/factory.h"
#include "fk/random.h"
#include "nefi/cuda/device_sweeper.h"
#include "nefi/cuda/heat_cells.h"
#include "nefi/cuda/kernels.h"
#include "nefi/operators/heat/flat_stencil.h"
#include "nefi/operators/heat/heat_system.h"

// The emulated launchers this file runs: kernels.h's, in ::emu (a signature
// that drifts from its definition fails to link).
namespace nefi::cuda::emu {
template <typename T>
void launch_heat_system(const T* alpha, T* faces, T* root_d, T* row_sums, Grid g,
                        const HeatCoefficients& k, void* stream);
template <typename T>
void launch_chebyshev_weights(const T* row_sums, int64_t n, T* omega, int k, void* stream);
template <typename T>
void launch_face_sweep(const T* in, T* out, const T* c, const T* faces, Grid g, const T* omega,
                       int j, bool lerp, void* stream);
template <typename T>
void launch_fused_sweeps(T* buf0, T* buf1, int cur, const T* c, const T* faces, Grid g,
                         const T* omega, int k, int lerp_from, void* stream);
template <typename T>
void launch_scale(const T* a, const T* r, T* out, int64_t n, void* stream);
template <typename T>
void launch_scale_twice(const T* a, const T* r, T* out, T* c, int64_t n, void* stream);
template <typename T>
void launch_add_surface(const T* s, const T* r, T* c, Grid g, void* stream);
template <typename T>
void launch_face_products(T* sums, const T* mu, const T* t, Grid g, bool closed_sides,
                          void* stream);
template <typename T>
void launch_alpha_gradient(const T* sums, const T* alpha, T* out, Grid g, const HeatCoefficients& k,
                           void* stream);
}  // namespace nefi::cuda::emu

namespace nc = nefi::cuda;
namespace heat = nefi::heat;

namespace {

template <typename T>
std::vector<T> uniform(size_t n, double lo, double hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<T> v(n);
  for (T& x : v) x = static_cast<T>(u(rng));
  return v;
}

// Empty vectors are equal without a memcmp (their data() may be null, which
// memcmp must not be given even for 0 bytes: UBSan's nonnull check).
template <typename T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
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
  fkemu::set_order(fkemu::starting_order());
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
    fkemu::set_order(fkemu::starting_order());
  }
}

// The CPU heat operator's cases: grids of more cells than one block of 256
// (heat.cu's kThreads) and no multiple of it, axes of one cell, periodic and
// closed sides, harmonic and arithmetic faces, with and without a back sink.
struct Case {
  nc::Grid g;
  bool closed;
  bool arithmetic;
  double sink;
};

const Case kCases[] = {{{9, 7, 5}, false, false, 0.7},
                       {{1, 13, 20}, true, false, 0.0},
                       {{17, 1, 16}, false, true, 0.0},
                       {{6, 50, 1}, true, true, 0.4},
                       {{1, 1, 300}, false, false, 0.3}};

const fkemu::Order kOrders[] = {fkemu::Order::kAscending, fkemu::Order::kDescending};

// h differs per axis, so a face's 1/h² comes from its own axis.
heat::StepGeometry geometry(const Case& c) {
  const nc::Grid& s = c.g;
  heat::StepGeometry g{s.nx, s.ny, s.nz, 2.0 / s.nx, 1.5 / s.ny, 1.0 / s.nz, 0.05, c.sink};
  g.arithmetic_faces = c.arithmetic;
  g.lateral_neumann = c.closed;
  return g;
}

template <typename T>
fk::DType dtype_of() {
  return std::is_same_v<T, double> ? fk::DType::F64 : fk::DType::F32;
}

template <typename T>
std::string name(const Case& c, fkemu::Order order) {
  return std::to_string(c.g.nx) + " x " + std::to_string(c.g.ny) + " x " + std::to_string(c.g.nz) +
         (c.closed ? " closed" : " periodic") + (c.arithmetic ? " arithmetic" : " harmonic") +
         " sink " + std::to_string(c.sink) + " " + fk::name(dtype_of<T>()) +
         (order == fkemu::Order::kAscending ? " ascending" : " descending");
}

fk::Tensor random_tensor(const fk::Dims& s, fk::DType dt, double lo, double hi, uint64_t seed) {
  fk::Generator g(seed);
  return fk::uniform(s, lo, hi, {dt}, &g);
}

template <typename T>
std::vector<T> values(const fk::Tensor& t) {
  const fk::Tensor c = t.contiguous();
  return std::vector<T>(c.data<T>(), c.data<T>() + c.numel());
}

template <typename T>
void check_system(const Case& c) {
  const heat::StepGeometry g = geometry(c);
  const fk::Tensor alpha_t = random_tensor(g.shape(), dtype_of<T>(), 0.01, 0.25, 3);
  const heat::HeatSystem sys = heat::build_system(alpha_t, g);
  const heat::SymmetricFaces sym = heat::symmetric_faces(sys, g);
  const std::vector<T> alpha = values<T>(alpha_t), w = values<T>(sys.weights);
  const std::vector<T> want_faces = values<T>(sym.faces), want_root_d = values<T>(sym.root_d);
  // gershgorin_bound's row sums: Σ_j W_j from 0 in j order.
  const size_t n = alpha.size();
  std::vector<T> want_rows(n);
  for (size_t i = 0; i < n; ++i) {
    T r = 0;
    for (int j = 0; j < heat::kNeighbours; ++j) r += w[j * n + i];
    want_rows[i] = r;
  }
  ASSERT_GT(*std::max_element(want_rows.begin(), want_rows.end()),
            T(0.05));  // not a trivial system
  for (fkemu::Order order : kOrders) {
    fkemu::set_order(order);
    const std::string tag = name<T>(c, order);
    std::vector<T> faces(3 * n, T(-7)), root_d(2 * n, T(-7)), rows(n, T(-7));
    nc::emu::launch_heat_system<T>(alpha.data(), faces.data(), root_d.data(), rows.data(), c.g,
                                   heat::heat_coefficients(g), nullptr);
    EXPECT_TRUE(same_bits(faces, want_faces)) << tag;
    EXPECT_TRUE(same_bits(root_d, want_root_d)) << tag;
    EXPECT_TRUE(same_bits(rows, want_rows)) << tag;
    // Without row sums: the same system.
    std::vector<T> faces2(3 * n, T(-7)), root_d2(2 * n, T(-7));
    nc::emu::launch_heat_system<T>(alpha.data(), faces2.data(), root_d2.data(), nullptr, c.g,
                                   heat::heat_coefficients(g), nullptr);
    EXPECT_TRUE(same_bits(faces2, want_faces) && same_bits(root_d2, want_root_d)) << tag;
  }
  fkemu::set_order(fkemu::starting_order());
}

TEST(EmulatedHeat, HeatSystemIsTheCpuSymmetricSystemBitwise) {
  for (const Case& c : kCases) {
    check_system<double>(c);
    check_system<float>(c);
  }
}

// launch_face_sweep's contract as a plain loop over (x, y, z), neighbours
// by (x ± 1) mod nx, with the fused multiply-adds kernels.h documents.
template <typename T>
std::vector<T> plain_sweep(const std::vector<T>& in, std::vector<T> out, const std::vector<T>& c,
                           const std::vector<T>& faces, nc::Grid g, bool lerp, T omega) {
  const int64_t nx = g.nx, ny = g.ny, nz = g.nz, n = g.numel();
  auto at = [&](int64_t x, int64_t y, int64_t z) { return (x * ny + y) * nz + z; };
  for (int64_t x = 0; x < nx; ++x)
    for (int64_t y = 0; y < ny; ++y)
      for (int64_t z = 0; z < nz; ++z) {
        const int64_t i = at(x, y, z), xm = at((x + nx - 1) % nx, y, z),
                      xp = at((x + 1) % nx, y, z), ym = at(x, (y + ny - 1) % ny, z),
                      yp = at(x, (y + 1) % ny, z);
        T s = std::fma(faces[xm], in[xm], c[i]);
        s = std::fma(faces[i], in[xp], s);
        s = std::fma(faces[n + ym], in[ym], s);
        s = std::fma(faces[n + i], in[yp], s);
        if (z > 0) s = std::fma(faces[2 * n + i - 1], in[i - 1], s);
        if (z + 1 < nz) s = std::fma(faces[2 * n + i], in[i + 1], s);
        out[i] = lerp ? std::fma(omega, s - out[i], out[i]) : s;
      }
  return out;
}

template <typename T>
void check_face_sweep(const Case& c) {
  const size_t n = static_cast<size_t>(c.g.numel());
  const std::vector<T> faces = uniform<T>(3 * n, 0.0, 1.0 / 7, 11), rhs = uniform<T>(n, -1, 1, 12);
  const std::vector<T> in = uniform<T>(n, -1, 1, 13), before = uniform<T>(n, -1, 1, 14);
  const std::vector<T> omega = {T(1), T(1.3), T(1.7), T(1.1)};
  for (bool lerp : {false, true}) {
    // Sweep j = 2 reads omega[2].
    const std::vector<T> want = plain_sweep(in, before, rhs, faces, c.g, lerp, omega[2]);
    for (fkemu::Order order : kOrders) {
      fkemu::set_order(order);
      std::vector<T> got = before;
      nc::emu::launch_face_sweep<T>(in.data(), got.data(), rhs.data(), faces.data(), c.g,
                                    omega.data(), 2, lerp, nullptr);
      EXPECT_TRUE(same_bits(got, want)) << name<T>(c, order) << (lerp ? " lerp" : " jacobi");
    }
  }
  fkemu::set_order(fkemu::starting_order());
}

TEST(EmulatedHeat, FaceSweepIsThePlainLoopsFusedMultiplyAdds) {
  for (const Case& c : kCases) {
    check_face_sweep<double>(c);
    check_face_sweep<float>(c);
  }
}

// The device sweeper's Jacobi step from launches: y = D^½ x, c = D^-½ b plus
// D^-½ s at z = 0, two sweeps, x = D^-½ y; against FlatSweeper's. Its AVX2+FMA
// build contracts as the kernel does (bit for bit, up to the sign of zero:
// compared with ==); its generic build rounds differently (a tolerance).
template <typename T>
void check_sweeper_step(const Case& c) {
  const heat::StepGeometry g = geometry(c);
  const fk::DType dt = dtype_of<T>();
  const fk::Tensor alpha_t = random_tensor(g.shape(), dt, 0.01, 0.25, 3);
  const fk::Tensor x_t = random_tensor(g.shape(), dt, -1, 1, 5),
                   b_t = random_tensor(g.shape(), dt, -1, 1, 7);
  const fk::Tensor s_t = random_tensor({g.nx, g.ny}, dt, -1, 1, 9);
  heat::FlatSweeper cpu(heat::build_system(alpha_t, g), g);
  cpu.load(x_t);
  cpu.set_rhs(b_t, s_t);
  cpu.jacobi(2);
  fk::Tensor want_t = fk::empty(g.shape(), {dt});
  cpu.store(want_t);
  const std::vector<T> want = values<T>(want_t), alpha = values<T>(alpha_t), x = values<T>(x_t),
                       b = values<T>(b_t), s = values<T>(s_t);
  const int64_t n = g.numel();
  const bool bitwise = fk::cpu_isa() >= fk::CpuIsa::Avx2;
  for (fkemu::Order order : kOrders) {
    fkemu::set_order(order);
    std::vector<T> faces(3 * n), root_d(2 * n), y0(n), y1(n), rhs(n), got(n);
    nc::emu::launch_heat_system<T>(alpha.data(), faces.data(), root_d.data(), nullptr, c.g,
                                   heat::heat_coefficients(g), nullptr);
    const T* isd = root_d.data() + n;
    nc::emu::launch_scale<T>(x.data(), root_d.data(), y0.data(), n, nullptr);
    nc::emu::launch_scale<T>(b.data(), isd, rhs.data(), n, nullptr);
    nc::emu::launch_add_surface<T>(s.data(), isd, rhs.data(), c.g, nullptr);
    nc::emu::launch_face_sweep<T>(y0.data(), y1.data(), rhs.data(), faces.data(), c.g, nullptr, 0,
                                  false, nullptr);
    nc::emu::launch_face_sweep<T>(y1.data(), y0.data(), rhs.data(), faces.data(), c.g, nullptr, 1,
                                  false, nullptr);
    nc::emu::launch_scale<T>(y0.data(), isd, got.data(), n, nullptr);
    const std::string tag = name<T>(c, order);
    double worst = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double e = std::abs(static_cast<double>(got[i]) - static_cast<double>(want[i]));
      if (!(e <= worst)) worst = e;  // a NaN cell fails
    }
    if (bitwise)
      EXPECT_EQ(worst, 0.0) << tag;
    else
      EXPECT_LE(worst, (std::is_same_v<T, double> ? 1e-14 : 2e-6)) << tag;
  }
  fkemu::set_order(fkemu::starting_order());
}

TEST(EmulatedHeat, SweeperStepFromLaunchesIsTheFlatSweepers) {
  for (const Case& c : kCases) {
    check_sweeper_step<double>(c);
    check_sweeper_step<float>(c);
  }
}

template <typename T>
void check_scales(int64_t n) {
  const size_t m = static_cast<size_t>(n);
  const std::vector<T> a = uniform<T>(m, -2, 2, 21), r = uniform<T>(m, 0.1, 3, 22);
  std::vector<T> want_out(m), want_c(m);
  for (size_t i = 0; i < m; ++i) {
    want_out[i] = r[i] * a[i];
    want_c[i] = r[i] * want_out[i];
  }
  for (fkemu::Order order : kOrders) {
    fkemu::set_order(order);
    std::vector<T> out(m, T(-7)), out2(m, T(-7)), c(m, T(-7));
    nc::emu::launch_scale<T>(a.data(), r.data(), out.data(), n, nullptr);
    nc::emu::launch_scale_twice<T>(a.data(), r.data(), out2.data(), c.data(), n, nullptr);
    EXPECT_TRUE(same_bits(out, want_out)) << n << " cells";
    EXPECT_TRUE(same_bits(out2, want_out) && same_bits(c, want_c)) << n << " cells";
  }
  fkemu::set_order(fkemu::starting_order());
}

// n = 0 too: a launch still asks for one block (CUDA refuses an empty grid).
TEST(EmulatedHeat, ScalesAreThePlainProducts) {
  for (int64_t n : {0, 1, 255, 256, 257, 700}) {
    check_scales<double>(n);
    check_scales<float>(n);
  }
}

template <typename T>
void check_add_surface(const Case& c) {
  const int64_t columns = c.g.nx * c.g.ny, nz = c.g.nz;
  const size_t n = static_cast<size_t>(c.g.numel());
  const std::vector<T> s = uniform<T>(static_cast<size_t>(columns), -1, 1, 31),
                       r = uniform<T>(n, 0.1, 3, 32), before = uniform<T>(n, -1, 1, 33);
  std::vector<T> want = before;  // cells past z = 0 keep theirs
  for (int64_t k = 0; k < columns; ++k) want[k * nz] += r[k * nz] * s[k];
  for (fkemu::Order order : kOrders) {
    fkemu::set_order(order);
    std::vector<T> got = before;
    nc::emu::launch_add_surface<T>(s.data(), r.data(), got.data(), c.g, nullptr);
    EXPECT_TRUE(same_bits(got, want)) << name<T>(c, order);
  }
  fkemu::set_order(fkemu::starting_order());
}

TEST(EmulatedHeat, AddSurfaceIsThePlainLoop) {
  for (const Case& c : kCases) {
    check_add_surface<double>(c);
    check_add_surface<float>(c);
  }
}

// The face products accumulate into sums that already hold something.
template <typename T>
void check_adjoint(const Case& c) {
  const heat::StepGeometry g = geometry(c);
  const fk::DType dt = dtype_of<T>();
  const fk::Tensor alpha_t = random_tensor(g.shape(), dt, 0.01, 0.25, 3);
  const fk::Tensor mu_t = random_tensor(g.shape(), dt, -1, 1, 5),
                   t_t = random_tensor(g.shape(), dt, -1, 1, 7);
  fk::Tensor sums_t = random_tensor({3, g.nx, g.ny, g.nz}, dt, -1, 1, 9);
  const std::vector<T> before = values<T>(sums_t), alpha = values<T>(alpha_t), mu = values<T>(mu_t),
                       t = values<T>(t_t);
  heat::accumulate_face_products(sums_t, mu_t, t_t, g);
  const std::vector<T> want_sums = values<T>(sums_t);
  const std::vector<T> want_grad = values<T>(heat::alpha_gradient(sums_t, alpha_t, g));
  ASSERT_FALSE(same_bits(before, want_sums));  // the products changed something
  for (fkemu::Order order : kOrders) {
    fkemu::set_order(order);
    const std::string tag = name<T>(c, order);
    std::vector<T> sums = before, grad(alpha.size(), T(-7));
    nc::emu::launch_face_products<T>(sums.data(), mu.data(), t.data(), c.g, c.closed, nullptr);
    EXPECT_TRUE(same_bits(sums, want_sums)) << tag;
    nc::emu::launch_alpha_gradient<T>(want_sums.data(), alpha.data(), grad.data(), c.g,
                                      heat::heat_coefficients(g), nullptr);
    EXPECT_TRUE(same_bits(grad, want_grad)) << tag;
  }
  fkemu::set_order(fkemu::starting_order());
}

TEST(EmulatedHeat, FaceProductsAndAlphaGradientAreTheCpuAdjointsBitwise) {
  for (const Case& c : kCases) {
    check_adjoint<double>(c);
    check_adjoint<float>(c);
  }
}

}  // namespace
