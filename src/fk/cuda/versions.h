#pragma once
// The CUDA versions behind this build, as 1000 * major + 10 * minor (13000
// for CUDA 13.0), the numbers MinkowskiEngine's cuda_version() and
// cudart_version() report: the toolkit fk_cuda was compiled with, the
// runtime library loaded now, and what the driver supports (0: no driver).
// A CPU-only build answers -1 for all three (the reference's CPU answer).
namespace fk::cuda {

struct Versions {
  int built = -1, runtime = -1, driver = -1;
};

Versions versions();

}  // namespace fk::cuda
