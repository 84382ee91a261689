#include "fk/ops/linalg.h"

#include <algorithm>
#include <climits>
#include <optional>
#include <string>

#include "fk/amp.h"
#include "fk/autograd.h"
#include "fk/blas.h"
#include "fk/factory.h"
#include "fk/ops/reduce.h"
#include "fk/ops/unary.h"
#include "fk/profile.h"

namespace fk {
namespace {

// How GEMM can read the matrix held by a tensor's last two dimensions without
// a copy: row-major with leading dimension ld, or (trans) the transpose of a
// row-major matrix with leading dimension ld.
struct MatLayout {
  bool ok = false;
  bool trans = false;
  int64_t ld = 0;
};

MatLayout layout_of(const Tensor& t) {
  int d = t.dim();
  int64_t rows = t.shape()[d - 2], cols = t.shape()[d - 1];
  int64_t sr = t.strides()[d - 2], sc = t.strides()[d - 1];
  MatLayout l;
  // A size-1 dimension's stride is never used, so it places no constraint.
  if ((cols == 1 || sc == 1) && (rows == 1 || sr >= std::max<int64_t>(cols, 1))) {
    l = {true, false, rows == 1 ? std::max<int64_t>(cols, 1) : sr};
  } else if ((rows == 1 || sr == 1) && (cols == 1 || sc >= std::max<int64_t>(rows, 1))) {
    l = {true, true, cols == 1 ? std::max<int64_t>(rows, 1) : sc};
  }
  if (l.ld > INT_MAX) l.ok = false;
  return l;
}

int64_t batch_numel(const Tensor& t) {
  int64_t n = 1;
  for (int i = 0; i + 2 < t.dim(); ++i) n *= t.shape()[i];
  return n;
}

Dims batch_shape(const Tensor& t) {
  Dims d;
  for (int i = 0; i + 2 < t.dim(); ++i) d.push_back(t.shape()[i]);
  return d;
}

// Whether a's batch dimensions continue its rows with stride ld, so that the
// whole batch is one [batch*M, K] matrix.
bool batch_folds_into_rows(const Tensor& a, int64_t ld) {
  int d = a.dim();
  int64_t expected = ld * a.shape()[d - 2];
  for (int i = d - 3; i >= 0; --i) {
    if (a.shape()[i] == 1) continue;
    if (a.strides()[i] != expected) return false;
    expected *= a.shape()[i];
  }
  return true;
}

// out[batch..., M, N] = a[..., M, K] · b[..., K, N] + beta * out, with a and b
// of out's dtype (f32, f64, c64 or c128), batch dimensions broadcast to out's.
void matmul_into(Tensor a, Tensor b, Tensor& out, double beta) {
  const DType dt = out.dtype();
  const int da = a.dim(), db = b.dim(), nb = out.dim() - 2;
  const int64_t M = a.shape()[da - 2], K = a.shape()[da - 1], N = b.shape()[db - 1];
  if (out.numel() == 0) return;
  if (K == 0) {
    if (beta == 0.0) fill_(out, 0.0);
    return;
  }
  MatLayout la = layout_of(a);
  if (!la.ok) {
    a = a.contiguous();
    la = layout_of(a);
  }
  MatLayout lb = layout_of(b);
  if (!lb.ok) {
    b = b.contiguous();
    lb = layout_of(b);
  }
  const int64_t nbatch = out.numel() / (M * N);
  const size_t es = itemsize(dt);
  const char* pa = static_cast<const char*>(a.data_ptr());
  const char* pb = static_cast<const char*>(b.data_ptr());
  char* pc = static_cast<char*>(out.data_ptr());
  const int64_t ldc = std::max<int64_t>(N, 1);

  // A shared right operand (a weight) and a left operand whose batch folds into
  // rows: one tall GEMM, which fk::gemm can split over threads.
  if (batch_numel(b) == 1 && batch_numel(a) == nbatch && !la.trans &&
      batch_folds_into_rows(a, la.ld)) {
    gemm_on(out.device(), dt, false, lb.trans, nbatch * M, N, K, 1.0, pa, la.ld, pb, lb.ld, beta,
            pc, ldc);
    return;
  }

  // Per-matrix offsets: each operand's batch strides aligned to out's batch
  // dimensions, 0 where the operand is broadcast.
  int64_t sa[kMaxDims] = {}, sb[kMaxDims] = {};
  for (int i = 0; i < nb; ++i) {
    int ia = i - (nb - (da - 2)), ib = i - (nb - (db - 2));
    if (ia >= 0 && a.shape()[ia] != 1) sa[i] = a.strides()[ia];
    if (ib >= 0 && b.shape()[ib] != 1) sb[i] = b.strides()[ib];
  }
  int64_t idx[kMaxDims] = {};
  for (int64_t m = 0; m < nbatch; ++m) {
    int64_t oa = 0, ob = 0;
    for (int i = 0; i < nb; ++i) {
      oa += idx[i] * sa[i];
      ob += idx[i] * sb[i];
    }
    gemm_on(out.device(), dt, la.trans, lb.trans, M, N, K, 1.0, pa + oa * static_cast<int64_t>(es),
            la.ld, pb + ob * static_cast<int64_t>(es), lb.ld, beta,
            pc + m * M * N * static_cast<int64_t>(es), ldc);
    for (int i = nb - 1; i >= 0; --i) {
      if (++idx[i] < out.shape()[i]) break;
      idx[i] = 0;
    }
  }
}

// The conjugate transpose of the last two dimensions (a view for real dtypes;
// for complex ones a view of the conjugated copy, which GEMM reads transposed).
Tensor adjoint(const Tensor& t) {
  return (is_complex(t.dtype()) ? conj(t) : t).transpose(-2, -1);
}

Tensor conj_if_complex(const Tensor& t) {
  return is_complex(t.dtype()) ? conj(t) : t;
}

// --- argument checks -------------------------------------------------------

std::string both(const Tensor& a, const Tensor& b) {
  return a.shape().str() + " and " + b.shape().str();
}

void check_defined(const char* op, const Tensor& t, const char* what) {
  FK_CHECK(t.defined(), op, std::string("a defined ") + what, "an undefined tensor");
}

void check_devices(const char* op, const Tensor& a, const Tensor& b) {
  FK_CHECK(a.device() == b.device(), op, "operands on one device",
           a.device().str() + " and " + b.device().str());
}

// The dtype a product of these operands is computed and stored in (the
// message is only built on failure: this runs on every call).
// Each operand (and a bias) floating or complex, as torch's: an integer or
// bool one (which promotion would take in, or autocast round to half) is
// refused.
DType product_dtype(const char* op, DType a, DType b, std::optional<DType> bias = std::nullopt) {
  const DType rt = promote(promote(a, b), bias.value_or(a));
  FK_CHECK(is_inexact(a) && is_inexact(b) && (!bias || is_inexact(*bias)), op,
           "floating or complex operands",
           std::string(name(a)) + " and " + name(b) +
               (bias ? std::string(" with a ") + name(*bias) + " bias" : ""));
  return rt;
}

// Under autocast, f32 and other-half operands become the autocast dtype
// (differentiably); f64 and complex operands are left alone.
Tensor autocast_operand(const Tensor& t) {
  std::optional<DType> ac = amp::autocast_dtype();
  if (!ac || !t.defined() || t.dtype() == *ac) return t;
  if (t.dtype() == DType::F32 || is_half(t.dtype())) return t.to(*ac);
  return t;
}

void check_matmul_shapes(const char* op, const Tensor& a, const Tensor& b) {
  FK_CHECK(a.dim() >= 1 && b.dim() >= 1, op, "tensors with at least 1 dimension", both(a, b));
  int64_t ka = a.shape()[a.dim() - 1];
  int64_t kb = b.dim() == 1 ? b.shape()[0] : b.shape()[b.dim() - 2];
  FK_CHECK(ka == kb, op, "inner dimensions to match", both(a, b));
  Dims ba = a.dim() > 2 ? batch_shape(a) : Dims{}, bb = b.dim() > 2 ? batch_shape(b) : Dims{};
  int n = std::max(ba.size(), bb.size());
  for (int i = 0; i < n; ++i) {
    int ia = i - (n - ba.size()), ib = i - (n - bb.size());
    int64_t x = ia >= 0 ? ba[ia] : 1, y = ib >= 0 ? bb[ib] : 1;
    FK_CHECK(x == y || x == 1 || y == 1, op, "batch dimensions that broadcast", both(a, b));
  }
}

// --- autograd nodes --------------------------------------------------------

struct MatmulBackward : autograd::Node {
  autograd::SavedTensor a, b;
  Dims a_shape, b_shape;
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override {
    bool need_a = next[0].fn != nullptr, need_b = next[1].fn != nullptr;
    Tensor sa = need_b ? a.unpack(name()) : Tensor();
    Tensor sb = need_a ? b.unpack(name()) : Tensor();
    MatmulGrads g = matmul_backward(grads[0], sa, sb, a_shape, b_shape, need_a, need_b);
    return {g.a, g.b};
  }
  const char* name() const override { return "MatmulBackward"; }
  void for_each_saved(const std::function<void(autograd::SavedTensor&)>& fn) override {
    fn(a);
    fn(b);
  }
};

struct LinearBackward : autograd::Node {
  autograd::SavedTensor x, weight;
  Dims x_shape;
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override {
    bool need_x = next[0].fn != nullptr, need_w = next[1].fn != nullptr;
    bool need_b = next.size() > 2 && next[2].fn != nullptr;
    Tensor sx = need_w ? x.unpack(name()) : Tensor();
    Tensor sw = need_x ? weight.unpack(name()) : Tensor();
    LinearGrads g = linear_backward(grads[0], sx, sw, x_shape, need_x, need_w, need_b);
    return {g.x, g.weight, g.bias};
  }
  const char* name() const override { return "LinearBackward"; }
  void for_each_saved(const std::function<void(autograd::SavedTensor&)>& fn) override {
    fn(x);
    fn(weight);
  }
};

// Shapes checked; casts, promotes, runs and records.
Tensor matmul_checked(const char* op, const Tensor& a_in, const Tensor& b_in) {
  Tensor a = autocast_operand(a_in), b = autocast_operand(b_in);
  DType rt = product_dtype(op, a.dtype(), b.dtype());
  if (a.dtype() != rt) a = a.to(rt);
  if (b.dtype() != rt) b = b.to(rt);
  Tensor out = matmul_forward(a, b);
  if (autograd::needs_grad(a, b)) {
    auto node = std::make_shared<MatmulBackward>();
    if (autograd::tensor_requires_grad(b)) node->a = a;
    if (autograd::tensor_requires_grad(a)) node->b = b;
    node->a_shape = a.shape();
    node->b_shape = b.shape();
    autograd::record(node, {a, b}, out);
  }
  return out;
}

}  // namespace

// --- pure functions ----------------------------------------------------------

Tensor matmul_forward(const Tensor& a, const Tensor& b) {
  autograd::NoGradGuard no_grad;
  const DType dt = a.dtype();
  FK_CHECK(dt == b.dtype(), "matmul_forward", "operands of one dtype",
           std::string(name(dt)) + " and " + name(b.dtype()));
  check_devices("matmul_forward", a, b);
  check_matmul_shapes("matmul_forward", a, b);
  const bool a1 = a.dim() == 1, b1 = b.dim() == 1;
  Tensor a2 = a1 ? a.unsqueeze(0) : a;
  Tensor b2 = b1 ? b.unsqueeze(1) : b;
  Dims shape = broadcast_shapes(batch_shape(a2), batch_shape(b2), "matmul");
  shape.push_back(a2.shape()[a2.dim() - 2]);
  shape.push_back(b2.shape()[b2.dim() - 1]);
  // The product lives where its operands do (a CPU result would hand cuBLAS's
  // device pointers to the host BLAS).
  // The host BLAS has no 16-bit GEMM: there f16/bf16 operands are widened
  // and the f32 product rounded once. cuBLAS multiplies them as they are, on
  // tensor cores with f32 sums rounded once (cuda/blas.h): the same rounding
  // points, where the widened product ran on the FP32 units at 1/14 of the
  // raw half GEMM's rate on an H200 (fk_cuda_bench, session 26).
  Tensor out;
  if (is_half(dt) && a.device().is_cpu()) {
    out = empty(shape, {DType::F32, a.device()});
    matmul_into(a2.to(DType::F32), b2.to(DType::F32), out, 0.0);
    out = out.to(dt);
  } else {
    out = empty(shape, {dt, a.device()});
    matmul_into(a2, b2, out, 0.0);
  }
  if (a1 && b1) return out.reshape({});
  if (a1) return out.squeeze(out.dim() - 2);
  if (b1) return out.squeeze(out.dim() - 1);
  return out;
}

MatmulGrads matmul_backward(const Tensor& grad, const Tensor& a, const Tensor& b,
                            const Dims& a_shape, const Dims& b_shape, bool need_a, bool need_b) {
  autograd::NoGradGuard no_grad;
  const bool a1 = a_shape.size() == 1, b1 = b_shape.size() == 1;
  Tensor g2 = grad;
  if (a1 && b1) {
    g2 = grad.reshape({1, 1});
  } else if (a1) {
    g2 = grad.unsqueeze(grad.dim() - 1);
  } else if (b1) {
    g2 = grad.unsqueeze(grad.dim());
  }
  Dims a2_shape = a_shape, b2_shape = b_shape;
  if (a1) a2_shape.insert(0, 1);
  if (b1) b2_shape.push_back(1);
  MatmulGrads r;
  if (need_a) {
    Tensor b2 = b1 ? b.unsqueeze(1) : b;
    Tensor ga = autograd::sum_to(matmul_forward(g2, adjoint(b2)), a2_shape);
    r.a = a1 ? ga.reshape(a_shape) : ga;
  }
  if (need_b) {
    Tensor a2 = a1 ? a.unsqueeze(0) : a;
    int64_t K = a2_shape.back(), N = b2_shape.back();
    int64_t rows = g2.numel() / std::max<int64_t>(N, 1);
    Tensor gb;
    if (b2_shape.numel() == K * N && g2.dim() > 2 && a2.numel() == rows * K) {
      // A shared right operand under a batched left one: fold the batch into
      // rows, one GEMM instead of a batch of them and a reduction.
      gb = matmul_forward(adjoint(a2.reshape({rows, K})), g2.reshape({rows, N}));
    } else {
      gb = autograd::sum_to(matmul_forward(adjoint(a2), g2), b2_shape);
    }
    r.b = gb.reshape(b_shape);
  }
  return r;
}

Tensor linear_forward(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  autograd::NoGradGuard no_grad;
  // (linear() checks these too; a direct call would hand GEMM a pointer of
  // the other device)
  check_devices("linear_forward", x, weight);
  if (bias.defined()) check_devices("linear_forward", x, bias);
  // ... and one dtype and fitting shapes (an f32 weight under f64 x was read
  // past its end)
  FK_CHECK(weight.dtype() == x.dtype() && weight.dim() == 2 && x.dim() >= 1 &&
               x.shape()[x.dim() - 1] == weight.shape()[1],
           "linear_forward", "x (..., in) and a weight (out, in) of x's dtype",
           x.shape().str() + " " + name(x.dtype()) + " and " + weight.shape().str() + " " +
               name(weight.dtype()));
  const DType dt = x.dtype();
  const int64_t out_f = weight.shape()[0], in_f = weight.shape()[1];
  Dims lead(x.shape().data(), x.dim() - 1);
  const int64_t nrows = lead.numel();
  Tensor x2 = x.dim() == 2 ? x : x.reshape({nrows, in_f});
  Tensor w = weight, bb = bias;
  const DType ct = compute_type(dt);
  if (ct != dt && x.device().is_cuda()) {
    // 16-bit operands go to cuBLAS as they are, with an f32 result holding
    // the bias (beta 1): the host path's rounding points (below), on tensor
    // cores instead of widened copies on the FP32 units.
    x2 = x2.contiguous();
    w = w.contiguous();
    const bool sums = nrows > 0 && out_f > 0 && in_f > 0;
    const TensorOptions f32{DType::F32, x.device()};
    Tensor out2 = bb.defined() || sums ? empty({nrows, out_f}, f32) : zeros({nrows, out_f}, f32);
    if (bb.defined()) out2.copy_(bb);
    if (sums)
      gemm_f32_out_on(x.device(), dt, false, true, nrows, out_f, in_f, 1.0, x2.data_ptr(), in_f,
                      w.data_ptr(), in_f, bb.defined() ? 1.0 : 0.0, out2.data<float>(), out_f);
    lead.push_back(out_f);
    return out2.to(dt).reshape(lead);
  }
  if (ct != dt) {
    x2 = x2.to(ct);
    w = w.to(ct);
    if (bb.defined()) bb = bb.to(ct);
  }
  Tensor out2 = empty({nrows, out_f}, {ct, x.device()});
  double beta = 0.0;
  if (bb.defined()) {
    out2.copy_(bb);  // broadcast over rows; GEMM then accumulates onto it
    beta = 1.0;
  }
  matmul_into(x2, w.transpose(0, 1), out2, beta);
  if (ct != dt) out2 = out2.to(dt);
  lead.push_back(out_f);
  return out2.reshape(lead);
}

LinearGrads linear_backward(const Tensor& grad, const Tensor& x, const Tensor& weight,
                            const Dims& x_shape, bool need_x, bool need_weight, bool need_bias) {
  autograd::NoGradGuard no_grad;
  const int64_t out_f = grad.shape().back();
  const int64_t rows = Dims(x_shape.data(), x_shape.size() - 1).numel();
  Tensor g2 = grad.dim() == 2 ? grad : grad.reshape({rows, out_f});
  LinearGrads r;
  // y = x W^T: dx = dy · conj(W), dW = dy^T · conj(x).
  if (need_x) r.x = matmul_forward(g2, conj_if_complex(weight)).reshape(x_shape);
  if (need_weight) {
    int64_t in_f = x_shape.back();
    Tensor x2 = x.dim() == 2 ? x : x.reshape({rows, in_f});
    r.weight = matmul_forward(g2.transpose(0, 1), conj_if_complex(x2));
  }
  if (need_bias) r.bias = sum(g2, {0});
  return r;
}

// --- public ops --------------------------------------------------------------

Tensor matmul(const Tensor& a, const Tensor& b) {
  profile::OpScope scope("matmul");
  check_defined("matmul", a, "left operand");
  check_defined("matmul", b, "right operand");
  check_devices("matmul", a, b);
  check_matmul_shapes("matmul", a, b);
  return matmul_checked("matmul", a, b);
}

Tensor bmm(const Tensor& a, const Tensor& b) {
  profile::OpScope scope("bmm");
  check_defined("bmm", a, "left operand");
  check_defined("bmm", b, "right operand");
  check_devices("bmm", a, b);
  FK_CHECK(a.dim() == 3 && b.dim() == 3, "bmm", "3-D tensors [B, M, K] and [B, K, N]", both(a, b));
  FK_CHECK(a.shape()[0] == b.shape()[0], "bmm", "equal batch sizes", both(a, b));
  FK_CHECK(a.shape()[2] == b.shape()[1], "bmm", "inner dimensions to match", both(a, b));
  return matmul_checked("bmm", a, b);
}

Tensor linear(const Tensor& x_in, const Tensor& w_in, const Tensor& b_in) {
  profile::OpScope scope("linear");
  check_defined("linear", x_in, "input");
  check_defined("linear", w_in, "weight");
  check_devices("linear", x_in, w_in);
  FK_CHECK(w_in.dim() == 2, "linear", "a 2-D weight [out, in]", w_in.shape().str());
  FK_CHECK(x_in.dim() >= 1, "linear", "an input of at least 1 dim [..., in]", "a 0-d input");
  FK_CHECK(x_in.shape().back() == w_in.shape()[1], "linear",
           "input features (last dimension) to match the weight's [out, in]", both(x_in, w_in));
  if (b_in.defined()) {
    check_devices("linear", x_in, b_in);
    FK_CHECK(b_in.dim() == 1 && b_in.shape()[0] == w_in.shape()[0], "linear",
             "a bias of shape " + Dims{w_in.shape()[0]}.str(), b_in.shape().str());
  }
  Tensor x = autocast_operand(x_in), w = autocast_operand(w_in), bias = autocast_operand(b_in);
  DType rt = product_dtype("linear", x.dtype(), w.dtype(),
                           bias.defined() ? std::optional<DType>(bias.dtype()) : std::nullopt);
  if (x.dtype() != rt) x = x.to(rt);
  if (w.dtype() != rt) w = w.to(rt);
  if (bias.defined() && bias.dtype() != rt) bias = bias.to(rt);
  Tensor out = linear_forward(x, w, bias);
  if (autograd::needs_grad(x, w, bias)) {
    auto node = std::make_shared<LinearBackward>();
    if (autograd::tensor_requires_grad(w)) node->x = x;
    if (autograd::tensor_requires_grad(x)) node->weight = w;
    node->x_shape = x.shape();
    autograd::record(node, {x, w, bias}, out);
  }
  return out;
}

}  // namespace fk
