#include "nefi/field/dense.h"

#include <cmath>
#include <cstring>

#include "fk/autograd.h"
#include "fk/blas.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/profile.h"
#include "nefi/field/fast_tanh.h"

namespace nefi {
namespace {

fk::Tensor contig(const fk::Tensor& t) {
  fk::autograd::NoGradGuard ng;
  return t.is_contiguous() ? t.detach() : t.contiguous().detach();
}

struct DenseBackward : fk::autograd::Node {
  fk::autograd::SavedTensor x, w, y;
  DenseActivation act = DenseActivation::None;
  const char* name() const override { return "DenseBackward"; }
  void for_each_saved(const std::function<void(fk::autograd::SavedTensor&)>& fn) override {
    fn(x);
    fn(w);
    fn(y);
  }
  std::vector<fk::Tensor> apply(std::vector<fk::Tensor>&& grads) override {
    fk::profile::OpScope scope("dense_backward");
    const fk::Tensor& xt = x.unpack(name());
    const fk::Tensor& wt = w.unpack(name());
    const fk::DType dt = xt.dtype();
    const int64_t n = xt.size(0), in = xt.size(1), out = wt.size(0);
    fk::Tensor g = grads[0];
    if (g.dtype() != dt) g = g.to(dt);
    g = contig(g);
    fk::Tensor gz = g;
    if (act == DenseActivation::Tanh) {
      const fk::Tensor& yt = y.unpack(name());
      gz = fk::empty(g.shape(), {dt});
      auto run = [&](auto tag) {
        using T = decltype(tag);
        const T* __restrict gg = g.data<T>();
        const T* __restrict yy = yt.data<T>();
        T* __restrict o = gz.data<T>();
        for (int64_t i = 0, m = g.numel(); i < m; ++i) o[i] = gg[i] * (T(1) - yy[i] * yy[i]);
      };
      dt == fk::DType::F64 ? run(double{}) : run(float{});
    }
    std::vector<fk::Tensor> res(3);
    if (next[0].fn) {
      res[0] = fk::empty({n, in}, {dt});
      fk::gemm(dt, false, false, n, in, out, 1.0, gz.data_ptr(), out, wt.data_ptr(), in, 0.0,
               res[0].data_ptr(), in);
      fk::profile::count_launch();
    }
    if (next[1].fn) {
      res[1] = fk::empty({out, in}, {dt});
      fk::gemm(dt, true, false, out, in, n, 1.0, gz.data_ptr(), out, xt.data_ptr(), in, 0.0,
               res[1].data_ptr(), in);
      fk::profile::count_launch();
    }
    if (next[2].fn) {
      res[2] = fk::empty({out}, {dt});
      auto run = [&](auto tag) {
        using T = decltype(tag);
        const T* gg = gz.data<T>();
        T* db = res[2].data<T>();
        for (int64_t j = 0; j < out; ++j) db[j] = T(0);
        for (int64_t i = 0; i < n; ++i)
          for (int64_t j = 0; j < out; ++j) db[j] += gg[i * out + j];
      };
      dt == fk::DType::F64 ? run(double{}) : run(float{});
    }
    return res;
  }
};

}  // namespace

fk::Tensor dense(const fk::Tensor& x, const fk::Tensor& w, const fk::Tensor& b,
                 DenseActivation act) {
  fk::profile::OpScope scope("dense");
  FK_CHECK(x.dim() == 2 && w.dim() == 2 && b.dim() == 1 && x.size(1) == w.size(1) &&
               b.size(0) == w.size(0),
           "nefi::dense", "x (N, in), w (out, in), b (out)",
           x.shape().str() + ", " + w.shape().str() + ", " + b.shape().str());
  FK_CHECK(
      (x.dtype() == fk::DType::F32 || x.dtype() == fk::DType::F64) && w.dtype() == x.dtype() &&
          b.dtype() == x.dtype(),
      "nefi::dense", "f32/f64 operands of one dtype",
      std::string(fk::name(x.dtype())) + ", " + fk::name(w.dtype()) + ", " + fk::name(b.dtype()));
  const fk::DType dt = x.dtype();
  const fk::Tensor xc = contig(x), wc = contig(w), bc = contig(b);
  const int64_t n = x.size(0), in = x.size(1), out = w.size(0);
  fk::Tensor y = fk::empty({n, out}, {dt});
  const size_t row = static_cast<size_t>(out) * y.itemsize();
  for (int64_t i = 0; i < n; ++i)
    std::memcpy(static_cast<char*>(y.data_ptr()) + i * row, bc.data_ptr(), row);
  fk::gemm(dt, false, true, n, out, in, 1.0, xc.data_ptr(), in, wc.data_ptr(), in, 1.0,
           y.data_ptr(), out);
  fk::profile::count_launch();
  if (act == DenseActivation::Tanh) {
    if (dt == fk::DType::F32) {
      fast_tanh_f32(y.data<float>(), y.data<float>(), y.numel());
    } else {
      double* p = y.data<double>();
      for (int64_t i = 0, m = y.numel(); i < m; ++i) p[i] = std::tanh(p[i]);
    }
  }
  if (fk::autograd::needs_grad(x, w, b)) {
    auto node = std::make_shared<DenseBackward>();
    node->x = xc;
    node->w = wc;
    if (act == DenseActivation::Tanh) node->y = y.detach();
    node->act = act;
    fk::autograd::record(node, {x, w, b}, y);
  }
  return y;
}

}  // namespace nefi
