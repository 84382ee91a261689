// The heat kernels' per-thread code (nefi/cuda/heat_cells.h), run on the host
// thread by thread the way heat.cu runs it, against the CPU heat system: the
// system kernels' faces, D^½, D^-½ and row sums against build_system +
// symmetric_faces + gershgorin_bound, the bound kernel's block reduction and
// weights against chebyshev_weights (all bit for bit, f64 and f32); the fused
// sweep kernel's grid-stride loop and buffer swaps against FlatSweeper's
// Jacobi and Chebyshev sweeps (to rounding: FlatSweeper may run its generic
// build, without the FMAs the kernel spells out); the face products and
// dJ/dα against the CPU's (bitwise); the wrapped neighbour indices against the
// CPU loops' (x ± 1) mod nx. Periodic and closed sides, harmonic and
// arithmetic faces, with and without a back sink, on grids with no two axes
// equal. No GPU is needed: this is how the kernels' indexing is checked here.
#include "nefi/cuda/heat_cells.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "fk/factory.h"
#include "fk/random.h"
#include "nefi/cuda/device_sweeper.h"
#include "nefi/operators/heat/flat_stencil.h"
#include "nefi/operators/heat/heat_system.h"
#include "nefi/operators/heat/inner_solvers.h"

namespace {

namespace heat = nefi::heat;
namespace cuda = nefi::cuda;

struct Case {
  fk::Dims shape;
  bool closed;
  bool arithmetic;
  double sink;
};

const Case kCases[] = {{{5, 4, 3}, false, false, 0.7},
                       {{4, 6, 5}, true, false, 0.0},
                       {{3, 5, 7}, false, true, 0.0},
                       {{6, 3, 4}, true, true, 0.4}};

heat::StepGeometry geometry(const Case& c) {
  const fk::Dims& s = c.shape;
  heat::StepGeometry g{s[0], s[1], s[2], 2.0 / s[0], 1.5 / s[1], 1.0 / s[2], 0.05, c.sink};
  g.arithmetic_faces = c.arithmetic;
  g.lateral_neumann = c.closed;
  return g;
}

std::string name(const Case& c, fk::DType dt) {
  return c.shape.str() + (c.closed ? " closed" : " periodic") +
         (c.arithmetic ? " arithmetic" : " harmonic") + " sink " + std::to_string(c.sink) + " " +
         fk::name(dt);
}

fk::Tensor random_grid(const fk::Dims& s, fk::DType dt, double lo, double hi, uint64_t seed) {
  fk::Generator g(seed);
  return fk::uniform(s, lo, hi, {dt}, &g);
}

template <typename T>
std::vector<T> values(const fk::Tensor& t) {
  const fk::Tensor c = t.contiguous();
  return std::vector<T>(c.data<T>(), c.data<T>() + c.numel());
}

// Threads in an order no CPU loop uses (odd cells up, then even cells down):
// a kernel's threads may run in any order.
std::vector<int> thread_order(int n) {
  std::vector<int> order;
  for (int i = 1; i < n; i += 2) order.push_back(i);
  for (int i = (n - 1) / 2 * 2; i >= 0; i -= 2) order.push_back(i);
  return order;
}

// launch_chebyshev_weights' one block of 512 threads: strided folds, then the tree.
template <typename T>
T block_max(const std::vector<T>& row_sums) {
  constexpr int kThreads = 512;
  std::vector<T> part(kThreads, T(0));
  for (int t = 0; t < kThreads; ++t)
    for (size_t i = t; i < row_sums.size(); i += kThreads)
      part[t] = cuda::larger(part[t], row_sums[i]);
  for (int s = kThreads / 2; s > 0; s /= 2)
    for (int t = 0; t < s; ++t) part[t] = cuda::larger(part[t], part[t + s]);
  return part[0];
}

// The system kernels' outputs for alpha, computed thread by thread.
template <typename T>
struct DeviceSystem {
  std::vector<T> faces, root_d, row_sums;
};

template <typename T>
DeviceSystem<T> run_system_kernels(const fk::Tensor& alpha, const heat::StepGeometry& g) {
  const int n = static_cast<int>(g.numel());
  const cuda::SystemConstants<T> k =
      cuda::system_constants<T>({g.nx, g.ny, g.nz}, heat::heat_coefficients(g));
  DeviceSystem<T> s{std::vector<T>(3 * n, T(-7)), std::vector<T>(2 * n, T(-7)),
                    std::vector<T>(n, T(-7))};
  const std::vector<T> a = values<T>(alpha);
  for (int i : thread_order(n))
    cuda::system_cell(a.data(), s.faces.data(), s.root_d.data(), s.row_sums.data(), i, k);
  for (int i : thread_order(n)) cuda::symmetric_face_cell(s.faces.data(), s.root_d.data(), i, k);
  return s;
}

template <typename T>
void expect_system_matches(const Case& c) {
  const fk::DType dt = std::is_same_v<T, double> ? fk::DType::F64 : fk::DType::F32;
  const std::string tag = name(c, dt);
  const heat::StepGeometry g = geometry(c);
  const fk::Tensor alpha = random_grid(c.shape, dt, 0.01, 0.25, 3);
  const heat::HeatSystem sys = heat::build_system(alpha, g);
  const heat::SymmetricFaces sym = heat::symmetric_faces(sys, g);
  const DeviceSystem<T> got = run_system_kernels<T>(alpha, g);
  EXPECT_EQ(got.faces, values<T>(sym.faces)) << tag;
  EXPECT_EQ(got.root_d, values<T>(sym.root_d)) << tag;
  // Each row sum is gershgorin_bound's Σ_j W_j over build_system's weights.
  const std::vector<T> w = values<T>(sys.weights);
  const size_t n = got.row_sums.size();
  for (size_t i = 0; i < n; ++i) {
    T r = 0;
    for (int j = 0; j < heat::kNeighbours; ++j) r += w[j * n + i];
    ASSERT_EQ(got.row_sums[i], r) << tag << " cell " << i;
  }
  const fk::Tensor rho = heat::gershgorin_bound(sys);
  const T bound = block_max(got.row_sums);
  EXPECT_EQ(bound, *rho.data<T>()) << tag;
  EXPECT_GT(bound, T(0.05)) << tag;  // a bound that tests something
  for (int k : {1, 2, 9, 50}) {
    std::vector<T> omega(k, T(-7));
    cuda::chebyshev_weights_from(bound, omega.data(), k);
    EXPECT_EQ(omega, values<T>(heat::chebyshev_weights(rho, k))) << tag << " K " << k;
  }
}

TEST(HeatCells, SystemKernelThreadsGiveTheCpuSymmetricSystemBitwise) {
  for (const Case& c : kCases) {
    expect_system_matches<double>(c);
    expect_system_matches<float>(c);
  }
}

TEST(HeatCells, CellIndicesAreTheCpuLoopsWrappedNeighbours) {
  for (const Case& c : kCases) {
    const int nx = static_cast<int>(c.shape[0]), ny = static_cast<int>(c.shape[1]),
              nz = static_cast<int>(c.shape[2]);
    auto at = [&](int x, int y, int z) { return (x * ny + y) * nz + z; };
    for (int x = 0; x < nx; ++x)
      for (int y = 0; y < ny; ++y)
        for (int z = 0; z < nz; ++z) {
          const cuda::Cell q = cuda::cell_at(at(x, y, z), nx, ny, nz);
          ASSERT_EQ(q.i, at(x, y, z));
          ASSERT_EQ(q.x, x);
          ASSERT_EQ(q.y, y);
          ASSERT_EQ(q.z, z);
          ASSERT_EQ(q.xm, at((x + nx - 1) % nx, y, z));
          ASSERT_EQ(q.xp, at((x + 1) % nx, y, z));
          ASSERT_EQ(q.ym, at(x, (y + ny - 1) % ny, z));
          ASSERT_EQ(q.yp, at(x, (y + 1) % ny, z));
        }
  }
}

// launch_fused_sweeps' kernel on the host: `blocks` blocks of `threads`
// threads, each striding over the grid per sweep (a barrier between sweeps
// is the loop's end), buffers chosen by sweep_input; then the iterate's
// buffer, (cur + k) % 2, as DeviceFlatSweeper reads it.
template <typename T>
std::vector<T> fused_kernel(std::vector<T> bufs[2], int cur, const std::vector<T>& c,
                            const std::vector<T>& faces, const heat::StepGeometry& g,
                            const std::vector<T>& omega, int k, int lerp_from, int blocks,
                            int threads) {
  const int nx = static_cast<int>(g.nx), ny = static_cast<int>(g.ny), nz = static_cast<int>(g.nz);
  const int n = nx * ny * nz, stride = blocks * threads;
  const T* fx = faces.data();
  const T* fy = fx + n;
  const T* fz = fy + n;
  for (int j = 0; j < k; ++j) {
    const bool from_b1 = cuda::sweep_input(cur, j) == 1;
    const T* in = (from_b1 ? bufs[1] : bufs[0]).data();
    T* out = (from_b1 ? bufs[0] : bufs[1]).data();
    const bool lerp = j >= lerp_from;
    const T w = lerp ? omega[j] : T(1);
    for (int b = blocks - 1; b >= 0; --b)
      for (int t = 0; t < threads; ++t)
        for (int64_t i = b * threads + t; i < n; i += stride)
          cuda::sweep_cell(in, out, c.data(), fx, fy, fz, static_cast<int>(i), nx, ny, nz, lerp, w);
  }
  return bufs[(cur + k) % 2];
}

template <typename T>
void expect_sweeps_match(const Case& c, bool chebyshev, int k) {
  const fk::DType dt = std::is_same_v<T, double> ? fk::DType::F64 : fk::DType::F32;
  const std::string tag =
      name(c, dt) + (chebyshev ? " chebyshev K " : " jacobi K ") + std::to_string(k);
  const heat::StepGeometry g = geometry(c);
  const int n = static_cast<int>(g.numel());
  const fk::Tensor alpha = random_grid(c.shape, dt, 0.01, 0.25, 3);
  const fk::Tensor x = random_grid(c.shape, dt, -1, 1, 5), b = random_grid(c.shape, dt, -1, 1, 7);
  const heat::HeatSystem sys = heat::build_system(alpha, g);
  // The CPU sweeper.
  heat::FlatSweeper cpu(sys, g);
  cpu.load(x);
  cpu.set_rhs(b);
  fk::Tensor omega_t = heat::chebyshev_weights(heat::gershgorin_bound(sys), k);
  if (chebyshev)
    cpu.chebyshev(omega_t);
  else
    cpu.jacobi(k);
  fk::Tensor want = fk::empty(c.shape, {dt});
  cpu.store(want);
  // The device sweeper's launches on the host: load (y = D^½ x into bufs[1],
  // the buffer a sweeper starting at cur = 1 holds), set_rhs (c = D^-½ b),
  // one fused launch over 3 blocks of 8 threads (fewer threads than cells,
  // so they stride), store (x = D^-½ y).
  const DeviceSystem<T> s = run_system_kernels<T>(alpha, g);
  const std::vector<T> xv = values<T>(x), bv = values<T>(b);
  std::vector<T> bufs[2] = {std::vector<T>(n, T(0)), std::vector<T>(n, T(0))}, rhs(n);
  for (int i = 0; i < n; ++i) {
    bufs[1][i] = s.root_d[i] * xv[i];
    rhs[i] = s.root_d[n + i] * bv[i];
  }
  const std::vector<T> omega = values<T>(omega_t);
  const std::vector<T> y =
      fused_kernel(bufs, 1, rhs, s.faces, g, omega, k, chebyshev ? 1 : k, 3, 8);
  const std::vector<T> expected = values<T>(want);
  double worst = 0, scale = 0;
  for (int i = 0; i < n; ++i) {
    const T got = s.root_d[n + i] * y[i];
    // NaN-propagating: std::max(worst, NaN) is worst, so a NaN cell would pass.
    const double e = std::abs(static_cast<double>(got) - expected[i]);
    if (!(e <= worst)) worst = e;
    scale = std::max(scale, std::abs(static_cast<double>(expected[i])));
  }
  EXPECT_GT(scale, 0.1) << tag;
  EXPECT_LE(worst, (std::is_same_v<T, double> ? 1e-14 : 2e-6) * scale) << tag;
}

TEST(HeatCells, FusedSweepKernelThreadsMatchTheFlatSweeper) {
  for (const Case& c : kCases)
    for (int k : {1, 2, 7}) {
      expect_sweeps_match<double>(c, false, k);
      expect_sweeps_match<float>(c, false, k);
      expect_sweeps_match<double>(c, true, k + 1);
      expect_sweeps_match<float>(c, true, k + 1);
    }
}

template <typename T>
void expect_adjoint_cells_match(const Case& c) {
  const fk::DType dt = std::is_same_v<T, double> ? fk::DType::F64 : fk::DType::F32;
  const std::string tag = name(c, dt);
  const heat::StepGeometry g = geometry(c);
  const int n = static_cast<int>(g.numel());
  const int nx = static_cast<int>(g.nx), ny = static_cast<int>(g.ny), nz = static_cast<int>(g.nz);
  const fk::Tensor alpha = random_grid(c.shape, dt, 0.01, 0.25, 3);
  const fk::Tensor mu = random_grid(c.shape, dt, -1, 1, 5), t = random_grid(c.shape, dt, -1, 1, 7);
  // Sums that already hold something: the kernel accumulates.
  fk::Tensor sums = random_grid({3, g.nx, g.ny, g.nz}, dt, -1, 1, 9);
  std::vector<T> got = values<T>(sums);
  heat::accumulate_face_products(sums, mu, t, g);
  const std::vector<T> m = values<T>(mu), v = values<T>(t);
  for (int i : thread_order(n))
    cuda::face_products_cell(got.data(), m.data(), v.data(), i, nx, ny, nz, c.closed);
  EXPECT_EQ(got, values<T>(sums)) << tag;
  const std::vector<T> want = values<T>(heat::alpha_gradient(sums, alpha, g));
  const cuda::SystemConstants<T> k =
      cuda::system_constants<T>({g.nx, g.ny, g.nz}, heat::heat_coefficients(g));
  const std::vector<T> a = values<T>(alpha);
  std::vector<T> grad(n, T(-7));
  for (int i : thread_order(n)) grad[i] = cuda::alpha_gradient_cell(got.data(), a.data(), i, k);
  EXPECT_EQ(grad, want) << tag;
}

TEST(HeatCells, FaceProductAndGradientThreadsGiveTheCpuAdjointBitwise) {
  for (const Case& c : kCases) {
    expect_adjoint_cells_match<double>(c);
    expect_adjoint_cells_match<float>(c);
  }
}

}  // namespace
