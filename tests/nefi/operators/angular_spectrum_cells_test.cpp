// The angular-spectrum kernels' indexing (nefi/cuda/angular_spectrum_cells.h),
// run on the host: propagate() rebuilt from those functions (pad or crop^T,
// the CPU FFT, the transfer multiply, crop or pad^T) is the CPU propagate()
// of operators/angular_spectrum.cpp, forward and adjoint, for edge and zero
// padding and pad factors 1 to 3 on odd and even grids: the device path's
// index arithmetic, checked without a GPU. The sums run in the CPU loop's
// order, so the two agree to the last bits (1e-14 of the largest value).
#include "nefi/cuda/angular_spectrum_cells.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <string>
#include <vector>

#include "fk/factory.h"
#include "fk/ops/fft.h"
#include "fk/random.h"
#include "nefi/operators/angular_spectrum.h"

namespace {

using c128 = std::complex<double>;

nefi::Field2 random_field(int64_t n, uint64_t seed) {
  fk::Generator g(seed);
  const auto re = fk::randn({n}, {fk::DType::F64}, &g).to_vector<double>();
  const auto im = fk::randn({n}, {fk::DType::F64}, &g).to_vector<double>();
  nefi::Field2 f(n);
  for (int64_t i = 0; i < n; ++i) f[i] = {re[i], im[i]};
  return f;
}

// propagate() as the device runs it, each step one loop over its outputs.
nefi::Field2 propagate_by_cells(const nefi::Field2& u, const nefi::cuda::PadGeometry& g,
                                const nefi::Field2& H, bool adjoint) {
  nefi::Field2 big(g.batch * g.m0 * g.m1);
  for (int64_t k = 0; k < static_cast<int64_t>(big.size()); ++k) {
    const int64_t src = nefi::cuda::padded_source(g, adjoint, k);
    big[k] = src >= 0 ? u[src] : c128(0);
  }
  fk::Tensor t = fk::fftn(fk::from_vector(big, {g.batch, g.m0, g.m1}), {}, {1, 2});
  big = t.contiguous().to_vector<c128>();
  const int64_t m = g.m0 * g.m1;
  for (int64_t k = 0; k < static_cast<int64_t>(big.size()); ++k)
    big[k] *= adjoint ? std::conj(H[k % m]) : H[k % m];
  big = fk::ifftn(fk::from_vector(big, {g.batch, g.m0, g.m1}), {}, {1, 2})
            .contiguous()
            .to_vector<c128>();
  nefi::Field2 out(g.batch * g.n0 * g.n1);
  for (int64_t k = 0; k < static_cast<int64_t>(out.size()); ++k) {
    const int64_t j = k % g.n1, i = (k / g.n1) % g.n0, b = k / (g.n0 * g.n1);
    int64_t p0, p1, q0, q1;
    nefi::cuda::gathered_range(i, g.n0, g.m0, g.edge, adjoint, p0, p1);
    nefi::cuda::gathered_range(j, g.n1, g.m1, g.edge, adjoint, q0, q1);
    c128 s = 0;
    for (int64_t p = p0; p <= p1; ++p)
      for (int64_t q = q0; q <= q1; ++q) s += big[(b * g.m0 + p) * g.m1 + q];
    out[k] = s;
  }
  return out;
}

TEST(NefiAngularSpectrumCells, PropagateByCellsIsTheCpuPropagate) {
  const std::vector<double> h{1.0, 0.8};
  for (const auto& [n0, n1] : {std::pair<int64_t, int64_t>{9, 7}, {8, 6}, {1, 5}})
    for (int64_t pad : {1, 2, 3})
      for (bool edge : {true, false})
        for (bool adjoint : {false, true}) {
          SCOPED_TRACE(std::to_string(n0) + "x" + std::to_string(n1) + " pad " +
                       std::to_string(pad) + (edge ? " edge" : " zero") +
                       (adjoint ? " adjoint" : " forward"));
          const nefi::PropagationOptions o{0.5, true, pad, edge};
          nefi::cuda::PadGeometry g;
          g.batch = 2;
          g.n0 = n0;
          g.n1 = n1;
          g.m0 = n0 * pad;
          g.m1 = n1 * pad;
          g.edge = edge;
          const nefi::Field2 u = random_field(2 * n0 * n1, 11);
          const nefi::Field2 H = nefi::transfer_function(g.m0, g.m1, h, 40.0, o);
          const nefi::Field2 want = nefi::propagate(u, 2, n0, n1, h, 40.0, o, adjoint);
          const nefi::Field2 got = propagate_by_cells(u, g, H, adjoint);
          double scale = 0, worst = 0;
          for (size_t k = 0; k < want.size(); ++k) {
            scale = std::max(scale, std::abs(want[k]));
            const double d = std::abs(got[k] - want[k]);
            if (!(d <= worst)) worst = std::isnan(worst) ? worst : d;  // a NaN stays the worst
          }
          EXPECT_LE(worst, 1e-14 * scale);
        }
}

}  // namespace
