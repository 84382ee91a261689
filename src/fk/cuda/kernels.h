#pragma once
// Launchers of fk's CUDA kernels: raw device pointers, sizes and strides (in
// elements), and a stream (a cudaStream_t passed as void*; nullptr = the
// default stream). No CUDA types, so fk's .cpp op files include this without
// the toolkit; in builds without nvcc runtime_stub.cpp defines every launcher
// to throw fk::Error, so callers need no #ifdef.
//
// Conventions shared by every launcher:
// - `dtype` is static_cast<int>(fk::DType) (codes below; static_asserted in
//   op_codes.cpp). f16/bf16 are stored as 16-bit words and computed in f32
//   inside the kernel, so callers pass them as they are (no conversion pass).
// - Stride arrays have `ndim` entries (ndim <= kMaxDims); nullptr means
//   C-contiguous for `shape`. A stride of 0 broadcasts. Strides must be >= 0.
// - All launches are asynchronous on `stream`; the caller decides when to
//   synchronize (fk::cuda::after_op). Launchers throw fk::Error for unsupported
//   op/dtype combinations and launch failures, never for data-dependent errors
//   (bad indices are reported through IndexCheck, see below).
// - Determinism: every launcher gives bitwise identical results run to run on
//   the same GPU model and arguments, except launch_scatter_add with
//   deterministic = false (float atomics).
// - Launchers never allocate, except launch_reduce_lastdim (a partials buffer
//   for very long rows) and launch_scatter_add with deterministic = true (sort
//   buffers): both stream-ordered (cudaMallocAsync) and freed before returning.
#include <cstdint>

namespace fk::cuda {

inline constexpr int kMaxDims = 8;

// == fk::DType
enum DTypeCode : int {
  kBool = 0,
  kI32 = 1,
  kI64 = 2,
  kF16 = 3,
  kBF16 = 4,
  kF32 = 5,
  kF64 = 6,
  kC64 = 7,
  kC128 = 8
};

// == fk::UnaryOp
enum UnaryCode : int {
  kUnaryNeg,
  kUnaryAbs,
  kUnarySign,
  kUnaryExp,
  kUnaryLog,
  kUnaryLog1p,
  kUnaryExpm1,
  kUnarySqrt,
  kUnaryRsqrt,
  kUnarySin,
  kUnaryCos,
  kUnaryTanh,
  kUnarySigmoid,
  kUnaryRelu,
  kUnaryLeakyRelu,
  kUnaryElu,
  kUnaryGelu,
  kUnaryGeluTanh,
  kUnarySilu,
  kUnarySoftplus,
  kUnaryErf,
  kUnaryPowScalar,
  kUnaryClamp,
  kUnaryConj,
  kUnarySquare,
  kUnaryReciprocal,
  kNumUnaryOps
};

// == fk::BinaryOp
enum BinaryCode : int {
  kBinaryAdd,
  kBinarySub,
  kBinaryMul,
  kBinaryDiv,
  kBinaryPow,
  kBinaryMaximum,
  kBinaryMinimum,
  kBinaryAtan2,
  kBinaryEq,
  kBinaryNe,
  kBinaryLt,
  kBinaryLe,
  kBinaryGt,
  kBinaryGe,
  kNumBinaryOps
};

enum ReduceCode : int { kReduceSum, kReduceProd, kReduceMax, kReduceMin };

// ---------------------------------------------------------------------------
// Unary (unary.cu)

// out[i] = f(in[i]) for contiguous in/out of n elements, with fk::unary's
// semantics and UnaryParams (a, b). dtype is the input's:
//   f32, f64, f16, bf16: every op;
//   i32, i64: the integer-preserving ops (neg abs sign relu clamp square conj;
//     clamp bounds saturate); callers convert integers to f32 for the others;
//   c64, c128: neg conj abs exp log sqrt square reciprocal; abs writes the real
//     type (f32 / f64), the others the input's type.
void launch_unary(int op, int dtype, const void* in, void* out, int64_t n, double a, double b,
                  void* stream);
// The same over a strided input and output (out_strides nullptr = contiguous).
void launch_unary_strided(int op, int dtype, const void* in, void* out, int ndim,
                          const int64_t* shape, const int64_t* in_strides,
                          const int64_t* out_strides, double a, double b, void* stream);
// grad_in[i] = grad[i] * f'(x[i]), contiguous, n elements; `ref` is the forward
// output y for exp expm1 sqrt rsqrt tanh sigmoid reciprocal (fk's uses_output)
// and the input x for the others. Real dtypes f32 f64 f16 bf16; complex c64
// c128 for the ops that accept complex (conjugate-Wirtinger convention as the
// CPU; for abs, grad is real and ref is the complex x).
void launch_unary_backward(int op, int dtype, const void* grad, const void* ref, void* grad_in,
                           int64_t n, double a, double b, void* stream);

// ---------------------------------------------------------------------------
// Binary, scale and where (binary.cu)

// out = a op b over `shape` with broadcast strides (0 on broadcast dims), with
// fk::binary's semantics: alpha scales b for add/sub; comparisons write bool
// (1 byte), the others `dtype`. When b is nullptr, b is the scalar
// `b_scalar` (a real number) for every element. dtype is the compute/storage
// type of both operands (the caller promotes first):
//   f32 f64 f16 bf16: every op; i32 i64: add sub mul pow (exact, wrapping)
//   maximum minimum and the comparisons; c64 c128: add sub mul div eq ne.
// out may alias a or b when their strides are equal (in-place ops).
void launch_binary(int op, int dtype, const void* a, const void* b, void* out, int ndim,
                   const int64_t* shape, const int64_t* a_strides, const int64_t* b_strides,
                   const int64_t* out_strides, double alpha, double b_scalar, void* stream);
// data[i] *= s in place, contiguous (f32 f64 f16 bf16 c64 c128): FFT
// normalization, mean.
void launch_scale(int dtype, void* data, int64_t n, double s, void* stream);
// The per-bin weights of a half spectrum, in one pass (c64 c128, contiguous
// [rows, bins], bins = n_last / 2 + 1; in == out allowed): out = in * scale,
// times pair_factor on the bins 1 <= k < (n_last + 1) / 2 that stand for two
// conjugate frequencies; with drop_edge_imag, the imaginary parts of bin 0 and
// (n_last even) bin n_last / 2 set to 0, as FFTW's c2r reads them.
void launch_fft_bin_weights(int dtype, const void* in, void* out, int64_t rows, int64_t n_last,
                            double scale, double pair_factor, bool drop_edge_imag, void* stream);
// out[i] = cond[i] ? a[i] : b[i] (cond bool), strided and broadcast like
// launch_binary; any dtype (moves bytes).
void launch_where(int dtype, const void* cond, const void* a, const void* b, void* out, int ndim,
                  const int64_t* shape, const int64_t* cond_strides, const int64_t* a_strides,
                  const int64_t* b_strides, void* stream);

// ---------------------------------------------------------------------------
// The DCT's passes around cuFFT (dct.cu)

// fk::dct along one dim of a contiguous real x (f32, f64) viewed as
// (outer, n, inner), as cpu/fft.cpp's dct_along (Makhoul's reordering around
// one real FFT of length n per row; dct.cu). second_kind (II, REDFT10):
// pack writes the reordered rows v (outer inner, n) real, cuFFT's r2c makes
// V (outer inner, n / 2 + 1) complex, unpack writes y from V. Otherwise
// (III, REDFT01): pack writes the half spectrum V, cuFFT's c2r (unscaled)
// makes v, unpack writes y from v.
void launch_dct_pack(int dtype, bool second_kind, const void* x, void* buf, int64_t outer,
                     int64_t n, int64_t inner, void* stream);
void launch_dct_unpack(int dtype, bool second_kind, const void* buf, void* y, int64_t outer,
                       int64_t n, int64_t inner, void* stream);

// ---------------------------------------------------------------------------
// Copies and fills (copy.cu)

// Every element of out set to value (re + i im; im ignored for real types;
// integer types truncate, bool is value != 0). Any dtype.
void launch_fill(int dtype, void* out, int64_t n, double re, double im, void* stream);
void launch_fill_strided(int dtype, void* out, int ndim, const int64_t* shape,
                         const int64_t* strides, double re, double im, void* stream);
// dst = convert(src) elementwise over `shape`, any pair of the 9 dtypes, with
// fk's conversion rules (complex -> real keeps the real part, -> bool is != 0,
// float -> int truncates, f64 -> f16/bf16 goes through f32 as on the CPU).
// Same-dtype contiguous copies become one cudaMemcpyAsync. src and dst must
// not overlap (callers copy through a temporary when they might).
void launch_copy_strided(int src_dtype, const void* src, const int64_t* src_strides, int dst_dtype,
                         void* dst, const int64_t* dst_strides, int ndim, const int64_t* shape,
                         void* stream);
// Contiguous conversion of n elements.
void launch_convert(int src_dtype, const void* src, int dst_dtype, void* dst, int64_t n,
                    void* stream);

// ---------------------------------------------------------------------------
// Reductions and softmax over the last, contiguous dimension of an
// [outer, inner] array (reduce.cu). Callers reduce other dims by permuting
// them last and making the input contiguous, as fk's CPU reductions do.
// Deterministic: one block per row (two fixed-shape passes for rows longer than
// 16K elements), each thread accumulating a fixed stride of the row, then a
// fixed-order shared-memory tree; no atomics. The block shape depends only on
// `inner`, never on the GPU.

// out[o] = op(in[o, :]). dtype is the input's: f32 f64 f16 bf16 (accumulated in
// f64), i32 i64 bool, c64 c128 (sum and prod only; accumulated in c128). Sum and prod of
// bool/i32/i64 write i64 (accumulated in i64); every other output has the
// input's dtype. max/min propagate NaN. inner == 0 gives 0 (sum), 1 (prod);
// max/min of an empty row are the caller's error to report.
void launch_reduce_lastdim(int op, int dtype, const void* in, void* out, int64_t outer,
                           int64_t inner, void* stream);
// The dtype launch_reduce_lastdim writes for (op, dtype).
int reduce_out_dtype(int op, int dtype);
// Indices (i64, first occurrence; NaN counts as the largest / smallest) of the
// max (is_max) or min of each row. Real dtypes and bool.
void launch_argreduce_lastdim(bool is_max, int dtype, const void* in, int64_t* out, int64_t outer,
                              int64_t inner, void* stream);
// Softmax (or log-softmax) of each row, f32 f64 f16 bf16 (computed in f32/f64).
void launch_softmax_lastdim(int dtype, const void* in, void* out, int64_t outer, int64_t inner,
                            bool log, void* stream);
// grad_in from grad and the forward output `out` (y): softmax
// y * (g - sum(g y)); log-softmax g - exp(y) sum(g).
void launch_softmax_backward_lastdim(int dtype, const void* grad, const void* out, void* grad_in,
                                     int64_t outer, int64_t inner, bool log, void* stream);

// The gradient of prod over each row of a contiguous [outer, inner] x:
// grad_in[o, i] = grad[o] * conj(prod_{j != i} x[o, j]), the product of the
// others taken as (product before i) x (product after i): exact with zeros in
// the row, no division, the CPU's order of multiplication. One thread per row
// (rows are walked sequentially). f32 f64 c64 c128 (prod_backward.cu).
void launch_prod_backward_lastdim(int dtype, const void* x, const void* grad, void* grad_in,
                                  int64_t outer, int64_t inner, void* stream);

// ---------------------------------------------------------------------------
// Indexing (index.cu, scatter.cu). Indices are i64. Bad indices cannot throw
// on the device: a kernel that meets one leaves that output element untouched
// (gather/index_select write 0), and, when `bad` is given, stores
// bad[1] = the offending index, bad[2] = the size of the indexed dimension
// and bad[0] = 1. `bad` is a device pointer to three int64 the caller zeroed:
// fk's ops pass the device's record for the op (runtime.h's
// index_check_record), which the next synchronization reports as fk::Error
// (index_errors.h).
struct IndexCheck {
  bool wrap_negative = false;  // index -k means size - k (Python semantics)
  int64_t* bad = nullptr;
};

// out[o, j, i] = in[o, index[j], i] for contiguous in [outer, in_dim, inner],
// index [n_index], out [outer, n_index, inner]. Any dtype.
void launch_index_select(int dtype, const void* in, const int64_t* index, void* out, int64_t outer,
                         int64_t in_dim, int64_t inner, int64_t n_index, IndexCheck check,
                         void* stream);
// torch.gather: for every position p of `shape` (the index's shape, also the
// output's), out[p] = in[p with p[dim] = index[p]]. in_strides address `in`
// (its size along dim is in_dim_size); index_strides may be 0 to broadcast;
// out_strides nullptr = contiguous. Any dtype.
void launch_gather(int dtype, const void* in, const int64_t* in_strides, int64_t in_dim_size,
                   const int64_t* index, const int64_t* index_strides, void* out,
                   const int64_t* out_strides, int ndim, const int64_t* shape, int dim,
                   IndexCheck check, void* stream);
// torch.scatter_add_ (index_add_ is the case of an index broadcast along the
// other dims): for every position p of `shape` (the index's and src's shape),
// out[p with p[dim] = index[p]] += src[p]. out_strides address `out` (size
// out_dim_size along dim). Targets hit by several p must not overlap in memory
// with other targets (out strides of a non-overlapping tensor).
// dtype: f32 f64 f16 bf16 i32 i64 c64 c128.
// deterministic = false: one atomicAdd per element; fast, but the order in
//   which equal targets are summed varies run to run, so float results are NOT
//   bitwise reproducible (integers are).
// deterministic = true: a stable radix sort (CUB) of (target offset, p) pairs,
//   then each target adds its sources in increasing p, the order the CPU uses;
//   bitwise reproducible. Costs O(n) temporary memory (keys, values, sort
//   scratch: ~40 bytes per element), two extra passes, and a target that
//   receives k sources is summed by one thread in k steps.
void launch_scatter_add(int dtype, void* out, const int64_t* out_strides, int64_t out_dim_size,
                        const void* src, const int64_t* src_strides, const int64_t* index,
                        const int64_t* index_strides, int ndim, const int64_t* shape, int dim,
                        bool deterministic, IndexCheck check, void* stream);

}  // namespace fk::cuda
