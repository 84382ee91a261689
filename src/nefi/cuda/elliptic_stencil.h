#pragma once
// The kernels' StencilGrid (elliptic_kernels.h) of an EllipticGrid: host
// code only (the launchers' callers and the cells' CPU test).
#include "nefi/cuda/elliptic_kernels.h"
#include "nefi/operators/elliptic/elliptic_grid.h"

namespace nefi::cuda {

inline StencilGrid stencil_grid(const elliptic::EllipticGrid& eg) {
  eg.validate();
  StencilGrid g;
  g.ndim = eg.ndim();
  g.numel = eg.numel();
  for (int a = 0; a < g.ndim; ++a) {
    g.shape[a] = eg.shape[a];
    g.stride[a] = eg.stride(a);
    g.periodic[a] = eg.boundary[a][0] == elliptic::Boundary::kPeriodic;
    for (int side = 0; side < 2; ++side)
      g.dirichlet[a][side] = eg.boundary[a][side] == elliptic::Boundary::kDirichlet;
    g.inv_h2[a] = 1.0 / (eg.spacing[a] * eg.spacing[a]);
  }
  g.harmonic = eg.face_mean == elliptic::FaceMean::kHarmonic;
  return g;
}

}  // namespace nefi::cuda
