#pragma once
// The CG statistics of a device elliptic solve's host emulation (block_pcg
// over HostBlock, one outcome per system), folded as the device folds them,
// and the check that the device's forward statistics are those bits: shared
// by elliptic_device_test.cpp (Jacobi) and
// elliptic_multigrid_device_test.cpp (the V-cycle).
#include <gtest/gtest.h>

#include <algorithm>

#include "nefi/cuda/elliptic_cells.h"
#include "nefi/operators/elliptic/elliptic_cg.h"

namespace nefi::cuda_test {

// One system's outcome added to the statistics of the systems before it.
inline void add_outcome(nefi::elliptic::CgStats& s, const nefi::cuda::CgOutcome& r) {
  s.max_iterations = std::max(s.max_iterations, r.iterations);
  s.total_iterations += r.iterations;
  s.worst_residual = std::max(s.worst_residual, r.residual);
}

// The device solve's statistics equal the emulation's, every system converged.
inline void expect_emulated_stats(const nefi::elliptic::CgStats& got,
                                  const nefi::elliptic::CgStats& want) {
  EXPECT_EQ(got.max_iterations, want.max_iterations);
  EXPECT_EQ(got.total_iterations, want.total_iterations);
  EXPECT_EQ(got.unconverged, 0);
  EXPECT_EQ(got.worst_residual, want.worst_residual);
}

}  // namespace nefi::cuda_test
