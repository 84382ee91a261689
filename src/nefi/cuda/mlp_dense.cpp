// dense_device (nefi/field/dense_device.h): operand checks, the cuBLAS
// products and the autograd node; the elementwise work is mlp_kernels.cu's.
#include <memory>
#include <string>
#include <vector>

#include "fk/amp.h"
#include "fk/autograd.h"
#include "fk/cuda/blas.h"
#include "fk/cuda/device_guard.h"
#include "fk/cuda/runtime.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/profile.h"
#include "nefi/cuda/mlp_kernels.h"
#include "nefi/field/dense_device.h"

namespace nefi {
namespace {

constexpr const char* kWhere = "nefi::dense (device)";

fk::DType operand_dtype(DevicePrecision p) {
  return p == DevicePrecision::Bf16  ? fk::DType::BF16
         : p == DevicePrecision::F16 ? fk::DType::F16
                                     : fk::DType::F32;
}

// t contiguous and in dtype, cut from the graph (a copy only where needed).
fk::Tensor operand(const fk::Tensor& t, fk::DType dtype) {
  fk::autograd::NoGradGuard ng;
  fk::Tensor r = t.detach();
  if (!r.is_contiguous()) r = r.contiguous();
  return r.dtype() == dtype ? r : r.to(dtype);
}

// The state one call shares: device, stream, operand dtype, TF32.
struct Layer {
  int device;
  void* stream;
  fk::DType dtype;
  bool tf32;
  fk::TensorOptions f32() const { return {fk::DType::F32, fk::cuda_device(device)}; }
  // c (f32) = op(a) op(b), a and b in dtype, row-major with packed rows.
  void product(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const fk::Tensor& a,
               const fk::Tensor& b, fk::Tensor& c) const {
    fk::cuda::gemm_f32_out(device, static_cast<int>(dtype), ta, tb, m, n, k, 1.0, a.data_ptr(),
                           ta ? m : k, b.data_ptr(), tb ? k : n, 0.0, c.data<float>(), n, stream,
                           tf32);
    fk::profile::count_launch();
  }
};

Layer layer_on(int device, DevicePrecision p) {
  return {device, fk::cuda::current_stream(device), operand_dtype(p),
          p == DevicePrecision::F32 && fk::amp::allow_tf32()};
}

struct DenseDeviceBackward : fk::autograd::Node {
  fk::autograd::SavedTensor x, w, ref;  // x, w in the operand dtype; ref: y or the angle
  DeviceActivation act = DeviceActivation::None;
  DevicePrecision precision = DevicePrecision::F32;
  float w0 = 0.f;
  const char* name() const override { return "DenseDeviceBackward"; }
  void for_each_saved(const std::function<void(fk::autograd::SavedTensor&)>& fn) override {
    fn(x);
    fn(w);
    fn(ref);
  }
  std::vector<fk::Tensor> apply(std::vector<fk::Tensor>&& grads) override {
    fk::profile::OpScope scope("dense_backward");
    const fk::Tensor& xt = x.unpack(name());
    const fk::Tensor& wt = w.unpack(name());
    const int64_t n = xt.size(0), in = xt.size(1), out = wt.size(0);
    const Layer L = layer_on(xt.device().index, precision);
    fk::cuda::detail::DeviceGuard guard(L.device);
    const fk::Tensor g = operand(grads[0], fk::DType::F32);
    const fk::Tensor* r = act == DeviceActivation::None ? nullptr : &ref.unpack(name());
    fk::Tensor gz = fk::empty({n, out}, {L.dtype, xt.device()});
    const int64_t chunks = cuda::grad_chunks(n);
    fk::Tensor partials = fk::empty({chunks, out}, L.f32());
    cuda::launch_activation_grad(g.data<float>(), r ? r->data<float>() : nullptr, n, out,
                                 static_cast<int>(act), w0, gz.data_ptr(),
                                 static_cast<int>(L.dtype), partials.data<float>(), L.stream);
    fk::profile::count_launch();
    std::vector<fk::Tensor> res(3);
    if (next[2].fn) {
      res[2] = fk::empty({out}, L.f32());
      cuda::launch_column_sums(partials.data<float>(), chunks, out, res[2].data<float>(), L.stream);
      fk::profile::count_launch();
    }
    if (next[0].fn) {
      res[0] = fk::empty({n, in}, L.f32());
      L.product(false, false, n, in, out, gz, wt, res[0]);
    }
    if (next[1].fn) {
      res[1] = fk::empty({out, in}, L.f32());
      L.product(true, false, out, in, n, gz, xt, res[1]);
    }
    fk::cuda::after_op(L.device);
    return res;
  }
};

void check_operands(const fk::Tensor& x, const fk::Tensor& w, const fk::Tensor& b) {
  FK_CHECK(x.dim() == 2 && w.dim() == 2 && b.dim() == 1 && x.size(1) == w.size(1) &&
               b.size(0) == w.size(0),
           kWhere, "x (N, in), w (out, in), b (out)",
           x.shape().str() + ", " + w.shape().str() + ", " + b.shape().str());
  FK_CHECK(
      x.dtype() == fk::DType::F32 && w.dtype() == fk::DType::F32 && b.dtype() == fk::DType::F32,
      kWhere, "f32 x, w and b",
      std::string(fk::name(x.dtype())) + ", " + fk::name(w.dtype()) + ", " + fk::name(b.dtype()));
  FK_CHECK(x.device().is_cuda() && w.device() == x.device() && b.device() == x.device(), kWhere,
           "x, w and b on one CUDA device",
           x.device().str() + ", " + w.device().str() + ", " + b.device().str());
}

}  // namespace

fk::Tensor dense_device(const fk::Tensor& x, const fk::Tensor& w, const fk::Tensor& b,
                        DeviceActivation act, DevicePrecision precision, double sine_w0) {
  fk::profile::OpScope scope("dense");
  check_operands(x, w, b);
  const Layer L = layer_on(x.device().index, precision);
  fk::cuda::detail::DeviceGuard guard(L.device);
  const int64_t n = x.size(0), in = x.size(1), out = w.size(0);
  const fk::Tensor xo = operand(x, L.dtype), wo = operand(w, L.dtype);
  const fk::Tensor bc = operand(b, fk::DType::F32);
  fk::Tensor acc = fk::empty({n, out}, L.f32());
  L.product(false, true, n, out, in, xo, wo, acc);
  const bool sine = act == DeviceActivation::Sine;
  const float w0 = static_cast<float>(sine_w0);
  // Sine keeps the angle in acc and writes y apart; the others work in place.
  fk::Tensor y = sine ? fk::empty({n, out}, L.f32()) : acc;
  cuda::launch_bias_activation(acc.data<float>(), bc.data<float>(), n, out, static_cast<int>(act),
                               w0, y.data<float>(), sine ? acc.data<float>() : nullptr, L.stream);
  fk::profile::count_launch();
  fk::cuda::after_op(L.device);
  if (fk::autograd::needs_grad(x, w, b)) {
    auto node = std::make_shared<DenseDeviceBackward>();
    node->x = xo;
    node->w = wo;
    if (act != DeviceActivation::None) node->ref = sine ? acc : y.detach();
    node->act = act;
    node->precision = precision;
    node->w0 = w0;
    fk::autograd::record(node, {x, w, b}, y);
  }
  return y;
}

}  // namespace nefi
