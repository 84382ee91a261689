#include "nefi/field/grouped_mlp.h"

#include <memory>
#include <string>
#include <vector>

#include "fk/autograd.h"
#include "fk/blas.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/join.h"
#include "fk/ops/reduce.h"
#include "fk/ops/unary.h"
#include "fk/profile.h"

namespace nefi {
namespace {

constexpr const char* kWhere = "nefi::grouped_mlp";

// x rounded to bf16 and widened back (the autocast trunk's GEMM operands).
fk::Tensor bf16_rounded(const fk::Tensor& x) {
  return x.to(fk::DType::BF16).to(x.dtype());
}

// The batched products of one grouped MLP: every operand is either an
// (N, rows, cols) block (batch stride rows * cols), the shared features
// (stride 0) or a slice of the (N, P) parameter rows (stride P).
struct Products {
  fk::Device device;
  fk::DType dtype;
  int64_t n, P;
  // C_b = op(A_b) op(B_b) + beta C_b for b < n (row-major, packed rows).
  void gemm(bool ta, bool tb, int64_t m, int64_t nn, int64_t k, const void* a, int64_t stride_a,
            const void* b, int64_t stride_b, double beta, void* c, int64_t stride_c) const {
    fk::gemm_strided_batched_on(device, dtype, ta, tb, m, nn, k, 1.0, a, ta ? m : k, stride_a, b,
                                tb ? k : nn, stride_b, beta, c, nn, stride_c, n);
  }
  const char* at(const fk::Tensor& t, int64_t offset) const {
    return static_cast<const char*>(t.data_ptr()) +
           offset * static_cast<int64_t>(fk::itemsize(dtype));
  }
  char* at(fk::Tensor& t, int64_t offset) const {
    return static_cast<char*>(t.data_ptr()) + offset * static_cast<int64_t>(fk::itemsize(dtype));
  }
};

// z (N, M, out) = the bias rows broadcast, then z += x W^T (fk::linear's order).
fk::Tensor layer_product(const Products& pr, const fk::Tensor& params, const fk::Tensor& weights,
                         const MlpLayout& L, int layer, const fk::Tensor& x, int64_t stride_x,
                         int64_t m, int64_t out) {
  const int64_t k = L.fan_in(layer);
  fk::Tensor z = fk::empty({pr.n, m, out}, {pr.dtype, pr.device});
  z.copy_(params.narrow(1, L.b_offset[layer], out).unsqueeze(1));
  pr.gemm(false, true, m, out, k, x.data_ptr(), stride_x, pr.at(weights, L.w_offset[layer]), pr.P,
          1.0, z.data_ptr(), m * out);
  return z;
}

struct GroupedMlpBackward : fk::autograd::Node {
  MlpLayout L;
  fk::autograd::SavedTensor params;
  fk::Tensor weights;              // the GEMMs' weights: params, or their bf16 rounding
  std::vector<fk::Tensor> inputs;  // each layer's GEMM input as multiplied (layer 0: features)
  std::vector<fk::Tensor> ys;      // each hidden layer's output
  std::vector<fk::Tensor> ss;      // its activation's input (scale z) where act' reads it
  const char* name() const override { return "GroupedMlpBackward"; }
  void for_each_saved(const std::function<void(fk::autograd::SavedTensor&)>& fn) override {
    fn(params);
  }
  void release_saved() override {
    weights = fk::Tensor();
    inputs.clear();
    ys.clear();
    ss.clear();
    Node::release_saved();
  }
  std::vector<fk::Tensor> apply(std::vector<fk::Tensor>&& grads) override;
};

std::vector<fk::Tensor> GroupedMlpBackward::apply(std::vector<fk::Tensor>&& grads) {
  fk::profile::OpScope scope("grouped_mlp_backward");
  fk::autograd::NoGradGuard ng;
  const fk::Tensor& p = params.unpack(name());
  const int64_t n = p.size(0), P = p.size(1), m = inputs[0].size(inputs[0].dim() - 2);
  const int64_t H = L.hidden, no = L.n_out;
  const Products pr{p.device(), p.dtype(), n, P};
  fk::Tensor g = grads[0];
  if (g.dtype() != pr.dtype) g = g.to(pr.dtype);
  if (!g.is_contiguous()) g = g.contiguous();
  fk::Tensor grad = fk::empty({n, P}, {pr.dtype, pr.device});
  // Layer l's bias gradient (the row sums of gz) and dW = gz^T x into the
  // gradient rows; returns dx = gz W when the layer's input needs one.
  auto layer_backward = [&](int l, const fk::Tensor& gz, int64_t out, bool need_dx) {
    grad.narrow(1, L.b_offset[l], out).copy_(fk::sum(gz, {1}));
    const int64_t k = l == L.depth ? H : L.fan_in(l);
    const fk::Tensor gz_op = (L.bf16 && l < L.depth) ? bf16_rounded(gz) : gz;
    const fk::Tensor& x = inputs[l];
    const int64_t stride_x = x.dim() == 2 ? 0 : m * k;
    pr.gemm(true, false, out, k, m, gz_op.data_ptr(), m * out, x.data_ptr(), stride_x, 0.0,
            pr.at(grad, L.w_offset[l]), P);
    if (!need_dx) return fk::Tensor();
    fk::Tensor dx = fk::empty({n, m, k}, {pr.dtype, pr.device});
    const fk::Tensor& w = l == L.depth ? p : weights;
    pr.gemm(false, false, m, k, out, gz_op.data_ptr(), m * out, pr.at(w, L.w_offset[l]), P, 0.0,
            dx.data_ptr(), m * k);
    return dx;
  };
  fk::Tensor dh = layer_backward(L.depth, g, no, true);
  for (int l = L.depth - 1; l >= 0; --l) {
    // tanh' from y; relu' from y too (y > 0 exactly where z > 0); the
    // others from scale z, then times scale (sine's chain rule).
    fk::Tensor gz =
        fk::unary_backward(L.unary, dh, ss.empty() ? ys[l] : ss[l], ys[l], L.unary_params);
    if (L.scale != 1.0f) gz = fk::mul(gz, static_cast<double>(L.scale));
    dh = layer_backward(l, gz, H, l > 0);
    // The skip layer's input was [h, features]: h's share is the first H columns.
    if (l > 0 && dh.size(2) != H) dh = dh.narrow(2, 0, H).contiguous();
  }
  return {grad};
}

}  // namespace

fk::Tensor grouped_mlp(const fk::Tensor& params, const fk::Tensor& features, const MlpLayout& L) {
  fk::profile::OpScope scope("grouped_mlp");
  FK_CHECK(params.dim() == 2 && params.size(1) == L.n_params && params.is_contiguous() &&
               (params.dtype() == fk::DType::F32 || params.dtype() == fk::DType::F64),
           kWhere, "contiguous f32 or f64 parameters (N, " + fk::to_text(L.n_params) + ")",
           params.shape().str() + " " + fk::name(params.dtype()) +
               (params.is_contiguous() ? "" : " (strided)"));
  FK_CHECK(
      features.dim() == 2 && features.size(1) == L.features && features.dtype() == params.dtype() &&
          features.device() == params.device(),
      kWhere,
      std::string("features (M, ") + fk::to_text(L.features) + ") in " + fk::name(params.dtype()) +
          " on " + params.device().str(),
      features.shape().str() + " " + fk::name(features.dtype()) + " on " + features.device().str());
  const int64_t n = params.size(0), m = features.size(0), H = L.hidden, D = L.features;
  const Products pr{params.device(), params.dtype(), n, L.n_params};
  const bool record = fk::autograd::needs_grad(params);
  fk::autograd::NoGradGuard ng;
  const fk::Tensor p = params.detach();
  const fk::Tensor x0 = features.detach().contiguous();
  const fk::Tensor weights = L.bf16 ? bf16_rounded(p) : p;
  std::vector<fk::Tensor> inputs, ys, ss;
  const bool keep_s = L.unary != fk::UnaryOp::Tanh && L.unary != fk::UnaryOp::Relu;
  fk::Tensor h = x0;
  for (int l = 0; l < L.depth; ++l) {
    if (l == L.skip_at && L.has_skip()) h = fk::cat({h, x0.unsqueeze(0).expand({n, m, D})}, 2);
    const fk::Tensor x = L.bf16 ? bf16_rounded(h) : h;
    const int64_t stride_x = x.dim() == 2 ? 0 : m * L.fan_in(l);
    fk::Tensor z = layer_product(pr, p, weights, L, l, x, stride_x, m, H);
    if (L.scale != 1.0f) z = fk::mul(z, static_cast<double>(L.scale));
    h = fk::unary_forward(L.unary, z, L.unary_params);
    inputs.push_back(x);
    ys.push_back(h);
    if (keep_s) ss.push_back(z);
  }
  fk::Tensor raw = layer_product(pr, p, p, L, L.depth, h, m * H, m, L.n_out);
  inputs.push_back(h);
  if (record) {
    auto node = std::make_shared<GroupedMlpBackward>();
    node->L = L;
    node->params = p;
    node->weights = weights;
    node->inputs = std::move(inputs);
    node->ys = std::move(ys);
    node->ss = std::move(ss);
    fk::autograd::record(node, {params}, raw);
  }
  return raw;
}

}  // namespace nefi
