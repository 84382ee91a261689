// The Poisson DST solve on a CUDA device (operators/poisson_dst_device.h):
// the launches of poisson_dst.cu on the device's current stream, cuFFT
// through fk::fftn / fk::ifftn, and the autograd node. Per solve: 3 kernels
// and 2 FFTs, nothing read back to the host (the eigenvalue table is
// uploaded by prepare_tables at a stage start, before any capture, or on an
// operator's first device apply). Memory: two c128 buffers of the
// odd extension, 2^d x 16 bytes per field cell and batch row.
#include <memory>
#include <string>
#include <vector>

#include "fk/autograd.h"
#include "fk/cuda/device_guard.h"
#include "fk/cuda/runtime.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/fft.h"
#include "fk/profile.h"
#include "nefi/cuda/poisson_dst_kernels.h"
#include "nefi/operators/poisson_dst_device.h"

namespace nefi {
namespace {

struct PoissonDeviceBackward : fk::autograd::Node {
  std::shared_ptr<const PoissonOperator> op;  // A is symmetric: A^T g = A g
  fk::Device device;
  fk::DType dtype;
  const char* name() const override { return "PoissonDeviceBackward"; }
  std::vector<fk::Tensor> apply(std::vector<fk::Tensor>&& grads) override {
    fk::Tensor g = grads[0].device() == device ? grads[0] : grads[0].to(device);
    if (g.dtype() != dtype) g = g.to(dtype);
    return {poisson_solve_device(*op, g)};
  }
};

}  // namespace

fk::Tensor poisson_solve_device(const PoissonOperator& op, const fk::Tensor& f) {
  fk::profile::OpScope scope("poisson_dst_device");
  fk::autograd::NoGradGuard ng;
  FK_CHECK(f.device().is_cuda() && (f.dtype() == fk::DType::F32 || f.dtype() == fk::DType::F64),
           "nefi::PoissonOperator", "a real f32/f64 field on a CUDA device",
           std::string(fk::name(f.dtype())) + " on " + f.device().str());
  const fk::Tensor fc = f.is_contiguous() ? f.detach() : f.detach().contiguous();
  cuda::OddExtension g;
  g.ndim = static_cast<int>(op.domain().ndim());
  std::vector<int64_t> ext_shape{0}, dims;
  for (int a = 0; a < g.ndim; ++a) {
    g.n[a] = op.domain().shape()[a];
    ext_shape.push_back(2 * g.n[a]);
    dims.push_back(a + 1);
  }
  g.batch = f.numel() / g.cells();
  ext_shape[0] = g.batch;
  const fk::Tensor scale = op.extended_inverse_eigenvalues_on(f.device());
  const int device = f.device().index;
  fk::cuda::detail::DeviceGuard guard(device);
  void* stream = fk::cuda::current_stream(device);
  const fk::TensorOptions c128{fk::DType::C128, f.device()};
  fk::Tensor ext = fk::empty(fk::Dims(ext_shape), c128);
  auto* ext_data = ext.data<cuda::Complex>();
  if (f.dtype() == fk::DType::F64)
    cuda::launch_odd_extension<double>(fc.data<double>(), g, ext_data, stream);
  else
    cuda::launch_odd_extension<float>(fc.data<float>(), g, ext_data, stream);
  fk::profile::count_launch();
  fk::Tensor spectrum = fk::fftn(ext, {}, dims);
  if (!spectrum.is_contiguous()) spectrum = spectrum.contiguous();
  cuda::launch_scale_spectrum(spectrum.data<cuda::Complex>(), scale.data<double>(), g, stream);
  fk::profile::count_launch();
  spectrum.bump_version();
  fk::Tensor back = fk::ifftn(spectrum, {}, dims);
  if (!back.is_contiguous()) back = back.contiguous();
  fk::Tensor u = fk::empty(f.shape(), {f.dtype(), f.device()});
  if (f.dtype() == fk::DType::F64)
    cuda::launch_restrict_to_box<double>(back.data<cuda::Complex>(), g, u.data<double>(), stream);
  else
    cuda::launch_restrict_to_box<float>(back.data<cuda::Complex>(), g, u.data<float>(), stream);
  fk::profile::count_launch();
  fk::cuda::after_op(device);
  return u;
}

fk::Tensor poisson_device(const PoissonOperator& op, const fk::Tensor& x) {
  fk::Tensor u = poisson_solve_device(op, x);
  if (fk::autograd::needs_grad(x)) {
    auto node = std::make_shared<PoissonDeviceBackward>();
    node->op = std::make_shared<const PoissonOperator>(op);
    node->device = x.device();
    node->dtype = x.dtype();
    fk::autograd::record(node, {x}, u);
  }
  return u;
}

}  // namespace nefi
