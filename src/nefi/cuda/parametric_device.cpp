// parametric_shapes on a CUDA device (field/parametric_device.h): checks,
// the launches of parametric.cu on the device's current stream, and the
// autograd node. Nothing is read back to the host, so a step through it can
// be captured.
#include <memory>
#include <string>
#include <vector>

#include "fk/autograd.h"
#include "fk/cuda/device_guard.h"
#include "fk/cuda/runtime.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/profile.h"
#include "nefi/cuda/parametric_kernels.h"
#include "nefi/field/parametric_device.h"
#include "nefi/real_dispatch.h"

namespace nefi {
namespace {

constexpr const char* kWhere = "nefi::parametric_shapes_device";

struct ParametricDeviceBackward : fk::autograd::Node {
  fk::autograd::SavedTensor shapes;
  fk::Tensor coords, tunables;  // constant; tunables read again when this runs
  cuda::ShapeProfile profile;
  cuda::ShapeLayout layout;
  fk::Device device;
  const char* name() const override { return "ParametricShapesDeviceBackward"; }
  void for_each_saved(const std::function<void(fk::autograd::SavedTensor&)>& fn) override {
    fn(shapes);
  }
  std::vector<fk::Tensor> apply(std::vector<fk::Tensor>&& grads) override {
    if (!grads[0].defined()) return {fk::Tensor(), fk::Tensor()};
    fk::autograd::NoGradGuard ng;
    fk::profile::OpScope scope("parametric_shapes_device_backward");
    fk::cuda::detail::DeviceGuard guard(device.index);
    const fk::Tensor& s = shapes.unpack(name());
    const fk::DType dt = s.dtype();
    fk::Tensor go = grads[0].device() == device ? grads[0] : grads[0].to(device);
    go = go.to(dt).contiguous();
    const fk::Tensor sc = s.contiguous();
    fk::Tensor partial = fk::empty({layout.subs() * layout.row()}, {fk::DType::F64, device});
    fk::Tensor ds = fk::empty(s.shape(), {dt, device});
    fk::Tensor db = fk::empty({layout.C}, {dt, device});
    dispatch_real(dt, [&](auto zero) {
      using T = decltype(zero);
      cuda::launch_parametric_backward(profile, layout, coords.data<T>(), sc.data<T>(),
                                       tunables.data<double>(), go.data<T>(),
                                       partial.data<double>(), ds.data<T>(), db.data<T>(),
                                       fk::cuda::current_stream(device.index));
    });
    for (int k = layout.subs() > 0 ? 2 : 1; k > 0; --k) fk::profile::count_launch();
    fk::cuda::after_op(device.index);
    return {ds, db};
  }
};

}  // namespace

fk::Tensor parametric_shapes_device(const fk::Tensor& coords, const fk::Tensor& shapes,
                                    const fk::Tensor& background, const std::string& family,
                                    int degree, const fk::Tensor& tunables) {
  const int vertices =
      check_parametric_operands(coords, shapes, background, family, degree, kWhere);
  const fk::Device device = shapes.device();
  FK_CHECK(device.is_cuda(), kWhere, "tensors on a CUDA device", device.str());
  fk::check_usable(device, kWhere);
  FK_CHECK(tunables.defined() && tunables.shape() == fk::Dims{cuda::kShapeTunables} &&
               tunables.dtype() == fk::DType::F64 && tunables.device() == device &&
               tunables.is_contiguous(),
           kWhere,
           fk::to_text(cuda::kShapeTunables) + " contiguous f64 tunables on " + device.str(),
           tunables.defined() ? std::string(fk::name(tunables.dtype())) + " " +
                                    tunables.shape().str() + " on " + tunables.device().str()
                              : std::string("none"));
  fk::profile::OpScope scope("parametric_shapes_device");
  fk::cuda::detail::DeviceGuard guard(device.index);
  cuda::ShapeProfile profile;
  profile.ellipse = family != "blobs";
  profile.degree = family == "stars" ? degree : 0;
  profile.vertices = vertices;
  cuda::ShapeLayout layout;
  layout.d = static_cast<int>(coords.size(1));
  layout.P = static_cast<int>(shapes.size(2));
  layout.n = coords.size(0);
  layout.C = shapes.size(0);
  layout.K = shapes.size(1);
  layout.sub = cuda::shape_sub_chunk(layout.n, layout.row());
  const fk::DType dt = shapes.dtype();
  const fk::Tensor x = coords.contiguous(), s = shapes.detach().contiguous(),
                   b = background.detach().contiguous();
  fk::Tensor y = fk::empty({layout.n, layout.C}, {dt, device});
  dispatch_real(dt, [&](auto zero) {
    using T = decltype(zero);
    cuda::launch_parametric_forward(profile, layout, x.data<T>(), s.data<T>(), b.data<T>(),
                                    tunables.data<double>(), y.data<T>(),
                                    fk::cuda::current_stream(device.index));
  });
  fk::profile::count_launch();
  fk::cuda::after_op(device.index);
  if (fk::autograd::needs_grad(shapes, background)) {
    auto node = std::make_shared<ParametricDeviceBackward>();
    node->shapes = shapes;
    node->coords = x;
    node->tunables = tunables;
    node->profile = profile;
    node->layout = layout;
    node->device = device;
    fk::autograd::record(node, {shapes, background}, y);
  }
  return y;
}

}  // namespace nefi
