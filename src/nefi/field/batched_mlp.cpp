#include "nefi/field/batched_mlp.h"

#include <cstring>
#include <vector>

#include "fk/autograd.h"
#include "fk/blas.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/unary_formulas.h"
#include "fk/parallel.h"
#include "fk/profile.h"
#include "nefi/field/activation_grad.h"
#include "nefi/field/dense_gemm.h"
#include "nefi/field/dense_gemm_bf16.h"
#include "nefi/field/fast_tanh.h"

namespace nefi {
namespace {

constexpr fk::DType kF32 = fk::DType::F32;

// Problems per thread chunk: a chunk should hold ~2^22 multiply-adds
// (~0.1 ms), so small batches of small fields stay on the calling thread: on
// a loaded VM a team wake-up costs milliseconds (measured: toy1d at batch 4
// on 2 threads took 14 ms per problem-step with a grain of 2^18).
int64_t problem_grain(const MlpLayout& L, int64_t m) {
  int64_t macs = 0;
  for (int i = 0; i <= L.depth; ++i) macs += m * L.fan_in(i) * (i == L.depth ? L.n_out : L.hidden);
  return std::max<int64_t>(1, (int64_t{1} << 22) / std::max<int64_t>(macs, 1));
}

bool is_active(const ActiveMask& a, int64_t b) {
  return !a || (*a)[b] != 0;
}

// C (m, n) = op(A) op(B) through nefi::dense_product, the sequential layer's
// own product (bias and activation fused where its kernels fuse them, else
// applied a row at a time after it): a row of the batch thus takes the very
// arithmetic a sequential field takes, bf16 (an autocast trunk layer)
// included.
void product(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
             const float* b, int64_t ldb, float* c, int64_t ldc, const float* bias = nullptr,
             DenseActivation act = DenseActivation::None, bool bf16 = false) {
  if (dense_product(kF32, bf16, ta, tb, m, n, k, a, lda, b, ldb, c, ldc, false, bias, act, {}))
    return;
  if (!bias) return;
  for (int64_t i = 0; i < m; ++i) {
    float* r = c + i * ldc;
    for (int64_t j = 0; j < n; ++j) r[j] += bias[j];
    if (act == DenseActivation::Tanh) fast_tanh_f32(r, r, n);
    if (act == DenseActivation::Relu)
      for (int64_t j = 0; j < n; ++j) r[j] = fk::unary_formulas::relu(r[j]);
  }
}

// y (m, out) = act(x W^T + b) (nefi::dense's forward, f32).
void dense_rows(const float* x, int64_t m, int64_t in, const float* w, const float* bias,
                int64_t out, DenseActivation act, bool bf16, float* y) {
  product(false, true, m, out, in, x, in, w, in, y, out, bias, act, bf16);
}

// A hidden layer's y (m, H) = act(x W^T + b): tanh and relu fused into the
// product, any other activation through fk's element code on scale z, kept
// in s (m, H) for the backward.
void hidden_rows(const float* x, int64_t m, int64_t in, const float* w, const float* bias,
                 const MlpLayout& L, float* s, float* y) {
  if (L.act != DenseActivation::None)
    return dense_rows(x, m, in, w, bias, L.hidden, L.act, L.bf16, y);
  const int64_t n = m * L.hidden;
  dense_rows(x, m, in, w, bias, L.hidden, DenseActivation::None, L.bf16, s);
  if (L.scale != 1.0f)
    for (int64_t i = 0; i < n; ++i) s[i] *= L.scale;
  fk::unary_forward_host(L.unary, s, y, n, L.unary_params);
}

// gz = dh act'(z) of a hidden layer and db, its column sums (activation_grad's
// pass; act None: fk's backward element code on (s, y), times scale).
void hidden_grad(const float* dh, const float* s, const float* y, const MlpLayout& L, int64_t m,
                 float* gz, float* db) {
  if (L.act != DenseActivation::None) return activation_grad(dh, y, L.act, m, L.hidden, gz, db);
  const int64_t n = m * L.hidden;
  fk::unary_backward_host(L.unary, dh, s, y, gz, n, L.unary_params);
  if (L.scale != 1.0f)
    for (int64_t i = 0; i < n; ++i) gz[i] *= L.scale;
  activation_grad(gz, gz, DenseActivation::None, m, L.hidden, gz, db);
}

struct BatchedMlpBackward : fk::autograd::Node {
  MlpLayout L;
  ActiveMask active;
  fk::Tensor params, features, skip_input;  // params: the values of the forward
  std::vector<fk::Tensor> ys;               // (N, M, hidden) per hidden layer
  std::vector<fk::Tensor> ss;               // their activations' inputs (act None), else empty
  uint32_t params_version = 0;
  const char* name() const override { return "BatchedMlpBackward"; }
  void release_saved() override {
    ys.clear();
    ss.clear();
    skip_input = fk::Tensor();
    Node::release_saved();
  }
  std::vector<fk::Tensor> apply(std::vector<fk::Tensor>&& grads) override;
  // scratch: 2 m hidden + m (hidden + features) floats (from fk's caching
  // allocator: glibc would mmap and page-fault buffers this size every call).
  void problem_backward(int64_t b, const float* g, float* grad, float* scratch) const;
};

void BatchedMlpBackward::problem_backward(int64_t b, const float* g, float* grad,
                                          float* scratch) const {
  const int64_t m = features.size(0), H = L.hidden, D = L.features;
  const float* p = params.data<float>() + b * L.n_params;
  grad += b * L.n_params;
  auto y_of = [&](int l) { return ys[l].data<float>() + b * m * H; };
  auto s_of = [&](int l) { return ss.empty() ? nullptr : ss[l].data<float>() + b * m * H; };
  auto input_of = [&](int l) -> const float* {
    if (l == 0) return features.data<float>();
    if (l == L.skip_at && L.has_skip()) return skip_input.data<float>() + b * m * (H + D);
    return y_of(l - 1);
  };
  // Output layer (no activation): dW = g^T h, db, dh = g W.
  const int64_t no = L.n_out;
  float* dh = scratch;
  float* gz = scratch + m * H;
  float* dx = scratch + 2 * m * H;
  // nefi::dense's backward pass before its GEMMs (activation_grad.h): the
  // output layer's db, then each hidden layer's gz and db.
  activation_grad(g, g, DenseActivation::None, m, no, const_cast<float*>(g),
                  grad + L.b_offset[L.depth]);
  product(false, false, m, H, no, g, no, p + L.w_offset[L.depth], H, dh, H);
  product(true, false, no, H, m, g, no, y_of(L.depth - 1), H, grad + L.w_offset[L.depth], H);
  for (int l = L.depth - 1; l >= 0; --l) {
    hidden_grad(dh, s_of(l), y_of(l), L, m, gz, grad + L.b_offset[l]);
    const int64_t K = L.fan_in(l);
    if (l > 0) {  // the features need no gradient
      // The skip layer's input was [h, features]: h's share is the first H columns.
      product(false, false, m, K, H, gz, H, p + L.w_offset[l], K, K == H ? dh : dx, K, nullptr,
              DenseActivation::None, L.bf16);
      if (K != H)
        for (int64_t i = 0; i < m; ++i) std::memcpy(dh + i * H, dx + i * K, H * sizeof(float));
    }
    product(true, false, H, K, m, gz, H, input_of(l), K, grad + L.w_offset[l], K, nullptr,
            DenseActivation::None, L.bf16);
  }
}

std::vector<fk::Tensor> BatchedMlpBackward::apply(std::vector<fk::Tensor>&& grads) {
  fk::profile::OpScope scope("batched_mlp_backward");
  FK_CHECK(params.version() == params_version, "nefi::batched_mlp backward",
           "parameters unchanged since the forward", "an in-place update in between");
  fk::Tensor g = grads[0];
  {
    fk::autograd::NoGradGuard ng;
    if (g.dtype() != kF32) g = g.to(kF32);
    if (!g.is_contiguous()) g = g.contiguous();
  }
  const int64_t n = params.size(0), m = features.size(0);
  fk::Tensor out = fk::empty({n, L.n_params}, {kF32});
  const float* gp = g.data<float>();
  float* op = out.data<float>();
  fk::parallel_for(0, n, problem_grain(L, m), [&](int64_t lo, int64_t hi) {
    const fk::Tensor scratch = fk::empty({m * (3 * L.hidden + L.features)}, {kF32});
    for (int64_t b = lo; b < hi; ++b) {
      if (is_active(active, b))
        problem_backward(b, gp + b * m * L.n_out, op, scratch.data<float>());
      else
        std::memset(op + b * L.n_params, 0, L.n_params * sizeof(float));
    }
  });
  return {out};
}

}  // namespace

int MlpLayout::fan_in(int layer) const {
  if (layer == 0) return features;
  if (layer == skip_at && has_skip()) return hidden + features;
  return hidden;
}

MlpLayout mlp_layout(const NeuralField& field) {
  const NeuralFieldConfig& c = field.config();
  FK_CHECK(!c.autocast || *c.autocast == fk::DType::BF16, "nefi::batched_mlp",
           "a neural field with no or bf16 autocast",
           std::string(c.autocast ? fk::name(*c.autocast) : "none") + " autocast");
  MlpLayout L;
  L.bf16 = c.autocast.has_value();
  const std::string& a = c.activation;
  FK_CHECK(
      a == "tanh" || a == "relu" || a == "gelu" || a == "silu" || a == "softplus" || a == "sine",
      "nefi::batched_mlp", "activation tanh, relu, gelu, silu, softplus or sine", a);
  L.act = a == "tanh"   ? DenseActivation::Tanh
          : a == "relu" ? DenseActivation::Relu
                        : DenseActivation::None;
  L.unary = a == "tanh"       ? fk::UnaryOp::Tanh
            : a == "relu"     ? fk::UnaryOp::Relu
            : a == "gelu"     ? fk::UnaryOp::Gelu
            : a == "silu"     ? fk::UnaryOp::Silu
            : a == "softplus" ? fk::UnaryOp::Softplus
                              : fk::UnaryOp::Sin;
  if (a == "softplus") L.unary_params = {1.0, 20.0};  // fk::softplus's defaults, as the field's
  if (a == "sine") L.scale = static_cast<float>(kSirenW0);
  L.depth = c.depth;
  L.hidden = c.hidden;
  L.skip_at = c.skip_at;
  const FlatParams& fp = field.params();
  L.features = static_cast<int>(fp.shape(0)[1]);
  L.n_out = static_cast<int>(fp.shape(2 * c.depth)[0]);
  int64_t off = 0;
  for (int i = 0; i < fp.size(); ++i) {
    (i % 2 == 0 ? L.w_offset : L.b_offset).push_back(off);
    off += fp.shape(i).numel();
  }
  L.n_params = off;
  FK_CHECK(fp.size() == 2 * (L.depth + 1) && off == fp.numel(), "nefi::batched_mlp",
           "the NeuralField parameter layout", fk::to_text(fp.size()) + " buffers");
  return L;
}

fk::Tensor batched_mlp(const fk::Tensor& params, const fk::Tensor& features, const MlpLayout& L,
                       ActiveMask active) {
  fk::profile::OpScope scope("batched_mlp");
  FK_CHECK(params.device().is_cpu() && features.device().is_cpu(), "nefi::batched_mlp",
           "CPU parameters and features (device ones take grouped_mlp, grouped_mlp.h)",
           params.device().str() + " and " + features.device().str());
  FK_CHECK(params.dim() == 2 && params.size(1) == L.n_params && params.dtype() == kF32 &&
               params.is_contiguous(),
           "nefi::batched_mlp", "contiguous f32 parameters (N, " + fk::to_text(L.n_params) + ")",
           params.shape().str());
  FK_CHECK(features.dim() == 2 && features.size(1) == L.features && features.dtype() == kF32 &&
               features.is_contiguous(),
           "nefi::batched_mlp", "contiguous f32 features (M, " + fk::to_text(L.features) + ")",
           features.shape().str());
  const int64_t n = params.size(0), m = features.size(0), H = L.hidden, D = L.features;
  FK_CHECK(!active || static_cast<int64_t>(active->size()) == n, "nefi::batched_mlp",
           "one active flag per problem", fk::to_text(active ? active->size() : 0));
  // The activations' inputs are kept only for a backward (act None); without
  // one, one scratch block per problem row serves every layer.
  const bool record = fk::autograd::needs_grad(params);
  std::vector<fk::Tensor> ys, ss;
  for (int l = 0; l < L.depth; ++l) {
    ys.push_back(fk::empty({n, m, H}, {kF32}));
    if (L.act == DenseActivation::None && (record || l == 0))
      ss.push_back(fk::empty({n, m, H}, {kF32}));
  }
  fk::Tensor skip = L.has_skip() ? fk::empty({n, m, H + D}, {kF32}) : fk::Tensor();
  fk::Tensor raw = fk::empty({n, m, L.n_out}, {kF32});
  const float* x = features.data<float>();
  fk::parallel_for(0, n, problem_grain(L, m), [&](int64_t lo, int64_t hi) {
    for (int64_t b = lo; b < hi; ++b) {
      float* rb = raw.data<float>() + b * m * L.n_out;
      if (!is_active(active, b)) {
        std::memset(rb, 0, m * L.n_out * sizeof(float));
        continue;
      }
      const float* p = params.data<float>() + b * L.n_params;
      const float* in = x;
      for (int l = 0; l < L.depth; ++l) {
        if (l == L.skip_at && L.has_skip()) {
          float* s = skip.data<float>() + b * m * (H + D);
          for (int64_t i = 0; i < m; ++i) {
            std::memcpy(s + i * (H + D), in + i * H, H * sizeof(float));
            std::memcpy(s + i * (H + D) + H, x + i * D, D * sizeof(float));
          }
          in = s;
        }
        float* y = ys[l].data<float>() + b * m * H;
        float* sl = ss.empty() ? nullptr : ss[record ? l : 0].data<float>() + b * m * H;
        hidden_rows(in, m, L.fan_in(l), p + L.w_offset[l], p + L.b_offset[l], L, sl, y);
        in = y;
      }
      dense_rows(in, m, H, p + L.w_offset[L.depth], p + L.b_offset[L.depth], L.n_out,
                 DenseActivation::None, false, rb);
    }
  });
  if (record) {
    auto node = std::make_shared<BatchedMlpBackward>();
    node->L = L;
    node->active = std::move(active);
    node->params = params.detach();
    node->params_version = params.version();
    node->features = features.detach();  // values only: its graph is not this node's
    node->skip_input = skip;
    node->ys = std::move(ys);
    node->ss = std::move(ss);
    fk::autograd::record(node, {params}, raw);
  }
  return raw;
}

}  // namespace nefi
