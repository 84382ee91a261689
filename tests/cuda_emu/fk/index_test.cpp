// index.cu's kernels run on the emulated device (emulated_device.h): gather
// over strided inputs, broadcast (stride-0) indices, strided outputs with gaps
// and index shapes smaller than the input's, and index_select, for every
// element size (1 to 16 bytes), against a host loop over every position,
// bit for bit, in both thread orders; negative indices with and without
// wrapping, out-of-range ones (their output element zeroed, the record in
// `bad` set), empty shapes, and the launcher's refusals.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cuda_emu/emulated_device.h"
#include "cuda_emu/fk/emulated_fk_test_util.h"
#include "fk/cuda/kernels.h"
#include "fk/error.h"

// The emulated launchers this file runs: kernels.h's, in ::emu (a signature
// that drifts from its definition fails to link).
namespace fk::cuda::emu {
void launch_index_select(int dtype, const void* in, const int64_t* index, void* out, int64_t outer,
                         int64_t in_dim, int64_t inner, int64_t n_index, IndexCheck check,
                         void* stream);
void launch_gather(int dtype, const void* in, const int64_t* in_strides, int64_t in_dim_size,
                   const int64_t* index, const int64_t* index_strides, void* out,
                   const int64_t* out_strides, int ndim, const int64_t* shape, int dim,
                   IndexCheck check, void* stream);
}  // namespace fk::cuda::emu

namespace {

using fk::DType;
using fk_emu_test::Buffer;
using fk_emu_test::code;
using fk_emu_test::contiguous;
using fk_emu_test::extent;
using fk_emu_test::numel;

const DType kEveryElementSize[] = {DType::Bool, DType::BF16, DType::F32, DType::I64, DType::C128};

// One gather: out[p] = in[p with p[dim] = index[p]] over `shape`.
struct GatherCase {
  const char* name;
  std::vector<int64_t> shape;
  int dim;
  std::vector<int64_t> in_strides;
  int64_t in_dim_size;
  std::vector<int64_t> index_strides;  // empty: contiguous
  std::vector<int64_t> out_strides;    // empty: contiguous (nullptr to the launcher)
};

// Offset of the row-major position `linear` of shape in a view with strides.
int64_t offset_of(const std::vector<int64_t>& shape, const std::vector<int64_t>& strides,
                  int64_t linear, int skip_dim = -1) {
  int64_t off = 0;
  for (size_t d = shape.size(); d-- > 0;) {
    const int64_t c = linear % shape[d];
    linear /= shape[d];
    if (static_cast<int>(d) != skip_dim) off += c * strides[d];
  }
  return off;
}

// What gather writes: the host loop, with `wrap` and bad indices as kernels.h
// documents (bad: the element is zeroed).
void gather_on_host(const Buffer& in, const GatherCase& c, const std::vector<int64_t>& index,
                    bool wrap, Buffer& out) {
  const auto index_strides = c.index_strides.empty() ? contiguous(c.shape) : c.index_strides;
  const auto out_strides = c.out_strides.empty() ? contiguous(c.shape) : c.out_strides;
  const size_t es = in.itemsize();
  for (int64_t p = 0; p < numel(c.shape); ++p) {
    int64_t idx = index[static_cast<size_t>(offset_of(c.shape, index_strides, p))];
    if (wrap && idx < 0) idx += c.in_dim_size;
    unsigned char* to = out.bytes() + offset_of(c.shape, out_strides, p) * es;
    if (idx < 0 || idx >= c.in_dim_size) {
      std::memset(to, 0, es);
      continue;
    }
    const int64_t from = offset_of(c.shape, c.in_strides, p, c.dim) + idx * c.in_strides[c.dim];
    std::memcpy(to, in.bytes() + from * es, es);
  }
}

std::vector<GatherCase> gather_cases() {
  return {
      // Index longer than the input along dim.
      {"contiguous 3-d along the middle", {5, 9, 6}, 1, {42, 6, 1}, 7, {}, {}},
      // Input transposed; index [4] broadcast along dim 1; output rows padded.
      {"transposed input, broadcast index", {4, 3}, 0, {1, 6}, 6, {1, 0}, {5, 1}},
      // Index smaller than the input along the other dim.
      {"index narrower than the input", {3, 4}, 1, {10, 1}, 10, {}, {}},
      {"one dim past a block", {300}, 0, {2}, 40, {}, {}},
      // Unit dims with strides that do not matter, the gathered dim last.
      {"unit dims", {2, 1, 3, 1, 50}, 4, {500, 7, 100, 3, 2}, 60, {}, {}},
      {"empty", {3, 0}, 0, {5, 1}, 4, {}, {}},
  };
}

// Indices in [lo, hi) for every element `index_strides` reaches.
std::vector<int64_t> random_index(int64_t n, int64_t lo, int64_t hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int64_t> index(static_cast<size_t>(n));
  for (int64_t& i : index) i = lo + static_cast<int64_t>(rng() % static_cast<uint32_t>(hi - lo));
  return index;
}

void check_gather(DType t, const GatherCase& c, const std::vector<int64_t>& index, bool wrap,
                  bool expect_bad) {
  const auto out_strides = c.out_strides.empty() ? contiguous(c.shape) : c.out_strides;
  std::vector<int64_t> in_shape = c.shape;
  in_shape[static_cast<size_t>(c.dim)] = c.in_dim_size;
  Buffer in = fk_emu_test::random_buffer(t, extent(in_shape, c.in_strides), 1);
  const int64_t out_n = extent(c.shape, out_strides);
  Buffer want = fk_emu_test::random_buffer(t, out_n, 2);
  gather_on_host(in, c, index, wrap, want);
  fkemu_test::in_both_orders([&](fkemu::Order) {
    Buffer got = fk_emu_test::random_buffer(t, out_n, 2);
    int64_t bad[3] = {0, 0, 0};
    fk::cuda::IndexCheck check;
    check.wrap_negative = wrap;
    check.bad = bad;
    fk::cuda::emu::launch_gather(
        code(t), in.data(), c.in_strides.data(), c.in_dim_size, index.data(),
        c.index_strides.empty() ? nullptr : c.index_strides.data(), got.data(),
        c.out_strides.empty() ? nullptr : c.out_strides.data(), static_cast<int>(c.shape.size()),
        c.shape.data(), c.dim, check, nullptr);
    fk_emu_test::expect_same_elements(t, got.data(), want.data(), out_n, c.name);
    EXPECT_EQ(bad[0], expect_bad ? 1 : 0);
    if (expect_bad) {
      // Some offending index: which one depends on the order threads store.
      const int64_t raw = bad[1];
      const bool offending = (wrap ? raw < -c.in_dim_size : raw < 0) || raw >= c.in_dim_size;
      EXPECT_TRUE(offending) << "bad[1] = " << raw;
      bool present = false;
      for (int64_t i : index) present = present || i == raw;
      EXPECT_TRUE(present) << "bad[1] = " << raw << " is not among the indices";
      EXPECT_EQ(bad[2], c.in_dim_size);
    }
  });
}

// Elements of the index buffer the case reads.
int64_t index_extent(const GatherCase& c) {
  return c.index_strides.empty() ? std::max<int64_t>(numel(c.shape), 1)
                                 : extent(c.shape, c.index_strides);
}

TEST(EmulatedFkIndex, GatherMatchesAHostLoop) {
  for (const GatherCase& c : gather_cases()) {
    const auto index = random_index(index_extent(c), 0, c.in_dim_size, 3);
    for (DType t : kEveryElementSize) {
      SCOPED_TRACE(std::string(c.name) + ", " + fk::name(t));
      check_gather(t, c, index, false, false);
    }
  }
}

TEST(EmulatedFkIndex, GatherWrapsNegativeIndicesWhenAsked) {
  for (const GatherCase& c : gather_cases()) {
    if (numel(c.shape) == 0) continue;
    // [-size, size): every value valid once wrapped.
    const auto index = random_index(index_extent(c), -c.in_dim_size, c.in_dim_size, 4);
    SCOPED_TRACE(c.name);
    check_gather(DType::F32, c, index, true, false);
  }
}

TEST(EmulatedFkIndex, GatherZeroesAndRecordsOutOfRangeIndices) {
  for (const GatherCase& c : gather_cases()) {
    if (numel(c.shape) == 0) continue;
    for (bool wrap : {false, true}) {
      SCOPED_TRACE(std::string(c.name) + (wrap ? ", wrapping" : ", not wrapping"));
      auto index = random_index(index_extent(c), 0, c.in_dim_size, 5);
      index[0] = wrap ? -c.in_dim_size - 1 : -1;
      if (index.size() > 3) index[3] = c.in_dim_size;
      check_gather(DType::C128, c, index, wrap, true);
    }
  }
}

TEST(EmulatedFkIndex, GatherWithoutARecordStillZeroesBadIndices) {
  const std::vector<int64_t> shape{300};
  const std::vector<int64_t> in_strides{1};
  Buffer in = fk_emu_test::random_buffer(DType::F64, 10, 6);
  auto index = random_index(300, 0, 10, 7);
  index[100] = 10;
  index[299] = -3;
  Buffer got = fk_emu_test::random_buffer(DType::F64, 300, 8);
  fk::cuda::emu::launch_gather(code(DType::F64), in.data(), in_strides.data(), 10, index.data(),
                               nullptr, got.data(), nullptr, 1, shape.data(), 0, {}, nullptr);
  const auto* out = reinterpret_cast<const double*>(got.bytes());
  const auto* src = reinterpret_cast<const double*>(in.bytes());
  EXPECT_EQ(out[100], 0.0);
  EXPECT_EQ(out[299], 0.0);
  EXPECT_EQ(out[5], src[index[5]]);
}

TEST(EmulatedFkIndex, IndexSelectMatchesAHostLoop) {
  struct SelectCase {
    const char* name;
    int64_t outer, in_dim, inner, n_index;
  };
  const SelectCase cases[] = {
      {"3-d", 3, 5, 7, 11},
      {"rows", 1, 40, 13, 6},
      {"one dim past a block", 1, 9, 1, 300},
      {"no indices", 4, 5, 3, 0},
      {"empty rows", 4, 5, 0, 3},
  };
  for (const SelectCase& c : cases) {
    for (DType t : kEveryElementSize) {
      for (bool wrap : {false, true}) {
        SCOPED_TRACE(std::string(c.name) + ", " + fk::name(t) + (wrap ? ", wrapping" : ""));
        Buffer in = fk_emu_test::random_buffer(t, c.outer * c.in_dim * c.inner, 9);
        auto index =
            random_index(std::max<int64_t>(c.n_index, 1), wrap ? -c.in_dim : 0, c.in_dim, 10);
        const bool has_bad = c.n_index > 2 && c.inner > 0;
        if (has_bad) index[2] = wrap ? -c.in_dim - 2 : c.in_dim + 4;
        const int64_t out_n = c.outer * c.n_index * c.inner;
        Buffer want = fk_emu_test::random_buffer(t, out_n, 11);
        const size_t es = in.itemsize();
        for (int64_t o = 0; o < c.outer; ++o) {
          for (int64_t j = 0; j < c.n_index; ++j) {
            int64_t idx = index[static_cast<size_t>(j)];
            if (wrap && idx < 0) idx += c.in_dim;
            for (int64_t i = 0; i < c.inner; ++i) {
              unsigned char* to = want.bytes() + ((o * c.n_index + j) * c.inner + i) * es;
              if (idx < 0 || idx >= c.in_dim) {
                std::memset(to, 0, es);
              } else {
                std::memcpy(to, in.bytes() + ((o * c.in_dim + idx) * c.inner + i) * es, es);
              }
            }
          }
        }
        fkemu_test::in_both_orders([&](fkemu::Order) {
          Buffer got = fk_emu_test::random_buffer(t, out_n, 11);
          int64_t bad[3] = {0, 0, 0};
          fk::cuda::IndexCheck check;
          check.wrap_negative = wrap;
          check.bad = bad;
          fk::cuda::emu::launch_index_select(code(t), in.data(), index.data(), got.data(), c.outer,
                                             c.in_dim, c.inner, c.n_index, check, nullptr);
          fk_emu_test::expect_same_elements(t, got.data(), want.data(), out_n, c.name);
          EXPECT_EQ(bad[0], has_bad ? 1 : 0);
          if (has_bad) {
            EXPECT_EQ(bad[1], index[2]);
            EXPECT_EQ(bad[2], c.in_dim);
          }
        });
      }
    }
  }
}

TEST(EmulatedFkIndex, GatherRefusesABadDimAndMissingStrides) {
  std::vector<float> in(8), out(8);
  std::vector<int64_t> index(8, 0);
  const int64_t shape[2] = {2, 4};
  const int64_t strides[2] = {4, 1};
  for (int dim : {-1, 2}) {
    EXPECT_THROW(
        fk::cuda::emu::launch_gather(code(DType::F32), in.data(), strides, 4, index.data(), nullptr,
                                     out.data(), nullptr, 2, shape, dim, {}, nullptr),
        fk::Error);
  }
  EXPECT_THROW(fk::cuda::emu::launch_gather(code(DType::F32), in.data(), nullptr, 4, index.data(),
                                            nullptr, out.data(), nullptr, 2, shape, 1, {}, nullptr),
               fk::Error);
}

}  // namespace
