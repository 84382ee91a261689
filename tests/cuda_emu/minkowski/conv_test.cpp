// conv.cu's data movement runs on the emulated device (emulated_device.h):
// the row gather and both scatter-adds, at every chunk width the launchers
// pick (16, 8 or 4 bytes, else one element) for f32, f16, bf16 and f64 rows,
// each case placed so its row width, row stride and pointer alignment select
// that width. Gathers and the ordered scatter are checked bit for bit against
// plain host loops (the ordered one in its documented order, window by
// window); the atomic scatter, whose order is free, on values whose sums are
// exact in any order. Every operand sits in an allocation of exactly its size
// (ASan sees a read past a row's end) after a poisoned lead (a write before it
// shows), and runs in both thread orders.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <new>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "cuda_emu/emulated_device.h"
#include "cuda_emu/emulated_test_util.h"
#include "fk/cuda/kernels.h"
#include "fk/error.h"
#include "minkowski/cuda/kernels.h"

// The emulated launchers this file runs: kernels.h's, in ::emu (a signature
// that drifts from its definition fails to link).
namespace minkowski::cuda::emu {
void launch_gather_rows(int dtype, const void* src, int64_t ld, const int32_t* rows, int64_t n,
                        int64_t cols, void* staged, void* stream);
void launch_scatter_add_atomic(int dtype, const void* staged, const int32_t* rows, int64_t n,
                               int64_t cols, void* dst, void* stream);
void launch_scatter_add_ordered(int dtype, const void* staged, int64_t p0, int64_t p1,
                                const int32_t* begin, const int32_t* pair, int64_t n_rows,
                                int64_t cols, void* dst, void* stream);
}  // namespace minkowski::cuda::emu

namespace mc = minkowski::cuda;

using fkemu_test::dtype_code;
using fkemu_test::in_both_orders;
using fkemu_test::narrow;
using fkemu_test::order_name;
using fkemu_test::widen;

namespace {

// n elements of T placed `lead` elements past a 64-byte boundary, in an
// allocation of exactly lead + n elements; the lead holds a poison value
// that nothing may overwrite.
template <typename T>
class Placed {
 public:
  Placed(int64_t n, int64_t lead, T poison)
      : n_(n), lead_(lead), base_(static_cast<T*>(::operator new(bytes(), kAlign))) {
    std::fill(base_, base_ + lead_ + n_, poison);
  }
  ~Placed() { ::operator delete(base_, bytes(), kAlign); }
  Placed(const Placed&) = delete;
  Placed& operator=(const Placed&) = delete;

  T* data() { return base_ + lead_; }
  T& operator[](int64_t i) { return base_[lead_ + i]; }
  int64_t size() const { return n_; }
  // The lead, which should still hold the poison.
  const T* lead_begin() const { return base_; }
  const T* lead_end() const { return base_ + lead_; }

 private:
  static constexpr std::align_val_t kAlign{64};
  size_t bytes() const { return std::max<size_t>(1, static_cast<size_t>(lead_ + n_) * sizeof(T)); }
  int64_t n_, lead_;
  T* base_;
};

template <typename S>
uint64_t bits_of(S v) {
  uint64_t b = 0;
  std::memcpy(&b, &v, sizeof(S));
  return b;
}

// The accumulator's type for rows of S (conv.cu's Acc).
template <typename S>
using Acc = std::conditional_t<std::is_same_v<S, double>, double, float>;

template <typename T>
bool lead_intact(const Placed<T>& p, T poison) {
  return std::all_of(p.lead_begin(), p.lead_end(),
                     [&](T v) { return bits_of(v) == bits_of(poison); });
}

// A row width, a row stride and where the operands start (elements past a
// 64-byte boundary), and the elements per chunk these should make the
// launcher choose (for the failure message: what the case is there for).
struct Layout {
  int64_t cols, ld, src_lead, dst_lead;
  int chunk;
};
std::string describe(const Layout& l) {
  return "cols " + std::to_string(l.cols) + ", ld " + std::to_string(l.ld) + ", src at +" +
         std::to_string(l.src_lead) + ", dst at +" + std::to_string(l.dst_lead) + " (chunk of " +
         std::to_string(l.chunk) + ")";
}

// n row indices into `rows` rows, repeats and descending runs included.
std::vector<int32_t> random_rows(int64_t n, int64_t rows, std::mt19937& rng) {
  std::vector<int32_t> r(static_cast<size_t>(n));
  for (int32_t& v : r) v = static_cast<int32_t>(rng() % static_cast<uint32_t>(rows));
  return r;
}

// --- launch_gather_rows ------------------------------------------------------

template <typename S>
void check_gather(const Layout& l, int64_t n, uint32_t seed) {
  SCOPED_TRACE(describe(l));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  const int64_t src_rows = 29;
  // The last row ends the allocation: no padding after it to read unseen.
  const S pad = narrow<S>(4096);
  Placed<S> src((src_rows - 1) * l.ld + l.cols, l.src_lead, pad);
  for (int64_t r = 0; r < src_rows; ++r)
    for (int64_t c = 0; c < l.cols; ++c) src[r * l.ld + c] = narrow<S>(u(rng));
  std::vector<int32_t> rows = random_rows(n, src_rows, rng);
  rows.back() = static_cast<int32_t>(src_rows - 1);  // a chunk past the end would show

  in_both_orders([&](fkemu::Order order) {
    Placed<S> staged(n * l.cols, l.dst_lead, pad);
    mc::emu::launch_gather_rows(dtype_code<S>(), src.data(), l.ld, rows.data(), n, l.cols,
                                staged.data(), nullptr);
    int64_t wrong = 0;
    for (int64_t p = 0; p < n; ++p)
      for (int64_t c = 0; c < l.cols; ++c)
        if (bits_of(staged[p * l.cols + c]) !=
                bits_of(src[rows[static_cast<size_t>(p)] * l.ld + c]) &&
            wrong++ < 5)
          ADD_FAILURE() << "staged row " << p << " (src row " << rows[static_cast<size_t>(p)]
                        << ") channel " << c << ", order " << order_name(order);
    EXPECT_EQ(wrong, 0);
    EXPECT_TRUE(lead_intact(staged, pad)) << "a write before staged, order " << order_name(order);
  });
}

TEST(EmulatedConv, GatherF32AtEveryChunk) {
  check_gather<float>({8, 12, 0, 0, 4}, 70, 1);   // 16 bytes; 70 x 2 chunks: a partial block
  check_gather<float>({8, 12, 2, 0, 2}, 70, 2);   // src 8-byte aligned only
  check_gather<float>({8, 12, 0, 6, 2}, 70, 3);   // staged 8-byte aligned only
  check_gather<float>({6, 10, 0, 0, 2}, 50, 4);   // a row of 6 floats
  check_gather<float>({8, 10, 0, 0, 2}, 50, 5);   // a stride of 10
  check_gather<float>({8, 12, 1, 0, 1}, 50, 6);   // src 4-byte aligned: floats one by one
  check_gather<float>({5, 9, 0, 0, 1}, 60, 7);    // an odd row
  check_gather<float>({4, 7, 0, 0, 1}, 60, 8);    // an odd stride
  check_gather<float>({64, 64, 0, 0, 4}, 9, 9);   // packed rows (ld = cols), 144 chunks
  check_gather<float>({3, 3, 3, 1, 1}, 100, 10);  // packed, odd, both unaligned
}

TEST(EmulatedConv, GatherHalvesAtEveryChunk) {
  check_gather<__half>({16, 24, 0, 0, 8}, 40, 11);  // 16 bytes
  check_gather<__half>({16, 24, 4, 0, 4}, 40, 12);  // src 8-byte aligned only
  check_gather<__half>({12, 20, 0, 0, 4}, 40, 13);  // a row of 12 halves
  check_gather<__half>({16, 24, 0, 2, 2}, 40, 14);  // staged 4-byte aligned only
  check_gather<__half>({6, 10, 0, 0, 2}, 40, 15);   // a row of 6
  check_gather<__half>({8, 9, 0, 0, 1}, 40, 16);    // an odd stride
  check_gather<__half>({7, 7, 0, 0, 1}, 40, 17);    // an odd row, packed
  check_gather<__half>({8, 8, 1, 0, 1}, 40, 18);    // src 2-byte aligned
  check_gather<__nv_bfloat16>({16, 16, 0, 0, 8}, 40, 19);
  check_gather<__nv_bfloat16>({12, 20, 0, 0, 4}, 40, 20);
  check_gather<__nv_bfloat16>({10, 14, 0, 0, 2}, 40, 21);
  check_gather<__nv_bfloat16>({5, 11, 0, 3, 1}, 40, 22);
}

TEST(EmulatedConv, GatherF64AtEveryChunk) {
  check_gather<double>({4, 6, 0, 0, 2}, 80, 23);  // 16 bytes
  check_gather<double>({4, 6, 1, 0, 1}, 80, 24);  // src 8-byte aligned only
  check_gather<double>({4, 6, 0, 1, 1}, 80, 25);  // staged 8-byte aligned only
  check_gather<double>({3, 5, 0, 0, 1}, 80, 26);  // an odd row
  check_gather<double>({2, 3, 0, 0, 1}, 80, 27);  // an odd stride
}

TEST(EmulatedConv, GatherOfNothingTouchesNothing) {
  // n or cols 0: no launch, no pointer read (none is valid here).
  mc::emu::launch_gather_rows(fk::cuda::kF32, nullptr, 4, nullptr, 0, 4, nullptr, nullptr);
  mc::emu::launch_gather_rows(fk::cuda::kF16, nullptr, 4, nullptr, 5, 0, nullptr, nullptr);
}

// --- launch_scatter_add_atomic ------------------------------------------------

// Multiples of 1/8 small enough that every partial sum is exact in the
// accumulator, so the result is one value whatever order the adds take.
template <typename S>
S eighths(std::mt19937& rng, int range) {
  const int k = static_cast<int>(rng() % static_cast<uint32_t>(2 * range + 1)) - range;
  return narrow<S>(k / 8.0);
}

// The layout's ld is unused; src_lead places the staged rows.
template <typename S>
void check_scatter_atomic(const Layout& l, int64_t n, int64_t dst_rows, uint32_t seed) {
  SCOPED_TRACE(describe(l));
  using A = Acc<S>;
  std::mt19937 rng(seed);
  const S pad = narrow<S>(4096);
  Placed<S> staged(n * l.cols, l.src_lead, pad);
  for (int64_t e = 0; e < staged.size(); ++e) staged[e] = eighths<S>(rng, 32);
  // n > dst_rows: most destination rows take several staged rows.
  const std::vector<int32_t> rows = random_rows(n, dst_rows, rng);
  std::vector<A> dst0(static_cast<size_t>(dst_rows * l.cols));
  for (A& v : dst0) v = static_cast<A>(widen(eighths<S>(rng, 64)));

  std::vector<A> want = dst0;
  for (int64_t p = 0; p < n; ++p)
    for (int64_t c = 0; c < l.cols; ++c)
      want[static_cast<size_t>(rows[static_cast<size_t>(p)] * l.cols + c)] +=
          widen(staged[p * l.cols + c]);

  in_both_orders([&](fkemu::Order order) {
    const A lead_poison = -1234.5;
    Placed<A> dst(dst_rows * l.cols, l.dst_lead, lead_poison);
    std::copy(dst0.begin(), dst0.end(), dst.data());
    mc::emu::launch_scatter_add_atomic(dtype_code<S>(), staged.data(), rows.data(), n, l.cols,
                                       dst.data(), nullptr);
    int64_t wrong = 0;
    for (int64_t e = 0; e < dst.size(); ++e)
      if (bits_of(dst[e]) != bits_of(want[static_cast<size_t>(e)]) && wrong++ < 5)
        ADD_FAILURE() << "dst row " << e / l.cols << " channel " << e % l.cols << ": got " << dst[e]
                      << ", want " << want[static_cast<size_t>(e)] << ", order "
                      << order_name(order);
    EXPECT_EQ(wrong, 0);
    EXPECT_TRUE(lead_intact(dst, lead_poison)) << "a write before dst";
  });
}

TEST(EmulatedConv, ScatterAtomicF32AtEveryChunk) {
  check_scatter_atomic<float>({8, 0, 0, 0, 4}, 90, 23, 31);
  check_scatter_atomic<float>({8, 0, 0, 1, 4}, 90, 23, 32);  // dst unaligned: added one by one
  check_scatter_atomic<float>({8, 0, 2, 0, 2}, 90, 23, 33);  // staged 8-byte aligned only
  check_scatter_atomic<float>({6, 0, 0, 0, 2}, 90, 23, 34);
  check_scatter_atomic<float>({5, 0, 0, 3, 1}, 90, 23, 35);
  check_scatter_atomic<float>({8, 0, 1, 0, 1}, 90, 23, 36);  // staged 4-byte aligned
}

TEST(EmulatedConv, ScatterAtomicHalvesAtEveryChunk) {
  check_scatter_atomic<__half>({16, 0, 0, 0, 8}, 60, 17, 41);
  check_scatter_atomic<__half>({16, 0, 4, 1, 4}, 60, 17, 42);  // staged 8-byte aligned only
  check_scatter_atomic<__half>({12, 0, 0, 0, 4}, 60, 17, 43);
  check_scatter_atomic<__half>({6, 0, 0, 0, 2}, 60, 17, 44);
  check_scatter_atomic<__half>({7, 0, 0, 0, 1}, 60, 17, 45);
  check_scatter_atomic<__nv_bfloat16>({16, 0, 0, 0, 8}, 60, 17, 46);
  check_scatter_atomic<__nv_bfloat16>({16, 0, 2, 0, 2}, 60, 17, 47);
  check_scatter_atomic<__nv_bfloat16>({9, 0, 1, 1, 1}, 60, 17, 48);
}

TEST(EmulatedConv, ScatterAtomicF64AtEveryChunk) {
  check_scatter_atomic<double>({4, 0, 0, 0, 2}, 90, 23, 51);
  check_scatter_atomic<double>({4, 0, 1, 0, 1}, 90, 23, 52);
  check_scatter_atomic<double>({3, 0, 0, 1, 1}, 90, 23, 53);
}

TEST(EmulatedConv, ScatterAtomicOfNothingTouchesNothing) {
  mc::emu::launch_scatter_add_atomic(fk::cuda::kF32, nullptr, nullptr, 0, 4, nullptr, nullptr);
  mc::emu::launch_scatter_add_atomic(fk::cuda::kF64, nullptr, nullptr, 3, 0, nullptr, nullptr);
}

// --- launch_scatter_add_ordered -----------------------------------------------

// Destination rows' pairs as a CSR: each of `pairs` pairs goes to a random
// row (about a fifth of the rows get none), ascending within a row.
struct RowIndex {
  std::vector<int32_t> begin, pair;
};
RowIndex random_row_index(int64_t pairs, int64_t rows, std::mt19937& rng) {
  std::vector<int32_t> dest(static_cast<size_t>(pairs));
  const uint32_t used = static_cast<uint32_t>(std::max<int64_t>(1, rows * 4 / 5));
  for (int32_t& r : dest) r = static_cast<int32_t>(rng() % used);
  std::shuffle(dest.begin(), dest.end(), rng);
  RowIndex x;
  x.begin.assign(static_cast<size_t>(rows + 1), 0);
  for (int32_t r : dest) ++x.begin[static_cast<size_t>(r + 1)];
  for (size_t r = 1; r < x.begin.size(); ++r) x.begin[r] += x.begin[r - 1];
  std::vector<int32_t> next(x.begin.begin(), x.begin.end() - 1);
  x.pair.resize(dest.size());
  for (size_t p = 0; p < dest.size(); ++p)
    x.pair[static_cast<size_t>(next[static_cast<size_t>(dest[p])]++)] = static_cast<int32_t>(p);
  return x;
}

struct Window {
  int64_t p0, p1;
};

// dst (random, inexact values) += the staged rows of each window in turn,
// each window's rows in their own allocation; checked against one pass over
// every row's pairs in order, adding those some window holds: windows are
// disjoint and ascending, so that is the same sequence of roundings.
template <typename S>
void check_scatter_ordered(const Layout& l, int64_t pairs, int64_t n_rows,
                           const std::vector<Window>& windows, uint32_t seed) {
  SCOPED_TRACE(describe(l));
  using A = Acc<S>;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  const RowIndex x = random_row_index(pairs, n_rows, rng);
  std::vector<S> all(static_cast<size_t>(pairs * l.cols));
  for (S& v : all) v = narrow<S>(u(rng));
  std::vector<A> dst0(static_cast<size_t>(n_rows * l.cols));
  for (A& v : dst0) v = static_cast<A>(u(rng) * 3);

  auto held = [&](int64_t p) {
    return std::any_of(windows.begin(), windows.end(),
                       [&](const Window& w) { return w.p0 <= p && p < w.p1; });
  };
  std::vector<A> want = dst0;
  for (int64_t r = 0; r < n_rows; ++r)
    for (int64_t c = 0; c < l.cols; ++c) {
      A acc = dst0[static_cast<size_t>(r * l.cols + c)];
      for (int32_t e = x.begin[static_cast<size_t>(r)]; e < x.begin[static_cast<size_t>(r + 1)];
           ++e) {
        const int64_t p = x.pair[static_cast<size_t>(e)];
        if (held(p)) acc += widen(all[static_cast<size_t>(p * l.cols + c)]);
      }
      want[static_cast<size_t>(r * l.cols + c)] = acc;
    }

  in_both_orders([&](fkemu::Order order) {
    const A lead_poison = -1234.5;
    Placed<A> dst(n_rows * l.cols, l.dst_lead, lead_poison);
    std::copy(dst0.begin(), dst0.end(), dst.data());
    for (const Window& w : windows) {
      const int64_t held_rows = std::max<int64_t>(0, w.p1 - w.p0);
      Placed<S> staged(held_rows * l.cols, l.src_lead, narrow<S>(4096));
      std::copy(all.begin() + w.p0 * l.cols, all.begin() + (w.p0 + held_rows) * l.cols,
                staged.data());
      mc::emu::launch_scatter_add_ordered(dtype_code<S>(), staged.data(), w.p0, w.p1,
                                          x.begin.data(), x.pair.data(), n_rows, l.cols, dst.data(),
                                          nullptr);
    }
    int64_t wrong = 0;
    for (int64_t e = 0; e < dst.size(); ++e)
      if (bits_of(dst[e]) != bits_of(want[static_cast<size_t>(e)]) && wrong++ < 5)
        ADD_FAILURE() << "dst row " << e / l.cols << " channel " << e % l.cols << ": got " << dst[e]
                      << ", want " << want[static_cast<size_t>(e)] << ", order "
                      << order_name(order);
    EXPECT_EQ(wrong, 0);
    EXPECT_TRUE(lead_intact(dst, lead_poison)) << "a write before dst";
  });
}

// The windows device_conv.cpp passes: the offset groups, in order, that
// partition the pairs; and single windows that cut rows' pair lists on
// either side.
std::vector<std::vector<Window>> windows_of(int64_t pairs) {
  const int64_t a = pairs / 3, b = pairs * 3 / 4;
  return {{{0, pairs}}, {{0, a}, {a, b}, {b, pairs}}, {{a, b}}, {{b, pairs}}, {{0, 1}}};
}

template <typename S>
void check_scatter_ordered_windows(const Layout& l, uint32_t seed) {
  const int64_t pairs = 150, n_rows = 40;
  for (const std::vector<Window>& w : windows_of(pairs)) {
    SCOPED_TRACE("windows from " + std::to_string(w.front().p0) + " to " +
                 std::to_string(w.back().p1) + " in " + std::to_string(w.size()));
    check_scatter_ordered<S>(l, pairs, n_rows, w, seed++);
  }
}

TEST(EmulatedConv, ScatterOrderedF32AtEveryChunkMatchesThePairOrder) {
  check_scatter_ordered_windows<float>({8, 0, 0, 0, 4}, 61);
  check_scatter_ordered_windows<float>({8, 0, 2, 0, 2}, 62);  // staged 8-byte aligned only
  check_scatter_ordered_windows<float>({8, 0, 0, 2, 2}, 63);  // dst 8-byte aligned only
  check_scatter_ordered_windows<float>({8, 0, 0, 1, 1}, 64);  // dst 4-byte aligned
  check_scatter_ordered_windows<float>({6, 0, 0, 0, 2}, 65);
  check_scatter_ordered_windows<float>({5, 0, 0, 0, 1}, 66);
}

TEST(EmulatedConv, ScatterOrderedHalvesAtEveryChunkMatchTheirOrder) {
  // Eight halves add into eight floats: 32 bytes of dst per chunk.
  check_scatter_ordered_windows<__half>({16, 0, 0, 0, 8}, 71);
  check_scatter_ordered_windows<__half>({16, 0, 0, 4, 4}, 72);  // dst 16-byte aligned only
  check_scatter_ordered_windows<__half>({16, 0, 0, 2, 2}, 73);  // dst 8-byte aligned only
  check_scatter_ordered_windows<__half>({16, 0, 0, 1, 1}, 74);
  check_scatter_ordered_windows<__half>({16, 0, 4, 0, 4}, 75);  // staged 8-byte aligned only
  check_scatter_ordered_windows<__half>({12, 0, 0, 0, 4}, 76);
  check_scatter_ordered_windows<__half>({7, 0, 0, 0, 1}, 77);
  check_scatter_ordered_windows<__nv_bfloat16>({16, 0, 0, 0, 8}, 78);
  check_scatter_ordered_windows<__nv_bfloat16>({10, 0, 0, 0, 2}, 79);
  check_scatter_ordered_windows<__nv_bfloat16>({16, 0, 1, 0, 1}, 80);
}

TEST(EmulatedConv, ScatterOrderedF64AtEveryChunkMatchesThePairOrder) {
  check_scatter_ordered_windows<double>({4, 0, 0, 0, 2}, 81);
  check_scatter_ordered_windows<double>({4, 0, 0, 1, 1}, 82);  // dst 8-byte aligned only
  check_scatter_ordered_windows<double>({4, 0, 1, 0, 1}, 83);  // staged 8-byte aligned only
  check_scatter_ordered_windows<double>({3, 0, 0, 0, 1}, 84);
}

TEST(EmulatedConv, ScatterOrderedOfNothingTouchesNothing) {
  const std::vector<int32_t> begin{0, 1}, pair{0};
  float dst = 2.5f;
  // An empty window (p1 <= p0), no rows, no channels: no launch, dst as it was.
  mc::emu::launch_scatter_add_ordered(fk::cuda::kF32, nullptr, 1, 1, begin.data(), pair.data(), 1,
                                      1, &dst, nullptr);
  mc::emu::launch_scatter_add_ordered(fk::cuda::kF32, nullptr, 2, 1, begin.data(), pair.data(), 1,
                                      1, &dst, nullptr);
  mc::emu::launch_scatter_add_ordered(fk::cuda::kF32, nullptr, 0, 1, nullptr, nullptr, 0, 1,
                                      nullptr, nullptr);
  mc::emu::launch_scatter_add_ordered(fk::cuda::kF32, nullptr, 0, 1, begin.data(), pair.data(), 1,
                                      0, &dst, nullptr);
  EXPECT_EQ(dst, 2.5f);
}

TEST(EmulatedConv, LaunchersRefuseOtherDTypesByName) {
  float buf[4] = {};
  const int32_t rows[1] = {0}, begin[2] = {0, 1};
  auto expect_refusal = [](auto&& launch, const char* which) {
    try {
      launch();
      ADD_FAILURE() << which << " ran on i32 rows";
    } catch (const fk::Error& e) {
      EXPECT_NE(std::string(e.what()).find("f32, f16, bf16 or f64"), std::string::npos) << e.what();
    }
  };
  expect_refusal(
      [&] { mc::emu::launch_gather_rows(fk::cuda::kI32, buf, 4, rows, 1, 4, buf, nullptr); },
      "launch_gather_rows");
  expect_refusal(
      [&] { mc::emu::launch_scatter_add_atomic(fk::cuda::kI32, buf, rows, 1, 4, buf, nullptr); },
      "launch_scatter_add_atomic");
  expect_refusal(
      [&] {
        mc::emu::launch_scatter_add_ordered(fk::cuda::kI32, buf, 0, 1, begin, rows, 1, 4, buf,
                                            nullptr);
      },
      "launch_scatter_add_ordered");
}

}  // namespace
