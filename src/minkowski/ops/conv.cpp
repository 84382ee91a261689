#include "minkowski/ops/conv.h"

#include <atomic>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/ops/binary.h"
#include "fk/profile.h"
#include "minkowski/ops/conv_device.h"
#include "minkowski/ops/conv_kernel.h"

namespace minkowski {

namespace {

std::atomic<bool> g_deterministic{false};

class ConvolutionBackward : public fk::autograd::Node {
 public:
  fk::autograd::SavedTensor features, weight;
  std::shared_ptr<const KernelMap> map;
  bool channelwise = false;

  std::vector<fk::Tensor> apply(std::vector<fk::Tensor>&& grads) override {
    if (!grads[0].defined()) return {fk::Tensor(), fk::Tensor()};
    bool nf = next[0].fn != nullptr, nw = next[1].fn != nullptr;
    const fk::Tensor& f = features.unpack(name());
    const fk::Tensor& w = weight.unpack(name());
    // Traced (not counted as an op) so that a profile can split a training
    // step's backward into convolution compute and the rest.
    const fk::profile::TraceScope trace(channelwise ? "minkowski.channelwise_convolution_backward"
                                                    : "minkowski.convolution_backward");
    ConvGrads g = conv_features_backward(grads[0], f, w, *map, channelwise, nf, nw);
    return {g.features, g.weight};
  }
  const char* name() const override { return "minkowski::ConvolutionBackward"; }
  void for_each_saved(const std::function<void(fk::autograd::SavedTensor&)>& fn) override {
    fn(features);
    fn(weight);
  }
};

fk::Tensor add_bias(const fk::Tensor& out, const fk::Tensor& bias, const char* where) {
  if (!bias.defined()) return out;
  int64_t c = out.size(1);
  FK_CHECK(bias.dtype() == out.dtype(), where,
           "a bias of the features' dtype " + std::string(fk::name(out.dtype())),
           fk::name(bias.dtype()));
  FK_CHECK(bias.numel() == c && (bias.dim() == 1 || (bias.dim() == 2 && bias.size(0) == 1)), where,
           "a bias of shape (" + fk::to_text(c) + ") or (1, " + fk::to_text(c) + ")",
           bias.shape().str());
  return fk::add(out, bias.reshape({1, c}));
}

std::vector<int32_t> divide_stride(const std::vector<int32_t>& ts, const std::vector<int32_t>& s,
                                   const char* where) {
  std::vector<int32_t> r(ts.size());
  for (size_t a = 0; a < ts.size(); ++a) {
    FK_CHECK(ts[a] % s[a] == 0, where, "a stride dividing the input tensor stride on every axis",
             "stride " + fk::to_text(s[a]) + " for tensor stride " + fk::to_text(ts[a]) +
                 " on axis " + fk::to_text(a));
    r[a] = ts[a] / s[a];
  }
  return r;
}

void check_out_map(const SparseTensor& x, const std::optional<MapRef>& out, const char* where) {
  if (out) check_same_manager(x, *out, where);
}

}  // namespace

void set_deterministic(bool on) {
  g_deterministic = on;
}
bool is_deterministic() {
  return g_deterministic;
}

// (the channelwise kernels take features on either device)
fk::Tensor conv_features_forward(const fk::Tensor& features, const fk::Tensor& weight,
                                 const KernelMap& map, bool channelwise) {
  return channelwise                   ? channelwise_forward(features, weight, map)
         : features.device().is_cuda() ? device_conv_forward(features, weight, map)
                                       : conv_forward(features, weight, map);
}

ConvGrads conv_features_backward(const fk::Tensor& grad_out, const fk::Tensor& features,
                                 const fk::Tensor& weight, const KernelMap& map, bool channelwise,
                                 bool need_features, bool need_weight) {
  const bool nf = need_features, nw = need_weight;
  return channelwise ? channelwise_backward(grad_out, features, weight, map, nf, nw)
         : features.device().is_cuda()
             ? device_conv_backward(grad_out, features, weight, map, nf, nw)
             : conv_backward(grad_out, features, weight, map, nf, nw);
}

fk::Tensor convolve_features(const fk::Tensor& features, const fk::Tensor& weight,
                             std::shared_ptr<const KernelMap> map, bool channelwise) {
  fk::profile::OpScope scope(channelwise ? "minkowski.channelwise_convolution"
                                         : "minkowski.convolution");
  FK_CHECK(weight.defined(), "minkowski::convolution", "a weight tensor", "an undefined tensor");
  fk::Tensor out;
  {
    fk::autograd::NoGradGuard ng;
    out = conv_features_forward(features.detach(), weight.detach(), *map, channelwise);
  }
  if (fk::autograd::needs_grad(features, weight)) {
    auto node = std::make_shared<ConvolutionBackward>();
    node->features = features;
    node->weight = weight;
    node->map = std::move(map);
    node->channelwise = channelwise;
    fk::autograd::record(node, {features, weight}, out);
  }
  return out;
}

SparseTensor convolution(const SparseTensor& x, const fk::Tensor& weight, const fk::Tensor& bias,
                         const KernelRegion& kernel, const std::vector<int32_t>& stride,
                         const std::optional<MapRef>& out) {
  const char* where = "minkowski::convolution";
  FK_CHECK(x.defined(), where, "a sparse tensor", "an empty handle");
  int d = x.dimension();
  auto s = expand_axes(stride, d, where, "stride");
  check_out_map(x, out, where);
  auto& mgr = x.manager();
  MapKey ok = out ? out->key : mgr->stride(x.key(), s);
  auto map = mgr->kernel_map(x.key(), ok, kernel, false);
  fk::Tensor f = convolve_features(x.F(), weight, map);
  return SparseTensor(add_bias(f, bias, where), ok, mgr);
}

SparseTensor convolution_transpose(const SparseTensor& x, const fk::Tensor& weight,
                                   const fk::Tensor& bias, const KernelRegion& kernel,
                                   const std::vector<int32_t>& stride,
                                   const std::optional<MapRef>& out) {
  const char* where = "minkowski::convolution_transpose";
  FK_CHECK(x.defined(), where, "a sparse tensor", "an empty handle");
  int d = x.dimension();
  auto s = expand_axes(stride, d, where, "stride");
  check_out_map(x, out, where);
  auto& mgr = x.manager();
  MapKey ok;
  if (out) {
    ok = out->key;
  } else {
    auto ts = divide_stride(x.tensor_stride(), s, where);
    MapKey same_tag{ts, x.key().tag}, plain{ts, ""};
    if (mgr->has(same_tag))
      ok = same_tag;
    else if (mgr->has(plain))
      ok = plain;
    else
      ok = mgr->expand(x.key(), kernel, ts);
  }
  auto map = mgr->kernel_map(x.key(), ok, kernel, true);
  fk::Tensor f = convolve_features(x.F(), weight, map);
  return SparseTensor(add_bias(f, bias, where), ok, mgr);
}

SparseTensor generative_convolution_transpose(const SparseTensor& x, const fk::Tensor& weight,
                                              const fk::Tensor& bias, const KernelRegion& kernel,
                                              const std::vector<int32_t>& stride) {
  const char* where = "minkowski::generative_convolution_transpose";
  FK_CHECK(x.defined(), where, "a sparse tensor", "an empty handle");
  auto s = expand_axes(stride, x.dimension(), where, "stride");
  auto& mgr = x.manager();
  MapKey ok = mgr->expand(x.key(), kernel, divide_stride(x.tensor_stride(), s, where));
  auto map = mgr->kernel_map(x.key(), ok, kernel, true);
  fk::Tensor f = convolve_features(x.F(), weight, map);
  return SparseTensor(add_bias(f, bias, where), ok, mgr);
}

SparseTensor channelwise_convolution(const SparseTensor& x, const fk::Tensor& weight,
                                     const fk::Tensor& bias, const KernelRegion& kernel,
                                     const std::vector<int32_t>& stride) {
  const char* where = "minkowski::channelwise_convolution";
  FK_CHECK(x.defined(), where, "a sparse tensor", "an empty handle");
  auto s = expand_axes(stride, x.dimension(), where, "stride");
  auto& mgr = x.manager();
  MapKey ok = mgr->stride(x.key(), s);
  auto map = mgr->kernel_map(x.key(), ok, kernel, false);
  fk::Tensor f = convolve_features(x.F(), weight, map, true);
  return SparseTensor(add_bias(f, bias, where), ok, mgr);
}

}  // namespace minkowski
