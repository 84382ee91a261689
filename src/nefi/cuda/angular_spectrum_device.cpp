// The angular-spectrum propagation and the holography operator on a CUDA
// device (operators/angular_spectrum_device.h): operand checks, the launches
// of angular_spectrum.cu on the device's current stream, cuFFT through
// fk::fftn / fk::ifftn, and the autograd node. Memory per propagation: two
// padded (batch, m0, m1) c128 buffers (the FFT's input and output).
#include <cmath>
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
#include "nefi/cuda/angular_spectrum_kernels.h"
#include "nefi/operators/angular_spectrum_device.h"

namespace nefi {
namespace {

using cuda::Complex;

Complex* cptr(fk::Tensor& t) {
  return t.data<Complex>();
}
const Complex* cptr(const fk::Tensor& t) {
  return t.data<Complex>();
}

// The device of t, its stream, and a scope with it current.
struct OnDevice {
  int device;
  fk::cuda::detail::DeviceGuard guard;
  void* stream;
  explicit OnDevice(const fk::Tensor& t)
      : device(t.device().index), guard(device), stream(fk::cuda::current_stream(device)) {}
  fk::TensorOptions c128() const { return {fk::DType::C128, fk::cuda_device(device)}; }
};

template <typename F>
void by_dtype(fk::DType dt, F&& f) {
  if (dt == fk::DType::F64)
    f(double{});
  else
    f(float{});
}

struct HolographyDeviceBackward : fk::autograd::Node {
  std::shared_ptr<const HolographyOperator> op;
  fk::Tensor t;  // (batch, n0, n1) c128 transmission
  fk::Tensor u;  // (batch, n_dist, n0, n1) c128 fields at the planes
  fk::Dims in_shape;
  fk::DType dtype;
  const char* name() const override { return "HolographyDeviceBackward"; }
  std::vector<fk::Tensor> apply(std::vector<fk::Tensor>&& grads) override;
};

}  // namespace

fk::Tensor propagate_device(const fk::Tensor& u, const fk::Tensor& H, const PropagationOptions& o,
                            bool adjoint) {
  fk::profile::OpScope scope("propagate_device");
  fk::autograd::NoGradGuard ng;
  FK_CHECK(u.device().is_cuda() && u.dim() == 3 && u.dtype() == fk::DType::C128, "nefi::propagate",
           "fields (batch, n0, n1) c128 on a CUDA device",
           std::string(fk::name(u.dtype())) + " " + u.shape().str() + " on " + u.device().str());
  cuda::PadGeometry g;
  g.batch = u.size(0);
  g.n0 = u.size(1);
  g.n1 = u.size(2);
  g.m0 = g.n0 * o.pad_factor;
  g.m1 = g.n1 * o.pad_factor;
  g.edge = o.edge_pad;
  FK_CHECK(H.device() == u.device() && H.dtype() == fk::DType::C128 && H.numel() == g.m0 * g.m1,
           "nefi::propagate",
           "a c128 transfer function (" + fk::to_text(g.m0) + ", " + fk::to_text(g.m1) + ") on " +
               u.device().str(),
           std::string(fk::name(H.dtype())) + " " + H.shape().str() + " on " + H.device().str());
  const fk::Tensor uc = u.is_contiguous() ? u : u.contiguous();
  const fk::Tensor Hc = H.is_contiguous() ? H : H.contiguous();
  OnDevice on(uc);
  fk::Tensor big = fk::empty({g.batch, g.m0, g.m1}, on.c128());
  cuda::launch_pad_field(cptr(uc), g, adjoint, cptr(big), on.stream);
  fk::profile::count_launch();
  big = fk::fftn(big, {}, {1, 2});
  if (!big.is_contiguous()) big = big.contiguous();
  cuda::launch_apply_transfer(cptr(big), cptr(Hc), g, adjoint, on.stream);
  fk::profile::count_launch();
  big.bump_version();
  big = fk::ifftn(big, {}, {1, 2});
  if (!big.is_contiguous()) big = big.contiguous();
  fk::Tensor out = fk::empty({g.batch, g.n0, g.n1}, on.c128());
  cuda::launch_crop_field(cptr(big), g, adjoint, cptr(out), on.stream);
  fk::profile::count_launch();
  fk::cuda::after_op(on.device);
  return out;
}

fk::Tensor holography_device(const HolographyOperator& op, const fk::Tensor& phi) {
  fk::profile::OpScope scope("holography_device");
  FK_CHECK(phi.device().is_cuda(), "nefi::HolographyOperator", "a phase on a CUDA device",
           phi.device().str());
  const int64_t n0 = op.domain().shape()[0], n1 = op.domain().shape()[1];
  const int64_t cells = n0 * n1, batch = phi.numel() / cells;
  const int64_t nd = static_cast<int64_t>(op.distances().size());
  fk::Tensor p;
  {
    fk::autograd::NoGradGuard ng;
    p = phi.detach();
    if (!p.is_contiguous()) p = p.contiguous();
  }
  OnDevice on(p);
  fk::Tensor t = fk::empty({batch, n0, n1}, on.c128());
  fk::Tensor u = fk::empty({batch, nd, n0, n1}, on.c128());
  fk::Tensor y = fk::empty(op.output_shape(phi.shape()), {phi.dtype(), phi.device()});
  by_dtype(phi.dtype(), [&](auto tag) {
    using T = decltype(tag);
    cuda::launch_transmission<T>(p.data<T>(), batch * cells, std::exp(-op.absorption()), cptr(t),
                                 on.stream);
    fk::profile::count_launch();
    for (int64_t d = 0; d < nd; ++d) {
      const fk::Tensor ud =
          propagate_device(t, op.transfer_on(op.distances()[d], phi.device()), op.options(), false);
      cuda::launch_store_plane<T>(cptr(ud), batch, nd, d, cells, cptr(u), y.data<T>(), on.stream);
      fk::profile::count_launch();
    }
  });
  fk::cuda::after_op(on.device);
  if (fk::autograd::needs_grad(phi)) {
    auto node = std::make_shared<HolographyDeviceBackward>();
    node->op = std::make_shared<const HolographyOperator>(op);
    node->t = t;
    node->u = u;
    node->in_shape = phi.shape();
    node->dtype = phi.dtype();
    fk::autograd::record(node, {phi}, y);
  }
  return y;
}

namespace {

std::vector<fk::Tensor> HolographyDeviceBackward::apply(std::vector<fk::Tensor>&& grads) {
  fk::autograd::NoGradGuard ng;
  fk::profile::OpScope scope("holography_device_backward");
  const int64_t batch = t.size(0), nd = u.size(1), n0 = t.size(1), n1 = t.size(2);
  const int64_t cells = n0 * n1;
  fk::Tensor g = grads[0].to(t.device());
  if (g.dtype() != fk::DType::F64) g = g.to(fk::DType::F64);
  if (!g.is_contiguous()) g = g.contiguous();
  OnDevice on(t);
  fk::Tensor w = fk::zeros({batch, n0, n1}, on.c128());
  fk::Tensor src = fk::empty({batch, n0, n1}, on.c128());
  for (int64_t d = 0; d < nd; ++d) {
    cuda::launch_plane_source(g.data<double>(), cptr(u), batch, nd, d, cells, cptr(src), on.stream);
    fk::profile::count_launch();
    const fk::Tensor back = propagate_device(src, op->transfer_on(op->distances()[d], t.device()),
                                             op->options(), /*adjoint=*/true);
    cuda::launch_accumulate(cptr(w), cptr(back), batch * cells, on.stream);
    fk::profile::count_launch();
  }
  fk::Tensor dphi = fk::empty(in_shape, {dtype, t.device()});
  by_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    cuda::launch_phase_gradient<T>(cptr(t), cptr(w), batch * cells, dphi.data<T>(), on.stream);
  });
  fk::profile::count_launch();
  fk::cuda::after_op(on.device);
  return {dphi};
}

}  // namespace

}  // namespace nefi
