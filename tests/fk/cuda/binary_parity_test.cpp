// Binary ops, scale and where on the device against the CPU (see parity.h):
// every op in every dtype it accepts through launch_binary with broadcast
// operands, flat operands aligned (the packed kernel, with a tail) and not,
// a scalar operand in place, launch_scale, launch_where, and the fk ops
// through the dispatch.
#include "parity.h"

#include <cstdint>
#include <string>
#include <vector>

#include "fk/cuda/kernels.h"

namespace fk::cuda_parity {
namespace {

static_assert(cuda::kNumBinaryOps == static_cast<int>(BinaryOp::Ge) + 1 &&
              cuda::kBinaryAtan2 == static_cast<int>(BinaryOp::Atan2));

// Strides of `t` broadcast to `shape` (0 on broadcast dims), right-aligned.
Dims broadcast_strides(const Tensor& t, const Dims& shape) {
  Dims s = Dims::filled(shape.size(), 0);
  int off = shape.size() - t.dim();
  for (int d = 0; d < t.dim(); ++d) s[off + d] = t.size(d) == 1 ? 0 : t.stride(d);
  return s;
}

// launch_binary of a [3, 1, 5, 2] and a [4, 1, 2] operand into [3, 4, 5, 2].
OpCase launch_row(BinaryOp op) {
  const bool cmp = op >= BinaryOp::Eq;
  std::vector<DType> dtypes = {DType::F32, DType::F64, DType::F16, DType::BF16};
  if (op != BinaryOp::Div && op != BinaryOp::Atan2) {  // integer powers are exact integers
    dtypes.insert(dtypes.end(), {DType::I32, DType::I64});
  }
  if (op <= BinaryOp::Div || op == BinaryOp::Eq || op == BinaryOp::Ne) {
    dtypes.insert(dtypes.end(), {DType::C64, DType::C128});
  }
  // A whole alpha: integer tensors take no other.
  const double alpha = (op == BinaryOp::Add || op == BinaryOp::Sub) ? -2.0 : 1.0;
  return {
      .name = std::string("launch_") + name(op),
      .dtypes = dtypes,
      .inputs =
          [op, cmp](DType dt) {
            const Dims a_shape{3, 1, 5, 2}, b_shape{4, 1, 2};
            if (cmp) {  // small integers, so that ties occur
              return Inputs{random_of(a_shape, DType::F64, -3, 3, 21).to(DType::I32).to(dt),
                            random_of(b_shape, DType::F64, -3, 3, 22).to(DType::I32).to(dt)};
            }
            const bool positive = op == BinaryOp::Pow;
            const double lo = is_integral(dt) ? -4 : (positive ? 0.2 : -2);
            const double hi = is_integral(dt) ? 4 : 2;
            return Inputs{random_of(a_shape, dt, lo, hi, 21), random_of(b_shape, dt, lo, hi, 22)};
          },
      .device =
          [op, cmp, alpha](const Inputs& in) {
            const Tensor &a = in[0], &b = in[1];
            const Dims out_shape{3, 4, 5, 2};
            Tensor out = device_empty(out_shape, cmp ? DType::Bool : a.dtype());
            Dims as = broadcast_strides(a, out_shape), bs = broadcast_strides(b, out_shape);
            cuda::launch_binary(static_cast<int>(op), code(a.dtype()), a.data_ptr(), b.data_ptr(),
                                out.data_ptr(), out_shape.size(), out_shape.data(), as.data(),
                                bs.data(), nullptr, alpha, 0, stream());
            return out;
          },
      .reference = [op,
                    alpha](const Inputs& in) { return binary_forward(op, in[0], in[1], alpha); },
      .bitwise = cmp,
  };
}

// Flat operands of 4099 elements. Offset 0: the packed kernel (one 16-byte
// load per operand per thread) and its tail of 4099 % (16 / itemsize)
// elements. Offset 1: every operand starts one element into its buffer, not
// 16-byte aligned, so the element-per-thread kernel runs.
OpCase flat_row(BinaryOp op, int64_t offset) {
  std::vector<DType> dtypes = {DType::F32, DType::F64, DType::F16, DType::BF16};
  if (op != BinaryOp::Div) dtypes.insert(dtypes.end(), {DType::I32, DType::I64});
  const double alpha = (op == BinaryOp::Add || op == BinaryOp::Sub) ? -2.0 : 1.0;
  constexpr int64_t n = 4099;
  const auto at_offset = [offset](const Tensor& t) {
    if (offset == 0) return t.clone();
    return cat({zeros({offset}, {t.dtype(), t.device()}), t}).narrow(0, offset, n);
  };
  return {
      .name = std::string("launch_") + name(op) + (offset ? "_flat_misaligned" : "_flat_packed"),
      .dtypes = dtypes,
      .inputs =
          [op](DType dt) {
            const double lo = is_integral(dt) ? -4 : (op == BinaryOp::Div ? 0.5 : -2);
            const double hi = is_integral(dt) ? 4 : 2;
            return Inputs{random_of({n}, dt, lo, hi, 51), random_of({n}, dt, lo, hi, 52)};
          },
      .device =
          [op, alpha, offset, at_offset](const Inputs& in) {
            const Tensor a = at_offset(in[0]), b = at_offset(in[1]);
            Tensor out = at_offset(device_empty({n}, a.dtype()));
            const int64_t shape[1] = {n};
            cuda::launch_binary(static_cast<int>(op), code(a.dtype()), a.data_ptr(), b.data_ptr(),
                                out.data_ptr(), 1, shape, nullptr, nullptr, nullptr, alpha, 0,
                                stream());
            EXPECT_EQ(reinterpret_cast<uintptr_t>(out.data_ptr()) % 16 == 0, offset == 0);
            return out.clone();
          },
      .reference = [op,
                    alpha](const Inputs& in) { return binary_forward(op, in[0], in[1], alpha); },
  };
}

Inputs f64_64x3(DType dt) {
  return {random_of({64, 3}, dt, -2, 2, 31)};
}

// fk::binary of [4, 6] and [6] f32 operands through the dispatch.
OpCase dispatch_row(BinaryOp op) {
  return {
      .name = std::string(name(op)) + "_broadcast",
      .dtypes = {DType::F32},
      .inputs =
          [](DType dt) {
            return Inputs{random_of({4, 6}, dt, 0.5, 2, 1), random_of({6}, dt, 0.5, 2, 2)};
          },
      .device = [op](const Inputs& in) { return binary(op, in[0], in[1]); },
      .tol = [](DType) { return near(1e-6); },
  };
}

std::vector<OpCase> rows() {
  std::vector<OpCase> r;
  for (int op = 0; op < cuda::kNumBinaryOps; ++op)
    r.push_back(launch_row(static_cast<BinaryOp>(op)));
  for (BinaryOp op : {BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div})
    for (int64_t offset : {0, 1}) r.push_back(flat_row(op, offset));
  // In place (out aliases a), b the scalar 1.5.
  r.push_back({
      .name = "launch_mul_scalar_in_place",
      .dtypes = {DType::F64},
      .inputs = f64_64x3,
      .device =
          [](const Inputs& in) {
            Tensor a = in[0].clone();
            cuda::launch_binary(cuda::kBinaryMul, cuda::kF64, a.data_ptr(), nullptr, a.data_ptr(),
                                2, a.shape().data(), nullptr, nullptr, nullptr, 1.0, 1.5, stream());
            return a;
          },
      .reference = [](const Inputs& in) { return mul(in[0], 1.5); },
  });
  r.push_back({
      .name = "launch_scale",
      .dtypes = {DType::F64},
      .inputs = f64_64x3,
      .device =
          [](const Inputs& in) {
            Tensor a = in[0].clone();
            cuda::launch_scale(cuda::kF64, a.data_ptr(), a.numel(), 2.0, stream());
            return a;
          },
      .reference = [](const Inputs& in) { return mul(in[0], 2.0); },
  });
  r.push_back({
      .name = "launch_where",  // every element size: 1, 2, 4, 8 and 16 bytes
      .dtypes = {DType::Bool, DType::F16, DType::F32, DType::F64, DType::C128},
      .inputs =
          [](DType dt) {
            Tensor cond =
                gt(random_of({5, 6}, DType::F64, -1, 1, 43), scalar_tensor(0.0, {DType::F64}));
            return Inputs{cond, random_of({5, 1}, dt, -1, 1, 41), random_of({1, 6}, dt, -1, 1, 42)};
          },
      .device =
          [](const Inputs& in) {
            const Dims shape{5, 6};
            Tensor out = device_empty(shape, in[1].dtype());
            const int64_t as[2] = {1, 0}, bs[2] = {0, 1};
            cuda::launch_where(code(in[1].dtype()), in[0].data_ptr(), in[1].data_ptr(),
                               in[2].data_ptr(), out.data_ptr(), 2, shape.data(), nullptr, as, bs,
                               stream());
            return out;
          },
      .reference = [](const Inputs& in) { return where(in[0], in[1], in[2]); },
      .bitwise = true,
  });
  for (BinaryOp op : {BinaryOp::Add, BinaryOp::Mul, BinaryOp::Div, BinaryOp::Maximum}) {
    r.push_back(dispatch_row(op));
  }
  OpCase lt_row = dispatch_row(BinaryOp::Lt);
  lt_row.bitwise = true;
  r.push_back(lt_row);
  OpCase where_row = dispatch_row(BinaryOp::Add);
  where_row.name = "where_of_gt";
  where_row.device = [](const Inputs& in) { return where(gt(in[0], in[1]), in[0], in[1]); };
  where_row.bitwise = true;
  r.push_back(where_row);
  OpCase addcmul_row = dispatch_row(BinaryOp::Add);
  addcmul_row.name = "addcmul";
  addcmul_row.device = [](const Inputs& in) { return addcmul(in[0], in[0], in[1], 0.5); };
  r.push_back(addcmul_row);
  return r;
}

FK_PARITY_TABLE(Binary, rows());

}  // namespace
}  // namespace fk::cuda_parity
