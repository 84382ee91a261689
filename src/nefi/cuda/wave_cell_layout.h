#pragma once
// Host side of the wave kernels' inputs (wave_kernels.h): a WaveGrid as
// WaveCells (its Laplacian and face weights rounded to T exactly as
// leapfrog_step.cpp rounds them), StepCoefficients as a view, and point
// stencils as CSR, by point and by the cell they touch. Used by the device
// driver (wave_device.cpp), the device tables (wave_device_tables.cpp) and
// the CPU test of the cells (wave_cells_test.cpp).
#include <algorithm>
#include <cstdint>
#include <vector>

#include "nefi/cuda/wave_kernels.h"
#include "nefi/operators/wave/leapfrog.h"
#include "nefi/operators/wave/wave_device_tables.h"
#include "nefi/operators/wave/wave_grid.h"

namespace nefi::cuda {

template <typename T>
WaveCells<T> make_wave_cells(const wave::WaveGrid& g, bool pml) {
  WaveCells<T> c;
  c.nd = g.ndim;
  c.half = g.halo;
  c.pml = pml;
  c.padded = 1;
  c.domain = 1;
  for (int d = 0; d < 3; ++d) {
    c.n[d] = g.n[d];
    c.off[d] = g.off(d);
    c.stride[d] = g.stride[d];
    c.interior[d] = g.interior[d];
    c.pad[d] = g.pad[d];
    c.padded *= g.n[d];
    c.domain *= g.interior[d];
  }
  c.numel = g.numel;
  // FixedLaplacian and FaceSet: the centre weight summed in f64 over the
  // active axes, every weight rounded to T once.
  double c0 = 0;
  for (int a = 0; a < g.ndim; ++a) {
    const int d = 3 - g.ndim + a;
    const double ih2 = 1.0 / (g.h[d] * g.h[d]);
    c.s[a] = g.stride[d];
    c0 += (g.halo == 1 ? -2.0 : -2.5) * ih2;
    c.w1[a] = static_cast<T>((g.halo == 1 ? 1.0 : 4.0 / 3.0) * ih2);
    c.w2[a] = static_cast<T>(-1.0 / 12.0 * ih2);
    c.ih[a] = static_cast<T>(1.0 / g.h[d]);
    c.ih2[a] = static_cast<T>(0.5 / g.h[d]);
  }
  c.w0 = static_cast<T>(c0);
  return c;
}

// The view of host (or device-resident) coefficient grids, by active axis.
template <typename T>
WaveCoefficientsView<T> coefficients_view(const wave::WaveGrid& g, const T* q2, const T* b,
                                          const T* k, const T* ad, const T* const* alpha_by_slot,
                                          const T* const* beta_by_slot) {
  WaveCoefficientsView<T> v;
  v.q2 = q2, v.b = b, v.k = k, v.ad = ad;
  for (int a = 0; a < g.ndim; ++a) {
    const int d = 3 - g.ndim + a;
    v.alpha[a] = alpha_by_slot ? alpha_by_slot[d] : nullptr;
    v.beta[a] = beta_by_slot ? beta_by_slot[d] : nullptr;
  }
  return v;
}

struct StencilsCsr {
  std::vector<int64_t> start{0}, index;
  std::vector<double> weight;
  int64_t count() const { return static_cast<int64_t>(start.size()) - 1; }
};

inline StencilsCsr stencils_csr(const std::vector<wave::PointStencil>& points) {
  StencilsCsr c;
  for (const wave::PointStencil& s : points) {
    c.index.insert(c.index.end(), s.index.begin(), s.index.end());
    c.weight.insert(c.weight.end(), s.weight.begin(), s.weight.end());
    c.start.push_back(static_cast<int64_t>(c.index.size()));
  }
  return c;
}

inline StencilsView view_of(const StencilsCsr& c) {
  return {c.start.data(), c.index.data(), c.weight.data(), c.count()};
}

// Point stencils grouped by the stored cell they touch (CellStencilsView):
// the trace injection's targets, each with its terms in inject_traces's
// order. Cells ascend; a cell two stencils (or one stencil twice) touch is
// one target with all of its terms.
struct CellStencilsCsr {
  std::vector<int64_t> start{0}, cell, point;
  std::vector<double> weight;
  int64_t points = 0;
  int64_t count() const { return static_cast<int64_t>(cell.size()); }
};

inline CellStencilsCsr stencils_by_cell(const std::vector<wave::PointStencil>& points) {
  struct Term {
    int64_t cell, point;
    double weight;
  };
  std::vector<Term> terms;  // in the CPU loop's order
  for (size_t r = 0; r < points.size(); ++r)
    for (size_t i = 0; i < points[r].index.size(); ++i)
      terms.push_back({points[r].index[i], static_cast<int64_t>(r), points[r].weight[i]});
  // Stable: a cell's terms keep the loop's order, so its sum rounds as the CPU's.
  std::stable_sort(terms.begin(), terms.end(),
                   [](const Term& a, const Term& b) { return a.cell < b.cell; });
  CellStencilsCsr c;
  c.points = static_cast<int64_t>(points.size());
  for (size_t e = 0; e < terms.size(); ++e) {
    if (e > 0 && terms[e].cell != terms[e - 1].cell) c.start.push_back(static_cast<int64_t>(e));
    if (e == 0 || terms[e].cell != terms[e - 1].cell) c.cell.push_back(terms[e].cell);
    c.point.push_back(terms[e].point);
    c.weight.push_back(terms[e].weight);
  }
  if (!terms.empty()) c.start.push_back(static_cast<int64_t>(terms.size()));
  return c;
}

inline CellStencilsView view_of(const CellStencilsCsr& c) {
  return {c.start.data(), c.cell.data(), c.point.data(), c.weight.data(), c.count(), c.points};
}

// The device tables' receivers as the kernels read them: by point, by cell.
inline StencilsView receivers_of(const wave::WaveDeviceTables& t) {
  return {t.receiver_start.data<int64_t>(), t.receiver_index.data<int64_t>(),
          t.receiver_weight.data<double>(), t.receiver_start.numel() - 1};
}
inline CellStencilsView injection_of(const wave::WaveDeviceTables& t) {
  return {t.injection_start.data<int64_t>(),
          t.injection_cell.data<int64_t>(),
          t.injection_receiver.data<int64_t>(),
          t.injection_weight.data<double>(),
          t.injection_cell.numel(),
          t.receiver_start.numel() - 1};
}

}  // namespace nefi::cuda
