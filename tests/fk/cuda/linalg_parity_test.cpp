// cuBLAS GEMM and the fk linear-algebra ops on the device against the CPU (see
// parity.h): cuda::gemm in every dtype and transpose with padded leading
// dimensions (TF32 too), the strided-batched form with a broadcast operand,
// the grouped form (three shapes in one call),
// matmul, bmm and linear through the dispatch with gradients (every path of
// matmul_into, results on the operands' device), and a device gradcheck.
#include "parity.h"

#include <cstdint>
#include <string>
#include <vector>

#include "fk/blas.h"
#include "fk/cuda/blas.h"
#include "fk/test_util.h"

namespace fk::cuda_parity {
namespace {

constexpr int64_t kM = 37, kN = 45, kK = 29;
constexpr double kAlpha = 0.75, kBeta = -0.5;

// C [m, n] = alpha op(A) op(B) + beta C with stored rows padded past their
// length (lda > row length): A, B and C as [rows, ld] tensors.
struct GemmShape {
  bool ta, tb;
  int64_t a_rows() const { return ta ? kK : kM; }
  int64_t lda() const { return (ta ? kM : kK) + 3; }
  int64_t b_rows() const { return tb ? kN : kK; }
  int64_t ldb() const { return (tb ? kK : kN) + 1; }
  int64_t ldc() const { return kN + 2; }
};

OpCase gemm_row(GemmShape s, bool tf32) {
  return {
      .name =
          std::string("gemm_") + (s.ta ? "t" : "n") + (s.tb ? "t" : "n") + (tf32 ? "_tf32" : ""),
      .dtypes = tf32 ? std::vector<DType>{DType::F32}
                     : std::vector<DType>{DType::F32, DType::F64, DType::C64, DType::C128,
                                          DType::F16, DType::BF16},
      .inputs =
          [s](DType dt) {
            return Inputs{random_of({s.a_rows(), s.lda()}, dt, -1, 1, 121),
                          random_of({s.b_rows(), s.ldb()}, dt, -1, 1, 122),
                          random_of({kM, s.ldc()}, dt, -1, 1, 123)};
          },
      .device =
          [s, tf32](const Inputs& in) {
            Tensor c = in[2].clone();
            cuda::gemm(kDev, code(c.dtype()), s.ta, s.tb, kM, kN, kK, kAlpha, in[0].data_ptr(),
                       s.lda(), in[1].data_ptr(), s.ldb(), kBeta, c.data_ptr(), s.ldc(), stream(),
                       tf32);
            // The padding columns of C are untouched.
            EXPECT_TRUE(bitwise_equal(c.narrow(1, kN, 2), in[2].narrow(1, kN, 2)));
            return c;
          },
      .reference =
          [s](const Inputs& in) {
            // In the compute type (f32 for 16-bit inputs).
            const DType dt = in[0].dtype(), ct = is_half(dt) ? DType::F32 : dt;
            Tensor a = in[0].to(ct).contiguous(), b = in[1].to(ct).contiguous();
            Tensor c = in[2].to(ct).clone();
            fk::gemm(ct, s.ta, s.tb, kM, kN, kK, kAlpha, a.data_ptr(), s.lda(), b.data_ptr(),
                     s.ldb(), kBeta, c.data_ptr(), s.ldc());
            return c.to(dt);
          },
      .tol =
          [tf32](DType dt) {
            if (tf32) return Tol{5e-3, 5e-3};  // 10-bit mantissa inputs, k = 29
            Tol tol = tol_for(dt);
            if (dt == DType::F32 || dt == DType::C64) tol.atol *= 10;
            return tol;
          },
  };
}

// A [4, 8, 6] batch times one [6, 5] B (batch stride 0).
OpCase batched_row() {
  constexpr int64_t batch = 4, m = 8, n = 5, k = 6;
  return {
      .name = "gemm_strided_batched",
      .dtypes = {DType::F64},
      .inputs =
          [](DType dt) {
            return Inputs{random_of({batch, m, k}, dt, -1, 1, 131),
                          random_of({k, n}, dt, -1, 1, 132)};
          },
      .device =
          [](const Inputs& in) {
            Tensor c = device_empty({batch, m, n}, in[0].dtype());
            cuda::gemm_strided_batched(kDev, code(c.dtype()), false, false, m, n, k, 1.0,
                                       in[0].data_ptr(), k, m * k, in[1].data_ptr(), n, 0, 0.0,
                                       c.data_ptr(), n, m * n, batch, stream(), false);
            return c;
          },
      .reference =
          [](const Inputs& in) {
            Tensor want = zeros({batch, m, n}, {in[0].dtype()});
            for (int64_t i = 0; i < batch; ++i) {
              Tensor ai = in[0].select(0, i).contiguous(), wi = want.select(0, i);
              fk::gemm(in[0].dtype(), false, false, m, n, k, 1.0, ai.data_ptr(), k,
                       in[1].data_ptr(), n, 0.0, wi.data_ptr(), n);
            }
            return want;
          },
  };
}

// Three products of other shapes and transposes in one grouped call, each
// C_i stored at row i of one [3, 64] result (row stride = its n).
struct GroupedProduct {
  bool ta, tb;
  int64_t m, n, k;
};
constexpr GroupedProduct kGrouped[] = {
    {false, false, 7, 5, 3}, {true, false, 4, 6, 9}, {false, true, 8, 3, 5}};

OpCase grouped_row(bool tf32) {
  return {
      .name = std::string("gemm_grouped") + (tf32 ? "_tf32" : ""),
      .dtypes = tf32 ? std::vector<DType>{DType::F32}
                     : std::vector<DType>{DType::F32, DType::F64, DType::F16, DType::BF16},
      .inputs =
          [](DType dt) {
            Inputs in;
            unsigned seed = 141;
            for (const GroupedProduct& p : kGrouped) {
              in.push_back(random_of({p.m * p.k}, dt, -1, 1, seed++));
              in.push_back(random_of({p.k * p.n}, dt, -1, 1, seed++));
            }
            return in;
          },
      .device =
          [tf32](const Inputs& in) {
            const DType dt = in[0].dtype();
            Tensor c = zeros({3, 64}, {dt, kGpu});
            cuda::GemmList list;
            for (int64_t i = 0; i < 3; ++i) {
              const GroupedProduct& p = kGrouped[i];
              // Row i of C: 128 bytes apart in 16 bits, so 16-byte aligned.
              list.add({p.ta, p.tb, p.m, p.n, p.k, p.ta ? p.m : p.k, p.tb ? p.k : p.n, p.n},
                       in[2 * i].data_ptr(), in[2 * i + 1].data_ptr(),
                       static_cast<char*>(c.data_ptr()) + i * 64 * itemsize(dt));
            }
            EXPECT_TRUE(cuda::gemm_grouped(kDev, code(dt), list, stream(), tf32));
            return c;
          },
      .reference =
          [](const Inputs& in) {
            const DType dt = in[0].dtype(), ct = is_half(dt) ? DType::F32 : dt;
            Tensor c = zeros({3, 64}, {ct});
            for (int64_t i = 0; i < 3; ++i) {
              const GroupedProduct& p = kGrouped[i];
              Tensor a = in[2 * i].to(ct).contiguous(), b = in[2 * i + 1].to(ct).contiguous();
              Tensor ci = c.select(0, i);
              fk::gemm(ct, p.ta, p.tb, p.m, p.n, p.k, 1.0, a.data_ptr(), p.ta ? p.m : p.k,
                       b.data_ptr(), p.tb ? p.k : p.n, 0.0, ci.data_ptr(), p.n);
            }
            return c.to(dt);
          },
      .tol =
          [tf32](DType dt) {
            if (tf32) return Tol{5e-3, 5e-3};
            Tol tol = tol_for(dt);
            if (dt == DType::F32) tol.atol *= 10;
            return tol;
          },
  };
}

// What cuBLAS does not group: complex dtypes, and 16-bit or TF32 products
// whose pointers break its alignment rule (k's bytes a multiple of 16: every
// pointer 16-byte aligned; of 4: 4-byte). gemm_grouped says false and
// multiplies nothing; gemm_list then loops over gemm.
TEST(LinalgDevice, GroupedGemmDeclinesWhatCublasDoesNotGroup) {
  FK_SKIP_WITHOUT_GPU();
  const Tensor buf = zeros({64}, {DType::F64, kGpu});  // 512 bytes, 256-byte aligned
  char* base = static_cast<char*>(buf.data_ptr());
  // C[2, 2] = A[2, k] B[k, 2] with row strides k, 2, 2, `count` times.
  auto list_of = [&](int64_t k, int64_t a_offset, int count = 1) {
    cuda::GemmList l;
    for (int i = 0; i < count; ++i)
      l.add({false, false, 2, 2, k, k, 2, 2}, base + a_offset, base + 128, base + 256 + 64 * i);
    return l;
  };
  auto call = [&](DType dt, bool tf32, int64_t k, int64_t a_offset) {
    return cuda::gemm_grouped(kDev, code(dt), list_of(k, a_offset), stream(), tf32);
  };
  for (DType dt : {DType::C64, DType::C128}) EXPECT_FALSE(call(dt, false, 2, 0));
  EXPECT_TRUE(cuda::gemm_grouped(kDev, code(DType::F32), cuda::GemmList(), stream(), false));
  // bf16, k = 8 (16 bytes): A 16-byte aligned or not; k = 2 (4 bytes): 4-byte.
  EXPECT_TRUE(call(DType::BF16, false, 8, 16));
  EXPECT_FALSE(call(DType::BF16, false, 8, 4));
  EXPECT_TRUE(call(DType::BF16, false, 2, 4));
  EXPECT_FALSE(call(DType::BF16, false, 2, 2));
  EXPECT_TRUE(call(DType::BF16, false, 3, 2));  // 6 bytes: no rule
  // f32: TF32 reads vectors, FP32 does not.
  EXPECT_FALSE(call(DType::F32, true, 4, 4));
  EXPECT_TRUE(call(DType::F32, false, 4, 4));
  EXPECT_TRUE(call(DType::F64, false, 2, 8));
  // gemm_list: one grouped call, or one gemm per product where it declines
  // (or is not asked, or has one product).
  const int bf16 = code(DType::BF16);
  EXPECT_EQ(cuda::gemm_list(kDev, bf16, list_of(8, 16, 3), true, stream(), false), 1);
  EXPECT_EQ(cuda::gemm_list(kDev, bf16, list_of(8, 4, 3), true, stream(), false), 3);
  EXPECT_EQ(cuda::gemm_list(kDev, bf16, list_of(8, 16, 3), false, stream(), false), 3);
  EXPECT_EQ(cuda::gemm_list(kDev, bf16, list_of(8, 16, 1), true, stream(), false), 1);
  cuda::GemmList uneven = list_of(2, 0);
  uneven.b.clear();
  const std::string msg =
      test::error_of([&] { cuda::gemm_grouped(kDev, code(DType::F32), uneven, stream(), false); });
  EXPECT_NE(msg.find("one A, B and C pointer per product"), std::string::npos) << msg;
  cuda::synchronize(kDev);
}

Inputs a_and_w(DType dt) {
  return {test::random_tensor({3, 5}, dt, -1, 1, 3), test::random_tensor({4, 5}, dt, -1, 1, 4)};
}

std::vector<OpCase> rows() {
  std::vector<OpCase> r;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      r.push_back(gemm_row({ta, tb}, false));
      r.push_back(gemm_row({ta, tb}, true));
    }
  }
  r.push_back(batched_row());
  r.push_back(grouped_row(false));
  r.push_back(grouped_row(true));
  r.push_back({
      .name = "matmul_of_transpose",
      .dtypes = {DType::F64},
      .inputs = a_and_w,
      .device = [](const Inputs& in) { return matmul(in[0], in[1].t()); },
      .tol = [](DType) { return near(1e-12); },
  });
  // matmul_forward's result lives on the operands' device, in each path of
  // matmul_into: a batch folded into rows, per-matrix GEMMs over broadcast
  // batches, a 16-bit product (f32 sums), and linear's bias rows.
  r.push_back({
      .name = "matmul_batch_folds_into_rows",
      .dtypes = {DType::F64, DType::C128},
      .inputs =
          [](DType dt) {
            return Inputs{random_of({2, 3, 5}, dt, -1, 1, 33), random_of({5, 4}, dt, -1, 1, 34)};
          },
      .device = [](const Inputs& in) { return matmul(in[0], in[1]); },
      .tol = [](DType) { return near(1e-12); },
      .grad = true,
  });
  r.push_back({
      .name = "bmm_of_transposed_views",
      .dtypes = {DType::F64},
      .inputs =
          [](DType dt) {
            return Inputs{random_of({3, 5, 4}, dt, -1, 1, 35), random_of({3, 2, 5}, dt, -1, 1, 36)};
          },
      .device = [](const Inputs& in) { return bmm(in[0].transpose(1, 2), in[1].transpose(1, 2)); },
      .tol = [](DType) { return near(1e-12); },
      .grad = true,
  });
  r.push_back({
      .name = "matmul_broadcast_batch",
      .dtypes = {DType::F32},
      .inputs =
          [](DType dt) {
            return Inputs{random_of({2, 1, 3, 5}, dt, -1, 1, 37),
                          random_of({4, 5, 6}, dt, -1, 1, 38)};
          },
      .device = [](const Inputs& in) { return matmul(in[0], in[1]); },
      .tol = [](DType) { return near(1e-5); },
  });
  r.push_back({
      .name = "matmul_half",
      .dtypes = {DType::F16, DType::BF16},
      .inputs = a_and_w,
      .device = [](const Inputs& in) { return matmul(in[0], in[1].t()); },
  });
  // 16-bit operands: the device multiplies them on tensor cores with f32
  // sums and an f32 result holding the bias, rounded once; the host widens
  // them to f32 first (the same rounding points).
  r.push_back({
      .name = "linear_half_with_bias",
      .dtypes = {DType::F16, DType::BF16},
      .inputs =
          [](DType dt) {
            return Inputs{random_of({2, 3, 37}, dt, -1, 1, 42), random_of({9, 37}, dt, -1, 1, 43),
                          random_of({9}, dt, -1, 1, 44)};
          },
      .device = [](const Inputs& in) { return linear(in[0], in[1], in[2]); },
      .grad = true,
  });
  r.push_back({
      .name = "linear_half_without_bias",
      .dtypes = {DType::F16, DType::BF16},
      .inputs = a_and_w,
      .device = [](const Inputs& in) { return linear(in[0], in[1]); },
      .grad = true,
  });
  r.push_back({
      .name = "linear_with_bias",
      .dtypes = {DType::F64},
      .inputs =
          [](DType dt) {
            return Inputs{random_of({2, 3, 5}, dt, -1, 1, 39), random_of({4, 5}, dt, -1, 1, 40),
                          random_of({4}, dt, -1, 1, 41)};
          },
      .device = [](const Inputs& in) { return linear(in[0], in[1], in[2]); },
      .tol = [](DType) { return near(1e-12); },
      .grad = true,
  });
  // The same small graph on both devices gives the same gradients.
  r.push_back({
      .name = "linear_tanh_graph",
      .dtypes = {DType::F64},
      .inputs = a_and_w,
      .device = [](const Inputs& in) { return sum(tanh(linear(in[0], in[1]))); },
      .tol = [](DType) { return near(1e-10); },
      .grad = true,
  });
  r.push_back({
      .name = "matmul_gradcheck",
      .dtypes = {DType::F64},
      .inputs =
          [](DType dt) {
            return Inputs{test::random_tensor({3, 4}, dt, -1, 1, 31),
                          test::random_tensor({4, 2}, dt, -1, 1, 32)};
          },
      .device = [](const Inputs& in) { return matmul(in[0], in[1]); },
      .grad = true,
      .gradcheck = true,
  });
  return r;
}

FK_PARITY_TABLE(Linalg, rows());

// linear_forward, the pure function linear() and autograd nodes call, names
// an operand on another device (it handed GEMM a pointer of that device).
TEST(LinalgDevice, LinearForwardRefusesOperandsOnTwoDevices) {
  FK_SKIP_WITHOUT_GPU();
  const Tensor x = test::random_tensor({2, 5}, DType::F32, -1, 1, 42);
  const Tensor w = test::random_tensor({4, 5}, DType::F32, -1, 1, 43);
  const Tensor b = test::random_tensor({4}, DType::F32, -1, 1, 44);
  for (const std::string& msg :
       {test::error_of([&] { linear_forward(x.to(kGpu), w, Tensor()); }),
        test::error_of([&] { linear_forward(x, w.to(kGpu), Tensor()); }),
        test::error_of([&] { linear_forward(x.to(kGpu), w.to(kGpu), b); })}) {
    EXPECT_NE(msg.find("linear_forward"), std::string::npos) << msg;
    EXPECT_NE(msg.find("operands on one device"), std::string::npos) << msg;
    EXPECT_NE(msg.find("cuda:0"), std::string::npos) << msg;
  }
  const Tensor got = linear_forward(x.to(kGpu), w.to(kGpu), b.to(kGpu));
  EXPECT_EQ(got.device(), kGpu);
  test::expect_close(got, linear_forward(x, w, b).to_vector<double>(), 1e-5);
}

}  // namespace
}  // namespace fk::cuda_parity
