// CPU-only builds: features on a CUDA device cannot be normalized.
#include "fk/error.h"
#include "minkowski/ops/normalization_device.h"

namespace minkowski {

namespace {
[[noreturn]] void no_cuda(const fk::Tensor& x) {
  throw fk::Error("minkowski::normalize", "features on the CPU (this build has no CUDA backend)",
                  "features on " + x.device().str());
}
}  // namespace

std::vector<double> device_segment_sums(SegmentTerm, const fk::Tensor& x, const fk::Tensor&,
                                        const Segments&, int64_t, const std::vector<double>&,
                                        const std::vector<double>&) {
  no_cuda(x);
}
fk::Tensor device_segment_affine(const fk::Tensor& x, const fk::Tensor&, const Segments&,
                                 const fk::Tensor&) {
  no_cuda(x);
}

}  // namespace minkowski
