#include "nefi/operators/heat/heat_system.h"

#include <algorithm>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/join.h"
#include "fk/ops/reduce.h"
#include "fk/profile.h"
#include "nefi/operators/heat/heat_device.h"
#include "nefi/real_dispatch.h"

namespace nefi::heat {
namespace {

void check_grid(const fk::Tensor& t, const StepGeometry& g, const char* where) {
  FK_CHECK(t.shape() == g.shape(), where, "a grid of shape " + g.shape().str(), t.shape().str());
  FK_CHECK(t.dtype() == fk::DType::F32 || t.dtype() == fk::DType::F64, where, "f32 or f64",
           fk::name(t.dtype()));
  FK_CHECK(t.device().is_cpu(), where, "a CPU tensor", t.device().str());
}

fk::Tensor contiguous_detached(const fk::Tensor& t) {
  return t.is_contiguous() ? t.detach() : t.detach().contiguous();
}

// The face diffusivity: the harmonic mean 2 a b / (a + b) (NeFTY Prop. 1) or,
// with arithmetic faces, (a + b) / 2.
template <typename T>
T face(T a, T b, bool arithmetic) {
  return arithmetic ? (a + b) * T(0.5) : a * b * T(2) / (a + b);
}

fk::Tensor face_ops(const fk::Tensor& a, const fk::Tensor& b, bool arithmetic) {
  if (arithmetic) return fk::mul(fk::add(a, b), 0.5);
  return fk::div(fk::mul(fk::mul(a, b), 2.0), fk::add(a, b));
}

}  // namespace

HeatSystem build_system(const fk::Tensor& alpha_in, const StepGeometry& g) {
  check_grid(alpha_in, g, "nefi::heat::build_system");
  fk::profile::OpScope scope("heat_build_system");
  const fk::Tensor alpha = contiguous_detached(alpha_in);
  const fk::DType dt = alpha.dtype();
  HeatSystem s;
  s.weights = fk::empty({kNeighbours, g.nx, g.ny, g.nz}, {dt});
  s.diag = fk::empty(g.shape(), {dt});
  s.inv_diag = fk::empty(g.shape(), {dt});
  dispatch_real(dt, [&](auto tag) {
    using T = decltype(tag);
    const T* a = alpha.data<T>();
    T* w = s.weights.data<T>();
    T* d = s.diag.data<T>();
    T* di = s.inv_diag.data<T>();
    const int64_t n = g.numel(), nx = g.nx, ny = g.ny, nz = g.nz;
    const T ix = T(1) / T(g.hx * g.hx), iy = T(1) / T(g.hy * g.hy), iz = T(1) / T(g.hz * g.hz);
    const T step = T(g.dt), sink = T(g.sink);
    const bool af = g.arithmetic_faces;
    const bool wrap = !g.lateral_neumann;  // the side faces wrap (periodic)
    for (int64_t x = 0; x < nx; ++x) {
      const int64_t xm = (x + nx - 1) % nx, xp = (x + 1) % nx;
      for (int64_t y = 0; y < ny; ++y) {
        const int64_t ym = (y + ny - 1) % ny, yp = (y + 1) % ny;
        for (int64_t z = 0; z < nz; ++z) {
          const int64_t i = (x * ny + y) * nz + z;
          const T ai = a[i];
          T f[kNeighbours];
          f[0] = wrap || x > 0 ? face(a[(xm * ny + y) * nz + z], ai, af) * ix : T(0);
          f[1] = wrap || x + 1 < nx ? face(ai, a[(xp * ny + y) * nz + z], af) * ix : T(0);
          f[2] = wrap || y > 0 ? face(a[(x * ny + ym) * nz + z], ai, af) * iy : T(0);
          f[3] = wrap || y + 1 < ny ? face(ai, a[(x * ny + yp) * nz + z], af) * iy : T(0);
          f[4] = z > 0 ? face(a[i - 1], ai, af) * iz : T(0);
          f[5] = z + 1 < nz ? face(ai, a[i + 1], af) * iz : T(0);
          T sum = f[0] + f[1] + f[2] + f[3] + f[4] + f[5];
          if (z + 1 == nz) sum = sum + sink;
          const T diag = sum * step + T(1);
          d[i] = diag;
          di[i] = T(1) / diag;
          for (int j = 0; j < kNeighbours; ++j) w[j * n + i] = f[j] * step / diag;
        }
      }
    }
  });
  return s;
}

HeatSystem build_system_ops(const fk::Tensor& alpha, const StepGeometry& g) {
  check_grid(alpha, g, "nefi::heat::build_system_ops");
  const fk::DType dt = alpha.dtype();
  const double ix = 1.0 / (g.hx * g.hx), iy = 1.0 / (g.hy * g.hy), iz = 1.0 / (g.hz * g.hz);
  // Faces between the last z layer and the (wrapped) first do not exist.
  fk::Tensor inner_z = fk::ones(g.shape(), {dt});
  fk::Tensor last = inner_z.narrow(2, g.nz - 1, 1);
  fk::fill_(last, 0.0);
  fk::Tensor xp = fk::mul(face_ops(alpha, fk::roll(alpha, {-1}, {0}), g.arithmetic_faces), ix);
  fk::Tensor yp = fk::mul(face_ops(alpha, fk::roll(alpha, {-1}, {1}), g.arithmetic_faces), iy);
  if (g.lateral_neumann) {  // the + faces of the last x plane and y row are the box's sides
    fk::Tensor inner_x = fk::ones(g.shape(), {dt}), inner_y = fk::ones(g.shape(), {dt});
    fk::Tensor side_x = inner_x.narrow(0, g.nx - 1, 1), side_y = inner_y.narrow(1, g.ny - 1, 1);
    fk::fill_(side_x, 0.0);
    fk::fill_(side_y, 0.0);
    xp = fk::mul(xp, inner_x);
    yp = fk::mul(yp, inner_y);
  }
  const fk::Tensor zp = fk::mul(
      fk::mul(face_ops(alpha, fk::roll(alpha, {-1}, {2}), g.arithmetic_faces), iz), inner_z);
  const fk::Tensor face[kNeighbours] = {fk::roll(xp, {1}, {0}), xp, fk::roll(yp, {1}, {1}), yp,
                                        fk::roll(zp, {1}, {2}), zp};
  fk::Tensor sum = face[0];
  for (int j = 1; j < kNeighbours; ++j) sum = fk::add(sum, face[j]);
  if (g.sink != 0) {
    fk::Tensor back = fk::zeros(g.shape(), {dt});
    fk::Tensor plane = back.narrow(2, g.nz - 1, 1);
    fk::fill_(plane, g.sink);
    sum = fk::add(sum, back);
  }
  HeatSystem s;
  s.diag = fk::add(fk::mul(sum, g.dt), 1.0);
  s.inv_diag = fk::div(fk::ones_like(s.diag), s.diag);
  std::vector<fk::Tensor> w;
  for (int j = 0; j < kNeighbours; ++j) w.push_back(fk::div(fk::mul(face[j], g.dt), s.diag));
  s.weights = fk::stack(w, 0);
  return s;
}

fk::Tensor gershgorin_bound(const HeatSystem& s) {
  fk::profile::OpScope scope("heat_gershgorin_bound");
  const fk::Tensor w = contiguous_detached(s.weights);
  fk::Tensor rho = fk::zeros({}, {w.dtype()});
  dispatch_real(w.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = w.data<T>();
    const int64_t n = w.numel() / kNeighbours;
    T best = 0;
    for (int64_t i = 0; i < n; ++i) {
      T r = 0;
      for (int j = 0; j < kNeighbours; ++j) r += p[j * n + i];
      best = std::max(best, r);
    }
    *rho.data<T>() = best;
  });
  return rho;
}

void accumulate_face_products(fk::Tensor& sums, const fk::Tensor& mu, const fk::Tensor& t,
                              const StepGeometry& g) {
  if (mu.device().is_cuda()) return device_face_products(sums, mu, t, g);
  fk::profile::OpScope scope("heat_face_products");
  FK_CHECK(sums.is_contiguous() && mu.is_contiguous() && t.is_contiguous() &&
               sums.dtype() == mu.dtype() && t.dtype() == mu.dtype() &&
               sums.numel() == 3 * g.numel() && mu.numel() == g.numel() && t.numel() == g.numel(),
           "nefi::heat::accumulate_face_products",
           "contiguous sums (3, *grid), mu and T (*grid) of one dtype",
           sums.shape().str() + ", " + mu.shape().str() + ", " + t.shape().str());
  dispatch_real(mu.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* sx = sums.data<T>();
    T* sy = sx + g.numel();
    T* sz = sy + g.numel();
    const T* m = mu.data<T>();
    const T* v = t.data<T>();
    const int64_t nx = g.nx, ny = g.ny, nz = g.nz, plane = ny * nz;
    // (a[k + o] − a[k]) (b[k + o] − b[k]) accumulated over a contiguous run.
    auto run = [](T* __restrict s, const T* __restrict a, const T* __restrict an,
                  const T* __restrict b, const T* __restrict bn, int64_t n) {
      for (int64_t k = 0; k < n; ++k) s[k] += (an[k] - a[k]) * (bn[k] - b[k]);
    };
    for (int64_t x = 0; x < nx; ++x) {
      const int64_t i = x * plane, ix = ((x + 1) % nx) * plane;
      run(sx + i, m + i, m + ix, v + i, v + ix, plane);
      const int64_t inner = (ny - 1) * nz;  // y faces inside the plane, then the wrapped row
      run(sy + i, m + i, m + i + nz, v + i, v + i + nz, inner);
      run(sy + i + inner, m + i + inner, m + i, v + i + inner, v + i, nz);
      // z faces as one run: the entry at z = nz − 1 pairs a row's last cell with
      // the next row's first and is reset below (alpha_gradient never reads it).
      run(sz + i, m + i, m + i + 1, v + i, v + i + 1, plane - 1);
      for (int64_t r = 0; r < ny; ++r) sz[i + r * nz + nz - 1] = T(0);
      if (g.lateral_neumann) {  // closed side faces carry no conductance to differentiate
        for (int64_t k = 0; k < nz; ++k) sy[i + (ny - 1) * nz + k] = T(0);
        if (x + 1 == nx)
          for (int64_t k = 0; k < plane; ++k) sx[i + k] = T(0);
      }
    }
  });
  sums.bump_version();
}

fk::Tensor alpha_gradient(const fk::Tensor& sums, const fk::Tensor& alpha_in,
                          const StepGeometry& g) {
  if (alpha_in.device().is_cuda()) return device_alpha_gradient(sums, alpha_in, g);
  fk::profile::OpScope scope("heat_alpha_gradient");
  const fk::Tensor alpha = contiguous_detached(alpha_in);
  check_grid(alpha, g, "nefi::heat::alpha_gradient");
  fk::Tensor grad = fk::empty(g.shape(), {alpha.dtype()});
  dispatch_real(alpha.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* a = alpha.data<T>();
    const T* sx = sums.data<T>();
    const T* sy = sx + g.numel();
    const T* sz = sy + g.numel();
    T* out = grad.data<T>();
    const int64_t nx = g.nx, ny = g.ny, nz = g.nz;
    const T ix = T(1) / T(g.hx * g.hx), iy = T(1) / T(g.hy * g.hy), iz = T(1) / T(g.hz * g.hz);
    const T step = T(g.dt);
    // ∂H(a_i, a_j)/∂a_i = 2 a_j² / (a_i + a_j)² (harmonic) or 1/2 (arithmetic).
    const bool af = g.arithmetic_faces;
    auto dh = [af](T ai, T aj) {
      if (af) return T(0.5);
      const T s = ai + aj;
      return T(2) * aj * aj / (s * s);
    };
    for (int64_t x = 0; x < nx; ++x) {
      const int64_t xm = (x + nx - 1) % nx, xp = (x + 1) % nx;
      for (int64_t y = 0; y < ny; ++y) {
        const int64_t ym = (y + ny - 1) % ny, yp = (y + 1) % ny;
        for (int64_t z = 0; z < nz; ++z) {
          const int64_t i = (x * ny + y) * nz + z;
          const int64_t jxm = (xm * ny + y) * nz + z, jxp = (xp * ny + y) * nz + z;
          const int64_t jym = (x * ny + ym) * nz + z, jyp = (x * ny + yp) * nz + z;
          const T ai = a[i];
          T acc = (sx[i] * dh(ai, a[jxp]) + sx[jxm] * dh(ai, a[jxm])) * ix +
                  (sy[i] * dh(ai, a[jyp]) + sy[jym] * dh(ai, a[jym])) * iy;
          T zf = 0;
          if (z + 1 < nz) zf += sz[i] * dh(ai, a[i + 1]);
          if (z > 0) zf += sz[i - 1] * dh(ai, a[i - 1]);
          out[i] = -step * (acc + zf * iz);
        }
      }
    }
  });
  return grad;
}

}  // namespace nefi::heat
