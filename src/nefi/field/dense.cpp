#include "nefi/field/dense.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <type_traits>
#include <utility>
#include <vector>

#include "fk/autograd.h"
#include "fk/blas.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/half.h"
#include "fk/ops/unary_formulas.h"
#include "fk/profile.h"
#include "nefi/field/activation_grad.h"
#include "nefi/field/dense_device.h"
#include "nefi/field/dense_gemm.h"
#include "nefi/field/dense_gemm_bf16.h"
#include "nefi/field/dense_gemm_tile.h"
#include "nefi/field/dense_narrow.h"
#include "nefi/field/fast_tanh.h"

namespace nefi {
namespace {

fk::Tensor contig(const fk::Tensor& t) {
  fk::autograd::NoGradGuard ng;
  return t.is_contiguous() ? t.detach() : t.contiguous().detach();
}

// Storage for bf16 activations. A step asks for the same few sizes every
// time, and glibc serves blocks this large (a MiB) with fresh mappings whose
// pages fault in again on every step (5 % of a deconvolution step): released
// buffers are kept for reuse instead, up to kKept of them and kKeptBytes.
std::shared_ptr<uint16_t[]> pooled_bf16(size_t count) {
  constexpr size_t kKept = 32, kKeptBytes = size_t{1} << 30;
  struct Pool {
    std::mutex m;
    std::vector<std::pair<size_t, uint16_t*>> free;
    size_t bytes = 0;  // held in free
  };
  static Pool& pool = *new Pool;  // never destroyed: buffers may outlive statics
  uint16_t* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(pool.m);
    for (auto it = pool.free.begin(); it != pool.free.end(); ++it)
      if (it->first == count) {
        p = it->second;
        pool.bytes -= 2 * count;
        pool.free.erase(it);
        break;
      }
  }
  // 64-byte aligned: the GEMM epilogue's 64-byte row stores then never split
  // across two cache lines.
  if (!p) p = static_cast<uint16_t*>(std::aligned_alloc(64, (count * 2 + 63) / 64 * 64));
  return std::shared_ptr<uint16_t[]>(p, [count](uint16_t* q) {
    std::lock_guard<std::mutex> lock(pool.m);
    if (pool.free.size() < kKept && pool.bytes + 2 * count <= kKeptBytes) {
      pool.free.emplace_back(count, q);
      pool.bytes += 2 * count;
    } else {
      std::free(q);
    }
  });
}

// A bf16 matrix of rows x cols with rows of an even length (zero pad).
Bf16Activation bf16_buffer(int64_t rows, int64_t cols) {
  const int64_t ld = (cols + 1) / 2 * 2;
  return {pooled_bf16(static_cast<size_t>(rows * ld)), rows, cols, ld};
}

struct DenseBackward : fk::autograd::Node {
  fk::autograd::SavedTensor x, w, y;
  Bf16Activation x16;  // x rounded to bf16 (chained native bf16 layers), or empty
  DenseActivation act = DenseActivation::None;
  bool bf16 = false;
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
    std::vector<fk::Tensor> res(3);
    if (next[2].fn) res[2] = fk::empty({out}, {dt});
    const fk::Tensor& yt = act == DenseActivation::None ? g : y.unpack(name());
    if (bf16 && dt == fk::DType::F32 && dense_gemm_bf16_native()) {
      native_bf16(g, yt, xt, wt, res);
      return res;
    }
    fk::Tensor gz = act == DenseActivation::None ? g : fk::empty(g.shape(), {dt});
    if (act != DenseActivation::None || next[2].fn) {
      auto run = [&](auto tag) {
        using T = decltype(tag);
        activation_grad(g.data<T>(), yt.data<T>(), act, n, out, gz.data<T>(),
                        next[2].fn ? res[2].data<T>() : nullptr);
      };
      dt == fk::DType::F64 ? run(double{}) : run(float{});
    }
    if (next[0].fn) {
      res[0] = fk::empty({n, in}, {dt});
      dense_product(dt, bf16, false, false, n, in, out, gz.data_ptr(), out, wt.data_ptr(), in,
                    res[0].data_ptr(), in, false, nullptr, DenseActivation::None, {});
    }
    if (next[1].fn) {
      res[1] = fk::empty({out, in}, {dt});
      dense_product(dt, bf16, true, false, out, in, n, gz.data_ptr(), out, xt.data_ptr(), in,
                    res[1].data_ptr(), in, false, nullptr, DenseActivation::None, {});
    }
    return res;
  }

  // gz exists only in bf16 (the rounding the products would apply): dx reads
  // its rows in place, dW packs them, and x comes from x16 when the forward
  // had it.
  void native_bf16(const fk::Tensor& g, const fk::Tensor& yt, const fk::Tensor& xt,
                   const fk::Tensor& wt, std::vector<fk::Tensor>& res) {
    const int64_t n = xt.size(0), in = xt.size(1), out = wt.size(0);
    static thread_local dense_tile::Scratch<uint16_t> gz_buf;
    const int64_t ldz = (out + 1) / 2 * 2;
    uint16_t* gz = gz_buf.get(static_cast<size_t>(n * ldz));
    activation_grad_bf16(g.data<float>(), yt.data<float>(), act, n, out, gz, ldz,
                         next[2].fn ? res[2].data<float>() : nullptr);
    if (next[0].fn) {
      res[0] = fk::empty({n, in}, {fk::DType::F32});
      dense_product(fk::DType::F32, true, false, false, n, in, out, nullptr, out, wt.data_ptr(), in,
                    res[0].data_ptr(), in, false, nullptr, DenseActivation::None, {gz, ldz});
    }
    if (next[1].fn) {
      res[1] = fk::empty({out, in}, {fk::DType::F32});
      DenseBf16Sides sides{gz, ldz};
      if (x16.data) {
        sides.b = x16.data.get();
        sides.ldb = x16.ld;
      }
      dense_product(fk::DType::F32, true, true, false, out, in, n, nullptr, out, xt.data_ptr(), in,
                    res[1].data_ptr(), in, false, nullptr, DenseActivation::None, sides);
    }
  }
};

// y = act(y + b) in place, a row at a time (the row stays in cache between
// the two): the epilogue when the GEMM could not fuse it.
void bias_activation(fk::Tensor& y, const fk::Tensor& b, DenseActivation act) {
  const int64_t n = y.size(0), out = y.size(1);
  auto run = [&](auto tag) {
    using T = decltype(tag);
    const T* bb = b.data<T>();
    for (int64_t i = 0; i < n; ++i) {
      T* p = y.data<T>() + i * out;
      for (int64_t j = 0; j < out; ++j) p[j] += bb[j];
      if (act == DenseActivation::Relu) {
        for (int64_t j = 0; j < out; ++j) p[j] = fk::unary_formulas::relu(p[j]);
      } else if (act == DenseActivation::Tanh) {
        if constexpr (std::is_same_v<T, float>) {
          fast_tanh_f32(p, p, out);
        } else {
          for (int64_t j = 0; j < out; ++j) p[j] = std::tanh(p[j]);
        }
      }
    }
  };
  y.dtype() == fk::DType::F64 ? run(double{}) : run(float{});
}

// A copy of the rows x cols matrix at p (row stride ld) rounded to bf16 and
// widened back: bf16 operands for the f32 kernels where the CPU has no bf16
// dot product.
std::vector<float> rounded_to_bf16(const float* p, int64_t rows, int64_t cols, int64_t ld) {
  std::vector<float> out(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      out[r * cols + c] = fk::bf16_to_float(fk::float_to_bf16(p[r * ld + c]));
  return out;
}

}  // namespace

bool dense_product(fk::DType dt, bool bf16, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                   const void* a, int64_t lda, const void* b, int64_t ldb, void* c, int64_t ldc,
                   bool accumulate, const void* bias, DenseActivation act,
                   const DenseBf16Sides& sides) {
  fk::profile::count_launch();
  bf16 = bf16 && dt == fk::DType::F32;
  const auto* af = static_cast<const float*>(a);
  const auto* bf = static_cast<const float*>(b);
  if (bf16 && dense_gemm_bf16_native()) {
    dense_gemm_bf16(ta, tb, m, n, k, af, lda, bf, ldb, static_cast<float*>(c), ldc, accumulate,
                    static_cast<const float*>(bias), act, sides);
    return true;
  }
  std::vector<float> a16, b16;
  if (bf16) {
    a16 = rounded_to_bf16(af, ta ? k : m, ta ? m : k, lda);
    b16 = rounded_to_bf16(bf, tb ? n : k, tb ? k : n, ldb);
    a = a16.data();
    b = b16.data();
    lda = ta ? m : k;
    ldb = tb ? k : n;
  }
  if (dt == fk::DType::F32 && dense_gemm_fits(m, n, k)) {
    dense_gemm(ta, tb, m, n, k, static_cast<const float*>(a), lda, static_cast<const float*>(b),
               ldb, static_cast<float*>(c), ldc, accumulate, static_cast<const float*>(bias), act);
    return true;
  }
  if (dt == fk::DType::F32 &&
      dense_narrow(ta, tb, m, n, k, static_cast<const float*>(a), lda, static_cast<const float*>(b),
                   ldb, static_cast<float*>(c), ldc, accumulate))
    return false;
  fk::gemm(dt, ta, tb, m, n, k, 1.0, a, lda, b, ldb, accumulate ? 1.0 : 0.0, c, ldc);
  return false;
}

Bf16Activation to_bf16(const fk::Tensor& x) {
  FK_CHECK(x.dim() == 2, "nefi::to_bf16", "a 2-D activation", x.shape().str());
  if (x.dtype() != fk::DType::F32 || !dense_gemm_bf16_native()) return {};
  const fk::Tensor xc = contig(x);
  Bf16Activation r = bf16_buffer(x.size(0), x.size(1));
  round_to_bf16(xc.data<float>(), r.cols, r.rows, r.cols, r.data.get(), r.ld);
  if (r.ld > r.cols)
    for (int64_t i = 0; i < r.rows; ++i) r.data[i * r.ld + r.cols] = 0;
  return r;
}

Bf16Activation cat_columns(const Bf16Activation& a, const Bf16Activation& b) {
  if (!a.data || !b.data) return {};
  FK_CHECK(a.rows == b.rows, "nefi::cat_columns", "as many rows in both",
           fk::to_text(a.rows) + ", " + fk::to_text(b.rows));
  Bf16Activation r = bf16_buffer(a.rows, a.cols + b.cols);
  for (int64_t i = 0; i < r.rows; ++i) {
    uint16_t* d = r.data.get() + i * r.ld;
    std::memcpy(d, a.data.get() + i * a.ld, sizeof(uint16_t) * a.cols);
    std::memcpy(d + a.cols, b.data.get() + i * b.ld, sizeof(uint16_t) * b.cols);
    if (r.ld > r.cols) d[r.cols] = 0;
  }
  return r;
}

fk::Tensor dense(const fk::Tensor& x, const fk::Tensor& w, const fk::Tensor& b, DenseActivation act,
                 DensePrecision precision, const Bf16Activation& x16, Bf16Activation* y16) {
  if (!x.device().is_cpu() || !w.device().is_cpu() || !b.device().is_cpu()) {
    const DeviceActivation dact = act == DenseActivation::Tanh   ? DeviceActivation::Tanh
                                  : act == DenseActivation::Relu ? DeviceActivation::Relu
                                                                 : DeviceActivation::None;
    return dense_device(
        x, w, b, dact,
        precision == DensePrecision::Bf16 ? DevicePrecision::Bf16 : DevicePrecision::F32);
  }
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
  const bool bf16 = precision == DensePrecision::Bf16;
  const bool native = bf16 && dt == fk::DType::F32 && dense_gemm_bf16_native();
  FK_CHECK(!x16.data || (x16.rows == n && x16.cols == in && x16.ld % 2 == 0 && x16.ld >= in),
           "nefi::dense", "x16 of x's shape " + x.shape().str() + " with an even row length",
           "(" + fk::to_text(x16.rows) + ", " + fk::to_text(x16.cols) + ") rows of " +
               fk::to_text(x16.ld));
  DenseBf16Sides sides;
  if (native && x16.data) {
    sides.a = x16.data.get();
    sides.lda = x16.ld;
  }
  if (native && y16) {
    *y16 = bf16_buffer(n, out);
    sides.c = y16->data.get();
    sides.ldc = y16->ld;
    if (y16->ld > out)
      for (int64_t i = 0; i < n; ++i) y16->data[i * y16->ld + out] = 0;
  }
  if (!dense_product(dt, bf16, false, true, n, out, in, xc.data_ptr(), in, wc.data_ptr(), in,
                     y.data_ptr(), out, false, bc.data_ptr(), act, sides))
    bias_activation(y, bc, act);
  if (fk::autograd::needs_grad(x, w, b)) {
    auto node = std::make_shared<DenseBackward>();
    node->x = xc;
    node->w = wc;
    if (act != DenseActivation::None) node->y = y.detach();
    if (native) node->x16 = x16;
    node->act = act;
    node->bf16 = bf16;
    fk::autograd::record(node, {x, w, b}, y);
  }
  return y;
}

}  // namespace nefi
