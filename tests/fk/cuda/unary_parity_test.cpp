// Unary ops on the device against the CPU (see parity.h): every op in every
// dtype it accepts through launch_unary and launch_unary_backward (flat and
// aligned: the packed kernels with a tail), flat and misaligned, a strided
// input and output, fk::unary on strided tensors, and a device gradcheck.
#include "parity.h"

#include <cstdint>
#include <string>
#include <vector>

#include "fk/cuda/kernels.h"

namespace fk::cuda_parity {
namespace {

// The launchers' int codes are fk's enums (also asserted in src/fk/cuda/op_codes.cpp,
// which only CUDA builds compile).
static_assert(cuda::kC128 == static_cast<int>(DType::C128) &&
              cuda::kBF16 == static_cast<int>(DType::BF16));
static_assert(cuda::kNumUnaryOps == static_cast<int>(UnaryOp::Reciprocal) + 1 &&
              cuda::kUnaryGeluTanh == static_cast<int>(UnaryOp::GeluTanh));

struct UnaryOpSpec {
  UnaryOp op;
  UnaryParams p;
  double lo, hi;  // input range (positive for ops with a restricted domain)
};

const UnaryOpSpec kOps[] = {{UnaryOp::Neg, {}, -2, 2},
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

bool keeps_integers(UnaryOp op) {
  return op == UnaryOp::Neg || op == UnaryOp::Abs || op == UnaryOp::Sign || op == UnaryOp::Relu ||
         op == UnaryOp::Clamp || op == UnaryOp::Square || op == UnaryOp::Conj;
}
bool accepts_complex(UnaryOp op) {
  return op == UnaryOp::Neg || op == UnaryOp::Abs || op == UnaryOp::Exp || op == UnaryOp::Log ||
         op == UnaryOp::Sqrt || op == UnaryOp::Conj || op == UnaryOp::Square ||
         op == UnaryOp::Reciprocal;
}
// The backward reads the forward's output y instead of x.
bool uses_output(UnaryOp op) {
  return op == UnaryOp::Exp || op == UnaryOp::Expm1 || op == UnaryOp::Sqrt ||
         op == UnaryOp::Rsqrt || op == UnaryOp::Tanh || op == UnaryOp::Sigmoid ||
         op == UnaryOp::Reciprocal;
}

// launch_unary over [37, 29] in every dtype the op accepts.
OpCase forward_row(const UnaryOpSpec& s) {
  std::vector<DType> dtypes = {DType::F32, DType::F64, DType::F16, DType::BF16};
  if (keeps_integers(s.op)) dtypes.insert(dtypes.end(), {DType::I32, DType::I64});
  if (accepts_complex(s.op)) dtypes.insert(dtypes.end(), {DType::C64, DType::C128});
  return {
      .name = std::string("launch_") + name(s.op),
      .dtypes = dtypes,
      .inputs =
          [s](DType dt) {
            const bool integral = is_integral(dt);
            return Inputs{random_of({37, 29}, dt, integral ? -5 : s.lo, integral ? 5 : s.hi, 3)};
          },
      .device =
          [s](const Inputs& in) {
            const Tensor& x = in[0];
            const bool to_real = s.op == UnaryOp::Abs && is_complex(x.dtype());
            Tensor out = device_empty(x.shape(), to_real ? real_type(x.dtype()) : x.dtype());
            cuda::launch_unary(static_cast<int>(s.op), code(x.dtype()), x.data_ptr(),
                               out.data_ptr(), x.numel(), s.p.a, s.p.b, stream());
            return out;
          },
      .reference = [s](const Inputs& in) { return unary_forward(s.op, in[0], s.p); },
  };
}

// launch_unary_backward over 301 elements from (grad, x or y).
OpCase backward_row(const UnaryOpSpec& s) {
  std::vector<DType> dtypes = {DType::F32, DType::F64, DType::F16, DType::BF16};
  if (accepts_complex(s.op)) dtypes.push_back(DType::C128);
  return {
      .name = std::string("launch_") + name(s.op) + "_backward",
      .dtypes = dtypes,
      .inputs =
          [s](DType dt) {
            Tensor x = random_of({301}, dt, s.lo, s.hi, 7);
            Tensor y = unary_forward(s.op, x, s.p);
            Tensor g = random_of(y.shape(), y.dtype(), -1, 1, 8);
            return Inputs{g, uses_output(s.op) ? y : x};
          },
      .device =
          [s](const Inputs& in) {
            const Tensor &g = in[0], &ref = in[1];
            Tensor out = device_empty(ref.shape(), ref.dtype());
            cuda::launch_unary_backward(static_cast<int>(s.op), code(ref.dtype()), g.data_ptr(),
                                        ref.data_ptr(), out.data_ptr(), ref.numel(), s.p.a, s.p.b,
                                        stream());
            return out;
          },
      .reference =
          [s](const Inputs& in) {
            return uses_output(s.op) ? unary_backward(s.op, in[0], Tensor(), in[1], s.p)
                                     : unary_backward(s.op, in[0], in[1], Tensor(), s.p);
          },
  };
}

// `t` (on the device) one element into a buffer of its own: flat, but not
// 16-byte aligned, so the launchers take the element-per-thread kernels
// (every row above is aligned and takes the packed ones, with a tail).
Tensor misaligned(const Tensor& t) {
  Tensor flat = t.reshape({t.numel()});
  return cat({zeros({1}, {t.dtype(), t.device()}), flat}).narrow(0, 1, t.numel());
}

// launch_unary and launch_unary_backward of tanh on misaligned operands.
OpCase misaligned_row(bool backward) {
  const UnaryOpSpec s{UnaryOp::Tanh, {}, -3, 3};
  return {
      .name = std::string("launch_tanh") + (backward ? "_backward" : "") + "_flat_misaligned",
      .dtypes = {DType::F32, DType::F64, DType::F16, DType::BF16},
      .inputs =
          [s](DType dt) {
            Tensor x = random_of({301}, dt, s.lo, s.hi, 9);
            return Inputs{random_of({301}, dt, -1, 1, 10), unary_forward(s.op, x, s.p)};
          },
      .device =
          [s, backward](const Inputs& in) {
            const Tensor g = misaligned(in[0]), y = misaligned(in[1]);
            Tensor out = misaligned(device_empty({301}, y.dtype()));
            EXPECT_NE(reinterpret_cast<uintptr_t>(out.data_ptr()) % 16, 0u);
            if (backward) {
              cuda::launch_unary_backward(static_cast<int>(s.op), code(y.dtype()), g.data_ptr(),
                                          y.data_ptr(), out.data_ptr(), 301, 0, 0, stream());
            } else {
              cuda::launch_unary(static_cast<int>(s.op), code(y.dtype()), y.data_ptr(),
                                 out.data_ptr(), 301, 0, 0, stream());
            }
            return out.clone();
          },
      .reference =
          [s, backward](const Inputs& in) {
            return backward ? unary_backward(s.op, in[0], Tensor(), in[1], s.p)
                            : unary_forward(s.op, in[1], s.p);
          },
  };
}

// fk::unary on a transposed (strided) CUDA tensor, through the op dispatch.
OpCase of_transpose_row(UnaryOp op) {
  return {
      .name = std::string(name(op)) + "_of_transpose",
      .dtypes = {DType::F32},
      .inputs =
          [](DType dt) {
            return Inputs{random_of({4, 6}, dt, 0.5, 2, 1)};
          },
      .device = [op](const Inputs& in) { return unary(op, in[0].t()); },
      .tol = [](DType) { return near(1e-5); },
  };
}

std::vector<OpCase> rows() {
  std::vector<OpCase> r;
  for (const UnaryOpSpec& s : kOps) r.push_back(forward_row(s));
  for (const UnaryOpSpec& s : kOps) r.push_back(backward_row(s));
  for (bool backward : {false, true}) r.push_back(misaligned_row(backward));
  for (UnaryOp op : {UnaryOp::Exp, UnaryOp::Log, UnaryOp::Tanh, UnaryOp::Gelu, UnaryOp::Sqrt}) {
    r.push_back(of_transpose_row(op));
  }
  // A permuted, sliced input and a transposed output, through launch_unary_strided.
  r.push_back({
      .name = "launch_tanh_strided",
      .dtypes = {DType::F32},
      .inputs =
          [](DType dt) {
            return Inputs{random_of({8, 6, 5}, dt, -2, 2, 5)};
          },
      .device =
          [](const Inputs& in) {
            Tensor view = in[0].permute({2, 0, 1}).slice(1, 1, 7, 2);  // [5, 3, 6]
            // Written through the strides of a [6, 3, 5] buffer viewed as [5, 3, 6].
            Tensor out = zeros({6, 3, 5}, {DType::F32, kGpu}).permute({2, 1, 0});
            cuda::launch_unary_strided(cuda::kUnaryTanh, cuda::kF32, view.data_ptr(),
                                       out.data_ptr(), view.dim(), view.shape().data(),
                                       view.strides().data(), out.strides().data(), 0, 0, stream());
            return out;
          },
      .reference =
          [](const Inputs& in) {
            return unary_forward(UnaryOp::Tanh, in[0].permute({2, 0, 1}).slice(1, 1, 7, 2));
          },
  });
  // relu keeps a NaN on the device as on the CPU (torch's max(x, 0)); the
  // 16-bit NaN payloads may differ, so NaN is matched as NaN, not by bits.
  r.push_back({
      .name = "relu_of_nan",
      .dtypes = {DType::F32, DType::F64, DType::F16, DType::BF16},
      .inputs =
          [](DType dt) {
            return Inputs{from_vector(std::vector<double>{NAN, -1.0, 2.0, -NAN, 0.0}).to(dt)};
          },
      .device = [](const Inputs& in) { return relu(in[0]); },
  });
  r.push_back({
      .name = "tanh_times_exp",
      .dtypes = {DType::F64},
      .inputs =
          [](DType dt) {
            return Inputs{random_of({3, 4}, dt, -1, 1, 31)};
          },
      .device = [](const Inputs& in) { return mul(tanh(in[0]), exp(in[0])); },
      .grad = true,
      .gradcheck = true,
  });
  return r;
}

FK_PARITY_TABLE(Unary, rows());

}  // namespace
}  // namespace fk::cuda_parity
