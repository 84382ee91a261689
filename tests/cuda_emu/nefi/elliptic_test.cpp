// elliptic.cu's kernels run on the emulated device (emulated_device.h), in
// both thread orders: the face system and the conductivity gradient against
// the CPU loops (build_face_system, accumulate_sigma_gradient) bit for bit;
// the multigrid setup against build_multigrid's levels and Cholesky factor
// bit for bit; the block CG (Jacobi and V-cycle) against its documented host
// emulation (block_pcg over HostBlock) bit for bit, solution, copy and
// statistics, and against pcg_solve to the tolerance with its residual
// recomputed on the host. The cases cover 1-, 2- and 3-D grids of odd sizes,
// fewer cells than a block's threads and several cells a thread, shared and
// batched fields, the projected case, warm starts, a system done before its
// first iteration, the iteration cap and the singular system's breakdown.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "cuda_emu/emulated_device.h"
#include "cuda_emu/emulated_test_util.h"
#include "nefi/cuda/elliptic_cells.h"
#include "nefi/cuda/elliptic_kernels.h"
#include "nefi/cuda/elliptic_multigrid_cells.h"
#include "nefi/cuda/elliptic_stencil.h"
#include "nefi/operators/elliptic/elliptic_cg.h"
#include "nefi/operators/elliptic/elliptic_grid.h"
#include "nefi/operators/elliptic/elliptic_multigrid.h"
#include "nefi/operators/elliptic/elliptic_test_grid.h"

// The emulated launchers this file runs: elliptic_kernels.h's, in ::emu (a
// signature that drifts from its definition fails to link).
namespace nefi::cuda::emu {
template <typename T>
void launch_face_system(const StencilGrid& g, int64_t nb, const T* sigma, bool sigma_batched,
                        const T* kappa, bool kappa_batched, T* faces, T* diag, T* inv_diag,
                        void* stream);
template <typename T>
void launch_multigrid_setup(const StencilGrid& g, int64_t nb, const T* faces, const T* diag,
                            T* hierarchy, double* cholesky, void* stream);
template <typename T>
void launch_block_pcg(const StencilGrid& g, int64_t ns, int64_t nb, const T* faces, const T* diag,
                      const T* inv_diag, const T* b, T* x, T* out, T* work, double* stats,
                      const CgControl& control, const MultigridBuffers<T>& mg, void* stream);
template <typename T>
void launch_sigma_gradient(const StencilGrid& g, int64_t ns, bool sigma_batched, const T* sigma,
                           const T* a, const T* b, double scale, T* grad, void* stream);
}  // namespace nefi::cuda::emu

namespace {

namespace cu = nefi::cuda;
namespace el = nefi::elliptic;
using el::EllipticGrid;
using el::FaceSystem;

constexpr fkemu::Order kOrders[] = {fkemu::Order::kAscending, fkemu::Order::kDescending};

template <typename T>
std::vector<T> uniform(int64_t n, double lo, double hi, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<T> v(static_cast<size_t>(n));
  for (auto& x : v) x = static_cast<T>(d(gen));
  return v;
}

// The first index where a and b differ in their bits (NaN equals NaN), -1
// when none: the kernels' results are compared bit for bit.
template <typename T>
int64_t first_bit_difference(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) return 0;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(T)) != 0) return static_cast<int64_t>(i);
  return -1;
}

#define EXPECT_BITWISE(a, b)                \
  EXPECT_EQ(first_bit_difference(a, b), -1) \
      << #a " against " #b << " (sizes " << (a).size() << ", " << (b).size() << ")"

struct GridCase {
  std::vector<int64_t> shape;
  std::string bc;
  el::FaceMean mean;
};

// Every boundary kind and mix, periodic axes of length 1, 2 and odd, both
// face means, and grids of fewer and more cells than a block of threads.
const std::vector<GridCase> kGrids = {
    {{7}, "dirichlet", el::FaceMean::kHarmonic},
    {{6, 5}, "periodic,neumann", el::FaceMean::kHarmonic},
    {{2, 4}, "periodic,dirichlet:neumann", el::FaceMean::kArithmetic},
    {{4, 3, 5}, "dirichlet:neumann,periodic,neumann:dirichlet", el::FaceMean::kHarmonic},
    {{3, 1, 4}, "neumann,periodic,dirichlet", el::FaceMean::kArithmetic},
    {{9, 7, 6}, "periodic,dirichlet:neumann,neumann", el::FaceMean::kArithmetic},
    {{301}, "periodic", el::FaceMean::kHarmonic},
};

EllipticGrid grid_of(const GridCase& c) {
  EllipticGrid g = el::test::box(fk::Dims(c.shape), c.bc);
  g.spacing[0] *= 1.3;  // anisotropic
  g.face_mean = c.mean;
  return g;
}

std::string name_of(const GridCase& c) {
  return fk::Dims(c.shape).str() + " " + c.bc;
}

// nb fields from σ and κ in each of the launcher's layouts.
struct FaceLayout {
  int64_t nb;
  bool sigma_batched;
  int kappa;  // 0 none, 1 shared, 2 batched
};
const FaceLayout kFaceLayouts[] = {{1, false, 0}, {2, true, 1}, {2, false, 2}, {3, true, 2}};

template <typename T>
void expect_face_system_equals_the_cpu() {
  fkemu_test::OrderScope restore;
  for (const GridCase& c : kGrids) {
    SCOPED_TRACE(name_of(c));
    const EllipticGrid eg = grid_of(c);
    const cu::StencilGrid g = cu::stencil_grid(eg);
    const int64_t n = eg.numel(), d = eg.ndim();
    for (const FaceLayout& L : kFaceLayouts) {
      SCOPED_TRACE("nb " + std::to_string(L.nb) + " kappa " + std::to_string(L.kappa));
      const std::vector<T> sigma = uniform<T>((L.sigma_batched ? L.nb : 1) * n, 0.3, 3.0, 1);
      const std::vector<T> kappa = uniform<T>((L.kappa == 2 ? L.nb : 1) * n, 0.0, 2.0, 2);
      const T* kp = L.kappa ? kappa.data() : nullptr;
      const FaceSystem<T> cpu =
          el::build_face_system<T>(eg, L.nb, sigma.data(), L.sigma_batched, kp, L.kappa == 2);
      for (fkemu::Order order : kOrders) {
        fkemu::set_order(order);
        // Exact sizes, every entry a sentinel: a write outside them is ASan's
        // to see, a cell left unwritten shows as -7.
        std::vector<T> faces(L.nb * d * n, T(-7)), diag(L.nb * n, T(-7)), inv(L.nb * n, T(-7));
        cu::emu::launch_face_system<T>(g, L.nb, sigma.data(), L.sigma_batched, kp, L.kappa == 2,
                                       faces.data(), diag.data(), inv.data(), nullptr);
        EXPECT_BITWISE(faces, cpu.faces);
        EXPECT_BITWISE(diag, cpu.diag);
        EXPECT_BITWISE(inv, cpu.inv_diag);
      }
    }
  }
}

TEST(EmulatedElliptic, FaceSystemEqualsTheCpuBitwiseF64) {
  expect_face_system_equals_the_cpu<double>();
}

TEST(EmulatedElliptic, FaceSystemEqualsTheCpuBitwiseF32) {
  expect_face_system_equals_the_cpu<float>();
}

// Shared σ (one gradient, the systems summed in order into one double) and
// batched σ (system s its own field), as accumulate_sigma_gradient adds them
// into a double buffer, rounded to T once.
template <typename T>
void expect_sigma_gradient_equals_the_cpu() {
  fkemu_test::OrderScope restore;
  for (const GridCase& c : kGrids) {
    SCOPED_TRACE(name_of(c));
    const EllipticGrid eg = grid_of(c);
    const cu::StencilGrid g = cu::stencil_grid(eg);
    const int64_t n = eg.numel(), ns = 3;
    const std::vector<T> sigma = uniform<T>(ns * n, 0.3, 3.0, 4);
    const std::vector<T> a = uniform<T>(ns * n, -1, 1, 5), b = uniform<T>(ns * n, -1, 1, 6);
    std::vector<double> shared(n, 0.0), batched(ns * n, 0.0);
    for (int64_t s = 0; s < ns; ++s) {
      el::accumulate_sigma_gradient<T>(eg, sigma.data(), a.data() + s * n, b.data() + s * n, -1.0,
                                       shared.data());
      el::accumulate_sigma_gradient<T>(eg, sigma.data() + s * n, a.data() + s * n, b.data() + s * n,
                                       0.5, batched.data() + s * n);
    }
    const std::vector<T> shared_want(shared.begin(), shared.end()),
        batched_want(batched.begin(), batched.end());
    for (fkemu::Order order : kOrders) {
      fkemu::set_order(order);
      std::vector<T> shared_got(n, T(-7)), batched_got(ns * n, T(-7));
      cu::emu::launch_sigma_gradient<T>(g, ns, false, sigma.data(), a.data(), b.data(), -1.0,
                                        shared_got.data(), nullptr);
      cu::emu::launch_sigma_gradient<T>(g, ns, true, sigma.data(), a.data(), b.data(), 0.5,
                                        batched_got.data(), nullptr);
      EXPECT_BITWISE(shared_got, shared_want);
      EXPECT_BITWISE(batched_got, batched_want);
    }
  }
}

TEST(EmulatedElliptic, SigmaGradientEqualsTheCpuBitwiseF64) {
  expect_sigma_gradient_equals_the_cpu<double>();
}

TEST(EmulatedElliptic, SigmaGradientEqualsTheCpuBitwiseF32) {
  expect_sigma_gradient_equals_the_cpu<float>();
}

struct Problem {
  GridCase grid;
  double kappa_lo, kappa_hi;  // κ ~ U(lo, hi); none when hi is 0
};

// A system of nb fields (σ batched when nb > 1) and ns right-hand sides, its
// face system the CPU's (launch_face_system's bits, checked above).
template <typename T>
struct System {
  EllipticGrid eg;
  cu::StencilGrid g;
  int64_t ns, nb;
  FaceSystem<T> sys;
  std::vector<T> b;
};

template <typename T>
System<T> system_of(const Problem& p, int64_t ns, int64_t nb, unsigned seed) {
  System<T> s{grid_of(p.grid), {}, ns, nb, {}, {}};
  s.g = cu::stencil_grid(s.eg);
  const int64_t n = s.g.numel;
  const std::vector<T> sigma = uniform<T>(nb * n, 0.3, 3.0, seed);
  const std::vector<T> kappa = uniform<T>(nb * n, p.kappa_lo, p.kappa_hi, seed + 1);
  s.sys = el::build_face_system<T>(s.eg, nb, sigma.data(), nb > 1,
                                   p.kappa_hi > 0 ? kappa.data() : nullptr, nb > 1);
  s.b = uniform<T>(ns * n, -1, 1, seed + 2);
  return s;
}

// The fields' hierarchies in the launchers' layout: (nb, multigrid_hierarchy_size)
// of T and (nb, multigrid_cholesky_size) doubles.
template <typename T>
struct Hierarchy {
  std::vector<T> coarse;
  std::vector<double> cholesky;
};

// At least one element, as elliptic_device.cpp allocates it: a grid that is
// its own coarsest level has no coarse level, and a null hierarchy would
// select Jacobi (MultigridBuffers); the spare sentinel must stay untouched.
template <typename T>
Hierarchy<T> sentinel_hierarchy(const System<T>& s) {
  return {std::vector<T>(std::max<int64_t>(1, s.nb * cu::multigrid_hierarchy_size(s.g)), T(-7)),
          std::vector<double>(s.nb * cu::multigrid_cholesky_size(s.g), -7.0)};
}

template <typename T>
Hierarchy<T> device_setup(const System<T>& s) {
  Hierarchy<T> h = sentinel_hierarchy(s);
  cu::emu::launch_multigrid_setup<T>(s.g, s.nb, s.sys.faces.data(), s.sys.diag.data(),
                                     h.coarse.data(), h.cholesky.data(), nullptr);
  return h;
}

// The setup's host emulation: block_multigrid_setup over HostBlock, field by field.
template <typename T>
Hierarchy<T> emulated_setup(const System<T>& s) {
  Hierarchy<T> h = sentinel_hierarchy(s);
  const int64_t n = s.g.numel, hs = cu::multigrid_hierarchy_size(s.g),
                cs = cu::multigrid_cholesky_size(s.g);
  cu::HostBlock ex;
  for (int64_t f = 0; f < s.nb; ++f)
    cu::block_multigrid_setup<T>(ex, s.g, s.sys.faces.data() + f * s.g.ndim * n,
                                 s.sys.diag.data() + f * n, h.coarse.data() + f * hs,
                                 h.cholesky.data() + f * cs);
  return h;
}

// 1-, 2- and 3-D, Neumann with κ, Dirichlet without, periodic axes, mixed
// sides, odd sizes (a last aggregate of one cell), an axis of one cell, a
// periodic axis of 2 cells on the coarse level, grids of 3 levels and a grid
// that is its own coarsest level.
const std::vector<Problem> kMultigridProblems = {
    {{{33, 17}, "dirichlet", el::FaceMean::kHarmonic}, 0, 0},
    {{{9, 7, 6}, "periodic,dirichlet:neumann,neumann", el::FaceMean::kArithmetic}, 0.0, 1.0},
    {{{200}, "neumann:dirichlet", el::FaceMean::kHarmonic}, 0, 0},
    {{{11, 16}, "periodic,neumann", el::FaceMean::kArithmetic}, 0.05, 0.2},
    {{{7, 5}, "dirichlet:neumann,neumann", el::FaceMean::kHarmonic}, 0, 0},
    {{{5, 9, 3}, "neumann", el::FaceMean::kHarmonic}, 0.002, 0.05},
    {{{150, 1, 3}, "neumann,periodic,dirichlet", el::FaceMean::kArithmetic}, 0, 0},
    {{{4, 40}, "periodic,dirichlet", el::FaceMean::kHarmonic}, 0, 0},
};

template <typename T>
void expect_setup_equals_the_cpu_multigrid() {
  fkemu_test::OrderScope restore;
  for (const Problem& p : kMultigridProblems) {
    SCOPED_TRACE(name_of(p.grid));
    const System<T> s = system_of<T>(p, 0, 2, 11);
    const int64_t n = s.g.numel, hs = cu::multigrid_hierarchy_size(s.g),
                  cs = cu::multigrid_cholesky_size(s.g);
    // The CPU's hierarchy of each field in the launcher's layout.
    Hierarchy<T> want = sentinel_hierarchy(s);
    for (int64_t f = 0; f < s.nb; ++f) {
      const el::Multigrid<T> mg = el::build_multigrid<T>(
          s.eg, s.sys.faces.data() + f * s.g.ndim * n, s.sys.diag.data() + f * n);
      ASSERT_EQ(cu::multigrid_levels(s.g), static_cast<int>(mg.levels.size()));
      for (size_t l = 1; l < mg.levels.size(); ++l) {
        const el::MultigridLevel<T>& L = mg.levels[l];
        auto at = want.coarse.begin() + f * hs + cu::coarse_offset(s.g, static_cast<int>(l), true);
        at = std::copy(L.faces.begin(), L.faces.end(), at);
        at = std::copy(L.diag.begin(), L.diag.end(), at);
        std::copy(L.inv_diag.begin(), L.inv_diag.end(), at);
      }
      ASSERT_EQ(static_cast<int64_t>(mg.coarse_cholesky.size()), cs);
      std::copy(mg.coarse_cholesky.begin(), mg.coarse_cholesky.end(),
                want.cholesky.begin() + f * cs);
    }
    for (fkemu::Order order : kOrders) {
      fkemu::set_order(order);
      const Hierarchy<T> got = device_setup(s);
      EXPECT_BITWISE(got.coarse, want.coarse);
      EXPECT_BITWISE(got.cholesky, want.cholesky);
    }
  }
}

TEST(EmulatedElliptic, MultigridSetupEqualsTheCpuHierarchyBitwiseF64) {
  expect_setup_equals_the_cpu_multigrid<double>();
}

TEST(EmulatedElliptic, MultigridSetupEqualsTheCpuHierarchyBitwiseF32) {
  expect_setup_equals_the_cpu_multigrid<float>();
}

// A singular field (pure Neumann, no κ), which build_multigrid refuses: its
// factor gets a NaN pivot, as the host emulation's does, next to a regular
// field whose hierarchy is untouched by it.
TEST(EmulatedElliptic, MultigridSetupOfASingularFieldHasANanPivot) {
  fkemu_test::OrderScope restore;
  const System<double> s =
      system_of<double>({{{12, 10}, "neumann", el::FaceMean::kHarmonic}, 0, 0}, 0, 2, 41);
  const Hierarchy<double> want = emulated_setup(s);
  EXPECT_TRUE(std::isnan(want.cholesky.back()));
  for (fkemu::Order order : kOrders) {
    fkemu::set_order(order);
    const Hierarchy<double> got = device_setup(s);
    EXPECT_BITWISE(got.coarse, want.coarse);
    EXPECT_BITWISE(got.cholesky, want.cholesky);
  }
}

enum class Out { kNone, kSeparate, kAliased };  // out null, its own buffer, or x itself

template <typename T>
struct Solve {
  std::vector<T> x, out;
  std::vector<double> stats;  // (ns, kCgStats)
};

// launch_block_pcg on exact-size buffers; h null: Jacobi.
template <typename T>
Solve<T> device_pcg(const System<T>& s, const cu::CgControl& c, const std::vector<T>& x0,
                    const Hierarchy<T>* h, Out out_mode) {
  const int64_t n = s.g.numel;
  Solve<T> r{x0, std::vector<T>(out_mode == Out::kSeparate ? s.ns * n : 0, T(-7)),
             std::vector<double>(s.ns * cu::kCgStats, -7.0)};
  std::vector<T> work(5 * s.ns * n, T(-7)), mg_work;
  cu::MultigridBuffers<T> mg;
  if (h) {
    mg_work.assign(s.ns * cu::multigrid_work_size(s.g), T(-7));
    mg = {h->coarse.data(), h->cholesky.data(), mg_work.data()};
  }
  T* out = out_mode == Out::kSeparate  ? r.out.data()
           : out_mode == Out::kAliased ? r.x.data()
                                       : nullptr;
  cu::emu::launch_block_pcg<T>(s.g, s.ns, s.nb, s.sys.faces.data(), s.sys.diag.data(),
                               s.sys.inv_diag.data(), s.b.data(), r.x.data(), out, work.data(),
                               r.stats.data(), c, mg, nullptr);
  return r;
}

// The documented host emulation: block_pcg over HostBlock for each system
// (field nb == 1 ? 0 : s), the V-cycle's t0 the CG's q as the kernel passes it.
template <typename T>
Solve<T> emulated_pcg(const System<T>& s, const cu::CgControl& c, const std::vector<T>& x0,
                      const Hierarchy<T>* h) {
  const int64_t n = s.g.numel, d = s.g.ndim;
  Solve<T> r{x0, std::vector<T>(s.ns * n), std::vector<double>(s.ns * cu::kCgStats)};
  std::vector<T> cg(5 * n), mg_work(h ? cu::multigrid_work_size(s.g) : 0);
  cu::HostBlock ex;
  for (int64_t k = 0; k < s.ns; ++k) {
    const int64_t f = s.nb == 1 ? 0 : k;
    const cu::CgScratch<T> w{cg.data(), cg.data() + n, cg.data() + 2 * n, cg.data() + 3 * n,
                             cg.data() + 4 * n};
    const T *fa = s.sys.faces.data() + f * d * n, *di = s.sys.diag.data() + f * n,
            *inv = s.sys.inv_diag.data() + f * n, *b = s.b.data() + k * n;
    T* x = r.x.data() + k * n;
    cu::CgOutcome o;
    if (h) {
      const cu::MultigridPrecond<T> m{s.g,
                                      fa,
                                      di,
                                      inv,
                                      h->coarse.data() + f * cu::multigrid_hierarchy_size(s.g),
                                      h->cholesky.data() + f * cu::multigrid_cholesky_size(s.g),
                                      mg_work.data(),
                                      w.q};
      o = cu::block_pcg<T>(ex, s.g, fa, di, inv, b, x, r.out.data() + k * n, w, c, m);
    } else {
      o = cu::block_pcg<T>(ex, s.g, fa, di, inv, b, x, r.out.data() + k * n, w, c);
    }
    double* st = r.stats.data() + k * cu::kCgStats;
    st[cu::kCgIterations] = static_cast<double>(o.iterations);
    st[cu::kCgWarmUsed] = o.warm_used ? 1.0 : 0.0;
    st[cu::kCgConverged] = o.converged ? 1.0 : 0.0;
    st[cu::kCgResidual] = o.residual;
  }
  return r;
}

template <typename T>
cu::CgControl control_of(const EllipticGrid& eg, const el::CgOptions& o, bool warm) {
  cu::CgControl c;
  c.max_iter = el::resolved_max_iter(eg, o);
  c.check_every = o.check_every;
  c.tol = std::max(o.tol, 8.0 * std::numeric_limits<T>::epsilon());
  c.atol = o.atol;
  c.project = o.project;
  c.warm = warm;
  return c;
}

// The device solve, in both thread orders, against the emulation bit for bit:
// x, the copy in out, the statistics. Returns the device's.
template <typename T>
Solve<T> expect_device_equals_emulation(const System<T>& s, const cu::CgControl& c,
                                        const std::vector<T>& x0, bool multigrid) {
  fkemu_test::OrderScope restore;
  const Hierarchy<T> h_want = multigrid ? emulated_setup(s) : Hierarchy<T>();
  const Solve<T> want = emulated_pcg(s, c, x0, multigrid ? &h_want : nullptr);
  // Ascending with out its own buffer, descending with out == x (out null:
  // BlockPcgStopsAtTheIterationCap).
  Solve<T> got;
  for (fkemu::Order order : kOrders) {
    fkemu::set_order(order);
    const bool ascending = order == fkemu::Order::kAscending;
    SCOPED_TRACE(ascending ? "ascending" : "descending");
    const Hierarchy<T> h = multigrid ? device_setup(s) : Hierarchy<T>();
    const Solve<T> run =
        device_pcg(s, c, x0, multigrid ? &h : nullptr, ascending ? Out::kSeparate : Out::kAliased);
    EXPECT_BITWISE(run.x, want.x);
    EXPECT_BITWISE(run.stats, want.stats);
    if (ascending) {
      EXPECT_BITWISE(run.out, want.x);
      got = run;
    }
  }
  return got;
}

// ‖b − A x‖ / ‖b‖ of system k recomputed on the host (apply_face_system, in
// double from there on; projected: both with their means removed).
template <typename T>
double host_residual(const System<T>& s, const std::vector<T>& x, int64_t k, bool project) {
  const int64_t n = s.g.numel;
  std::vector<T> q(n);
  el::apply_face_system<T>(s.eg, s.sys, s.nb == 1 ? 0 : k, x.data() + k * n, q.data());
  std::vector<double> r(n), b(n);
  double rm = 0, bm = 0;
  for (int64_t i = 0; i < n; ++i) {
    b[i] = double(s.b[k * n + i]);
    r[i] = b[i] - double(q[i]);
    rm += r[i] / double(n);
    bm += b[i] / double(n);
  }
  double rr = 0, bb = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double ri = project ? r[i] - rm : r[i], bi = project ? b[i] - bm : b[i];
    rr += ri * ri;
    bb += bi * bi;
  }
  return std::sqrt(rr / bb);
}

double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

template <typename T>
std::vector<double> widened(const std::vector<T>& v) {
  return std::vector<double>(v.begin(), v.end());
}

double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::fabs(x));
  return m;
}

double stat(const std::vector<double>& stats, int64_t k, cu::CgStat which) {
  return stats[k * cu::kCgStats + which];
}

// Each system converged to its tolerance, the solution pcg_solve's to
// rel_tol of its size, the statistics' residual the host's recomputed one.
template <typename T>
void expect_solved_as_the_cpu(const System<T>& s, const Solve<T>& got, const el::CgOptions& o,
                              double rel_tol, double residual_bound) {
  std::vector<T> x_cpu(s.ns * s.g.numel, T(0));
  const el::CgStats st = el::pcg_solve<T>(s.eg, s.sys, s.b.data(), x_cpu.data(), s.ns, false, o);
  EXPECT_EQ(st.unconverged, 0);
  const std::vector<double> xd = widened(got.x), xc = widened(x_cpu);
  EXPECT_LE(max_abs_diff(xd, xc), rel_tol * max_abs(xc));
  for (int64_t k = 0; k < s.ns; ++k) {
    SCOPED_TRACE("system " + std::to_string(k));
    EXPECT_EQ(stat(got.stats, k, cu::kCgConverged), 1.0);
    EXPECT_EQ(stat(got.stats, k, cu::kCgWarmUsed), 0.0);
    EXPECT_GT(stat(got.stats, k, cu::kCgIterations), 0.0);
    EXPECT_LE(std::fabs(stat(got.stats, k, cu::kCgIterations) - double(st.max_iterations)),
              o.check_every + 1.0);
    const double res = host_residual(s, got.x, k, o.project);
    EXPECT_LE(res, residual_bound);
    EXPECT_LE(stat(got.stats, k, cu::kCgResidual), residual_bound);
    EXPECT_NEAR(stat(got.stats, k, cu::kCgResidual), res, 0.05 * residual_bound);
  }
}

struct PcgCase {
  std::string name;  // the test's
  Problem problem;
  int64_t ns, nb;
  int64_t check_every;
  bool multigrid;
};

// The pure Neumann / periodic case without κ: A's null space is the constants.
bool projected(const Problem& p) {
  return p.kappa_hi == 0 && p.grid.bc.find("dirichlet") == std::string::npos;
}

// One case in f64 and f32, each against its emulation (both thread orders)
// and against pcg_solve.
template <typename T>
void expect_pcg_solves(const PcgCase& pc, double tol, double rel_tol, double residual_bound) {
  SCOPED_TRACE(sizeof(T) == 8 ? "f64" : "f32");
  const System<T> s = system_of<T>(pc.problem, pc.ns, pc.nb, 31);
  el::CgOptions o;
  o.tol = tol;
  o.check_every = pc.check_every;
  o.project = projected(pc.problem);
  if (pc.multigrid) o.precond = el::Preconditioner::kMultigrid;
  const std::vector<T> x0(s.ns * s.g.numel, T(3));  // cold: ignored
  const Solve<T> got =
      expect_device_equals_emulation(s, control_of<T>(s.eg, o, false), x0, pc.multigrid);
  expect_solved_as_the_cpu(s, got, o, rel_tol, residual_bound);
}

void PrintTo(const PcgCase& c, std::ostream* os) {
  *os << c.name;
}

class EmulatedEllipticPcg : public testing::TestWithParam<PcgCase> {};

TEST_P(EmulatedEllipticPcg, EqualsItsEmulationAndSolvesAsTheCpu) {
  expect_pcg_solves<double>(GetParam(), 1e-10, 1e-8, 2e-10);
  expect_pcg_solves<float>(GetParam(), 1e-5, 2e-3, 1e-4);
}

// Jacobi: 2-D with several cells a thread, 3-D with fewer cells than threads
// and batched fields, 1-D with a partial second round of cells, tiny with
// three fields, the projected case (pure Neumann and periodic). κ keeps most
// of them well conditioned: an iteration costs the emulator thousands of
// fiber switches, and what the test is after is every phase, not many
// iterations.
// The V-cycle: shared and batched fields, 3 levels, 2 levels, a periodic
// axis of 2 cells on the coarse level, a grid that is its own coarsest level
// (no coarse level: hierarchy and V-cycle scratch of size 0).
INSTANTIATE_TEST_SUITE_P(
    Cases, EmulatedEllipticPcg,
    testing::Values(
        PcgCase{"Jacobi2dSeveralCellsAThread",
                {{{23, 17}, "dirichlet", el::FaceMean::kHarmonic}, 300, 900},
                2,
                1,
                1,
                false},
        PcgCase{
            "Jacobi3dBatchedFields",
            {{{7, 6, 5}, "periodic,dirichlet:neumann,neumann", el::FaceMean::kArithmetic}, 20, 60},
            2,
            2,
            3,
            false},
        PcgCase{"Jacobi1d",
                {{{300}, "neumann:dirichlet", el::FaceMean::kHarmonic}, 5e4, 2e5},
                1,
                1,
                4,
                false},
        PcgCase{"JacobiTinyThreeFields",
                {{{5, 3}, "dirichlet:neumann,periodic", el::FaceMean::kHarmonic}, 0, 0},
                3,
                3,
                1,
                false},
        PcgCase{"JacobiProjected",
                {{{9, 7}, "neumann,periodic", el::FaceMean::kHarmonic}, 0, 0},
                1,
                1,
                2,
                false},
        PcgCase{"Multigrid2dThreeLevels",
                {{{33, 17}, "dirichlet", el::FaceMean::kHarmonic}, 0, 0},
                2,
                1,
                1,
                true},
        PcgCase{"Multigrid3dBatchedFields",
                {{{9, 7, 6}, "periodic,dirichlet:neumann,neumann", el::FaceMean::kArithmetic},
                 0.0,
                 1.0},
                2,
                2,
                2,
                true},
        PcgCase{"MultigridOwnCoarsestLevel",
                {{{7, 5}, "dirichlet:neumann,neumann", el::FaceMean::kHarmonic}, 0, 0},
                1,
                1,
                1,
                true},
        PcgCase{"Multigrid3dNeumannWithKappa",
                {{{5, 9, 3}, "neumann", el::FaceMean::kHarmonic}, 0.002, 0.05},
                1,
                1,
                1,
                true},
        PcgCase{"MultigridCoarsePeriodicPair",
                {{{4, 40}, "periodic,dirichlet", el::FaceMean::kHarmonic}, 0, 0},
                1,
                1,
                1,
                true}),
    [](const testing::TestParamInfo<PcgCase>& info) { return info.param.name; });

// Systems done before their first iteration: b = 0 (x := 0, even from a
// warm start), a constant b in the projected case (zero once its mean is
// gone), atol above ‖b‖ (x := 0), and a warm start at the solution (taken,
// no iteration). Next to them in the same launch, a regular system.
TEST(EmulatedElliptic, BlockPcgStopsAtOnceWhereNothingIsLeftToSolve) {
  const Problem dir{{{9, 8}, "dirichlet", el::FaceMean::kHarmonic}, 300, 900};
  el::CgOptions o;
  o.tol = 1e-10;
  {
    SCOPED_TRACE("b = 0");
    System<double> s = system_of<double>(dir, 2, 1, 51);
    std::fill(s.b.begin() + s.g.numel, s.b.end(), 0.0);
    const std::vector<double> x0(2 * s.g.numel, 5.0);
    const Solve<double> got =
        expect_device_equals_emulation(s, control_of<double>(s.eg, o, true), x0, false);
    EXPECT_EQ(std::vector<double>(got.x.begin() + s.g.numel, got.x.end()),
              std::vector<double>(s.g.numel, 0.0));
    EXPECT_EQ(stat(got.stats, 1, cu::kCgIterations), 0.0);
    EXPECT_EQ(stat(got.stats, 1, cu::kCgConverged), 1.0);
    EXPECT_EQ(stat(got.stats, 1, cu::kCgResidual), 0.0);
    EXPECT_EQ(stat(got.stats, 0, cu::kCgConverged), 1.0);
    EXPECT_LE(host_residual(s, got.x, 0, false), 2e-10);
  }
  {
    SCOPED_TRACE("projected constant b");
    const Problem neu{{{6, 7}, "neumann", el::FaceMean::kHarmonic}, 0, 0};
    System<double> s = system_of<double>(neu, 2, 1, 52);
    std::fill(s.b.begin(), s.b.begin() + s.g.numel, 0.5);
    el::CgOptions p = o;
    p.project = true;
    const Solve<double> got = expect_device_equals_emulation(
        s, control_of<double>(s.eg, p, false), std::vector<double>(2 * s.g.numel), false);
    EXPECT_EQ(std::vector<double>(got.x.begin(), got.x.begin() + s.g.numel),
              std::vector<double>(s.g.numel, 0.0));
    EXPECT_EQ(stat(got.stats, 0, cu::kCgIterations), 0.0);
    EXPECT_LE(host_residual(s, got.x, 1, true), 2e-10);
  }
  {
    SCOPED_TRACE("atol above |b|");
    const System<double> s = system_of<double>(dir, 1, 1, 53);
    el::CgOptions a = o;
    a.atol = 1e3;
    const Solve<double> got = expect_device_equals_emulation(
        s, control_of<double>(s.eg, a, false), std::vector<double>(s.g.numel, 5.0), false);
    EXPECT_EQ(got.x, std::vector<double>(s.g.numel, 0.0));
    EXPECT_EQ(stat(got.stats, 0, cu::kCgIterations), 0.0);
    EXPECT_EQ(stat(got.stats, 0, cu::kCgConverged), 1.0);
    EXPECT_EQ(stat(got.stats, 0, cu::kCgResidual), 1.0);  // x = 0: ‖b‖ / ‖b‖
  }
  {
    SCOPED_TRACE("warm at the solution");
    const System<double> s = system_of<double>(dir, 2, 1, 54);
    std::vector<double> x(2 * s.g.numel, 0.0);
    el::pcg_solve<double>(s.eg, s.sys, s.b.data(), x.data(), 2, false, o);
    // A looser tolerance than the solution's, a bad warm start for system 1
    // (refused: the cold solve).
    el::CgOptions w = o;
    w.tol = 1e-6;
    std::fill(x.begin() + s.g.numel, x.end(), 1e6);
    const Solve<double> got =
        expect_device_equals_emulation(s, control_of<double>(s.eg, w, true), x, false);
    EXPECT_EQ(stat(got.stats, 0, cu::kCgWarmUsed), 1.0);
    EXPECT_EQ(stat(got.stats, 0, cu::kCgIterations), 0.0);
    EXPECT_EQ(stat(got.stats, 0, cu::kCgConverged), 1.0);
    EXPECT_EQ(std::vector<double>(got.x.begin(), got.x.begin() + s.g.numel),
              std::vector<double>(x.begin(), x.begin() + s.g.numel));
    EXPECT_EQ(stat(got.stats, 1, cu::kCgWarmUsed), 0.0);
    EXPECT_GT(stat(got.stats, 1, cu::kCgIterations), 0.0);
    const Solve<double> cold =
        device_pcg<double>(s, control_of<double>(s.eg, w, false), x, nullptr, Out::kNone);
    EXPECT_BITWISE(std::vector<double>(got.x.begin() + s.g.numel, got.x.end()),
                   std::vector<double>(cold.x.begin() + s.g.numel, cold.x.end()));
  }
}

// The iteration cap: every system stops at max_iter unconverged (tested at
// the cap though check_every does not divide it), its iterate pcg_solve's to
// rounding, the same without out; a warm start at a partial iterate
// continues it.
TEST(EmulatedElliptic, BlockPcgStopsAtTheIterationCap) {
  const System<double> s = system_of<double>(
      {{{23, 17}, "dirichlet:neumann,neumann", el::FaceMean::kHarmonic}, 0, 0}, 2, 1, 61);
  el::CgOptions o;
  o.tol = 1e-12;
  o.max_iter = 5;
  o.check_every = 3;
  const std::vector<double> zero(2 * s.g.numel, 0.0);
  const Solve<double> got =
      expect_device_equals_emulation(s, control_of<double>(s.eg, o, false), zero, false);
  const Solve<double> no_out =
      device_pcg<double>(s, control_of<double>(s.eg, o, false), zero, nullptr, Out::kNone);
  EXPECT_BITWISE(no_out.x, got.x);
  EXPECT_BITWISE(no_out.stats, got.stats);
  std::vector<double> x_cpu(2 * s.g.numel, 0.0);
  const el::CgStats st = el::pcg_solve<double>(s.eg, s.sys, s.b.data(), x_cpu.data(), 2, false, o);
  EXPECT_EQ(st.unconverged, 2);
  EXPECT_LE(max_abs_diff(got.x, x_cpu), 1e-12 * max_abs(x_cpu));
  for (int64_t k = 0; k < 2; ++k) {
    EXPECT_EQ(stat(got.stats, k, cu::kCgIterations), 5.0);
    EXPECT_EQ(stat(got.stats, k, cu::kCgConverged), 0.0);
    const double res = host_residual(s, got.x, k, false);
    EXPECT_GT(res, 1e-6);
    EXPECT_NEAR(stat(got.stats, k, cu::kCgResidual), res, 1e-12);
  }
  // Warm from the capped iterate: taken, and it improves.
  const Solve<double> again =
      expect_device_equals_emulation(s, control_of<double>(s.eg, o, true), got.x, false);
  for (int64_t k = 0; k < 2; ++k) {
    EXPECT_EQ(stat(again.stats, k, cu::kCgWarmUsed), 1.0);
    EXPECT_LT(stat(again.stats, k, cu::kCgResidual), stat(got.stats, k, cu::kCgResidual));
  }
}

// A singular field (pure Neumann, no κ, not projected), which the CPU
// refuses: its NaN pivot ends the CG at the breakdown test after one
// iteration, unconverged, x left at 0.
TEST(EmulatedElliptic, MultigridPcgOnASingularFieldEndsAtTheBreakdownTest) {
  const System<double> s =
      system_of<double>({{{12, 10}, "neumann", el::FaceMean::kHarmonic}, 0, 0}, 1, 1, 81);
  el::CgOptions o;
  const Solve<double> got = expect_device_equals_emulation(
      s, control_of<double>(s.eg, o, false), std::vector<double>(s.g.numel, 1.0), true);
  EXPECT_EQ(stat(got.stats, 0, cu::kCgIterations), 1.0);
  EXPECT_EQ(stat(got.stats, 0, cu::kCgConverged), 0.0);
  EXPECT_EQ(got.x, std::vector<double>(s.g.numel, 0.0));
}

// No fields or no systems: nothing is written (the CG and the setup launch
// nothing; the face system and the gradient launch one block with no cell).
TEST(EmulatedElliptic, EmptyBatchesWriteNothing) {
  const EllipticGrid eg = el::test::box(fk::Dims({5, 4}), "dirichlet");
  const cu::StencilGrid g = cu::stencil_grid(eg);
  std::vector<double> sentinel(8, -7.0), faces = sentinel, diag = sentinel, inv = sentinel;
  const std::vector<double> sigma(eg.numel(), 1.0);
  cu::emu::launch_face_system<double>(g, 0, sigma.data(), true, nullptr, false, faces.data(),
                                      diag.data(), inv.data(), nullptr);
  cu::emu::launch_multigrid_setup<double>(g, 0, nullptr, nullptr, faces.data(), diag.data(),
                                          nullptr);
  cu::emu::launch_sigma_gradient<double>(g, 0, true, nullptr, nullptr, nullptr, 1.0, inv.data(),
                                         nullptr);
  cu::emu::launch_block_pcg<double>(g, 0, 1, sigma.data(), sigma.data(), sigma.data(), nullptr,
                                    nullptr, nullptr, nullptr, nullptr, cu::CgControl{},
                                    cu::MultigridBuffers<double>{}, nullptr);
  EXPECT_EQ(faces, sentinel);
  EXPECT_EQ(diag, sentinel);
  EXPECT_EQ(inv, sentinel);
}

}  // namespace
