// Host helpers of the .cu launchers (declared in common.cuh), compiled by the
// host compiler: nvcc would spend ~10 s on this TU for no device code.
#include "fk/cuda/common.cuh"

namespace fk::cuda::detail {

Geometry make_geometry(int ndim, const int64_t* shape, int operands, const int64_t* const* strides,
                       const char* where) {
  FK_CHECK(ndim >= 0 && ndim <= kMaxDims, where, "0.." + fk::to_text(kMaxDims) + " dims",
           fk::to_text(ndim));
  FK_CHECK(operands >= 1 && operands <= 4, where, "1..4 operands", fk::to_text(operands));
  Geometry g;
  int64_t st[4][kMaxDims];
  for (int k = 0; k < operands; ++k) {
    int64_t run = 1;
    for (int d = ndim - 1; d >= 0; --d) {
      const int64_t* sk = strides ? strides[k] : nullptr;
      st[k][d] = sk ? sk[d] : run;
      FK_CHECK(st[k][d] >= 0, where, "non-negative strides", fk::to_text(st[k][d]));
      run *= shape[d];
    }
  }
  for (int d = 0; d < ndim; ++d) {
    FK_CHECK(shape[d] >= 0, where, "non-negative sizes", fk::to_text(shape[d]));
    g.numel *= shape[d];
  }
  if (g.numel == 0) return g;
  // Keep non-trivial dims, merging dim d into the previous kept one when every
  // operand steps over it contiguously (stride[prev] == stride[d] * shape[d]).
  int n = 0;
  for (int d = 0; d < ndim; ++d) {
    if (shape[d] == 1) continue;
    bool merge = n > 0;
    for (int k = 0; k < operands && merge; ++k) {
      merge = g.strides[k][n - 1] == st[k][d] * shape[d];
    }
    if (merge) {
      g.shape[n - 1] *= shape[d];
      for (int k = 0; k < operands; ++k) g.strides[k][n - 1] = st[k][d];
    } else {
      g.shape[n] = shape[d];
      for (int k = 0; k < operands; ++k) g.strides[k][n] = st[k][d];
      ++n;
    }
  }
  g.ndim = n;
  return g;
}

bool is_flat(const Geometry& g, int operands) {
  if (g.ndim == 0) return true;
  if (g.ndim > 1) return false;
  for (int k = 0; k < operands; ++k) {
    if (g.strides[k][0] != 1) return false;
  }
  return true;
}

void check_op(int op, int count, const char* where) {
  FK_CHECK(op >= 0 && op < count, where, "an op code 0.." + fk::to_text(count - 1),
           fk::to_text(op));
}

void check_launch(const char* where) {
  check_cuda(cudaGetLastError(), where);
}

const char* dtype_name(int dtype) {
  static const char* names[] = {"bool", "i32", "i64", "f16", "bf16", "f32", "f64", "c64", "c128"};
  return dtype >= 0 && dtype < 9 ? names[dtype] : "an unknown dtype code";
}

size_t dtype_size(int dtype) {
  static const size_t sizes[] = {1, 4, 8, 2, 2, 4, 8, 8, 16};
  FK_CHECK(dtype >= 0 && dtype < 9, "CUDA launcher", "a dtype code 0..8", fk::to_text(dtype));
  return sizes[dtype];
}

void unsupported(const char* where, const char* expected, int dtype) {
  throw Error(where, std::string("dtype ") + expected, dtype_name(dtype));
}

}  // namespace fk::cuda::detail
