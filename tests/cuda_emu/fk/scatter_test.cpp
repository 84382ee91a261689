// scatter.cu's launcher runs on the emulated device, its deterministic mode's
// sort through the emulator's CUB stand-in (cuda_emu/include/cub/): for every
// dtype it takes, many sources per target over contiguous, strided (with
// gaps) and broadcast operands, against a host loop that sums each target's
// sources in increasing position in the compute type (halves in f32, rounded
// once), bit for bit, in both thread orders; the atomic mode over sums that
// are exact in any order; negative indices wrapped when asked; out-of-range
// ones skipped and recorded as kernels.h documents; empty shapes and the
// launcher's refusals; and fk's CPU scatter_add, whose order the
// deterministic mode promises, on the same bytes.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "cuda_emu/emulated_device.h"
#include "cuda_emu/fk/emulated_fk_test_util.h"
#include "fk/cuda/kernels.h"
#include "fk/error.h"
#include "fk/half.h"
#include "fk/ops/index/scatter.h"

// The emulated launcher this file runs: kernels.h's, in ::emu (a signature
// that drifts from its definition fails to link).
namespace fk::cuda::emu {
void launch_scatter_add(int dtype, void* out, const int64_t* out_strides, int64_t out_dim_size,
                        const void* src, const int64_t* src_strides, const int64_t* index,
                        const int64_t* index_strides, int ndim, const int64_t* shape, int dim,
                        bool deterministic, IndexCheck check, void* stream);
}  // namespace fk::cuda::emu

namespace {

using fk::DType;
using fk_emu_test::Buffer;
using fk_emu_test::code;
using fk_emu_test::contiguous;
using fk_emu_test::extent;
using fk_emu_test::numel;

const DType kScatterDTypes[] = {DType::F32, DType::F64, DType::F16, DType::BF16,
                                DType::I32, DType::I64, DType::C64, DType::C128};

// One scatter: out[p with p[dim] = index[p]] += src[p] over `shape`.
struct ScatterCase {
  const char* name;
  std::vector<int64_t> shape;
  int dim;
  int64_t out_dim_size;
  std::vector<int64_t> out_strides;    // empty: contiguous (nullptr to the launcher)
  std::vector<int64_t> src_strides;    // empty: contiguous (nullptr)
  std::vector<int64_t> index_strides;  // empty: contiguous (nullptr)
};

std::vector<ScatterCase> scatter_cases() {
  return {
      // Seven targets for 600 sources: past two blocks, about 86 per target.
      {"1-d, many sources per target", {600}, 0, 7, {}, {}, {}},
      {"3-d along the middle, out longer", {3, 50, 4}, 1, 9, {}, {}, {}},
      // out [4, 6, 3] with gaps between rows and elements; src broadcast
      // along dim 0, the index along dim 2 (index_add's shape).
      {"strided out, broadcast src and index", {4, 30, 3}, 1, 6, {41, 6, 2}, {0, 3, 1}, {30, 1, 0}},
      {"2-d along dim 0", {40, 5}, 0, 3, {}, {}, {}},
      {"unit dims", {1, 70, 1}, 1, 4, {}, {}, {}},
  };
}

// The case's strides, contiguous ones filled in (out's over its own shape).
struct Layout {
  std::vector<int64_t> out_shape, out, src, index;
  explicit Layout(const ScatterCase& c) : out_shape(c.shape) {
    out_shape[static_cast<size_t>(c.dim)] = c.out_dim_size;
    out = c.out_strides.empty() ? contiguous(out_shape) : c.out_strides;
    src = c.src_strides.empty() ? contiguous(c.shape) : c.src_strides;
    index = c.index_strides.empty() ? contiguous(c.shape) : c.index_strides;
  }
};

// How the kernels add a storage type: in its compute type, halves as f32.
template <typename H>
struct HostAcc {
  using C = H;
  static C load(H v) { return v; }
  static H store(C v) { return v; }
};
template <>
struct HostAcc<fk::Half> {
  using C = float;
  static float load(fk::Half v) { return fk::half_to_float(v); }
  static fk::Half store(float v) { return fk::float_to_half(v); }
};
template <>
struct HostAcc<fk::BFloat16> {
  using C = float;
  static float load(fk::BFloat16 v) { return fk::bf16_to_float(v); }
  static fk::BFloat16 store(float v) { return fk::float_to_bf16(v); }
};

template <typename F>
void visit_host_type(DType t, F&& f) {
  switch (t) {
    case DType::F32:
      return f(float{});
    case DType::F64:
      return f(double{});
    case DType::F16:
      return f(fk::Half{});
    case DType::BF16:
      return f(fk::BFloat16{});
    case DType::I32:
      return f(int32_t{});
    case DType::I64:
      return f(int64_t{});
    case DType::C64:
      return f(std::complex<float>{});
    case DType::C128:
      return f(std::complex<double>{});
    default:
      FAIL() << "no scatter_add for " << fk::name(t);
  }
}

// What the deterministic mode writes: each target loaded once, its sources
// added in increasing position p, stored once. Indices as kernels.h
// documents: wrapped when asked, out-of-range ones skipped.
template <typename H>
void scatter_on_host(const ScatterCase& c, const Buffer& src, const std::vector<int64_t>& index,
                     bool wrap, Buffer& out) {
  using Acc = HostAcc<H>;
  const Layout l(c);
  auto* o = reinterpret_cast<H*>(out.bytes());
  const auto* s = reinterpret_cast<const H*>(src.bytes());
  std::map<int64_t, typename Acc::C> sums;
  for (int64_t p = 0; p < numel(c.shape); ++p) {
    int64_t rest = p, target = 0, src_off = 0, index_off = 0;
    for (size_t d = c.shape.size(); d-- > 0;) {
      const int64_t coord = rest % c.shape[d];
      rest /= c.shape[d];
      src_off += coord * l.src[d];
      index_off += coord * l.index[d];
      if (static_cast<int>(d) != c.dim) target += coord * l.out[d];
    }
    int64_t j = index[static_cast<size_t>(index_off)];
    if (wrap && j < 0) j += c.out_dim_size;
    if (j < 0 || j >= c.out_dim_size) continue;
    target += j * l.out[static_cast<size_t>(c.dim)];
    auto [at, fresh] = sums.try_emplace(target, typename Acc::C{});
    if (fresh) at->second = Acc::load(o[target]);
    at->second = at->second + Acc::load(s[src_off]);
  }
  for (const auto& [target, sum] : sums) o[target] = Acc::store(sum);
}

// Values whose sums the test can predict: `exact` small integers (any order
// of adding them is exact in every dtype, bf16 included), else magnitudes
// over five decades (so the order of adding shows in the last bits) within
// f16's range, integers up to 1000 (and some i64 past 2^32).
Buffer values(DType t, int64_t n, bool exact, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  const bool integral = t == DType::I32 || t == DType::I64;
  Buffer b(t, n);
  for (int64_t i = 0; i < n; ++i) {
    double re, im;
    if (exact) {
      re = static_cast<double>(static_cast<int>(rng() % 9) - 4);
      im = static_cast<double>(static_cast<int>(rng() % 9) - 4);
    } else if (integral) {
      re = static_cast<double>(static_cast<int>(rng() % 2001) - 1000);
      if (t == DType::I64 && rng() % 4 == 0) re += static_cast<double>(int64_t{1} << 40);
      im = 0.0;
    } else {
      re = unit(rng) * std::pow(10.0, static_cast<double>(rng() % 5) - 2.0);
      im = unit(rng) * std::pow(10.0, static_cast<double>(rng() % 5) - 2.0);
    }
    b.set(i, re, im);
  }
  return b;
}

// Indices in [lo, hi).
std::vector<int64_t> random_index(int64_t n, int64_t lo, int64_t hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int64_t> index(static_cast<size_t>(n));
  for (int64_t& i : index) i = lo + static_cast<int64_t>(rng() % static_cast<uint32_t>(hi - lo));
  return index;
}

bool is_bad(int64_t raw, int64_t size, bool wrap) {
  return (wrap ? raw < -size : raw < 0) || raw >= size;
}

struct Run {
  bool deterministic;
  bool wrap;
  bool record = true;  // pass a `bad` record
};

// Runs the launcher on c in both thread orders against scatter_on_host, and
// checks the bad-index record: set, with some offending index and the size,
// exactly when an index is out of range.
void check_scatter(DType t, const ScatterCase& c, const std::vector<int64_t>& index, Run r,
                   bool exact) {
  const Layout l(c);
  const int64_t out_n = extent(l.out_shape, l.out);
  const Buffer src = values(t, extent(c.shape, l.src), exact, 11);
  const Buffer out0 = values(t, out_n, exact, 12);
  Buffer want = out0;
  visit_host_type(t,
                  [&](auto tag) { scatter_on_host<decltype(tag)>(c, src, index, r.wrap, want); });
  bool any_bad = false;
  for (int64_t p = 0; p < static_cast<int64_t>(index.size()); ++p)
    any_bad = any_bad || is_bad(index[static_cast<size_t>(p)], c.out_dim_size, r.wrap);
  const std::string what = std::string(c.name) + ", " + fk::name(t) +
                           (r.deterministic ? ", deterministic" : ", atomic") +
                           (r.wrap ? ", wrapping" : "");
  fkemu_test::in_both_orders([&](fkemu::Order) {
    Buffer got = out0;
    int64_t bad[3] = {0, 0, 0};
    fk::cuda::IndexCheck check;
    check.wrap_negative = r.wrap;
    check.bad = r.record ? bad : nullptr;
    fk::cuda::emu::launch_scatter_add(
        code(t), got.data(), c.out_strides.empty() ? nullptr : c.out_strides.data(), c.out_dim_size,
        src.storage.data(), c.src_strides.empty() ? nullptr : c.src_strides.data(), index.data(),
        c.index_strides.empty() ? nullptr : c.index_strides.data(),
        static_cast<int>(c.shape.size()), c.shape.data(), c.dim, r.deterministic, check, nullptr);
    fk_emu_test::expect_same_elements(t, got.data(), want.data(), out_n, what);
    if (!r.record) return;
    EXPECT_EQ(bad[0], any_bad ? 1 : 0) << what;
    if (!any_bad) return;
    // Some offending index: which one depends on the order threads store.
    EXPECT_TRUE(is_bad(bad[1], c.out_dim_size, r.wrap)) << what << ": bad[1] = " << bad[1];
    bool present = false;
    for (int64_t i : index) present = present || i == bad[1];
    EXPECT_TRUE(present) << what << ": bad[1] = " << bad[1] << " is not among the indices";
    EXPECT_EQ(bad[2], c.out_dim_size) << what;
  });
}

int64_t index_extent(const ScatterCase& c) {
  return extent(c.shape, Layout(c).index);
}

TEST(EmulatedFkScatter, DeterministicAddsEachTargetsSourcesInPositionOrder) {
  for (const ScatterCase& c : scatter_cases()) {
    const auto index = random_index(index_extent(c), 0, c.out_dim_size, 1);
    for (DType t : kScatterDTypes) check_scatter(t, c, index, {true, false}, false);
  }
}

TEST(EmulatedFkScatter, AtomicAddsEverySource) {
  for (const ScatterCase& c : scatter_cases()) {
    const auto index = random_index(index_extent(c), 0, c.out_dim_size, 2);
    for (DType t : kScatterDTypes) check_scatter(t, c, index, {false, false}, true);
  }
}

TEST(EmulatedFkScatter, NegativeIndicesWrapWhenAsked) {
  for (const ScatterCase& c : scatter_cases()) {
    const auto index = random_index(index_extent(c), -c.out_dim_size, c.out_dim_size, 3);
    for (bool deterministic : {true, false})
      check_scatter(DType::F32, c, index, {deterministic, true}, !deterministic);
  }
}

TEST(EmulatedFkScatter, OutOfRangeIndicesAreSkippedAndRecorded) {
  for (const ScatterCase& c : scatter_cases()) {
    for (bool wrap : {false, true}) {
      // Out of range on both sides (below -size even when wrapping).
      const int64_t size = c.out_dim_size;
      auto index = random_index(index_extent(c), -2 * size - 1, 2 * size + 1, 4);
      for (bool deterministic : {true, false}) {
        check_scatter(DType::F64, c, index, {deterministic, wrap}, !deterministic);
        check_scatter(DType::I64, c, index, {deterministic, wrap, false}, !deterministic);
      }
    }
  }
}

TEST(EmulatedFkScatter, OneBadIndexIsTheOneRecorded) {
  const ScatterCase c = scatter_cases()[0];
  auto index = random_index(index_extent(c), 0, c.out_dim_size, 5);
  index[417] = -8;  // below -7: bad even when wrapping
  for (bool deterministic : {true, false}) {
    int64_t bad[3] = {0, 0, 0};
    std::vector<float> out(7, 0.0f), src(600, 1.0f);
    fk::cuda::IndexCheck check;
    check.wrap_negative = true;
    check.bad = bad;
    fk::cuda::emu::launch_scatter_add(code(DType::F32), out.data(), nullptr, 7, src.data(), nullptr,
                                      index.data(), nullptr, 1, c.shape.data(), 0, deterministic,
                                      check, nullptr);
    EXPECT_EQ(bad[0], 1);
    EXPECT_EQ(bad[1], -8);
    EXPECT_EQ(bad[2], 7);
    float total = 0.0f;
    for (float v : out) total += v;
    EXPECT_EQ(total, 599.0f);
  }
}

// No target at all: every index is bad.
TEST(EmulatedFkScatter, EmptyOutputDimRecordsEveryIndexAsBad) {
  const ScatterCase c = {"empty out dim", {2, 5}, 1, 0, {}, {}, {}};
  const auto index = random_index(index_extent(c), -3, 3, 6);
  for (bool deterministic : {true, false})
    check_scatter(DType::F32, c, index, {deterministic, true}, true);
}

TEST(EmulatedFkScatter, EmptyShapeTouchesNothing) {
  const std::vector<int64_t> shape = {3, 0, 2};
  float out[6] = {1, 2, 3, 4, 5, 6};
  const float src[1] = {9};
  const int64_t index[1] = {0};
  int64_t bad[3] = {0, 0, 0};
  for (bool deterministic : {true, false}) {
    fk::cuda::emu::launch_scatter_add(code(DType::F32), out, nullptr, 1, src, nullptr, index,
                                      nullptr, 3, shape.data(), 1, deterministic, {false, bad},
                                      nullptr);
  }
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[5], 6.0f);
  EXPECT_EQ(bad[0], 0);
}

TEST(EmulatedFkScatter, RefusesABadDimSizeOrDType) {
  const std::vector<int64_t> shape = {4};
  float out[4] = {}, src[4] = {};
  const int64_t index[4] = {};
  auto launch = [&](int dtype, int64_t out_dim_size, int dim) {
    fk::cuda::emu::launch_scatter_add(dtype, out, nullptr, out_dim_size, src, nullptr, index,
                                      nullptr, 1, shape.data(), dim, true, {}, nullptr);
  };
  EXPECT_THROW(launch(code(DType::F32), 4, 1), fk::Error);
  EXPECT_THROW(launch(code(DType::F32), 4, -1), fk::Error);
  EXPECT_THROW(launch(code(DType::F32), -1, 0), fk::Error);
  EXPECT_THROW(launch(code(DType::Bool), 4, 0), fk::Error);
}

// The deterministic mode promises the CPU's order: fk::scatter_add on the
// same bytes (contiguous operands; dtypes the CPU adds in their own type).
TEST(EmulatedFkScatter, DeterministicMatchesTheCpuOp) {
  const ScatterCase c = {"3-d along the middle", {3, 50, 4}, 1, 9, {}, {}, {}};
  const auto index = random_index(index_extent(c), 0, c.out_dim_size, 7);
  const Layout l(c);
  for (DType t : {DType::F32, DType::F64, DType::C64, DType::I64}) {
    Buffer src = values(t, numel(c.shape), false, 8);
    Buffer out0 = values(t, numel(l.out_shape), false, 9);
    const fk::Tensor self = fk_emu_test::view_of(out0, fk::Dims(l.out_shape), fk::Dims(l.out));
    std::vector<int64_t> index_copy = index;
    const fk::Tensor idx = fk_emu_test::view_of(index_copy.data(), index_copy.size() * 8,
                                                DType::I64, fk::Dims(c.shape), fk::Dims(l.index));
    const fk::Tensor want = fk::scatter_add(
        self, c.dim, idx, fk_emu_test::view_of(src, fk::Dims(c.shape), fk::Dims(l.src)));
    fkemu_test::in_both_orders([&](fkemu::Order) {
      Buffer got = out0;
      fk::cuda::emu::launch_scatter_add(code(t), got.data(), nullptr, c.out_dim_size,
                                        src.storage.data(), nullptr, index.data(), nullptr, 3,
                                        c.shape.data(), c.dim, true, {}, nullptr);
      fk_emu_test::expect_same_elements(t, got.data(), want.data_ptr(), numel(l.out_shape),
                                        std::string("cpu op, ") + fk::name(t));
    });
  }
}

}  // namespace
