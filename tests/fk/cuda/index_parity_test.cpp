// The indexing launchers against plain loops and the CPU (see parity.h):
// index_select with and without negative-index wrapping (a bad index is
// reported and its outputs are zero), gather from a strided input, and
// scatter_add with atomics and deterministically (in the CPU's order, bit for
// bit), a bad index reported and skipped. The fk index ops through the
// dispatch are in index_ops_parity_test.cpp.
#include "parity.h"

#include <string>
#include <vector>

#include "fk/cuda/kernels.h"
#include "fk/test_util.h"

namespace fk::cuda_parity {
namespace {

// The three-int64 record a launcher writes a bad index into, zeroed:
// flagged, the index, the size of the indexed dim.
struct BadIndex {
  Tensor buf = zeros({3}, {DType::I64, kGpu});
  cuda::IndexCheck check(bool wrap) const { return {wrap, static_cast<int64_t*>(buf.data_ptr())}; }
  std::vector<int64_t> read() const { return buf.to_vector<int64_t>(); }
};

constexpr int64_t kOuter = 3, kInDim = 10, kInner = 4;
const std::vector<int64_t> kSelect = {9, 0, 3, 3, -1, 7};

// launch_index_select of [3, 10, 4] c64 rows; -1 wraps to 9, or is reported.
OpCase index_select_row(bool wrap) {
  const int64_t n = static_cast<int64_t>(kSelect.size());
  return {
      .name = wrap ? "launch_index_select_wrapping" : "launch_index_select_reporting",
      .dtypes = {DType::C64},
      .inputs =
          [](DType dt) {
            return Inputs{random_of({kOuter, kInDim, kInner}, dt, -1, 1, 101),
                          i64s(kSelect, {static_cast<int64_t>(kSelect.size())})};
          },
      .device =
          [wrap, n](const Inputs& in) {
            Tensor out = device_empty({kOuter, n, kInner}, in[0].dtype());
            BadIndex bad;
            cuda::launch_index_select(code(in[0].dtype()), in[0].data_ptr(),
                                      static_cast<const int64_t*>(in[1].data_ptr()), out.data_ptr(),
                                      kOuter, kInDim, kInner, n, bad.check(wrap), stream());
            EXPECT_EQ(bad.read(), wrap ? (std::vector<int64_t>{0, 0, 0})
                                       : (std::vector<int64_t>{1, -1, kInDim}));
            return out;
          },
      .reference =
          [wrap, n](const Inputs& in) {
            std::vector<c64> xv = in[0].to_vector<c64>(), out(kOuter * n * kInner);
            for (int64_t o = 0; o < kOuter; ++o)
              for (int64_t j = 0; j < n; ++j)
                for (int64_t i = 0; i < kInner; ++i) {
                  int64_t k = kSelect[j] < 0 && wrap ? kSelect[j] + kInDim : kSelect[j];
                  out[(o * n + j) * kInner + i] =
                      k < 0 ? c64(0, 0) : xv[(o * kInDim + k) * kInner + i];
                }
            return from_vector(out, {kOuter, n, kInner});
          },
      .bitwise = true,
  };
}

// gather along dim 1 of a transposed input: out[p] = in[p0, index[p], p2].
OpCase gather_row() {
  return {
      .name = "launch_gather_of_transpose",  // every element size: 1, 2, 4, 8 and 16 bytes
      .dtypes = {DType::Bool, DType::BF16, DType::I32, DType::F64, DType::C128},
      .inputs =
          [](DType dt) {
            Tensor index = test::random_tensor({3, 2, 4}, DType::F64, 0, 4.99, 103).to(DType::I64);
            return Inputs{random_of({4, 5, 3}, dt, -1, 1, 102), index};
          },
      .device =
          [](const Inputs& in) {
            Tensor src = in[0].transpose(0, 2);  // [3, 5, 4]
            const Tensor& index = in[1];
            Tensor out = device_empty(index.shape(), src.dtype());
            cuda::launch_gather(code(src.dtype()), src.data_ptr(), src.strides().data(), 5,
                                static_cast<const int64_t*>(index.data_ptr()), nullptr,
                                out.data_ptr(), nullptr, 3, index.shape().data(), 1, {}, stream());
            return out;
          },
      .reference = [](const Inputs& in) { return gather(in[0].transpose(0, 2), 1, in[1]); },
      .bitwise = true,
  };
}

// index_add along dim 0 of [20000, 3] sources into 7 rows (~3000 per target,
// so the summation order matters), through launch_scatter_add.
constexpr int64_t kSources = 20000, kTargets = 7, kCols = 3;

std::vector<int64_t> scatter_index() {
  std::vector<int64_t> idx(kSources);
  for (int64_t i = 0; i < kSources; ++i) idx[i] = (i * 5 + i / 3) % kTargets;
  return idx;
}

Inputs scatter_inputs(DType dt) {
  Tensor src = is_integral(dt) ? random_of({kSources, kCols}, DType::F64, -100, 100, 111).to(dt)
                               : random_of({kSources, kCols}, dt, -1, 1, 111);
  return {random_of({kTargets, kCols}, dt, -1, 1, 112), src, i64s(scatter_index(), {kSources})};
}

Tensor launch_scatter(const Inputs& in, bool deterministic) {
  Tensor out = in[0].clone();
  const Dims shape{kSources, kCols};
  const int64_t index_strides[2] = {1, 0};  // the 1-D index broadcast over columns
  BadIndex bad;
  cuda::launch_scatter_add(code(out.dtype()), out.data_ptr(), nullptr, kTargets, in[1].data_ptr(),
                           nullptr, static_cast<const int64_t*>(in[2].data_ptr()), index_strides, 2,
                           shape.data(), 0, deterministic, bad.check(false), stream());
  EXPECT_EQ(bad.read()[0], 0);
  return out;
}

// Sequential, in the compute type, in increasing source order.
Tensor scatter_in_cpu_order(const Inputs& in) {
  const DType dt = in[0].dtype(), ct = is_half(dt) ? DType::F32 : dt;
  Tensor want = in[0].to(ct).clone(), src = in[1].to(ct);
  std::vector<int64_t> idx = scatter_index();
  for (int64_t i = 0; i < kSources; ++i) {
    Tensor row = want.select(0, idx[i]);
    row.copy_(add(row, src.select(0, i)));
  }
  return want.to(dt);
}

OpCase scatter_row(bool deterministic) {
  return {
      .name = deterministic ? "launch_scatter_add_deterministic" : "launch_scatter_add_atomic",
      .dtypes = {DType::F32, DType::F64, DType::C64, DType::C128, DType::I32, DType::I64,
                 DType::F16, DType::BF16},
      .inputs = scatter_inputs,
      .device = [deterministic](const Inputs& in) { return launch_scatter(in, deterministic); },
      .reference = scatter_in_cpu_order,
      .tol =
          [deterministic](DType dt) {
            // bf16 atomics round every partial sum to 8 bits: only a sanity check.
            // The atomic order is the GPU's: a host emulation of 2000 random
            // orders on these inputs gave a worst error of 13.75 (0.6 % of them
            // above 8), so the atomic row allows 24.
            if (dt == DType::BF16) return Tol{5e-2, deterministic ? 0.5 : 24.0};
            // f16 keeps 3 more bits than bf16, so its rounding errors are 8x
            // smaller: one rounding of a sum below 128 is within 1/32, and
            // the atomic row allows a third of bf16's 24.
            if (dt == DType::F16) return Tol{1e-2, deterministic ? 1.0 / 32 : 8.0};
            Tol tol = tol_for(dt);
            tol.atol *= 100;  // ~3000 terms per target
            return tol;
          },
      .deterministic = deterministic,
  };
}

// A bad index (5 of 2 targets) is reported and skipped.
OpCase scatter_bad_index_row(bool deterministic) {
  return {
      .name = std::string("launch_scatter_add_bad_index_") +
              (deterministic ? "deterministic" : "atomic"),
      .dtypes = {DType::F32},
      .inputs =
          [](DType dt) {
            return Inputs{zeros({2}, {dt}), ones({3}, {dt}), i64s({0, 5, 1}, {3})};
          },
      .device =
          [deterministic](const Inputs& in) {
            Tensor out = in[0].clone();
            BadIndex bad;
            const int64_t shape[1] = {3};
            cuda::launch_scatter_add(cuda::kF32, out.data_ptr(), nullptr, 2, in[1].data_ptr(),
                                     nullptr, static_cast<const int64_t*>(in[2].data_ptr()),
                                     nullptr, 1, shape, 0, deterministic, bad.check(false),
                                     stream());
            EXPECT_EQ(bad.read(), (std::vector<int64_t>{1, 5, 2}));
            return out;
          },
      .reference = [](const Inputs& in) { return ones({2}, {in[0].dtype()}); },
      .bitwise = true,
  };
}

std::vector<OpCase> rows() {
  std::vector<OpCase> r;
  r.push_back(index_select_row(true));
  r.push_back(index_select_row(false));
  r.push_back(gather_row());
  r.push_back(scatter_row(false));
  r.push_back(scatter_row(true));
  // Deterministic: the CPU's order, so the CPU's bits.
  OpCase cpu_order = scatter_row(true);
  cpu_order.name = "launch_scatter_add_in_cpu_order";
  cpu_order.dtypes = {DType::F64, DType::F32, DType::I64};
  cpu_order.bitwise = true;
  r.push_back(cpu_order);
  r.push_back(scatter_bad_index_row(false));
  r.push_back(scatter_bad_index_row(true));
  return r;
}

FK_PARITY_TABLE(Index, rows());

}  // namespace
}  // namespace fk::cuda_parity
