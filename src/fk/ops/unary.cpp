#include "fk/ops/unary.h"

#include <emmintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "fk/autograd.h"
#include "fk/cpu_isa.h"
#include "fk/cuda/kernels.h"
#include "fk/factory.h"
#include "fk/ops/cpu/dispatch.h"
#include "fk/ops/cpu/loops.h"
#include "fk/ops/cpu/vec_math.h"
#include "fk/ops/cuda_dispatch.h"
#include "fk/ops/unary_formulas.h"
#include "fk/profile.h"

namespace fk {

const char* name(UnaryOp op) {
  static const char* names[] = {"neg",     "abs",       "sign",       "exp", "log",   "log1p",
                                "expm1",   "sqrt",      "rsqrt",      "sin", "cos",   "tanh",
                                "sigmoid", "relu",      "leaky_relu", "elu", "gelu",  "gelu_tanh",
                                "silu",    "softplus",  "erf",        "pow", "clamp", "conj",
                                "square",  "reciprocal"};
  return names[static_cast<int>(op)];
}

namespace {

namespace uf = unary_formulas;

bool accepts_complex(UnaryOp op) {
  switch (op) {
    case UnaryOp::Neg:
    case UnaryOp::Abs:
    case UnaryOp::Exp:
    case UnaryOp::Log:
    case UnaryOp::Sqrt:
    case UnaryOp::Conj:
    case UnaryOp::Square:
    case UnaryOp::Reciprocal:
      return true;
    default:
      return false;
  }
}

// Ops whose result on an integer input stays an integer.
bool keeps_integers(UnaryOp op) {
  return op == UnaryOp::Neg || op == UnaryOp::Abs || op == UnaryOp::Sign || op == UnaryOp::Relu ||
         op == UnaryOp::Clamp || op == UnaryOp::Square || op == UnaryOp::Conj;
}

// Backward formulas that read the forward's output instead of its input.
bool uses_output(UnaryOp op) {
  switch (op) {
    case UnaryOp::Exp:
    case UnaryOp::Expm1:
    case UnaryOp::Sqrt:
    case UnaryOp::Rsqrt:
    case UnaryOp::Tanh:
    case UnaryOp::Sigmoid:
    case UnaryOp::Reciprocal:
      return true;
    default:
      return false;
  }
}

// A double parameter as T, saturated for integer T (clamp bounds may be +-inf).
template <typename T>
T saturate(double v) {
  if constexpr (std::is_integral_v<T>) {
    if (!(v > static_cast<double>(std::numeric_limits<T>::lowest())))
      return std::numeric_limits<T>::lowest();
    if (!(v < static_cast<double>(std::numeric_limits<T>::max())))
      return std::numeric_limits<T>::max();
  }
  return static_cast<T>(v);
}

// The f32 ops with an AVX2 kernel (cpu/vec_math.h), or false.
bool vec_fn_of(UnaryOp op, cpu::avx2::VecFn* fn) {
  using cpu::avx2::VecFn;
  switch (op) {
    case UnaryOp::Exp:
      *fn = VecFn::Exp;
      return true;
    case UnaryOp::Log:
      *fn = VecFn::Log;
      return true;
    case UnaryOp::Tanh:
      *fn = VecFn::Tanh;
      return true;
    case UnaryOp::Sigmoid:
      *fn = VecFn::Sigmoid;
      return true;
    case UnaryOp::Silu:
      *fn = VecFn::Silu;
      return true;
    case UnaryOp::Softplus:
      *fn = VecFn::Softplus;
      return true;
    default:
      return false;
  }
}

// out = kernel(x) for an array kernel kernel(const T* in, T* out, n): unit-stride
// runs directly, any other run through a small buffer, so every element gets
// the same code (and bitwise the same result) whatever the layout or thread
// split.
template <typename T, typename K>
void map_array(Tensor& out, const Tensor& x, const K& kernel) {
  auto inner = [&](char** p, const int64_t* s, int64_t n) {
    if (s[0] == sizeof(T) && s[1] == sizeof(T)) {
      return kernel(reinterpret_cast<const T*>(p[1]), reinterpret_cast<T*>(p[0]), n);
    }
    constexpr int64_t kChunk = 256;
    T buf[kChunk];
    for (int64_t j = 0; j < n; j += kChunk) {
      const int64_t m = std::min(kChunk, n - j);
      for (int64_t i = 0; i < m; ++i) buf[i] = *reinterpret_cast<const T*>(p[1] + (j + i) * s[1]);
      kernel(buf, buf, m);
      for (int64_t i = 0; i < m; ++i) *reinterpret_cast<T*>(p[0] + (j + i) * s[0]) = buf[i];
    }
  };
  if (cpu::flat_operands(out, {&x}) && cpu::run_small_flat<2>(out, {&out, &x}, inner)) return;
  cpu::run(cpu::make_loop<2>(out.shape(), {&out, &x}), inner);
}

// sqrt and 1/sqrt with SSE2's sqrtps/sqrtpd (x86-64's baseline): IEEE
// correctly rounded, so bitwise std::sqrt's result, but vectorised. The scalar
// loop cannot be: without -fno-math-errno GCC keeps a libm call per element
// for errno (sqrt ran at ~1.7 ns per f32 element).
template <typename T, bool kReciprocal>
void sqrt_array(const T* x, T* y, int64_t n) {
  int64_t i = 0;
  if constexpr (std::is_same_v<T, float>) {
    const __m128 one = _mm_set1_ps(1.0f);
    for (; i + 4 <= n; i += 4) {
      __m128 r = _mm_sqrt_ps(_mm_loadu_ps(x + i));
      if constexpr (kReciprocal) r = _mm_div_ps(one, r);
      _mm_storeu_ps(y + i, r);
    }
    for (; i < n; ++i) {
      float r = _mm_cvtss_f32(_mm_sqrt_ss(_mm_set_ss(x[i])));
      y[i] = kReciprocal ? 1.0f / r : r;
    }
  } else {
    const __m128d one = _mm_set1_pd(1.0);
    for (; i + 2 <= n; i += 2) {
      __m128d r = _mm_sqrt_pd(_mm_loadu_pd(x + i));
      if constexpr (kReciprocal) r = _mm_div_pd(one, r);
      _mm_storeu_pd(y + i, r);
    }
    for (; i < n; ++i) {
      double r = _mm_cvtsd_f64(_mm_sqrt_sd(_mm_setzero_pd(), _mm_set_sd(x[i])));
      y[i] = kReciprocal ? 1.0 / r : r;
    }
  }
}

// Where forward_real's element code runs: a tensor's elements (map1, or
// map_array for the array kernels) or n contiguous host values
// (unary_forward_host). Either way every element gets the same code.
template <typename T>
struct TensorMap {
  Tensor& out;
  const Tensor& x;
  template <typename F>
  void map(const F& f) const {
    cpu::map1<T, T>(out, x, f);
  }
  template <typename K>
  void array(const K& kernel) const {
    map_array<T>(out, x, kernel);
  }
};
template <typename T>
struct HostMap {
  const T* x;
  T* y;
  int64_t n;
  template <typename F>
  void map(const F& f) const {
    for (int64_t i = 0; i < n; ++i) y[i] = f(x[i]);
  }
  template <typename K>
  void array(const K& kernel) const {
    kernel(x, y, n);
  }
};

// y = f(x) for real T.
template <typename T, typename Map>
void forward_real(UnaryOp op, const Map& m, UnaryParams p) {
  if constexpr (std::is_same_v<T, float>) {
    cpu::avx2::VecFn fn;
    if (vec_fn_of(op, &fn) && cpu_isa() >= CpuIsa::Avx2) {
      const cpu::avx2::VecParams vp{static_cast<float>(p.a), static_cast<float>(p.b)};
      return m.array([fn, vp](const float* in, float* o, int64_t n) {
        cpu::avx2::apply_f32(fn, in, o, n, vp);
      });
    }
  }
  if constexpr (std::is_floating_point_v<T>) {
    if (op == UnaryOp::Sqrt) return m.array(sqrt_array<T, false>);
    if (op == UnaryOp::Rsqrt) return m.array(sqrt_array<T, true>);
  }
  const T a = saturate<T>(p.a), b = saturate<T>(p.b);
  auto run = [&](auto f) { m.map(f); };
  switch (op) {
    case UnaryOp::Neg:
      return run([](T v) { return -v; });
    case UnaryOp::Abs:
      // fabs: -0 gives +0 (v < 0 kept -0), as torch.
      if constexpr (std::is_floating_point_v<T>) return run([](T v) { return std::fabs(v); });
      return run([](T v) { return v < T(0) ? -v : v; });
    case UnaryOp::Sign:
      return run([](T v) { return uf::sign(v); });
    case UnaryOp::Relu:
      return run([](T v) { return uf::relu(v); });
    case UnaryOp::Clamp:
      return run([a, b](T v) { return uf::clamp(v, a, b); });
    case UnaryOp::Square:
    case UnaryOp::Conj:
      if (op == UnaryOp::Conj) return run([](T v) { return v; });
      return run([](T v) { return v * v; });
    default:
      break;
  }
  if constexpr (std::is_floating_point_v<T>) {
    switch (op) {
      case UnaryOp::Exp:
        return run([](T v) { return std::exp(v); });
      case UnaryOp::Log:
        return run([](T v) { return std::log(v); });
      case UnaryOp::Log1p:
        return run([](T v) { return std::log1p(v); });
      case UnaryOp::Expm1:
        return run([](T v) { return std::expm1(v); });
      case UnaryOp::Sqrt:
        return run([](T v) { return std::sqrt(v); });
      case UnaryOp::Rsqrt:
        return run([](T v) { return T(1) / std::sqrt(v); });
      case UnaryOp::Sin:
        return run([](T v) { return std::sin(v); });
      case UnaryOp::Cos:
        return run([](T v) { return std::cos(v); });
      case UnaryOp::Tanh:
        return run([](T v) { return std::tanh(v); });
      case UnaryOp::Sigmoid:
        return run([](T v) { return uf::sigmoid(v); });
      case UnaryOp::LeakyRelu:
        return run([a](T v) { return uf::leaky_relu(v, a); });
      case UnaryOp::Elu:
        return run([a](T v) { return uf::elu(v, a); });
      case UnaryOp::Gelu:
        return run([](T v) { return uf::gelu(v); });
      case UnaryOp::GeluTanh:
        return run([](T v) { return uf::gelu_tanh(v); });
      case UnaryOp::Silu:
        return run([](T v) { return uf::silu(v); });
      case UnaryOp::Softplus:
        return run([a, b](T v) { return uf::softplus(v, a, b); });
      case UnaryOp::Erf:
        return run([](T v) { return std::erf(v); });
      case UnaryOp::PowScalar:
        return run([a](T v) { return std::pow(v, a); });
      case UnaryOp::Reciprocal:
        return run([](T v) { return T(1) / v; });
      default:
        break;
    }
  }
  cpu::unsupported(name(op), dtype_of<T>(), "f32 or f64");
}

template <typename C>
void forward_complex(UnaryOp op, Tensor& out, const Tensor& x) {
  using R = typename C::value_type;
  if (op == UnaryOp::Abs) return cpu::map1<R, C>(out, x, [](C v) { return std::abs(v); });
  auto run = [&](auto f) { cpu::map1<C, C>(out, x, f); };
  switch (op) {
    case UnaryOp::Neg:
      return run([](C v) { return -v; });
    case UnaryOp::Conj:
      return run([](C v) { return std::conj(v); });
    case UnaryOp::Exp:
      return run([](C v) { return std::exp(v); });
    case UnaryOp::Log:
      return run([](C v) { return std::log(v); });
    case UnaryOp::Sqrt:
      return run([](C v) { return std::sqrt(v); });
    case UnaryOp::Square:
      return run([](C v) { return v * v; });
    case UnaryOp::Reciprocal:
      return run([](C v) { return C(1) / v; });
    default:
      cpu::unsupported(name(op), dtype_of<C>(), "a real dtype");
  }
}

// Where backward_real's element code runs: tensors (map2) or n contiguous
// host values (unary_backward_host).
template <typename T>
struct TensorMap2 {
  Tensor& gx;
  const Tensor &g, &x, &y;
  template <typename F>
  void with_x(const F& f) const {
    cpu::map2<T, T, T>(gx, g, x, f);
  }
  template <typename F>
  void with_y(const F& f) const {
    cpu::map2<T, T, T>(gx, g, y, f);
  }
};
template <typename T>
struct HostMap2 {
  T* gx;
  const T *g, *x, *y;
  int64_t n;
  template <typename F>
  void with_x(const F& f) const {
    for (int64_t i = 0; i < n; ++i) gx[i] = f(g[i], x[i]);
  }
  template <typename F>
  void with_y(const F& f) const {
    for (int64_t i = 0; i < n; ++i) gx[i] = f(g[i], y[i]);
  }
};

// dx = g * f'(x), using y = f(x) where that is cheaper. Real T.
template <typename T, typename Map>
void backward_real(UnaryOp op, const Map& m, UnaryParams p) {
  const T a = static_cast<T>(p.a), b = static_cast<T>(p.b);
  auto with_x = [&](auto f) { m.with_x(f); };
  auto with_y = [&](auto f) { m.with_y(f); };
  switch (op) {
    case UnaryOp::Neg:
      return with_x([](T gv, T) { return -gv; });
    case UnaryOp::Conj:
      return with_x([](T gv, T) { return gv; });
    case UnaryOp::Abs:
      return with_x([](T gv, T v) { return uf::abs_backward(gv, v); });
    case UnaryOp::Sign:
      return with_x([](T, T) { return T(0); });
    case UnaryOp::Exp:
      return with_y([](T gv, T yv) { return uf::exp_backward(gv, yv); });
    case UnaryOp::Log:
      return with_x([](T gv, T v) { return uf::log_backward(gv, v); });
    case UnaryOp::Log1p:
      return with_x([](T gv, T v) { return uf::log1p_backward(gv, v); });
    case UnaryOp::Expm1:
      return with_y([](T gv, T yv) { return uf::expm1_backward(gv, yv); });
    case UnaryOp::Sqrt:
      return with_y([](T gv, T yv) { return uf::sqrt_backward(gv, yv); });
    case UnaryOp::Rsqrt:
      return with_y([](T gv, T yv) { return uf::rsqrt_backward(gv, yv); });
    case UnaryOp::Sin:
      return with_x([](T gv, T v) { return uf::sin_backward(gv, v); });
    case UnaryOp::Cos:
      return with_x([](T gv, T v) { return uf::cos_backward(gv, v); });
    case UnaryOp::Tanh:
      return with_y([](T gv, T yv) { return uf::tanh_backward(gv, yv); });
    case UnaryOp::Sigmoid:
      return with_y([](T gv, T yv) { return uf::sigmoid_backward(gv, yv); });
    case UnaryOp::Relu:
      return with_x([](T gv, T v) { return uf::relu_backward(gv, v); });
    case UnaryOp::LeakyRelu:
      return with_x([a](T gv, T v) { return uf::leaky_relu_backward(gv, v, a); });
    case UnaryOp::Elu:
      return with_x([a](T gv, T v) { return uf::elu_backward(gv, v, a); });
    case UnaryOp::Gelu:
      return with_x([](T gv, T v) { return uf::gelu_backward(gv, v); });
    case UnaryOp::GeluTanh:
      return with_x([](T gv, T v) { return uf::gelu_tanh_backward(gv, v); });
    case UnaryOp::Silu:
      return with_x([](T gv, T v) { return uf::silu_backward(gv, v); });
    case UnaryOp::Softplus:
      return with_x([a, b](T gv, T v) { return uf::softplus_backward(gv, v, a, b); });
    case UnaryOp::Erf:
      return with_x([](T gv, T v) { return uf::erf_backward(gv, v); });
    case UnaryOp::PowScalar:
      return with_x([a](T gv, T v) { return uf::pow_backward(gv, v, a); });
    case UnaryOp::Clamp:
      return with_x([a, b](T gv, T v) { return uf::clamp_backward(gv, v, a, b); });
    case UnaryOp::Square:
      return with_x([](T gv, T v) { return uf::square_backward(gv, v); });
    case UnaryOp::Reciprocal:
      return with_y([](T gv, T yv) { return uf::reciprocal_backward(gv, yv); });
  }
}

// Complex gradients follow the conjugate-Wirtinger convention: for a real loss
// L, grad = dL/dRe + i dL/dIm, and for holomorphic f, gx = g * conj(f'(x)).
template <typename C>
void backward_complex(UnaryOp op, Tensor& gx, const Tensor& g, const Tensor& x, const Tensor& y) {
  using R = typename C::value_type;
  if (op == UnaryOp::Abs) {  // g real, x complex: g * x / |x|
    return cpu::map2<C, R, C>(gx, g, x, [](R gv, C v) {
      R m = std::abs(v);
      return m == R(0) ? C(0) : gv * v / m;
    });
  }
  auto with_x = [&](auto f) { cpu::map2<C, C, C>(gx, g, x, f); };
  auto with_y = [&](auto f) { cpu::map2<C, C, C>(gx, g, y, f); };
  switch (op) {
    case UnaryOp::Neg:
      return with_x([](C gv, C) { return -gv; });
    case UnaryOp::Conj:
      return with_x([](C gv, C) { return std::conj(gv); });
    case UnaryOp::Exp:
      return with_y([](C gv, C yv) { return gv * std::conj(yv); });
    case UnaryOp::Log:
      return with_x([](C gv, C v) { return gv / std::conj(v); });
    case UnaryOp::Sqrt:
      return with_y([](C gv, C yv) { return gv / (R(2) * std::conj(yv)); });
    case UnaryOp::Square:
      return with_x([](C gv, C v) { return R(2) * gv * std::conj(v); });
    case UnaryOp::Reciprocal:
      return with_y([](C gv, C yv) { return -gv * std::conj(yv * yv); });
    default:
      cpu::unsupported(name(op), dtype_of<C>(), "a real dtype");
  }
}

// On bool, torch's: sign and conj stay bool, square and clamp (integer
// bounds) give i64, neg, abs and relu are refused, the rest compute in f32.
DType result_dtype(UnaryOp op, DType in) {
  if (in == DType::Bool) {
    FK_CHECK(op != UnaryOp::Neg && op != UnaryOp::Abs && op != UnaryOp::Relu, name(op),
             "a numeric dtype", "bool");
    if (op == UnaryOp::Sign || op == UnaryOp::Conj) return DType::Bool;
    return keeps_integers(op) ? DType::I64 : DType::F32;
  }
  if (is_integral(in)) return keeps_integers(op) ? in : DType::F32;
  if (is_complex(in)) {
    FK_CHECK(accepts_complex(op), name(op), "a real dtype", name(in));
    return op == UnaryOp::Abs ? real_type(in) : in;
  }
  return in;
}

struct UnaryBackward : autograd::Node {
  UnaryOp op;
  UnaryParams params;
  autograd::SavedTensor x, y;
  std::vector<Tensor> apply(std::vector<Tensor>&& g) override {
    return {unary_backward(op, g[0], x.unpack(name()), y.unpack(name()), params)};
  }
  const char* name() const override { return "UnaryBackward"; }
  void for_each_saved(const std::function<void(autograd::SavedTensor&)>& fn) override {
    fn(x);
    fn(y);
  }
};

// CUDA: one strided kernel; f16/bf16 are computed in f32 inside it.
Tensor unary_forward_cuda(UnaryOp op, const Tensor& x_in, DType out_dtype, UnaryParams p) {
  const DType in = x_in.dtype();
  Tensor x = in == DType::Bool ? x_in.to(keeps_integers(op) ? DType::I64 : DType::F32)
             : is_integral(in) && !keeps_integers(op) ? x_in.to(DType::F32)
                                                      : x_in;
  // The kernel writes x's dtype (a complex abs its real part); sign of a bool
  // is computed in i64 and narrowed back.
  const DType kernel_out = in == DType::Bool ? x.dtype() : out_dtype;
  Tensor out = empty(x.shape(), {kernel_out, x.device()});
  cuda::launch_unary_strided(static_cast<int>(op), static_cast<int>(x.dtype()), x.data_ptr(),
                             out.data_ptr(), x.dim(), x.shape().data(), x.strides().data(),
                             out.strides().data(), p.a, p.b, cuda_ops::stream_of(x));
  cuda_ops::launched(x);
  return kernel_out == out_dtype ? out : out.to(out_dtype);
}

Tensor unary_backward_cuda(UnaryOp op, const Tensor& grad, const Tensor& ref_in, UnaryParams p) {
  Tensor ref = ref_in.contiguous();
  DType gdt = op == UnaryOp::Abs ? real_type(ref.dtype()) : ref.dtype();
  Tensor g = grad.to(gdt).contiguous();
  Tensor gx = empty(ref.shape(), {ref.dtype(), ref.device()});
  cuda::launch_unary_backward(static_cast<int>(op), static_cast<int>(ref.dtype()), g.data_ptr(),
                              ref.data_ptr(), gx.data_ptr(), ref.numel(), p.a, p.b,
                              cuda_ops::stream_of(ref));
  cuda_ops::launched(ref);
  return gx;
}

}  // namespace

Tensor unary_forward(UnaryOp op, const Tensor& x_in, UnaryParams p) {
  profile::OpScope scope(name(op));
  DType out_dtype = result_dtype(op, x_in.dtype());
  if (x_in.device().is_cuda()) return unary_forward_cuda(op, x_in, out_dtype, p);
  DType ct =
      compute_type(is_integral(x_in.dtype()) && !keeps_integers(op) ? out_dtype : x_in.dtype());
  if (x_in.dtype() == DType::Bool) ct = keeps_integers(op) ? DType::I64 : DType::F32;
  Tensor x = x_in.dtype() == ct ? x_in : x_in.to(ct);
  DType out_ct = op == UnaryOp::Abs ? real_type(ct) : ct;
  Tensor out = empty(x.shape(), {out_ct, x.device()});
  if (is_complex(ct)) {
    if (ct == DType::C64)
      forward_complex<c64>(op, out, x);
    else
      forward_complex<c128>(op, out, x);
  } else {
    cpu::visit_real(ct, name(op), [&](auto tag) {
      using T = typename decltype(tag)::type;
      forward_real<T>(op, TensorMap<T>{out, x}, p);
    });
  }
  return out.dtype() == out_dtype ? out : out.to(out_dtype);
}

Tensor unary_backward(UnaryOp op, const Tensor& grad, const Tensor& x_in, const Tensor& y_in,
                      UnaryParams p) {
  profile::OpScope scope("unary_backward");
  // Only one of x and y is read (uses_output); the other may be undefined.
  const bool from_y = uses_output(op);
  const Tensor& ref = from_y ? y_in : x_in;
  if (ref.device().is_cuda()) return unary_backward_cuda(op, grad, ref, p);
  DType ct = compute_type(ref.dtype());
  Tensor x = from_y ? Tensor() : x_in.to(ct);
  Tensor y = from_y ? y_in.to(ct) : Tensor();
  Tensor g = grad.to(op == UnaryOp::Abs ? real_type(ct) : ct);
  Tensor gx = empty(ref.shape(), {ct, ref.device()});
  if (is_complex(ct)) {
    if (ct == DType::C64)
      backward_complex<c64>(op, gx, g, x, y);
    else
      backward_complex<c128>(op, gx, g, x, y);
  } else {
    cpu::visit_float(ct, name(op), [&](auto tag) {
      using T = typename decltype(tag)::type;
      backward_real<T>(op, TensorMap2<T>{gx, g, x, y}, p);
    });
  }
  return gx.dtype() == ref.dtype() ? gx : gx.to(ref.dtype());
}

void unary_forward_host(UnaryOp op, const float* x, float* y, int64_t n, UnaryParams p) {
  forward_real<float>(op, HostMap<float>{x, y, n}, p);
}

void unary_backward_host(UnaryOp op, const float* g, const float* x, const float* y, float* gx,
                         int64_t n, UnaryParams p) {
  backward_real<float>(op, HostMap2<float>{gx, g, x, y, n}, p);
}

Tensor unary(UnaryOp op, const Tensor& x, UnaryParams p) {
  Tensor out = unary_forward(op, x, p);
  if (autograd::needs_grad(x)) {
    auto node = std::make_shared<UnaryBackward>();
    node->op = op;
    node->params = p;
    if (uses_output(op)) {
      node->y = out.detach();  // not `out`: a node holding its own output is a cycle
    } else {
      node->x = x;
    }
    autograd::record(node, {x}, out);
  }
  return out;
}

Tensor clamp(const Tensor& x, double lo, double hi) {
  // A NaN bound let every value through on its side (torch gives NaN
  // everywhere); it is almost surely a bug upstream, so it is refused.
  FK_CHECK(!std::isnan(lo) && !std::isnan(hi) && !(lo > hi), "clamp", "bounds with min <= max",
           "min " + fk::to_text(lo) + ", max " + fk::to_text(hi));
  // A fractional bound on an integer tensor clamps in f32, as torch's
  // promotion has it (it was truncated: clamp([1, 2, 3], 0.5, 2.5) gave 2).
  auto fractional = [](double v) { return std::isfinite(v) && v != std::floor(v); };
  if (is_integral(x.dtype()) && (fractional(lo) || fractional(hi)))
    return unary(UnaryOp::Clamp, x.to(DType::F32), {lo, hi});
  return unary(UnaryOp::Clamp, x, {lo, hi});
}

}  // namespace fk
