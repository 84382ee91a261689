// CPU-only builds: a dense matrix on a CUDA device cannot be multiplied.
#include "fk/error.h"
#include "minkowski/ops/spmm_device.h"

namespace minkowski {

namespace {
[[noreturn]] void no_cuda(const fk::Tensor& dense) {
  throw fk::Error("minkowski::spmm", "a dense matrix on the CPU (this build has no CUDA backend)",
                  "a dense matrix on " + dense.device().str());
}
}  // namespace

fk::Tensor device_spmm_rows(const std::vector<int64_t>&, const std::vector<int64_t>&,
                            const std::vector<int64_t>&, const fk::Tensor&, const fk::Tensor& in) {
  no_cuda(in);
}
fk::Tensor device_spmm_value_grads(const std::vector<int64_t>&, const std::vector<int64_t>&,
                                   const fk::Tensor&, const fk::Tensor& dense) {
  no_cuda(dense);
}

}  // namespace minkowski
