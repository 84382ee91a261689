// CPU-only builds: the losses have no device path (no tensor can live on a
// device here either; these keep the declarations linkable).
#include "fk/error.h"
#include "nefi/losses/loss_device.h"

namespace nefi {
namespace {

[[noreturn]] void refuse(const fk::Tensor& t) {
  throw fk::Error("nefi::loss", "tensors on the CPU (this build has no CUDA backend)",
                  t.device().str());
}

}  // namespace

fk::Tensor cellwise_loss_device(const CellLoss&, const fk::Tensor& p, const fk::Tensor&,
                                const fk::Tensor&, bool, const RowNormalisation&) {
  refuse(p);
}
fk::Tensor cellwise_sums_device(const CellLoss&, const fk::Tensor& p, const fk::Tensor&,
                                const fk::Tensor&, bool) {
  refuse(p);
}
fk::Tensor normalized_mse_device(const fk::Tensor& p, const fk::Tensor&, const fk::Tensor&) {
  refuse(p);
}
fk::Tensor total_variation_device(const fk::Tensor& x, const std::vector<double>&, const TVOptions&,
                                  bool) {
  refuse(x);
}
fk::Tensor laplacian_loss_device(const fk::Tensor& x, const std::vector<double>&, bool,
                                 const std::vector<int>&) {
  refuse(x);
}

}  // namespace nefi
