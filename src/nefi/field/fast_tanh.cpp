#include "nefi/field/fast_tanh.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "fk/autograd.h"
#include "fk/cpu_isa.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/profile.h"

namespace nefi {
namespace {

// The kernel on GCC vector types (8 floats), compiled twice (baseline and
// AVX2+FMA) and picked at run time: the clamp's select would otherwise keep
// GCC from vectorising the plain loop (IEEE compares are not if-converted).
typedef float v8f __attribute__((vector_size(32)));

#define NEFI_TANH_KERNEL                                                                        \
  int64_t i = 0;                                                                                \
  for (; i + 8 <= n; i += 8) {                                                                  \
    v8f v;                                                                                      \
    __builtin_memcpy(&v, x + i, sizeof v);                                                      \
    v = v > kClamp ? (v8f{} + kClamp) : v;                                                      \
    v = v < -kClamp ? (v8f{} - kClamp) : v;                                                     \
    const v8f v2 = v * v;                                                                       \
    v8f p = v2 * a13 + a11;                                                                     \
    p = p * v2 + a9;                                                                            \
    p = p * v2 + a7;                                                                            \
    p = p * v2 + a5;                                                                            \
    p = p * v2 + a3;                                                                            \
    p = p * v2 + a1;                                                                            \
    p = p * v;                                                                                  \
    v8f q = v2 * b6 + b4;                                                                       \
    q = q * v2 + b2;                                                                            \
    q = q * v2 + b0;                                                                            \
    const v8f r = p / q;                                                                        \
    __builtin_memcpy(y + i, &r, sizeof r);                                                      \
  }                                                                                             \
  for (; i < n; ++i) {                                                                          \
    /* NaN stays NaN, as in the vector body (whose compares are false for it) */                \
    float v = x[i] != x[i] ? x[i] : std::min(kClamp, std::max(-kClamp, x[i]));                  \
    const float v2 = v * v;                                                                     \
    float p = ((((((a13 * v2 + a11) * v2 + a9) * v2 + a7) * v2 + a5) * v2 + a3) * v2 + a1) * v; \
    float q = ((b6 * v2 + b4) * v2 + b2) * v2 + b0;                                             \
    y[i] = p / q;                                                                               \
  }

using namespace tanh_rational;

void tanh_f32_base(const float* __restrict x, float* __restrict y, int64_t n) {
  NEFI_TANH_KERNEL
}

__attribute__((target("avx2,fma"))) void tanh_f32_avx2(const float* __restrict x,
                                                       float* __restrict y, int64_t n) {
  NEFI_TANH_KERNEL
}

void tanh_f32(const float* x, float* y, int64_t n) {
  if (fk::cpu_isa() >= fk::CpuIsa::Avx2)
    tanh_f32_avx2(x, y, n);
  else
    tanh_f32_base(x, y, n);
}

struct FastTanhBackward : fk::autograd::Node {
  fk::autograd::SavedTensor y;
  const char* name() const override { return "FastTanhBackward"; }
  void for_each_saved(const std::function<void(fk::autograd::SavedTensor&)>& fn) override { fn(y); }
  std::vector<fk::Tensor> apply(std::vector<fk::Tensor>&& grads) override {
    fk::profile::OpScope scope("fast_tanh_backward");
    const fk::Tensor& yt = y.unpack(name());
    fk::Tensor g = grads[0];
    if (g.dtype() != yt.dtype()) g = g.to(yt.dtype());
    if (!g.is_contiguous()) g = g.contiguous();
    fk::Tensor out = fk::empty(yt.shape(), {yt.dtype()});
    const int64_t n = yt.numel();
    auto run = [&](auto tag) {
      using T = decltype(tag);
      const T* __restrict yy = yt.data<T>();
      const T* __restrict gg = g.data<T>();
      T* __restrict o = out.data<T>();
      for (int64_t i = 0; i < n; ++i) o[i] = gg[i] * (T(1) - yy[i] * yy[i]);
    };
    if (yt.dtype() == fk::DType::F64)
      run(double{});
    else
      run(float{});
    return {out};
  }
};

}  // namespace

void fast_tanh_f32(const float* in, float* out, int64_t n) {
  if (in != out) return tanh_f32(in, out, n);
  // In place: through a small stack buffer (the kernels take restrict pointers).
  float buf[1024];
  for (int64_t i = 0; i < n; i += 1024) {
    const int64_t m = std::min<int64_t>(1024, n - i);
    std::memcpy(buf, in + i, m * sizeof(float));
    tanh_f32(buf, out + i, m);
  }
}

fk::Tensor fast_tanh(const fk::Tensor& x) {
  fk::profile::OpScope scope("fast_tanh");
  FK_CHECK(x.dtype() == fk::DType::F32 || x.dtype() == fk::DType::F64, "nefi::fast_tanh",
           "an f32/f64 tensor", fk::name(x.dtype()));
  FK_CHECK(x.device().is_cpu(), "nefi::fast_tanh",
           "a CPU tensor (a device trunk fuses tanh into its layers, dense_device.h; fk::tanh "
           "runs anywhere)",
           "one on " + x.device().str());
  fk::Tensor xc;
  {
    fk::autograd::NoGradGuard ng;
    xc = x.is_contiguous() ? x.detach() : x.contiguous().detach();
  }
  fk::Tensor y = fk::empty(x.shape(), {x.dtype()});
  if (x.dtype() == fk::DType::F32) {
    tanh_f32(xc.data<float>(), y.data<float>(), x.numel());
  } else {
    const double* a = xc.data<double>();
    double* b = y.data<double>();
    for (int64_t i = 0, n = x.numel(); i < n; ++i) b[i] = std::tanh(a[i]);
  }
  if (fk::autograd::needs_grad(x)) {
    auto node = std::make_shared<FastTanhBackward>();
    node->y = y.detach();
    fk::autograd::record(node, {x}, y);
  }
  return y;
}

}  // namespace nefi
