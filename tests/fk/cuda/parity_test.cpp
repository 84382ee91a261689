// CUDA parity harness (in the spirit of ggml's test-backend-ops): every CUDA
// launcher runs on device buffers and is compared with fk's CPU ops (or, where
// the CPU op does not exist yet, a plain loop written here) at tolerances set by
// the dtype. Every test skips itself where no CUDA device is usable (CPU-only
// builds, machines without a driver); scripts/gpu-check runs it on a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstring>
#include <numbers>
#include <string>
#include <vector>

#include "fk/blas.h"
#include "fk/cuda/blas.h"
#include "fk/cuda/fft.h"
#include "fk/cuda/kernels.h"
#include "fk/cuda/runtime.h"
#include "fk/fk.h"
#include "fk/test_util.h"

namespace fk {
namespace {

// The launchers' int codes are fk's enums (also asserted in src/fk/cuda/op_codes.cpp,
// which only CUDA builds compile).
static_assert(cuda::kC128 == static_cast<int>(DType::C128) &&
              cuda::kBF16 == static_cast<int>(DType::BF16));
static_assert(cuda::kNumUnaryOps == static_cast<int>(UnaryOp::Reciprocal) + 1 &&
              cuda::kUnaryGeluTanh == static_cast<int>(UnaryOp::GeluTanh));
static_assert(cuda::kNumBinaryOps == static_cast<int>(BinaryOp::Ge) + 1 &&
              cuda::kBinaryAtan2 == static_cast<int>(BinaryOp::Atan2));

#define SKIP_WITHOUT_GPU()                                                        \
  do {                                                                            \
    if (::fk::cuda::device_count() == 0) GTEST_SKIP() << "no usable CUDA device"; \
  } while (0)

constexpr int kDev = 0;

int code(DType t) {
  return static_cast<int>(t);
}

// A block of device memory from fk's pool, freed on scope exit.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t nbytes)
      : nbytes_(nbytes), p_(nbytes ? cuda::pool_allocate(kDev, nbytes) : nullptr) {}
  ~DeviceBuffer() {
    if (p_) cuda::pool_deallocate(kDev, p_, nbytes_);
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept : nbytes_(o.nbytes_), p_(o.p_) { o.p_ = nullptr; }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(DeviceBuffer&&) = delete;

  void* get() const { return p_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(p_);
  }

 private:
  size_t nbytes_;
  void* p_;
};

// The bytes of t's whole storage on the device, so strided views of t can be
// addressed there with t's own offset and strides.
DeviceBuffer upload_storage(const Tensor& t) {
  DeviceBuffer b(t.storage()->nbytes);
  cuda::copy_bytes(b.get(), kDev, t.storage()->data, -1, t.storage()->nbytes);
  return b;
}
// A contiguous copy of t on the device.
DeviceBuffer upload(const Tensor& t) {
  return upload_storage(t.contiguous().clone());
}
// Pointer to view v's first element inside its uploaded storage.
void* at(const DeviceBuffer& b, const Tensor& v) {
  return static_cast<char*>(b.get()) + v.offset() * static_cast<int64_t>(v.itemsize());
}

Tensor download(const DeviceBuffer& b, const Dims& shape, DType dtype) {
  Tensor out = empty(shape, {dtype});
  cuda::copy_bytes(out.data_ptr(), -1, b.get(), kDev, static_cast<size_t>(out.nbytes()));
  return out;
}

void* stream() {
  return cuda::current_stream(kDev);
}

struct Tol {
  double rtol, atol;
};
Tol tol_for(DType t) {
  switch (t) {
    case DType::F64:
    case DType::C128:
      return {1e-12, 1e-13};
    case DType::F32:
    case DType::C64:
      return {2e-5, 2e-6};
    case DType::F16:
      return {2e-3, 2e-3};
    case DType::BF16:
      return {1.6e-2, 1.6e-2};
    default:
      return {0, 0};
  }
}

// Elementwise |got - want| <= atol + rtol |want| (NaNs must match), with the
// first few mismatches named.
void expect_close(const Tensor& got, const Tensor& want, Tol tol, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  if (is_complex(got.dtype()) || is_complex(want.dtype())) {
    Tensor g = is_complex(got.dtype()) ? got : got.to(DType::C128);
    Tensor w = is_complex(want.dtype()) ? want : want.to(DType::C128);
    expect_close(g.real(), w.real(), tol, what + " (real part)");
    expect_close(g.imag(), w.imag(), tol, what + " (imag part)");
    return;
  }
  std::vector<double> g = got.to(DType::F64).to_vector<double>();
  std::vector<double> w = want.to(DType::F64).to_vector<double>();
  int failures = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    bool ok = (std::isnan(g[i]) && std::isnan(w[i])) || g[i] == w[i] ||
              std::abs(g[i] - w[i]) <= tol.atol + tol.rtol * std::abs(w[i]);
    if (!ok && failures++ < 5) {
      ADD_FAILURE() << what << " at " << i << ": got " << g[i] << ", want " << w[i];
    }
  }
}

bool bitwise_equal(const Tensor& a, const Tensor& b) {
  return a.nbytes() == b.nbytes() &&
         std::memcmp(a.contiguous().data_ptr(), b.contiguous().data_ptr(),
                     static_cast<size_t>(a.nbytes())) == 0;
}

Tensor random_of(const Dims& shape, DType dtype, double lo, double hi, unsigned seed) {
  if (is_complex(dtype)) {
    Tensor re = test::random_tensor(shape, DType::F64, lo, hi, seed);
    Tensor im = test::random_tensor(shape, DType::F64, lo, hi, seed + 100);
    std::vector<double> r = re.to_vector<double>(), i = im.to_vector<double>();
    std::vector<c128> v(r.size());
    for (size_t k = 0; k < v.size(); ++k) v[k] = c128(r[k], i[k]);
    return from_vector(v, shape).to(dtype);
  }
  return test::random_tensor(shape, DType::F64, lo, hi, seed).to(dtype);
}

// --- unary ------------------------------------------------------------------

struct UnaryCase {
  UnaryOp op;
  UnaryParams p;
  double lo, hi;  // input range (positive for ops with a restricted domain)
};

std::vector<UnaryCase> unary_cases() {
  return {{UnaryOp::Neg, {}, -2, 2},
          {UnaryOp::Abs, {}, -2, 2},
          {UnaryOp::Sign, {}, -2, 2},
          {UnaryOp::Exp, {}, -2, 2},
          {UnaryOp::Log, {}, 0.2, 3},
          {UnaryOp::Log1p, {}, -0.5, 2},
          {UnaryOp::Expm1, {}, -2, 2},
          {UnaryOp::Sqrt, {}, 0.1, 4},
          {UnaryOp::Rsqrt, {}, 0.2, 4},
          {UnaryOp::Sin, {}, -3, 3},
          {UnaryOp::Cos, {}, -3, 3},
          {UnaryOp::Tanh, {}, -3, 3},
          {UnaryOp::Sigmoid, {}, -4, 4},
          {UnaryOp::Relu, {}, -2, 2},
          {UnaryOp::LeakyRelu, {0.1, 0}, -2, 2},
          {UnaryOp::Elu, {1.3, 0}, -2, 2},
          {UnaryOp::Gelu, {}, -3, 3},
          {UnaryOp::GeluTanh, {}, -3, 3},
          {UnaryOp::Silu, {}, -3, 3},
          {UnaryOp::Softplus, {1.5, 2.0}, -3, 3},
          {UnaryOp::Erf, {}, -2, 2},
          {UnaryOp::PowScalar, {2.5, 0}, 0.1, 2},
          {UnaryOp::Clamp, {-0.5, 0.7}, -2, 2},
          {UnaryOp::Conj, {}, -2, 2},
          {UnaryOp::Square, {}, -2, 2},
          {UnaryOp::Reciprocal, {}, 0.3, 3}};
}

bool keeps_integers(UnaryOp op) {
  return op == UnaryOp::Neg || op == UnaryOp::Abs || op == UnaryOp::Sign || op == UnaryOp::Relu ||
         op == UnaryOp::Clamp || op == UnaryOp::Square || op == UnaryOp::Conj;
}
bool accepts_complex(UnaryOp op) {
  return op == UnaryOp::Neg || op == UnaryOp::Abs || op == UnaryOp::Exp || op == UnaryOp::Log ||
         op == UnaryOp::Sqrt || op == UnaryOp::Conj || op == UnaryOp::Square ||
         op == UnaryOp::Reciprocal;
}
bool uses_output(UnaryOp op) {
  return op == UnaryOp::Exp || op == UnaryOp::Expm1 || op == UnaryOp::Sqrt ||
         op == UnaryOp::Rsqrt || op == UnaryOp::Tanh || op == UnaryOp::Sigmoid ||
         op == UnaryOp::Reciprocal;
}

TEST(CudaParity, UnaryMatchesCpuForEveryOpAndDtype) {
  SKIP_WITHOUT_GPU();
  const Dims shape{37, 29};
  for (const UnaryCase& c : unary_cases()) {
    for (DType dt : {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I32, DType::I64,
                     DType::C64, DType::C128}) {
      if (is_integral(dt) && !keeps_integers(c.op)) continue;
      if (is_complex(dt) && !accepts_complex(c.op)) continue;
      double lo = is_integral(dt) ? -5 : c.lo, hi = is_integral(dt) ? 5 : c.hi;
      Tensor x = random_of(shape, dt, lo, hi, 3);
      Tensor want = unary_forward(c.op, x, c.p);
      DeviceBuffer in = upload(x);
      DeviceBuffer out(static_cast<size_t>(want.nbytes()));
      cuda::launch_unary(static_cast<int>(c.op), code(dt), in.get(), out.get(), shape.numel(),
                         c.p.a, c.p.b, stream());
      Tensor got = download(out, shape, want.dtype());
      expect_close(got, want, tol_for(dt), std::string(name(c.op)) + " " + name(dt));
    }
  }
}

TEST(CudaParity, UnaryStridedInputAndOutput) {
  SKIP_WITHOUT_GPU();
  Tensor base = random_of({8, 6, 5}, DType::F32, -2, 2, 5);
  Tensor view = base.permute({2, 0, 1}).slice(1, 1, 7, 2);  // [5, 3, 6], non-contiguous
  Tensor want = unary_forward(UnaryOp::Tanh, view);
  DeviceBuffer in = upload_storage(base);
  // Output transposed too: written through strides of a [6, 3, 5] buffer viewed as [5, 3, 6].
  Tensor out_base = zeros({6, 3, 5}, {DType::F32});
  Tensor out_view = out_base.permute({2, 1, 0});
  DeviceBuffer out = upload_storage(out_base);
  cuda::launch_unary_strided(cuda::kUnaryTanh, cuda::kF32, at(in, view), out.get(), view.dim(),
                             view.shape().data(), view.strides().data(), out_view.strides().data(),
                             0, 0, stream());
  Tensor got = download(out, out_base.shape(), DType::F32).permute({2, 1, 0});
  expect_close(got, want, tol_for(DType::F32), "strided tanh");
}

TEST(CudaParity, UnaryBackwardMatchesCpu) {
  SKIP_WITHOUT_GPU();
  const Dims shape{301};
  for (const UnaryCase& c : unary_cases()) {
    for (DType dt : {DType::F32, DType::F64, DType::C128}) {
      if (is_complex(dt) && !accepts_complex(c.op)) continue;
      Tensor x = random_of(shape, dt, c.lo, c.hi, 7);
      Tensor y = unary_forward(c.op, x, c.p);
      Tensor g = random_of(y.shape(), y.dtype(), -1, 1, 8);
      Tensor want = unary_backward(c.op, g, x, y, c.p);
      const Tensor& ref = uses_output(c.op) ? y : x;
      DeviceBuffer dg = upload(g), dref = upload(ref);
      DeviceBuffer out(static_cast<size_t>(want.nbytes()));
      cuda::launch_unary_backward(static_cast<int>(c.op), code(dt), dg.get(), dref.get(), out.get(),
                                  shape.numel(), c.p.a, c.p.b, stream());
      Tensor got = download(out, shape, want.dtype());
      expect_close(got, want, tol_for(dt), std::string(name(c.op)) + " backward " + name(dt));
    }
  }
}

// --- binary -----------------------------------------------------------------

// Strides of `t` broadcast to `shape` (0 on broadcast dims), right-aligned.
Dims broadcast_strides(const Tensor& t, const Dims& shape) {
  Dims s = Dims::filled(shape.size(), 0);
  int off = shape.size() - t.dim();
  for (int d = 0; d < t.dim(); ++d) s[off + d] = t.size(d) == 1 ? 0 : t.stride(d);
  return s;
}

TEST(CudaParity, BinaryWithBroadcastMatchesCpu) {
  SKIP_WITHOUT_GPU();
  const Dims a_shape{3, 1, 5, 2}, b_shape{4, 1, 2}, out_shape{3, 4, 5, 2};
  for (int opi = 0; opi < cuda::kNumBinaryOps; ++opi) {
    auto op = static_cast<BinaryOp>(opi);
    const bool cmp = op >= BinaryOp::Eq;
    for (DType dt : {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I32, DType::I64,
                     DType::C64, DType::C128}) {
      if (is_integral(dt) && (op == BinaryOp::Div || op == BinaryOp::Pow || op == BinaryOp::Atan2))
        continue;
      if (is_complex(dt) && !(op <= BinaryOp::Div || op == BinaryOp::Eq || op == BinaryOp::Ne))
        continue;
      const bool positive = op == BinaryOp::Pow;
      double lo = is_integral(dt) ? -4 : (positive ? 0.2 : -2), hi = is_integral(dt) ? 4 : 2;
      Tensor a = random_of(a_shape, dt, lo, hi, 21);
      Tensor b = random_of(b_shape, dt, lo, hi, 22);
      if (cmp) {  // small integers, so that ties occur
        a = random_of(a_shape, DType::F64, -3, 3, 21).to(DType::I32).to(dt);
        b = random_of(b_shape, DType::F64, -3, 3, 22).to(DType::I32).to(dt);
      }
      const double alpha = (op == BinaryOp::Add || op == BinaryOp::Sub) ? 0.5 : 1.0;
      Tensor want = binary_forward(op, a, b, alpha);
      DeviceBuffer da = upload(a), db = upload(b);
      DeviceBuffer out(static_cast<size_t>(want.nbytes()));
      Dims as = broadcast_strides(a.contiguous(), out_shape);
      Dims bs = broadcast_strides(b.contiguous(), out_shape);
      cuda::launch_binary(opi, code(dt), da.get(), db.get(), out.get(), out_shape.size(),
                          out_shape.data(), as.data(), bs.data(), nullptr, alpha, 0, stream());
      Tensor got = download(out, out_shape, want.dtype());
      std::string what = std::string(name(op)) + " " + name(dt);
      if (cmp) {
        EXPECT_TRUE(bitwise_equal(got, want)) << what;
      } else {
        expect_close(got, want, tol_for(dt), what);
      }
    }
  }
}

TEST(CudaParity, BinaryScalarOperandAndInPlace) {
  SKIP_WITHOUT_GPU();
  Tensor a = random_of({64, 3}, DType::F64, -2, 2, 31);
  DeviceBuffer da = upload(a);
  const Dims shape = a.shape();
  // In place: out aliases a; b is the scalar 1.5.
  cuda::launch_binary(cuda::kBinaryMul, cuda::kF64, da.get(), nullptr, da.get(), 2, shape.data(),
                      nullptr, nullptr, nullptr, 1.0, 1.5, stream());
  expect_close(download(da, shape, DType::F64), mul(a, 1.5), tol_for(DType::F64), "a *= 1.5");
  cuda::launch_scale(cuda::kF64, da.get(), shape.numel(), 2.0, stream());
  expect_close(download(da, shape, DType::F64), mul(a, 3.0), tol_for(DType::F64), "scale");
}

TEST(CudaParity, WhereMatchesCpu) {
  SKIP_WITHOUT_GPU();
  Tensor a = random_of({5, 1}, DType::C128, -1, 1, 41);
  Tensor b = random_of({1, 6}, DType::C128, -1, 1, 42);
  Tensor cond = gt(random_of({5, 6}, DType::F64, -1, 1, 43), scalar_tensor(0.0, {DType::F64}));
  Tensor want = where(cond, a, b);
  const Dims shape{5, 6};
  DeviceBuffer dc = upload(cond), da = upload(a), db = upload(b), out(want.nbytes());
  const int64_t as[2] = {1, 0}, bs[2] = {0, 1};
  cuda::launch_where(cuda::kC128, dc.get(), da.get(), db.get(), out.get(), 2, shape.data(), nullptr,
                     as, bs, stream());
  EXPECT_TRUE(bitwise_equal(download(out, shape, DType::C128), want));
}

// --- copies and conversions ---------------------------------------------------

TEST(CudaParity, StridedConversionBetweenEveryDtypePair) {
  SKIP_WITHOUT_GPU();
  const DType all[] = {DType::Bool, DType::I32, DType::I64, DType::F16, DType::BF16,
                       DType::F32,  DType::F64, DType::C64, DType::C128};
  for (DType from : all) {
    // Quarters of small integers are exact in every float dtype, so the device and
    // the CPU must agree bit for bit (float -> int truncates on both).
    Tensor q = mul(random_of({6, 7}, DType::F64, -3, 3, 51), 4.0).to(DType::I32);
    Tensor base;
    if (from == DType::Bool) {
      base = gt(q, scalar_tensor(0.0, {DType::I32}));
    } else if (is_integral(from)) {
      base = q.to(from);
    } else {
      base = div(q.to(DType::F64), 4.0).to(from);
    }
    Tensor view = base.transpose(0, 1);  // [7, 6], strided
    DeviceBuffer src = upload_storage(base);
    for (DType to : all) {
      Tensor want = view.to(to).contiguous();
      DeviceBuffer dst(static_cast<size_t>(want.nbytes()));
      cuda::launch_copy_strided(code(from), at(src, view), view.strides().data(), code(to),
                                dst.get(), nullptr, view.dim(), view.shape().data(), stream());
      Tensor got = download(dst, view.shape(), to);
      EXPECT_TRUE(bitwise_equal(got, want)) << name(from) << " -> " << name(to);
    }
  }
}

TEST(CudaParity, ContiguousConvertAndFill) {
  SKIP_WITHOUT_GPU();
  Tensor x = random_of({1000}, DType::F32, -100, 100, 61);
  DeviceBuffer dx = upload(x);
  for (DType to : {DType::F16, DType::BF16, DType::F64, DType::I32, DType::C64}) {
    Tensor want = x.to(to);
    DeviceBuffer out(static_cast<size_t>(want.nbytes()));
    cuda::launch_convert(cuda::kF32, dx.get(), code(to), out.get(), x.numel(), stream());
    EXPECT_TRUE(bitwise_equal(download(out, x.shape(), to), want)) << "f32 -> " << name(to);
  }
  for (DType dt : {DType::Bool, DType::I32, DType::I64, DType::F16, DType::BF16, DType::F32,
                   DType::F64, DType::C64, DType::C128}) {
    for (double v : {0.0, 2.5}) {
      Tensor want = full({33}, v, {dt});
      DeviceBuffer out(static_cast<size_t>(want.nbytes()));
      cuda::launch_fill(code(dt), out.get(), 33, v, 0, stream());
      EXPECT_TRUE(bitwise_equal(download(out, {33}, dt), want)) << "fill " << v << " " << name(dt);
    }
  }
  // Strided fill: every other column of a [4, 6] buffer.
  Tensor base = zeros({4, 6}, {DType::F32});
  Tensor view = base.slice(1, 0, 6, 2);
  DeviceBuffer db = upload_storage(base);
  cuda::launch_fill_strided(cuda::kF32, at(db, view), view.dim(), view.shape().data(),
                            view.strides().data(), 7.0, 0, stream());
  std::vector<double> got = download(db, {4, 6}, DType::F32).to_vector<double>();
  for (int i = 0; i < 24; ++i) EXPECT_EQ(got[i], i % 2 == 0 ? 7.0 : 0.0) << i;
}

// --- reductions and softmax ---------------------------------------------------

// Plain-loop references over the rows of a contiguous [outer, inner] f64 array.
std::vector<double> rows_ref(const std::vector<double>& v, int64_t outer, int64_t inner, int op) {
  std::vector<double> r(static_cast<size_t>(outer));
  for (int64_t o = 0; o < outer; ++o) {
    double acc = op == cuda::kReduceSum    ? 0.0
                 : op == cuda::kReduceProd ? 1.0
                 : op == cuda::kReduceMax  ? -INFINITY
                                           : INFINITY;
    for (int64_t i = 0; i < inner; ++i) {
      double x = v[static_cast<size_t>(o * inner + i)];
      if (op == cuda::kReduceSum) acc += x;
      if (op == cuda::kReduceProd) acc *= x;
      if (op == cuda::kReduceMax) acc = std::max(acc, x);
      if (op == cuda::kReduceMin) acc = std::min(acc, x);
    }
    r[static_cast<size_t>(o)] = acc;
  }
  return r;
}

TEST(CudaParity, RowReductionsMatchCpuAndAreDeterministic) {
  SKIP_WITHOUT_GPU();
  struct Rows {
    int64_t outer, inner;
  };
  // inner > 65536 takes the two-pass path.
  for (Rows r : {Rows{5, 1}, Rows{7, 33}, Rows{64, 1000}, Rows{3, 70001}, Rows{1, 300000}}) {
    for (DType dt : {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I32, DType::I64,
                     DType::C64, DType::C128}) {
      for (int op : {cuda::kReduceSum, cuda::kReduceProd, cuda::kReduceMax, cuda::kReduceMin}) {
        if (is_complex(dt) && op > cuda::kReduceProd) continue;
        if (op == cuda::kReduceProd && r.inner > 33) continue;  // would overflow
        const Dims shape{r.outer, r.inner};
        // Products stay near 1; integer sums stay exact.
        Tensor x = op == cuda::kReduceProd ? random_of(shape, dt, 0.999, 1.001, 71)
                                           : random_of(shape, dt, -4, 4, 71);
        if (is_integral(dt) && op == cuda::kReduceProd) x = ones(shape, {dt});
        const DType out_dt = static_cast<DType>(cuda::reduce_out_dtype(op, code(dt)));
        DeviceBuffer dx = upload(x);
        DeviceBuffer out(r.outer * itemsize(out_dt)), out2(r.outer * itemsize(out_dt));
        cuda::launch_reduce_lastdim(op, code(dt), dx.get(), out.get(), r.outer, r.inner, stream());
        cuda::launch_reduce_lastdim(op, code(dt), dx.get(), out2.get(), r.outer, r.inner, stream());
        Tensor got = download(out, {r.outer}, out_dt);
        std::string what = "reduce " + std::to_string(op) + " " + name(dt) + " " +
                           std::to_string(r.outer) + "x" + std::to_string(r.inner);
        EXPECT_TRUE(bitwise_equal(got, download(out2, {r.outer}, out_dt))) << what;
        Tensor want;
        if (op == cuda::kReduceSum) {
          want = sum(x, {1}).to(out_dt);  // fk's CPU sum (f16/bf16 reduced in f32)
        } else if (is_complex(dt)) {
          std::vector<c128> v = x.to_vector<c128>(), p(static_cast<size_t>(r.outer), 1.0);
          for (int64_t o = 0; o < r.outer; ++o)
            for (int64_t i = 0; i < r.inner; ++i) p[o] *= v[o * r.inner + i];
          want = from_vector(p, {r.outer}).to(dt);
        } else {
          want = from_vector(rows_ref(x.to_vector<double>(), r.outer, r.inner, op), {r.outer})
                     .to(out_dt);
        }
        Tol tol = tol_for(dt);
        if (op == cuda::kReduceSum) tol.atol *= std::sqrt(static_cast<double>(r.inner)) * 4;
        expect_close(got, want, tol, what);
      }
    }
  }
}

// The gradient of prod along rows against the product of the other elements
// of the row taken one by one (O(n^2), no prefix products), with zeros.
TEST(CudaParity, ProdBackwardRowsMatchLoop) {
  SKIP_WITHOUT_GPU();
  const int64_t outer = 5, inner = 7;
  for (DType dt : {DType::F64, DType::F32, DType::C128, DType::C64}) {
    std::vector<c128> xv = random_of({outer, inner}, DType::C128, -1.5, 1.5, 81).to_vector<c128>();
    xv[1 * inner + 3] = 0;  // row 1: one zero; row 2: two
    xv[2 * inner + 0] = 0;
    xv[2 * inner + 6] = 0;
    Tensor x = from_vector(xv, {outer, inner}).to(dt);  // real dtypes keep the real parts
    Tensor g = random_of({outer}, dt, -1, 1, 82);
    xv = x.to_vector<c128>();
    std::vector<c128> gv = g.to_vector<c128>(), want(xv.size());
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        c128 others = 1.0;
        for (int64_t j = 0; j < inner; ++j) {
          if (j != i) others *= xv[o * inner + j];
        }
        want[o * inner + i] = gv[o] * std::conj(others);
      }
    }
    DeviceBuffer dx = upload(x), dg = upload(g), out(outer * inner * itemsize(dt));
    cuda::launch_prod_backward_lastdim(code(dt), dx.get(), dg.get(), out.get(), outer, inner,
                                       stream());
    expect_close(download(out, {outer, inner}, dt), from_vector(want, {outer, inner}).to(dt),
                 tol_for(dt), std::string("prod backward ") + name(dt));
  }
  DeviceBuffer buf(64);
  EXPECT_THROW(cuda::launch_prod_backward_lastdim(cuda::kI32, buf.get(), buf.get(), buf.get(), 1, 2,
                                                  stream()),
               Error);
}

TEST(CudaParity, ArgReductionFirstOccurrence) {
  SKIP_WITHOUT_GPU();
  const int64_t outer = 9, inner = 1500;
  Tensor x = random_of({outer, inner}, DType::F32, -3, 3, 81);
  std::vector<float> v = x.to_vector<float>();
  v[5 * inner + 100] = 10.f;
  v[5 * inner + 1200] = 10.f;  // tie: the first wins
  v[6 * inner + 7] = NAN;      // NaN wins
  x = from_vector(v, {outer, inner});
  DeviceBuffer dx = upload(x), out(outer * 8);
  for (bool is_max : {true, false}) {
    cuda::launch_argreduce_lastdim(is_max, cuda::kF32, dx.get(), out.as<int64_t>(), outer, inner,
                                   stream());
    std::vector<int64_t> got = download(out, {outer}, DType::I64).to_vector<int64_t>();
    for (int64_t o = 0; o < outer; ++o) {
      int64_t best = 0;
      for (int64_t i = 1; i < inner; ++i) {
        float a = v[o * inner + i], b = v[o * inner + best];
        if (std::isnan(b)) break;
        if (std::isnan(a) || (is_max ? a > b : a < b)) best = i;
      }
      EXPECT_EQ(got[o], best) << (is_max ? "argmax" : "argmin") << " row " << o;
    }
  }
}

TEST(CudaParity, SoftmaxAndBackwardMatchLoops) {
  SKIP_WITHOUT_GPU();
  for (int64_t inner : {int64_t{1}, int64_t{10}, int64_t{777}}) {
    const int64_t outer = 6;
    for (DType dt : {DType::F32, DType::F64, DType::BF16}) {
      for (bool log : {false, true}) {
        Tensor x = random_of({outer, inner}, dt, -5, 5, 91);
        Tensor g = random_of({outer, inner}, dt, -1, 1, 92);
        std::vector<double> xv = x.to_vector<double>(), gv = g.to_vector<double>();
        std::vector<double> y(xv.size()), gi(xv.size());
        for (int64_t o = 0; o < outer; ++o) {
          double m = -INFINITY, s = 0, dot = 0;
          for (int64_t i = 0; i < inner; ++i) m = std::max(m, xv[o * inner + i]);
          for (int64_t i = 0; i < inner; ++i) s += std::exp(xv[o * inner + i] - m);
          for (int64_t i = 0; i < inner; ++i) {
            double z = xv[o * inner + i] - m;
            y[o * inner + i] = log ? z - std::log(s) : std::exp(z) / s;
          }
          for (int64_t i = 0; i < inner; ++i)
            dot += log ? gv[o * inner + i] : gv[o * inner + i] * y[o * inner + i];
          for (int64_t i = 0; i < inner; ++i) {
            double yy = y[o * inner + i], gg = gv[o * inner + i];
            gi[o * inner + i] = log ? gg - std::exp(yy) * dot : yy * (gg - dot);
          }
        }
        DeviceBuffer dx = upload(x), dg = upload(g), dy(x.nbytes()), dgi(x.nbytes());
        cuda::launch_softmax_lastdim(code(dt), dx.get(), dy.get(), outer, inner, log, stream());
        Tensor got_y = download(dy, x.shape(), dt);
        std::string what = std::string(log ? "log_softmax " : "softmax ") + name(dt);
        Tol tol = tol_for(dt);
        tol.atol *= 4;
        expect_close(got_y, from_vector(y, x.shape()), tol, what);
        // Backward from the device's own output (as autograd would).
        cuda::launch_softmax_backward_lastdim(code(dt), dg.get(), dy.get(), dgi.get(), outer, inner,
                                              log, stream());
        Tensor yq = got_y.to(DType::F64);
        std::vector<double> yv = yq.to_vector<double>();
        for (int64_t o = 0; o < outer; ++o) {
          double dot = 0;
          for (int64_t i = 0; i < inner; ++i)
            dot += log ? gv[o * inner + i] : gv[o * inner + i] * yv[o * inner + i];
          for (int64_t i = 0; i < inner; ++i) {
            double yy = yv[o * inner + i], gg = gv[o * inner + i];
            gi[o * inner + i] = log ? gg - std::exp(yy) * dot : yy * (gg - dot);
          }
        }
        tol.atol *= std::sqrt(static_cast<double>(inner));
        expect_close(download(dgi, x.shape(), dt), from_vector(gi, x.shape()), tol,
                     what + " backward");
      }
    }
  }
}

// --- indexing ---------------------------------------------------------------

struct BadIndex {
  DeviceBuffer buf{16};
  BadIndex() { cuda::launch_fill(cuda::kI64, buf.get(), 2, 0, 0, stream()); }
  cuda::IndexCheck check(bool wrap) const { return {wrap, buf.as<int64_t>()}; }
  std::vector<int64_t> read() const { return download(buf, {2}, DType::I64).to_vector<int64_t>(); }
};

TEST(CudaParity, IndexSelectAndGather) {
  SKIP_WITHOUT_GPU();
  const int64_t outer = 3, in_dim = 10, inner = 4;
  Tensor x = random_of({outer, in_dim, inner}, DType::C64, -1, 1, 101);
  std::vector<int64_t> idx = {9, 0, 3, 3, -1, 7};
  Tensor index = from_vector(idx, {6});
  DeviceBuffer dx = upload(x), di = upload(index), out(outer * 6 * inner * 8);
  BadIndex bad;
  cuda::launch_index_select(cuda::kC64, dx.get(), di.as<int64_t>(), out.get(), outer, in_dim, inner,
                            6, bad.check(true), stream());
  std::vector<c64> xv = x.to_vector<c64>(),
                   got = download(out, {outer, 6, inner}, DType::C64).to_vector<c64>();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < 6; ++j)
      for (int64_t i = 0; i < inner; ++i) {
        int64_t k = idx[j] < 0 ? idx[j] + in_dim : idx[j];
        EXPECT_EQ(got[(o * 6 + j) * inner + i], xv[(o * in_dim + k) * inner + i]);
      }
  EXPECT_EQ(bad.read()[0], 0);
  // Without wrapping, -1 is reported and its outputs are zero.
  cuda::launch_index_select(cuda::kC64, dx.get(), di.as<int64_t>(), out.get(), outer, in_dim, inner,
                            6, bad.check(false), stream());
  EXPECT_EQ(bad.read(), (std::vector<int64_t>{1, -1}));
  got = download(out, {outer, 6, inner}, DType::C64).to_vector<c64>();
  EXPECT_EQ(got[4 * inner], c64(0, 0));

  // gather along dim 1 of a transposed input: out[p] = in[p0, index[p], p2].
  Tensor base =
      random_of({4, 5, 3}, DType::F64, -1, 1, 102);  // in = base.transpose(0, 2): [3, 5, 4]
  Tensor in = base.transpose(0, 2);
  std::vector<int64_t> gi =
      test::random_tensor({3, 2, 4}, DType::F64, 0, 4.99, 103).to(DType::I64).to_vector<int64_t>();
  Tensor gindex = from_vector(gi, {3, 2, 4});
  DeviceBuffer db = upload_storage(base), dgi = upload(gindex), gout(3 * 2 * 4 * 8);
  const Dims shape{3, 2, 4};
  cuda::launch_gather(cuda::kF64, at(db, in), in.strides().data(), 5, dgi.as<int64_t>(), nullptr,
                      gout.get(), nullptr, 3, shape.data(), 1, {}, stream());
  std::vector<double> gv = download(gout, shape, DType::F64).to_vector<double>();
  std::vector<double> inv = in.contiguous().to_vector<double>();
  for (int64_t a = 0; a < 3; ++a)
    for (int64_t j = 0; j < 2; ++j)
      for (int64_t c = 0; c < 4; ++c) {
        int64_t p = (a * 2 + j) * 4 + c;
        EXPECT_EQ(gv[p], inv[(a * 5 + gi[p]) * 4 + c]) << p;
      }
}

TEST(CudaParity, ScatterAddAtomicAndDeterministic) {
  SKIP_WITHOUT_GPU();
  // index_add along dim 0: many sources per target, so summation order matters.
  const int64_t n = 20000, rows = 7, cols = 3;
  std::vector<int64_t> idx(n);
  for (int64_t i = 0; i < n; ++i) idx[i] = (i * 5 + i / 3) % rows;
  Tensor index = from_vector(idx, {n});
  for (DType dt : {DType::F32, DType::F64, DType::C64, DType::I64, DType::BF16}) {
    Tensor src = random_of({n, cols}, dt, -1, 1, 111);
    Tensor init = random_of({rows, cols}, dt, -1, 1, 112);
    if (dt == DType::I64) src = random_of({n, cols}, DType::F64, -100, 100, 111).to(dt);
    // Sequential CPU reference, in the compute type, in increasing source order.
    const DType ct = is_half(dt) ? DType::F32 : dt;
    Tensor want = init.to(ct).clone();
    {
      Tensor s = src.to(ct);
      for (int64_t i = 0; i < n; ++i) {
        Tensor row = want.select(0, idx[i]);
        row.copy_(add(row, s.select(0, i)));
      }
      want = want.to(dt);
    }
    const Dims shape{n, cols};
    const int64_t index_strides[2] = {1, 0};  // the 1-D index broadcast over columns
    DeviceBuffer dsrc = upload(src), di = upload(index);
    std::vector<Tensor> results;
    for (bool deterministic : {false, true, true}) {
      DeviceBuffer out = upload(init);
      BadIndex bad;
      cuda::launch_scatter_add(code(dt), out.get(), nullptr, rows, dsrc.get(), nullptr,
                               di.as<int64_t>(), index_strides, 2, shape.data(), 0, deterministic,
                               bad.check(false), stream());
      results.push_back(download(out, {rows, cols}, dt));
      EXPECT_EQ(bad.read()[0], 0);
      Tol tol = tol_for(dt);
      tol.atol *= 100;  // ~3000 terms per target
      // bf16 atomics round every partial sum to 8 bits: only a sanity check.
      if (dt == DType::BF16) tol = {5e-2, deterministic ? 0.5 : 8.0};
      expect_close(results.back(), want, tol,
                   std::string("scatter_add ") + name(dt) + (deterministic ? " det" : " atomic"));
    }
    EXPECT_TRUE(bitwise_equal(results[1], results[2])) << "deterministic scatter " << name(dt);
    if (dt == DType::F64 || dt == DType::F32 || dt == DType::I64) {
      // Same order as the CPU loop, so the same bits.
      EXPECT_TRUE(bitwise_equal(results[1], want)) << "deterministic vs CPU order " << name(dt);
    }
  }
  // A bad index is reported and skipped.
  std::vector<int64_t> bad_idx = {0, 5, 1};
  Tensor bi = from_vector(bad_idx, {3});
  Tensor src = ones({3}, {DType::F32});
  for (bool deterministic : {false, true}) {
    DeviceBuffer out(2 * 4), dsrc = upload(src), di = upload(bi);
    cuda::launch_fill(cuda::kF32, out.get(), 2, 0, 0, stream());
    BadIndex bad;
    const int64_t shape[1] = {3};
    cuda::launch_scatter_add(cuda::kF32, out.get(), nullptr, 2, dsrc.get(), nullptr,
                             di.as<int64_t>(), nullptr, 1, shape, 0, deterministic,
                             bad.check(false), stream());
    EXPECT_EQ(bad.read(), (std::vector<int64_t>{1, 5}));
    EXPECT_EQ(download(out, {2}, DType::F32).to_vector<double>(), (std::vector<double>{1, 1}));
  }
}

// --- GEMM -------------------------------------------------------------------

TEST(CudaParity, GemmMatchesCpuBlas) {
  SKIP_WITHOUT_GPU();
  const int64_t m = 37, n = 45, k = 29;
  for (DType dt : {DType::F32, DType::F64, DType::C64, DType::C128, DType::F16, DType::BF16}) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        for (bool tf32 : {false, true}) {
          if (tf32 && dt != DType::F32) continue;
          // Stored shapes with padded rows (lda > row length).
          const int64_t ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
          const int64_t lda = ac + 3, ldb = bc + 1, ldc = n + 2;
          Tensor a = random_of({ar, lda}, dt, -1, 1, 121);
          Tensor b = random_of({br, ldb}, dt, -1, 1, 122);
          Tensor c = random_of({m, ldc}, dt, -1, 1, 123);
          const double alpha = 0.75, beta = -0.5;
          // CPU reference in the compute type (f32 for 16-bit inputs).
          const DType ct = is_half(dt) ? DType::F32 : dt;
          Tensor want = c.to(ct).clone();
          Tensor ac32 = a.to(ct).contiguous(), bc32 = b.to(ct).contiguous();
          fk::gemm(ct, ta, tb, m, n, k, alpha, ac32.data_ptr(), lda, bc32.data_ptr(), ldb, beta,
                   want.data_ptr(), ldc);
          DeviceBuffer da = upload(a), db = upload(b), dc = upload(c);
          cuda::gemm(kDev, code(dt), ta, tb, m, n, k, alpha, da.get(), lda, db.get(), ldb, beta,
                     dc.get(), ldc, stream(), tf32);
          Tensor got = download(dc, {m, ldc}, dt);
          Tol tol = tol_for(dt);
          if (tf32) tol = {5e-3, 5e-3};  // 10-bit mantissa inputs, k = 29
          if (dt == DType::F32 || dt == DType::C64) tol.atol *= 10;
          std::string what = std::string("gemm ") + name(dt) + (ta ? " ta" : "") +
                             (tb ? " tb" : "") + (tf32 ? " tf32" : "");
          expect_close(got.narrow(1, 0, n), want.narrow(1, 0, n).to(dt), tol, what);
          // Padding columns of C are untouched.
          EXPECT_TRUE(bitwise_equal(got.narrow(1, n, 2), c.narrow(1, n, 2))) << what;
        }
      }
    }
  }
}

TEST(CudaParity, GemmStridedBatchedMatchesCpu) {
  SKIP_WITHOUT_GPU();
  const int64_t batch = 4, m = 8, n = 5, k = 6;
  Tensor a = random_of({batch, m, k}, DType::F64, -1, 1, 131);
  Tensor b = random_of({k, n}, DType::F64, -1, 1, 132);  // broadcast over the batch (stride 0)
  Tensor want = zeros({batch, m, n}, {DType::F64});
  for (int64_t i = 0; i < batch; ++i) {
    Tensor ai = a.select(0, i).contiguous(), wi = want.select(0, i);
    fk::gemm(DType::F64, false, false, m, n, k, 1.0, ai.data_ptr(), k, b.data_ptr(), n, 0.0,
             wi.data_ptr(), n);
  }
  DeviceBuffer da = upload(a), db = upload(b), dc(want.nbytes());
  cuda::gemm_strided_batched(kDev, cuda::kF64, false, false, m, n, k, 1.0, da.get(), k, m * k,
                             db.get(), n, 0, 0.0, dc.get(), n, m * n, batch, stream(), false);
  expect_close(download(dc, want.shape(), DType::F64), want, tol_for(DType::F64), "batched");
}

// --- FFT --------------------------------------------------------------------

// Naive multi-dimensional DFT of a contiguous [batch, n...] complex array.
std::vector<c128> dft(const std::vector<c128>& x, int64_t batch, const std::vector<int64_t>& n,
                      bool inverse) {
  int64_t size = 1;
  for (int64_t s : n) size *= s;
  std::vector<c128> y(x.size());
  const double sign = inverse ? 1.0 : -1.0;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t out = 0; out < size; ++out) {
      c128 acc = 0;
      for (int64_t in = 0; in < size; ++in) {
        double phase = 0;
        int64_t ro = out, ri = in;
        for (int d = static_cast<int>(n.size()) - 1; d >= 0; --d) {
          phase += static_cast<double>((ro % n[d]) * (ri % n[d])) / static_cast<double>(n[d]);
          ro /= n[d];
          ri /= n[d];
        }
        acc += x[b * size + in] * std::polar(1.0, sign * 2 * std::numbers::pi * phase);
      }
      y[b * size + out] = acc;
    }
  }
  return y;
}

TEST(CudaParity, FftC2CR2CC2RMatchNaiveDft) {
  SKIP_WITHOUT_GPU();
  cuda::fft_plan_cache_clear();
  struct Case {
    std::vector<int64_t> n;
    int64_t batch;
  };
  for (const Case& c : {Case{{16}, 3}, Case{{12}, 1}, Case{{6, 10}, 2}, Case{{4, 3, 5}, 1}}) {
    int64_t size = 1;
    for (int64_t s : c.n) size *= s;
    const int64_t half_last = c.n.back() / 2 + 1, csize = size / c.n.back() * half_last;
    cuda::FftLayout l;
    l.rank = static_cast<int>(c.n.size());
    for (int i = 0; i < l.rank; ++i) l.n[i] = c.n[static_cast<size_t>(i)];
    l.batch = c.batch;
    for (DType dt : {DType::C64, DType::C128}) {
      const DType rt = dt == DType::C64 ? DType::F32 : DType::F64;
      Tol tol = tol_for(dt);
      tol.atol = (dt == DType::C64 ? 1e-5 : 1e-12) * static_cast<double>(size);
      // c2c both directions.
      Tensor x = random_of({c.batch, size}, dt, -1, 1, 141);
      std::vector<c128> xv = x.to_vector<c128>();
      for (bool inverse : {false, true}) {
        DeviceBuffer dx = upload(x), dy(x.nbytes());
        cuda::fft_execute(kDev, cuda::kFftC2C, code(dt), inverse, l, dx.get(), dy.get(), stream());
        expect_close(download(dy, x.shape(), dt),
                     from_vector(dft(xv, c.batch, c.n, inverse), x.shape()), tol, "c2c");
      }
      // r2c: the first n/2 + 1 bins of the last dim.
      Tensor r = random_of({c.batch, size}, rt, -1, 1, 142);
      std::vector<double> rv = r.to_vector<double>();
      std::vector<c128> rc(rv.begin(), rv.end());
      std::vector<c128> spectrum = dft(rc, c.batch, c.n, false), half;
      for (int64_t i = 0; i < c.batch * size; ++i) {
        if (i % c.n.back() < half_last) half.push_back(spectrum[static_cast<size_t>(i)]);
      }
      DeviceBuffer dr = upload(r), dh(c.batch * csize * itemsize(dt));
      cuda::fft_execute(kDev, cuda::kFftR2C, code(rt), false, l, dr.get(), dh.get(), stream());
      Tensor got_half = download(dh, {c.batch, csize}, dt);
      expect_close(got_half, from_vector(half, {c.batch, csize}), tol, "r2c");
      // c2r of that spectrum gives size * r back (unnormalized); it may clobber its input.
      DeviceBuffer back(r.nbytes());
      cuda::fft_execute(kDev, cuda::kFftC2R, code(dt), true, l, dh.get(), back.get(), stream());
      expect_close(download(back, r.shape(), rt), mul(r.to(DType::F64), static_cast<double>(size)),
                   tol, "c2r");
    }
  }
  // Plans are reused: running the same transforms again adds none.
  const int64_t cached = cuda::fft_plan_cache_size();
  EXPECT_GT(cached, 0);
  cuda::FftLayout l;
  l.n[0] = 16;
  l.batch = 3;
  Tensor x = random_of({3, 16}, DType::C64, -1, 1, 150);
  DeviceBuffer dx = upload(x), dy(x.nbytes());
  cuda::fft_execute(kDev, cuda::kFftC2C, cuda::kC64, false, l, dx.get(), dy.get(), stream());
  cuda::synchronize(kDev);
  EXPECT_EQ(cuda::fft_plan_cache_size(), cached);
}

// --- launcher argument errors -------------------------------------------------

TEST(CudaParity, LauncherErrorsNameTheProblem) {
  SKIP_WITHOUT_GPU();
  DeviceBuffer buf(64);
  try {
    cuda::launch_unary(cuda::kUnaryExp, cuda::kI32, buf.get(), buf.get(), 4, 0, 0, stream());
    FAIL() << "exp on i32 must throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("integer"), std::string::npos) << e.what();
  }
  EXPECT_THROW(cuda::launch_binary(cuda::kBinaryLt, cuda::kC64, buf.get(), buf.get(), buf.get(), 1,
                                   Dims{2}.data(), nullptr, nullptr, nullptr, 1, 0, stream()),
               Error);
  EXPECT_THROW(cuda::launch_reduce_lastdim(cuda::kReduceMax, cuda::kC128, buf.get(), buf.get(), 1,
                                           2, stream()),
               Error);
  EXPECT_THROW(cuda::gemm(kDev, cuda::kI32, false, false, 2, 2, 2, 1, buf.get(), 2, buf.get(), 2, 0,
                          buf.get(), 2, stream(), false),
               Error);
  EXPECT_THROW(cuda::gemm(kDev, cuda::kF32, false, false, 2, 3, 2, 1, buf.get(), 2, buf.get(), 2, 0,
                          buf.get(), 2, stream(), false),  // ldb 2 < n 3
               Error);
  cuda::FftLayout l;
  l.rank = 4;
  EXPECT_THROW(
      cuda::fft_execute(kDev, cuda::kFftC2C, cuda::kC64, false, l, buf.get(), buf.get(), stream()),
      Error);
}

}  // namespace
}  // namespace fk
