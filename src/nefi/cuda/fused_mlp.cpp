// fused_mlp_device (nefi/field/fused_mlp_device.h): operand checks, the
// scratch tensors and the autograd node; the kernels are fused_mlp.cu's.
#include <memory>
#include <string>
#include <vector>

#include "fk/autograd.h"
#include "fk/cuda/device_guard.h"
#include "fk/cuda/runtime.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/profile.h"
#include "nefi/cuda/fused_mlp_kernels.h"
#include "nefi/cuda/mlp_kernels.h"
#include "nefi/field/fused_mlp_device.h"

namespace nefi {
namespace {

constexpr const char* kWhere = "nefi::fused_mlp_device";

static_assert(static_cast<int>(FusedMlpActivation::Tanh) == cuda::kFusedTanh &&
              static_cast<int>(FusedMlpActivation::Relu) == cuda::kFusedRelu &&
              static_cast<int>(FusedMlpActivation::Gelu) == cuda::kFusedGelu &&
              static_cast<int>(FusedMlpActivation::Silu) == cuda::kFusedSilu &&
              static_cast<int>(FusedMlpActivation::Softplus) == cuda::kFusedSoftplus &&
              static_cast<int>(FusedMlpActivation::Sine) == cuda::kFusedSine);
static_assert(kFusedMlpMaxWidth == cuda::kFusedMaxWidth);
// launch_fused_mlp_param_partials's grid has depth + 1 rows (y: at most 65535).
static_assert(kFusedMlpMaxDepth + 1 <= 65535);

cuda::FusedMlpShape shape_of(const FusedMlpSpec& spec, int64_t in) {
  cuda::FusedMlpShape s;
  s.in = static_cast<int>(in);
  s.hidden = spec.hidden;
  s.depth = spec.depth;
  s.out = spec.out;
  s.skip = spec.skip_at > 0 && spec.skip_at < spec.depth ? spec.skip_at : -1;
  s.act = static_cast<int>(spec.activation);  // FusedMlpActivation == cuda::FusedActivation
  s.w0 = static_cast<float>(spec.sine_w0);
  s.operands = spec.autocast == fk::DType::BF16  ? cuda::kFusedBf16
               : spec.autocast == fk::DType::F16 ? cuda::kFusedF16
                                                 : cuda::kFusedF32;
  return s;
}

fk::Tensor contiguous_detached(const fk::Tensor& t) {
  fk::autograd::NoGradGuard ng;
  return t.is_contiguous() ? t.detach() : t.contiguous().detach();
}

struct FusedMlpBackward : fk::autograd::Node {
  fk::autograd::SavedTensor x, params, zs;
  cuda::FusedMlpShape shape;
  int block_rows = 0;
  const char* name() const override { return "FusedMlpBackward"; }
  void for_each_saved(const std::function<void(fk::autograd::SavedTensor&)>& fn) override {
    fn(x);
    fn(params);
    fn(zs);
  }
  std::vector<fk::Tensor> apply(std::vector<fk::Tensor>&& grads) override {
    fk::profile::OpScope scope("fused_mlp_backward");
    const fk::Tensor& xt = x.unpack(name());
    const fk::Tensor& pt = params.unpack(name());
    const fk::Tensor& zt = zs.unpack(name());
    const int device = xt.device().index;
    fk::cuda::detail::DeviceGuard guard(device);
    void* stream = fk::cuda::current_stream(device);
    const fk::TensorOptions f32{fk::DType::F32, xt.device()};
    const int64_t n = xt.size(0);
    fk::Tensor g = grads[0];
    if (g.dtype() != fk::DType::F32) g = g.to(fk::DType::F32);
    g = contiguous_detached(g);
    fk::Tensor gzs = fk::empty({shape.depth, n, shape.hidden}, f32);
    std::vector<fk::Tensor> res(2);
    if (next[0].fn) res[0] = fk::empty({n, shape.in}, f32);
    cuda::launch_fused_mlp_backward(shape, pt.data<float>(), zt.data<float>(), g.data<float>(), n,
                                    block_rows, gzs.data<float>(),
                                    next[0].fn ? res[0].data<float>() : nullptr, stream);
    fk::profile::count_launch();
    if (next[1].fn) {
      const int64_t numel = pt.numel(), chunks = cuda::fused_mlp_grad_chunks(n);
      fk::Tensor partials = fk::empty({chunks, numel}, f32);
      cuda::launch_fused_mlp_param_partials(shape, xt.data<float>(), zt.data<float>(),
                                            gzs.data<float>(), g.data<float>(), n,
                                            partials.data<float>(), stream);
      fk::profile::count_launch();
      res[1] = fk::empty({numel}, f32);
      cuda::launch_column_sums(partials.data<float>(), chunks, numel, res[1].data<float>(), stream);
      fk::profile::count_launch();
    }
    fk::cuda::after_op(device);
    return res;
  }
};

void check_operands(const fk::Tensor& x, const fk::Tensor& p, const FusedMlpSpec& spec) {
  FK_CHECK(x.dim() == 2 && p.dim() == 1, kWhere, "features (N, in) and flat params (numel)",
           x.shape().str() + ", " + p.shape().str());
  FK_CHECK(x.dtype() == fk::DType::F32 && p.dtype() == fk::DType::F32, kWhere,
           "f32 features and params",
           std::string(fk::name(x.dtype())) + ", " + fk::name(p.dtype()));
  FK_CHECK(x.device().is_cuda() && p.device() == x.device(), kWhere,
           "features and params on one CUDA device", x.device().str() + ", " + p.device().str());
  FK_CHECK(spec.hidden > 0 && spec.depth > 0 && spec.out > 0 && x.size(1) > 0, kWhere,
           "hidden, depth, output and feature widths > 0",
           fk::to_text(spec.hidden) + ", " + fk::to_text(spec.depth) + ", " +
               fk::to_text(spec.out) + ", " + fk::to_text(x.size(1)));
  const std::string why = fused_mlp_unsupported(spec, x.size(1), x.device().index);
  FK_CHECK(why.empty(), kWhere, "a network the fused kernel runs", why);
  const int64_t numel = cuda::fused_mlp_numel(shape_of(spec, x.size(1)));
  FK_CHECK(p.numel() == numel, kWhere,
           fk::to_text(numel) + " params (hidden " + fk::to_text(spec.hidden) + ", depth " +
               fk::to_text(spec.depth) + ", skip " + fk::to_text(spec.skip_at) + ", in " +
               fk::to_text(x.size(1)) + ", out " + fk::to_text(spec.out) + ")",
           fk::to_text(p.numel()));
}

}  // namespace

std::string fused_mlp_unsupported_on(const FusedMlpSpec& spec, int64_t in, int device) {
  if (device < 0 || device >= fk::cuda::device_count())
    return "no usable CUDA device cuda:" + std::to_string(device);
  if (cuda::fused_mlp_block_rows(shape_of(spec, in), device) == 0)
    return "hidden " + std::to_string(spec.hidden) + " + " + std::to_string(in) +
           " features: more shared memory than cuda:" + std::to_string(device) + " has for 32 rows";
  return "";
}

fk::Tensor fused_mlp_device(const fk::Tensor& features, const fk::Tensor& params,
                            const FusedMlpSpec& spec) {
  fk::profile::OpScope scope("fused_mlp");
  check_operands(features, params, spec);
  const int device = features.device().index;
  fk::cuda::detail::DeviceGuard guard(device);
  const cuda::FusedMlpShape shape = shape_of(spec, features.size(1));
  const int block_rows = cuda::fused_mlp_block_rows(shape, device);
  const fk::TensorOptions f32{fk::DType::F32, features.device()};
  const fk::Tensor x = contiguous_detached(features), p = contiguous_detached(params);
  const int64_t n = x.size(0);
  const bool grad = fk::autograd::needs_grad(features, params);
  fk::Tensor zs = grad ? fk::empty({shape.depth, n, shape.hidden}, f32) : fk::Tensor();
  fk::Tensor y = fk::empty({n, shape.out}, f32);
  cuda::launch_fused_mlp_forward(shape, x.data<float>(), p.data<float>(), n, block_rows,
                                 grad ? zs.data<float>() : nullptr, y.data<float>(),
                                 fk::cuda::current_stream(device));
  fk::profile::count_launch();
  fk::cuda::after_op(device);
  if (grad) {
    auto node = std::make_shared<FusedMlpBackward>();
    node->x = x;
    node->params = p;
    node->zs = zs;
    node->shape = shape;
    node->block_rows = block_rows;
    fk::autograd::record(node, {features, params}, y);
  }
  return y;
}

}  // namespace nefi
