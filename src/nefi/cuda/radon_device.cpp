// The Radon projection on a CUDA device (operators/radon_device.h): the
// launches of radon.cu on the device's current stream and the autograd node.
// One kernel per apply and one per backward; nothing is read back to the
// host (the matrices are uploaded by prepare_tables at a stage start, before
// any capture, or on an operator's first device apply). Memory: the
// matrix and its transpose on the device, 2 x 12 bytes per entry (4 entries
// per ray sample) plus the row starts.
#include <memory>
#include <string>
#include <vector>

#include "fk/autograd.h"
#include "fk/cuda/device_guard.h"
#include "fk/cuda/runtime.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/profile.h"
#include "nefi/cuda/radon_kernels.h"
#include "nefi/operators/radon_device.h"

namespace nefi {
namespace {

// out (shape, src's dtype) = the gather of src through one of the matrices.
fk::Tensor gather(const fk::Tensor& src, const cuda::GatherGeometry& g, const fk::Tensor& row_start,
                  const fk::Tensor& col, const fk::Tensor& weight, const fk::Dims& shape) {
  const int device = src.device().index;
  fk::cuda::detail::DeviceGuard guard(device);
  void* stream = fk::cuda::current_stream(device);
  fk::Tensor out = fk::empty(shape, {src.dtype(), src.device()});
  if (src.dtype() == fk::DType::F64)
    cuda::launch_sparse_gather<double>(g, row_start.data<int64_t>(), col.data<int32_t>(),
                                       weight.data<double>(), src.data<double>(),
                                       out.data<double>(), stream);
  else
    cuda::launch_sparse_gather<float>(g, row_start.data<int64_t>(), col.data<int32_t>(),
                                      weight.data<double>(), src.data<float>(), out.data<float>(),
                                      stream);
  fk::profile::count_launch();
  fk::cuda::after_op(device);
  return out;
}

struct RadonDeviceBackward : fk::autograd::Node {
  std::shared_ptr<const RadonOperator> op;  // shares the matrices (host and device)
  fk::Dims in_shape;
  fk::Device device;
  const char* name() const override { return "RadonDeviceBackward"; }
  std::vector<fk::Tensor> apply(std::vector<fk::Tensor>&& grads) override {
    fk::autograd::NoGradGuard ng;
    fk::profile::OpScope scope("radon_device_backward");
    fk::Tensor g = grads[0].device() == device ? grads[0] : grads[0].to(device);
    if (g.dtype() != fk::DType::F32 && g.dtype() != fk::DType::F64) g = g.to(fk::DType::F64);
    if (!g.is_contiguous()) g = g.contiguous();
    const RadonMatricesOnDevice m = op->matrices_on(device);
    cuda::GatherGeometry geo;
    geo.rows = op->domain().shape()[0] * op->domain().shape()[1];  // pixels
    geo.src_rows = op->geometry().n_views * op->n_det();
    geo.inner = op->n_slices();
    geo.batch = g.numel() / (geo.src_rows * geo.inner);
    return {gather(g, geo, m.adjoint_row_start, m.adjoint_col, m.adjoint_weight, in_shape)};
  }
};

}  // namespace

fk::Tensor radon_device(const RadonOperator& op, const fk::Tensor& x) {
  fk::profile::OpScope scope("radon_device");
  FK_CHECK(x.device().is_cuda(), "nefi::RadonOperator", "an image on a CUDA device",
           x.device().str());
  fk::Tensor xc;
  {
    fk::autograd::NoGradGuard ng;
    xc = x.detach();
    if (!xc.is_contiguous()) xc = xc.contiguous();
  }
  const RadonMatricesOnDevice m = op.matrices_on(x.device());
  cuda::GatherGeometry geo;
  geo.rows = op.geometry().n_views * op.n_det();
  geo.src_rows = op.domain().shape()[0] * op.domain().shape()[1];
  geo.inner = op.n_slices();
  geo.batch = x.numel() / op.domain().numel();
  fk::Tensor y = gather(xc, geo, m.row_start, m.col, m.weight, op.output_shape(x.shape()));
  if (fk::autograd::needs_grad(x)) {
    auto node = std::make_shared<RadonDeviceBackward>();
    node->op = std::make_shared<const RadonOperator>(op);
    node->in_shape = x.shape();
    node->device = x.device();
    fk::autograd::record(node, {x}, y);
  }
  return y;
}

}  // namespace nefi
