// The cuBLAS stand-in (cublas.cpp) against a plain double loop: every
// transposition pair, padded leading dimensions (the padding untouched),
// strided batches (broadcast included), every type combination fieldkit's
// cuda/blas.cpp asks for, with tolerances from the input and output
// precisions; TF32 matching tf32-rounded inputs and visibly coarser than
// FP32; FAST_16F/16BF, PEDANTIC and BF16x9 reading f32 inputs as named;
// beta = 0 with NaN in C; k = 0; the stream a GEMM runs on and the
// alpha/beta values it keeps; the grouped call against GemmEx; and the
// status codes of invalid calls.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "cuda_emu/emulated_device.h"

namespace {

using cd = std::complex<double>;

bool is_complex(cudaDataType_t t) {
  return t == CUDA_C_32F || t == CUDA_C_64F;
}

size_t bytes_of(cudaDataType_t t) {
  switch (t) {
    case CUDA_R_16F:
    case CUDA_R_16BF:
      return 2;
    case CUDA_R_32F:
      return 4;
    case CUDA_R_64F:
    case CUDA_C_32F:
      return 8;
    default:
      return 16;
  }
}

// v stored as type t at element i of p (rounded to nearest).
void put(void* p, cudaDataType_t t, int64_t i, cd v) {
  switch (t) {
    case CUDA_R_16F:
      static_cast<__half*>(p)[i] = __float2half_rn(static_cast<float>(v.real()));
      return;
    case CUDA_R_16BF:
      static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(static_cast<float>(v.real()));
      return;
    case CUDA_R_32F:
      static_cast<float*>(p)[i] = static_cast<float>(v.real());
      return;
    case CUDA_R_64F:
      static_cast<double*>(p)[i] = v.real();
      return;
    case CUDA_C_32F:
      static_cast<std::complex<float>*>(p)[i] = std::complex<float>(v);
      return;
    default:
      static_cast<cd*>(p)[i] = v;
  }
}

cd get(const void* p, cudaDataType_t t, int64_t i) {
  switch (t) {
    case CUDA_R_16F:
      return __half2float(static_cast<const __half*>(p)[i]);
    case CUDA_R_16BF:
      return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    case CUDA_R_32F:
      return static_cast<const float*>(p)[i];
    case CUDA_R_64F:
      return static_cast<const double*>(p)[i];
    case CUDA_C_32F:
      return cd(static_cast<const std::complex<float>*>(p)[i]);
    default:
      return static_cast<const cd*>(p)[i];
  }
}

// A column-major matrix of `rows` x `cols` stored with leading dimension ld,
// `count` of them `stride` elements apart; the gaps hold a sentinel.
struct Matrix {
  cudaDataType_t type;
  int64_t rows, cols, ld, stride, count;
  std::vector<unsigned char> bytes;

  Matrix(cudaDataType_t t, int64_t r, int64_t c, int64_t ld_, int64_t stride_, int64_t count_,
         uint32_t seed)
      : type(t), rows(r), cols(c), ld(ld_), stride(stride_), count(count_) {
    const int64_t elements = (count - 1) * stride + ld * c + 1;
    bytes.resize(static_cast<size_t>(elements) * bytes_of(t));
    for (int64_t e = 0; e < elements; ++e) put(data(), t, e, kSentinel);
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> u(-1, 1);
    for (int64_t q = 0; q < count; ++q)
      for (int64_t j = 0; j < c; ++j)
        for (int64_t i = 0; i < r; ++i)
          put(data(), t, q * stride + i + j * ld, is_complex(t) ? cd(u(rng), u(rng)) : u(rng));
  }
  void* data() { return bytes.data(); }
  const void* data() const { return bytes.data(); }
  cd at(int64_t q, int64_t i, int64_t j) const {
    return get(data(), type, q * stride + i + j * ld);
  }
  int64_t elements() const { return static_cast<int64_t>(bytes.size() / bytes_of(type)); }
  static constexpr double kSentinel = 7.0;
};

// op(M)(i, l) of stored matrix q.
cd op_at(const Matrix& m, cublasOperation_t op, int64_t q, int64_t i, int64_t l) {
  if (op == CUBLAS_OP_N) return m.at(q, i, l);
  const cd v = m.at(q, l, i);
  return op == CUBLAS_OP_C ? std::conj(v) : v;
}

float tf32(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  bits = (bits + 0x1000u) & ~0x1fffu;
  std::memcpy(&v, &bits, 4);
  return v;
}

struct Scalars {
  alignas(16) unsigned char alpha[16], beta[16];
};

// alpha and beta in the compute type's scale format.
Scalars scalars(cd alpha, cd beta, cublasComputeType_t compute, cudaDataType_t ctype) {
  Scalars s{};
  const bool dbl = compute == CUBLAS_COMPUTE_64F;
  if (is_complex(ctype)) {
    if (dbl) {
      std::memcpy(s.alpha, &alpha, 16);
      std::memcpy(s.beta, &beta, 16);
    } else {
      std::complex<float> a(alpha), b(beta);
      std::memcpy(s.alpha, &a, 8);
      std::memcpy(s.beta, &b, 8);
    }
  } else if (dbl) {
    double a = alpha.real(), b = beta.real();
    std::memcpy(s.alpha, &a, 8);
    std::memcpy(s.beta, &b, 8);
  } else {
    float a = static_cast<float>(alpha.real()), b = static_cast<float>(beta.real());
    std::memcpy(s.alpha, &a, 4);
    std::memcpy(s.beta, &b, 4);
  }
  return s;
}

struct Handle {
  cublasHandle_t h = nullptr;
  Handle() { EXPECT_EQ(cublasCreate(&h), CUBLAS_STATUS_SUCCESS); }
  ~Handle() { cublasDestroy(h); }
};

struct Case {
  cudaDataType_t in, out;
  cublasComputeType_t compute;
  // Relative errors: of an input as the GEMM reads it (0: exactly), of an
  // addition in the compute type, of the result's rounding to C's type.
  double input_eps, accumulate_eps, output_eps;
  bool tf32 = false;
};

// What fieldkit's cuda/blas.cpp asks for (types_for, gemm_f32_out).
std::vector<Case> fieldkit_cases() {
  const double f32 = std::ldexp(1.0, -24), f64 = std::ldexp(1.0, -53);
  const double f16 = std::ldexp(1.0, -11), bf16 = std::ldexp(1.0, -8);
  return {
      {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, 0, f32, f32},
      {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, std::ldexp(1.0, -11), f32, f32, true},
      {CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, 0, f32, f16},
      {CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 0, f32, bf16},
      {CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F, 0, f32, f32},
      {CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F, 0, f32, f32},
      {CUDA_R_64F, CUDA_R_64F, CUBLAS_COMPUTE_64F, 0, f64, f64},
      {CUDA_C_32F, CUDA_C_32F, CUBLAS_COMPUTE_32F, 0, f32, f32},
      {CUDA_C_64F, CUDA_C_64F, CUBLAS_COMPUTE_64F, 0, f64, f64},
  };
}

std::string name_of(const Case& c) {
  auto t = [](cudaDataType_t d) -> std::string {
    switch (d) {
      case CUDA_R_16F:
        return "16F";
      case CUDA_R_16BF:
        return "16BF";
      case CUDA_R_32F:
        return "32F";
      case CUDA_R_64F:
        return "64F";
      case CUDA_C_32F:
        return "C32F";
      default:
        return "C64F";
    }
  };
  return t(c.in) + "->" + t(c.out) + (c.tf32 ? " tf32" : "");
}

struct Shape {
  cublasOperation_t ta, tb;
  int64_t m, n, k, batch = 1;
  int64_t pad = 3;  // extra leading-dimension rows of A, B and C
  int64_t stride_gap = 5;
  bool broadcast_a = false;  // stride_a = 0
};

// Runs one GEMM (batched when shape.batch != 1) and checks every element
// of C against the double loop, within `slack` times the error bound the
// input and output precisions give; returns the largest error seen relative
// to sum |a||b| (+ |beta c|).
double check_gemm(cublasHandle_t h, const Case& c, const Shape& s, cd alpha, cd beta, uint32_t seed,
                  double slack = 4) {
  const int64_t a_rows = s.ta == CUBLAS_OP_N ? s.m : s.k, a_cols = s.ta == CUBLAS_OP_N ? s.k : s.m;
  const int64_t b_rows = s.tb == CUBLAS_OP_N ? s.k : s.n, b_cols = s.tb == CUBLAS_OP_N ? s.n : s.k;
  const int64_t lda = a_rows + s.pad, ldb = b_rows + s.pad, ldc = s.m + s.pad;
  const int64_t sa = s.broadcast_a ? 0 : lda * a_cols + s.stride_gap;
  const int64_t sb = ldb * b_cols + s.stride_gap, sc = ldc * s.n + s.stride_gap;
  const Matrix a(c.in, a_rows, a_cols, lda, sa, s.broadcast_a ? 1 : s.batch, seed);
  const Matrix b(c.in, b_rows, b_cols, ldb, sb, s.batch, seed + 1);
  Matrix out(c.out, s.m, s.n, ldc, sc, s.batch, seed + 2);
  const Matrix c0 = out;
  const Scalars sc_ = scalars(alpha, beta, c.compute, c.out);
  cublasStatus_t st;
  if (s.batch == 1) {
    st = cublasGemmEx_64(h, s.ta, s.tb, s.m, s.n, s.k, sc_.alpha, a.data(), c.in, lda, b.data(),
                         c.in, ldb, sc_.beta, out.data(), c.out, ldc, c.compute,
                         CUBLAS_GEMM_DEFAULT);
  } else {
    st = cublasGemmStridedBatchedEx_64(h, s.ta, s.tb, s.m, s.n, s.k, sc_.alpha, a.data(), c.in, lda,
                                       sa, b.data(), c.in, ldb, sb, sc_.beta, out.data(), c.out,
                                       ldc, sc, s.batch, c.compute, CUBLAS_GEMM_DEFAULT);
  }
  EXPECT_EQ(st, CUBLAS_STATUS_SUCCESS);
  double worst = 0;
  int wrong = 0;
  for (int64_t q = 0; q < s.batch; ++q) {
    for (int64_t j = 0; j < s.n; ++j) {
      for (int64_t i = 0; i < s.m; ++i) {
        cd want = 0;
        double magnitude = 0;
        for (int64_t l = 0; l < s.k; ++l) {
          const cd x = op_at(a, s.ta, s.broadcast_a ? 0 : q, i, l), y = op_at(b, s.tb, q, l, j);
          want += x * y;
          magnitude += std::abs(x) * std::abs(y);
        }
        want *= alpha;
        magnitude *= std::abs(alpha);
        if (beta != cd(0)) {
          want += beta * c0.at(q, i, j);
          magnitude += std::abs(beta * c0.at(q, i, j));
        }
        const double err = std::abs(out.at(q, i, j) - want);
        // Inputs read with relative error input_eps (two per product), the
        // sum's k roundings, the result's rounding to C's type.
        const double bound = slack * ((2 * c.input_eps + (s.k + 2) * c.accumulate_eps) * magnitude +
                                      c.output_eps * std::abs(want));
        worst = std::max(worst, magnitude > 0 ? err / magnitude : err);
        if (!(err <= bound) && wrong++ < 5) {
          ADD_FAILURE() << name_of(c) << " C[" << q << "](" << i << ", " << j
                        << ") = " << out.at(q, i, j) << ", want " << want << " (bound " << bound
                        << ")";
        }
      }
    }
  }
  // Leading-dimension padding and gaps between batch matrices untouched.
  for (int64_t e = 0; e < out.elements(); ++e) {
    const int64_t q = std::min(e / sc, s.batch - 1), r = e - q * sc;
    const bool inside = r >= 0 && r % ldc < s.m && r / ldc < s.n;
    if (!inside && get(out.data(), c.out, e) != cd(Matrix::kSentinel) && wrong++ < 5) {
      ADD_FAILURE() << name_of(c) << ": element " << e << " outside C was written";
    }
  }
  return worst;
}

const cublasOperation_t kOps[] = {CUBLAS_OP_N, CUBLAS_OP_T, CUBLAS_OP_C};

// The stand-in's own behaviour: its work runs when submitted (no stream
// model; this binary links the emulated runtime's, installed again after
// each test), and a test installs its own where it looks at the order.
class Cublas : public ::testing::Test {
 protected:
  Cublas() { fkemu::set_stream_model(nullptr); }
  ~Cublas() override { fkemu::set_stream_model(runtime_model_); }

 private:
  fkemu::StreamModel runtime_model_ = fkemu::stream_model();
};

TEST_F(Cublas, GemmEveryTypeAndTranspositionMatchesDoubleLoop) {
  Handle h;
  uint32_t seed = 1;
  for (const Case& c : fieldkit_cases()) {
    for (cublasOperation_t ta : kOps) {
      for (cublasOperation_t tb : kOps) {
        SCOPED_TRACE(name_of(c) + " ops " + std::to_string(ta) + std::to_string(tb));
        const cd alpha = is_complex(c.out) ? cd(0.75, -0.5) : cd(0.75);
        const cd beta = is_complex(c.out) ? cd(-0.5, 0.25) : cd(-0.5);
        check_gemm(h.h, c, {ta, tb, 5, 7, 9}, alpha, beta, seed += 3);
      }
    }
  }
}

// The 32-bit cublasGemmEx (fk_cuda_bench's reference) is the 64-bit call:
// the same C bit for bit, the same refusals.
TEST_F(Cublas, Int32GemmExIsThe64BitCall) {
  Handle h;
  for (const Case& c : fieldkit_cases()) {
    SCOPED_TRACE(name_of(c));
    const int m = 5, n = 7, k = 9, lda = k + 2, ldb = k + 1, ldc = m + 3;
    const Matrix a(c.in, k, m, lda, 0, 1, 11), b(c.in, k, n, ldb, 0, 1, 12);
    Matrix c32(c.out, m, n, ldc, 0, 1, 13);
    Matrix c64 = c32;
    const Scalars sc = scalars(cd(0.75), cd(-0.5), c.compute, c.out);
    ASSERT_EQ(cublasGemmEx(h.h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, sc.alpha, a.data(), c.in, lda,
                           b.data(), c.in, ldb, sc.beta, c32.data(), c.out, ldc, c.compute,
                           CUBLAS_GEMM_DEFAULT),
              CUBLAS_STATUS_SUCCESS);
    ASSERT_EQ(cublasGemmEx_64(h.h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, sc.alpha, a.data(), c.in, lda,
                              b.data(), c.in, ldb, sc.beta, c64.data(), c.out, ldc, c.compute,
                              CUBLAS_GEMM_DEFAULT),
              CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(c32.bytes, c64.bytes);
    EXPECT_EQ(cublasGemmEx(h.h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, sc.alpha, a.data(), c.in, m - 1,
                           b.data(), c.in, ldb, sc.beta, c32.data(), c.out, ldc, c.compute,
                           CUBLAS_GEMM_DEFAULT),
              CUBLAS_STATUS_INVALID_VALUE);
  }
}

// A plain transpose (OP_T) of a complex matrix must not conjugate; OP_C must.
TEST_F(Cublas, ComplexTransposeDoesNotConjugate) {
  Handle h;
  const std::complex<float> a[1] = {{0, 1}}, b[1] = {{0, 1}};
  const std::complex<float> one(1), zero(0);
  std::complex<float> c[1];
  ASSERT_EQ(
      cublasGemmEx_64(h.h, CUBLAS_OP_T, CUBLAS_OP_N, 1, 1, 1, &one, a, CUDA_C_32F, 1, b, CUDA_C_32F,
                      1, &zero, c, CUDA_C_32F, 1, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
      CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(c[0], std::complex<float>(-1, 0));  // i * i
  ASSERT_EQ(
      cublasGemmEx_64(h.h, CUBLAS_OP_C, CUBLAS_OP_N, 1, 1, 1, &one, a, CUDA_C_32F, 1, b, CUDA_C_32F,
                      1, &zero, c, CUDA_C_32F, 1, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
      CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(c[0], std::complex<float>(1, 0));  // conj(i) * i
}

// k = 256 products of values with full 24-bit mantissas: TF32's inputs keep
// 11 bits, so its error is far above FP32's yet within TF32's bound, and it
// equals the product of the tf32-rounded inputs summed in f32.
TEST_F(Cublas, Tf32IsCoarserThanFp32AndRoundsInputsToNearest) {
  Handle h;
  const Case f32 = fieldkit_cases()[0], fast = fieldkit_cases()[1];
  const Shape s{CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 256};
  const double e32 = check_gemm(h.h, f32, s, 1.0, 0.0, 99);
  const double etf = check_gemm(h.h, fast, s, 1.0, 0.0, 99);
  EXPECT_GT(etf, 50 * e32) << "TF32 no coarser than FP32";
  EXPECT_GT(etf, std::ldexp(1.0, -16)) << "TF32 inputs not rounded";

  // The same through the handle's math mode with CUBLAS_COMPUTE_32F, and
  // bit-exact against tf32-rounded inputs accumulated in float in k order.
  const int64_t k = 64;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> a(k), b(k);
  for (int64_t l = 0; l < k; ++l) a[l] = u(rng), b[l] = u(rng);
  a[0] = 1.0f + std::ldexp(1.0f, -11);  // a tie: rounds away from zero
  a[1] = 1.0f + std::ldexp(1.0f, -12);  // below half an ulp: rounds down
  float want = 0;
  for (int64_t l = 0; l < k; ++l) want += tf32(a[l]) * tf32(b[l]);
  EXPECT_EQ(tf32(a[0]), 1.0f + std::ldexp(1.0f, -10));
  EXPECT_EQ(tf32(a[1]), 1.0f);
  const float one = 1, zero = 0;
  float got = 0;
  ASSERT_EQ(cublasSetMathMode(h.h, CUBLAS_TF32_TENSOR_OP_MATH), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasGemmEx_64(h.h, CUBLAS_OP_T, CUBLAS_OP_N, 1, 1, k, &one, a.data(), CUDA_R_32F, k,
                            b.data(), CUDA_R_32F, k, &zero, &got, CUDA_R_32F, 1, CUBLAS_COMPUTE_32F,
                            CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(got, want);
  // fieldkit's handle mode: FP32 proper.
  ASSERT_EQ(cublasSetMathMode(h.h, CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasGemmEx_64(h.h, CUBLAS_OP_T, CUBLAS_OP_N, 1, 1, k, &one, a.data(), CUDA_R_32F, k,
                            b.data(), CUDA_R_32F, k, &zero, &got, CUDA_R_32F, 1, CUBLAS_COMPUTE_32F,
                            CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_SUCCESS);
  float exact = 0;
  for (int64_t l = 0; l < k; ++l) exact += a[l] * b[l];
  EXPECT_EQ(got, exact);
  EXPECT_NE(got, want);
}

// The other 32F compute types on f32 data: FAST_16F / FAST_16BF read the
// inputs rounded to half / bfloat16, PEDANTIC and the BF16x9 emulation read
// them exactly, and PEDANTIC ignores the handle's TF32 math mode.
TEST_F(Cublas, Fast16And32FComputeVariantsRoundAsNamed) {
  Handle h;
  const float a[2] = {1.0f + std::ldexp(1.0f, -9), 1.0f + std::ldexp(1.0f, -12)};
  const float b[2] = {1.0f, 1.0f};
  auto dot = [&](cublasComputeType_t compute) {
    const float one = 1, zero = 0;
    float c = 0;
    EXPECT_EQ(
        cublasGemmEx_64(h.h, CUBLAS_OP_T, CUBLAS_OP_N, 1, 1, 2, &one, a, CUDA_R_32F, 2, b,
                        CUDA_R_32F, 2, &zero, &c, CUDA_R_32F, 1, compute, CUBLAS_GEMM_DEFAULT),
        CUBLAS_STATUS_SUCCESS);
    return c;
  };
  const float exact = a[0] + a[1];
  // half keeps 2^-9 and drops 2^-12; bfloat16 (8 bits) drops both.
  EXPECT_EQ(dot(CUBLAS_COMPUTE_32F_FAST_16F), 2.0f + std::ldexp(1.0f, -9));
  EXPECT_EQ(dot(CUBLAS_COMPUTE_32F_FAST_16BF), 2.0f);
  EXPECT_EQ(dot(CUBLAS_COMPUTE_32F_EMULATED_16BFX9), exact);
  ASSERT_EQ(cublasSetMathMode(h.h, CUBLAS_TF32_TENSOR_OP_MATH), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(dot(CUBLAS_COMPUTE_32F_PEDANTIC), exact);
  EXPECT_EQ(dot(CUBLAS_COMPUTE_32F), 2.0f + std::ldexp(1.0f, -9));  // tf32 keeps 10 bits
}

TEST_F(Cublas, BetaZeroNeverReadsC) {
  Handle h;
  for (const Case& c : fieldkit_cases()) {
    SCOPED_TRACE(name_of(c));
    const int64_t m = 3, n = 2, k = 4;
    const Matrix a(c.in, m, k, m, 0, 1, 11), b(c.in, k, n, k, 0, 1, 12);
    Matrix out(c.out, m, n, m, 0, 1, 13);
    for (int64_t e = 0; e < m * n; ++e)
      put(out.data(), c.out, e, cd(std::numeric_limits<double>::quiet_NaN(), 0));
    const Scalars s = scalars(1.0, 0.0, c.compute, c.out);
    ASSERT_EQ(cublasGemmEx_64(h.h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, s.alpha, a.data(), c.in, m,
                              b.data(), c.in, k, s.beta, out.data(), c.out, m, c.compute,
                              CUBLAS_GEMM_DEFAULT),
              CUBLAS_STATUS_SUCCESS);
    for (int64_t e = 0; e < m * n; ++e) {
      EXPECT_TRUE(std::isfinite(get(out.data(), c.out, e).real())) << "element " << e;
    }
  }
}

TEST_F(Cublas, KZeroScalesC) {
  Handle h;
  for (const Case& c : fieldkit_cases()) {
    SCOPED_TRACE(name_of(c));
    check_gemm(h.h, c, {CUBLAS_OP_N, CUBLAS_OP_T, 4, 3, 0}, 1.0, 0.5, 21);
    check_gemm(h.h, c, {CUBLAS_OP_N, CUBLAS_OP_T, 4, 3, 0}, 1.0, 0.0, 22);
  }
}

TEST_F(Cublas, StridedBatchedMatchesDoubleLoop) {
  Handle h;
  uint32_t seed = 300;
  for (const Case& c : fieldkit_cases()) {
    for (bool broadcast : {false, true}) {
      SCOPED_TRACE(name_of(c) + (broadcast ? " A broadcast" : ""));
      Shape s{CUBLAS_OP_T, CUBLAS_OP_N, 4, 6, 5, 3};
      s.broadcast_a = broadcast;
      check_gemm(h.h, c, s, 1.25, 0.5, seed += 3);
      s.ta = CUBLAS_OP_N;
      s.tb = CUBLAS_OP_T;
      s.stride_gap = 0;  // matrices back to back
      check_gemm(h.h, c, s, 1.0, 0.0, seed += 3);
    }
  }
}

// The GEMM runs in the handle's stream's order (submitted, here held back by
// a stream model until the test runs it) with alpha and beta read at the call.
std::vector<std::pair<cudaStream_t, fkemu::StreamWork>> g_held;
void hold(cudaStream_t s, fkemu::StreamWork w) {
  g_held.emplace_back(s, std::move(w));
}

TEST_F(Cublas, GemmRunsOnTheHandlesStreamWithAlphaBetaReadAtTheCall) {
  Handle h;
  const auto stream = reinterpret_cast<cudaStream_t>(0x1230);
  ASSERT_EQ(cublasSetStream(h.h, stream), CUBLAS_STATUS_SUCCESS);
  float a[2] = {1, 2}, b[2] = {3, 4}, c[1] = {10};
  float alpha = 2, beta = 1;
  fkemu::set_stream_model(hold);
  const cublasStatus_t st = cublasGemmEx_64(h.h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 2, &alpha, a,
                                            CUDA_R_32F, 1, b, CUDA_R_32F, 2, &beta, c, CUDA_R_32F,
                                            1, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  fkemu::set_stream_model(nullptr);
  ASSERT_EQ(st, CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(g_held.size(), 1u);
  EXPECT_EQ(g_held[0].first, stream);
  EXPECT_EQ(c[0], 10) << "ran before its stream reached it";
  alpha = 100;
  beta = 100;
  a[0] = 5;  // device data is read when the work runs
  g_held[0].second();
  g_held.clear();
  EXPECT_EQ(c[0], 2 * (5 * 3 + 2 * 4) + 10);
  // cublasSetStream(nullptr): the legacy stream.
  ASSERT_EQ(cublasSetStream(h.h, nullptr), CUBLAS_STATUS_SUCCESS);
  fkemu::set_stream_model(hold);
  cublasGemmEx_64(h.h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 2, &alpha, a, CUDA_R_32F, 1, b, CUDA_R_32F,
                  2, &beta, c, CUDA_R_32F, 1, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  fkemu::set_stream_model(nullptr);
  ASSERT_EQ(g_held.size(), 1u);
  EXPECT_EQ(g_held[0].first, nullptr);
  g_held.clear();
}

// One f32 GEMM call with the given arguments' changes (its status).
struct Call {
  cublasHandle_t h;
  cublasOperation_t ta = CUBLAS_OP_N, tb = CUBLAS_OP_N;
  int64_t m = 2, n = 3, k = 4, lda = 2, ldb = 4, ldc = 2;
  cudaDataType_t at = CUDA_R_32F, bt = CUDA_R_32F, ct = CUDA_R_32F;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  cublasGemmAlgo_t algo = CUBLAS_GEMM_DEFAULT;
  bool null_alpha = false, null_beta = false;
  int64_t batch = 1, stride_c = 64;
  cublasStatus_t operator()() const {
    static double buf[3][64];  // big enough for every shape below, any type
    const double one[2] = {1, 0};
    const void* alpha = null_alpha ? nullptr : one;
    const void* beta = null_beta ? nullptr : one;
    if (batch == 1) {
      return cublasGemmEx_64(h, ta, tb, m, n, k, alpha, buf[0], at, lda, buf[1], bt, ldb, beta,
                             buf[2], ct, ldc, compute, algo);
    }
    return cublasGemmStridedBatchedEx_64(h, ta, tb, m, n, k, alpha, buf[0], at, lda, 0, buf[1], bt,
                                         ldb, 0, beta, buf[2], ct, ldc, stride_c, batch, compute,
                                         algo);
  }
};

TEST_F(Cublas, InvalidCallsReturnCublasStatus) {
  Handle h;
  Call ok{h.h};
  EXPECT_EQ(ok(), CUBLAS_STATUS_SUCCESS);
  auto with = [&](std::function<void(Call&)> change) {
    Call c = ok;
    change(c);
    return c();
  };
  // Handles.
  EXPECT_EQ(with([](Call& c) { c.h = nullptr; }), CUBLAS_STATUS_NOT_INITIALIZED);
  cublasHandle_t gone = nullptr;
  ASSERT_EQ(cublasCreate(&gone), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasDestroy(gone), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(with([&](Call& c) { c.h = gone; }), CUBLAS_STATUS_NOT_INITIALIZED);
  EXPECT_EQ(cublasDestroy(gone), CUBLAS_STATUS_NOT_INITIALIZED);
  EXPECT_EQ(cublasSetStream(gone, nullptr), CUBLAS_STATUS_NOT_INITIALIZED);
  EXPECT_EQ(cublasCreate(nullptr), CUBLAS_STATUS_INVALID_VALUE);
  // Sizes and leading dimensions.
  const auto invalid = CUBLAS_STATUS_INVALID_VALUE;
  EXPECT_EQ(with([](Call& c) { c.m = -1; }), invalid);
  EXPECT_EQ(with([](Call& c) { c.n = -1; }), invalid);
  EXPECT_EQ(with([](Call& c) { c.k = -1; }), invalid);
  EXPECT_EQ(with([](Call& c) { c.lda = 1; }), invalid);           // < m
  EXPECT_EQ(with([](Call& c) { c.ldb = 3; }), invalid);           // < k
  EXPECT_EQ(with([](Call& c) { c.ldc = 1; }), invalid);           // < m
  EXPECT_EQ(with([](Call& c) { c.ta = CUBLAS_OP_T; }), invalid);  // A is k x m: lda >= 4
  EXPECT_EQ(with([](Call& c) { c.ta = CUBLAS_OP_T, c.lda = 4; }), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(with([](Call& c) { c.tb = CUBLAS_OP_T; }), CUBLAS_STATUS_SUCCESS);  // ldb 4 >= n 3
  EXPECT_EQ(with([](Call& c) { c.tb = CUBLAS_OP_T, c.ldb = 2; }), invalid);
  EXPECT_EQ(with([](Call& c) { c.m = 0, c.lda = 0; }), invalid);  // ld >= 1 even when empty
  EXPECT_EQ(with([](Call& c) { c.m = 0, c.lda = 1, c.ldc = 1; }), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(with([](Call& c) { c.ta = CUBLAS_OP_CONJG; }), invalid);
  EXPECT_EQ(with([](Call& c) { c.null_alpha = true; }), invalid);
  EXPECT_EQ(with([](Call& c) { c.null_beta = true; }), invalid);
  EXPECT_EQ(with([](Call& c) { c.compute = static_cast<cublasComputeType_t>(66); }), invalid);
  // Batches: a negative count, C matrices sharing elements.
  EXPECT_EQ(with([](Call& c) { c.batch = 2; }), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(with([](Call& c) { c.batch = -1; }), invalid);
  EXPECT_EQ(with([](Call& c) { c.batch = 2, c.stride_c = 5; }), invalid);  // C spans 2*2+2
  EXPECT_EQ(with([](Call& c) { c.batch = 2, c.stride_c = 6; }), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(with([](Call& c) { c.batch = 2, c.stride_c = 0; }), invalid);
  EXPECT_EQ(with([](Call& c) { c.batch = 0; }), CUBLAS_STATUS_SUCCESS);
  // Type combinations outside cuBLAS's GemmEx table.
  const auto unsupported = CUBLAS_STATUS_NOT_SUPPORTED;
  EXPECT_EQ(with([](Call& c) { c.bt = CUDA_R_16F; }), unsupported);
  EXPECT_EQ(
      with([](Call& c) { c.at = c.bt = CUDA_R_16F, c.compute = CUBLAS_COMPUTE_32F_FAST_TF32; }),
      unsupported);
  EXPECT_EQ(with([](Call& c) { c.at = c.bt = CUDA_R_16F, c.compute = CUBLAS_COMPUTE_64F; }),
            unsupported);
  EXPECT_EQ(with([](Call& c) { c.at = c.bt = CUDA_R_16BF, c.ct = CUDA_R_16F; }), unsupported);
  EXPECT_EQ(with([](Call& c) { c.at = c.bt = CUDA_R_64F, c.ct = CUDA_R_64F; }), unsupported);
  EXPECT_EQ(with([](Call& c) { c.at = c.bt = c.ct = CUDA_R_64F, c.compute = CUBLAS_COMPUTE_64F; }),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(with([](Call& c) { c.at = c.bt = CUDA_R_32F, c.ct = CUDA_R_16F; }), unsupported);
  EXPECT_EQ(with([](Call& c) { c.at = c.bt = c.ct = CUDA_C_32F, c.compute = CUBLAS_COMPUTE_64F; }),
            unsupported);
  EXPECT_EQ(with([](Call& c) { c.ct = CUDA_C_32F; }), unsupported);
  EXPECT_EQ(with([](Call& c) { c.algo = static_cast<cublasGemmAlgo_t>(50); }), unsupported);
  EXPECT_EQ(with([](Call& c) { c.algo = CUBLAS_GEMM_DEFAULT_TENSOR_OP; }), CUBLAS_STATUS_SUCCESS);
}

// Each product of a grouped call is the GemmEx of that product, bit for bit
// (both run the same loop here), for every row of the grouped call's type
// table; a group of size 0 reads no pointer; refusals by table and size.
TEST_F(Cublas, GroupedGemmIsEachProductsGemmEx) {
  Handle h;
  const double f32 = std::ldexp(1.0, -24);
  const std::vector<Case> grouped = {
      {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, 0, f32, f32},
      {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 0, f32, f32, true},
      {CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, 0, f32, f32},
      {CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 0, f32, f32},
      {CUDA_R_64F, CUDA_R_64F, CUBLAS_COMPUTE_64F, 0, f32, f32},
  };
  // Groups: two products of one shape, none, one of another (transposed A).
  const std::vector<cublasOperation_t> ta = {CUBLAS_OP_N, CUBLAS_OP_N, CUBLAS_OP_T};
  const std::vector<cublasOperation_t> tb = {CUBLAS_OP_T, CUBLAS_OP_N, CUBLAS_OP_N};
  const std::vector<int64_t> m = {5, 2, 3}, n = {4, 2, 6}, k = {7, 2, 9};
  const std::vector<int64_t> lda = {6, 2, 10}, ldb = {5, 2, 9}, ldc = {5, 2, 4};
  const std::vector<int64_t> size = {2, 0, 1};
  for (const Case& c : grouped) {
    SCOPED_TRACE(name_of(c));
    std::vector<Matrix> a, b, out;
    std::vector<int64_t> group_of;
    for (size_t g = 0; g < size.size(); ++g) {
      const int64_t ar = ta[g] == CUBLAS_OP_N ? m[g] : k[g],
                    ac = ta[g] == CUBLAS_OP_N ? k[g] : m[g];
      const int64_t br = tb[g] == CUBLAS_OP_N ? k[g] : n[g],
                    bc = tb[g] == CUBLAS_OP_N ? n[g] : k[g];
      for (int64_t j = 0; j < size[g]; ++j) {
        const uint32_t seed = static_cast<uint32_t>(10 * a.size() + 1);
        a.emplace_back(c.in, ar, ac, lda[g], 0, 1, seed);
        b.emplace_back(c.in, br, bc, ldb[g], 0, 1, seed + 1);
        out.emplace_back(c.out, m[g], n[g], ldc[g], 0, 1, seed + 2);
        group_of.push_back(static_cast<int64_t>(g));
      }
    }
    std::vector<Matrix> want = out;
    std::vector<const void*> ap, bp;
    std::vector<void*> cp;
    for (size_t p = 0; p < a.size(); ++p) {
      ap.push_back(a[p].data());
      bp.push_back(b[p].data());
      cp.push_back(out[p].data());
    }
    const Scalars one = scalars(0.5, 0.0, c.compute, c.out);
    const size_t sb = c.compute == CUBLAS_COMPUTE_64F ? 8 : 4;
    std::vector<unsigned char> alpha(3 * sb), beta(3 * sb);
    for (size_t g = 0; g < 3; ++g) {
      std::memcpy(alpha.data() + g * sb, one.alpha, sb);
      std::memcpy(beta.data() + g * sb, one.beta, sb);
    }
    ASSERT_EQ(cublasGemmGroupedBatchedEx_64(h.h, ta.data(), tb.data(), m.data(), n.data(), k.data(),
                                            alpha.data(), ap.data(), c.in, lda.data(), bp.data(),
                                            c.in, ldb.data(), beta.data(), cp.data(), c.out,
                                            ldc.data(), 3, size.data(), c.compute),
              CUBLAS_STATUS_SUCCESS);
    for (size_t p = 0; p < a.size(); ++p) {
      const int64_t g = group_of[p];
      ASSERT_EQ(cublasGemmEx_64(h.h, ta[g], tb[g], m[g], n[g], k[g], one.alpha, a[p].data(), c.in,
                                lda[g], b[p].data(), c.in, ldb[g], one.beta, want[p].data(), c.out,
                                ldc[g], c.compute, CUBLAS_GEMM_DEFAULT),
                CUBLAS_STATUS_SUCCESS);
      EXPECT_EQ(out[p].bytes, want[p].bytes) << "product " << p;
      EXPECT_NE(out[p].bytes, Matrix(c.out, m[g], n[g], ldc[g], 0, 1, 10 * p + 3).bytes);
    }
  }
  // Refusals: outside the grouped table (GemmEx runs these), sizes.
  auto call = [&](cudaDataType_t in, cudaDataType_t out, cublasComputeType_t compute,
                  const int64_t* sizes, int64_t groups) {
    const Scalars one = scalars(1.0, 0.0, compute, out);
    std::vector<const void*> none(3, nullptr);
    return cublasGemmGroupedBatchedEx_64(h.h, ta.data(), tb.data(), m.data(), n.data(), k.data(),
                                         one.alpha, none.data(), in, lda.data(), none.data(), in,
                                         ldb.data(), one.beta, const_cast<void**>(none.data()), out,
                                         ldc.data(), groups, sizes, compute);
  };
  const int64_t empty[] = {0}, negative[] = {-1};
  EXPECT_EQ(call(CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F, empty, 1),
            CUBLAS_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(call(CUDA_C_32F, CUDA_C_32F, CUBLAS_COMPUTE_32F, empty, 1),
            CUBLAS_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(call(CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F_FAST_TF32, empty, 1),
            CUBLAS_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(call(CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, empty, 1), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(call(CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, empty, 0), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(call(CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, negative, 1),
            CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(call(CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, empty, -1),
            CUBLAS_STATUS_INVALID_VALUE);
}

TEST_F(Cublas, HandleSettingsAreChecked) {
  Handle h;
  EXPECT_EQ(cublasSetMathMode(h.h, static_cast<cublasMath_t>(5)), CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(cublasSetMathMode(
                h.h, static_cast<cublasMath_t>(CUBLAS_TF32_TENSOR_OP_MATH |
                                               CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasSetMathMode(nullptr, CUBLAS_DEFAULT_MATH), CUBLAS_STATUS_NOT_INITIALIZED);
  EXPECT_EQ(cublasSetMathMode(h.h, CUBLAS_DEFAULT_MATH), CUBLAS_STATUS_SUCCESS);
  // The workspace: 256-byte aligned; below 16 KiB a GEMM cannot get what it
  // needs; cublasSetStream returns the handle to cuBLAS's own pool.
  alignas(256) static unsigned char workspace[16 << 10];
  Call gemm{h.h};
  EXPECT_EQ(cublasSetWorkspace(h.h, workspace + 16, 1024), CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(cublasSetWorkspace(nullptr, workspace, 1024), CUBLAS_STATUS_NOT_INITIALIZED);
  EXPECT_EQ(cublasSetWorkspace(h.h, workspace, sizeof(workspace)), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(gemm(), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasSetWorkspace(h.h, workspace, sizeof(workspace) - 256), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(gemm(), CUBLAS_STATUS_ALLOC_FAILED);
  EXPECT_EQ(cublasSetWorkspace(h.h, nullptr, 0), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(gemm(), CUBLAS_STATUS_ALLOC_FAILED);
  EXPECT_EQ(cublasSetStream(h.h, nullptr), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(gemm(), CUBLAS_STATUS_SUCCESS);
}

TEST_F(Cublas, StatusNamesAndStrings) {
  EXPECT_STREQ(cublasGetStatusName(CUBLAS_STATUS_SUCCESS), "CUBLAS_STATUS_SUCCESS");
  EXPECT_STREQ(cublasGetStatusName(CUBLAS_STATUS_INVALID_VALUE), "CUBLAS_STATUS_INVALID_VALUE");
  EXPECT_STREQ(cublasGetStatusName(CUBLAS_STATUS_NOT_SUPPORTED), "CUBLAS_STATUS_NOT_SUPPORTED");
  EXPECT_STREQ(cublasGetStatusString(CUBLAS_STATUS_NOT_INITIALIZED),
               "the library was not initialized");
  EXPECT_STREQ(cublasGetStatusString(CUBLAS_STATUS_INVALID_VALUE),
               "an unsupported value or parameter was passed to the function");
  EXPECT_STREQ(cublasGetStatusString(static_cast<cublasStatus_t>(99)), "unknown error");
}

}  // namespace
