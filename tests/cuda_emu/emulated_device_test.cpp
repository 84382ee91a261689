// The emulated device itself (emulated_device.h): barriers, warp shuffles,
// built-in indices, the launch checks, the two thread orders telling a
// race apart from a barrier-ordered exchange, and the stand-ins for WMMA
// and cp.async (include/).
#include <gtest/gtest.h>

#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

#include "cuda_emu/device_surface.h"
// include/'s stand-ins (after device_surface.h, which must precede CUDA's
// headers: they define __shared__ otherwise).
#include <mma.h>

#include <cp_async.cuh>
#include "cuda_emu/emulated_test_util.h"
#include "fk/error.h"

namespace {

constexpr int kBlock = 96;  // three warps

// Reverses each block's slice through shared memory, with or without the
// barrier between the writes and the reads.
void reverse_kernel(const int* in, int* out, bool barrier) {
  __shared__ int s[kBlock];
  const int t = static_cast<int>(threadIdx.x), base = static_cast<int>(blockIdx.x) * kBlock;
  s[t] = in[base + t];
  if (barrier) __syncthreads();
  out[base + t] = s[kBlock - 1 - t];
}

std::vector<int> reversed(bool barrier, fkemu::Order order) {
  std::vector<int> in(3 * kBlock), out(in.size(), -1);
  std::iota(in.begin(), in.end(), 0);
  fkemu::set_order(order);
  fkemu::launch(fkemu::config(3, kBlock), reverse_kernel, in.data(), out.data(), barrier);
  fkemu::set_order(fkemu::starting_order());
  return out;
}

TEST(EmulatedDevice, BarrierOrdersSharedMemoryInBothOrders) {
  for (fkemu::Order order : {fkemu::Order::kAscending, fkemu::Order::kDescending}) {
    const std::vector<int> out = reversed(true, order);
    for (int b = 0; b < 3; ++b)
      for (int t = 0; t < kBlock; ++t)
        ASSERT_EQ(out[static_cast<size_t>(b * kBlock + t)], b * kBlock + kBlock - 1 - t);
  }
}

TEST(EmulatedDevice, AMissingBarrierShowsAsOrderDependentResults) {
  EXPECT_NE(reversed(false, fkemu::Order::kAscending), reversed(false, fkemu::Order::kDescending));
}

// Each thread logs its index, waits at a warp barrier if it is in the
// block's second warp, then logs it again plus 100.
void logging_kernel(std::vector<int>* log) {
  const int t = static_cast<int>(threadIdx.x);
  log->push_back(t);
  if (t >= 32) __syncwarp();
  log->push_back(100 + t);
}

// Threads run in the order until they wait or return, whether a fiber starts
// them or a returning thread's fiber goes on to them; a warp runs on through
// its warp barrier before the next warp starts.
TEST(EmulatedDevice, ThreadsRunInTheOrderUntilTheyWaitOrReturn) {
  for (fkemu::Order order : {fkemu::Order::kAscending, fkemu::Order::kDescending}) {
    std::vector<int> log, first, second;
    fkemu::set_order(order);
    fkemu::launch(fkemu::config(1, 64), logging_kernel, &log);
    fkemu::set_order(fkemu::starting_order());
    const bool up = order == fkemu::Order::kAscending;
    for (int i = 0; i < 32; ++i) {
      const int t = up ? i : 31 - i;  // the first warp, no barrier
      first.push_back(t);
      first.push_back(100 + t);
      const int u = up ? 32 + i : 63 - i;  // the second, up to its barrier and after
      second.insert(second.begin() + i, u);
      second.push_back(100 + u);
    }
    std::vector<int> expected = up ? first : second;
    expected.insert(expected.end(), (up ? second : first).begin(), (up ? second : first).end());
    EXPECT_EQ(log, expected);
  }
}

// Warp 0 writes shared memory (its lane plus `stamp`), warp 1 reads it;
// between them only each warp's own __syncwarp, or a __syncthreads.
void cross_warp_kernel(int* out, int stamp, bool block_barrier) {
  __shared__ int s[32];
  const int t = static_cast<int>(threadIdx.x);
  if (t < 32) s[t] = t + stamp;
  if (block_barrier)
    __syncthreads();
  else
    __syncwarp();
  if (t >= 32) out[t - 32] = s[t - 32];
}

// A warp runs ahead of the others through its warp barriers, as it may on
// the device: a warp barrier orders nothing across warps, and one order
// shows it; __syncthreads does.
TEST(EmulatedDevice, AWarpBarrierDoesNotOrderAnotherWarp) {
  for (bool block_barrier : {false, true}) {
    std::vector<int> ascending(32, 0), descending(32, 0);
    {
      const fkemu_test::OrderScope scope(fkemu::Order::kAscending);
      fkemu::launch(fkemu::config(1, 64), cross_warp_kernel, ascending.data(), 100, block_barrier);
    }
    {
      const fkemu_test::OrderScope scope(fkemu::Order::kDescending);
      fkemu::launch(fkemu::config(1, 64), cross_warp_kernel, descending.data(), 200, block_barrier);
    }
    EXPECT_EQ(ascending[5], 105);
    // Without __syncthreads, warp 1 ran before warp 0 wrote (and read the
    // first launch's values).
    EXPECT_EQ(descending[5], block_barrier ? 205 : 105);
  }
}

// Lanes from 16 on return; the others shuffle down by 16 (from a returned
// lane) and by 8 (from a live one).
void shuffle_from_returned_kernel(int* out) {
  const int t = static_cast<int>(threadIdx.x);
  if (t >= 16) return;
  out[2 * t] = __shfl_down_sync(0xffffu, t, 16);
  out[2 * t + 1] = __shfl_down_sync(0xffffu, t, 8);
}

// The device's value from a lane that returned (or that a partial warp
// lacks) is undefined: the emulator answers all bits set.
TEST(EmulatedDevice, AShuffleFromALaneThatReturnedReadsGarbage) {
  std::vector<int> out(32, 0);
  fkemu::launch(fkemu::config(1, 32), shuffle_from_returned_kernel, out.data());
  for (int t = 0; t < 16; ++t) {
    EXPECT_EQ(out[static_cast<size_t>(2 * t)], -1) << t;
    EXPECT_EQ(out[static_cast<size_t>(2 * t + 1)], t < 8 ? t + 8 : -1) << t;
  }
  std::fill(out.begin(), out.end(), 0);
  fkemu::launch(fkemu::config(1, 16), shuffle_from_returned_kernel,
                out.data());  // lanes 16-31 absent
  EXPECT_EQ(out[0], -1);
  EXPECT_EQ(out[1], 8);
}

void divergent_barrier_kernel(int* out) {
  if (threadIdx.x % 2 == 0) return;
  __syncthreads();
  out[threadIdx.x] = 1;
}

// FKEMU_ORDER is the order a program starts in: ascending unset, descending
// as ctest's cuda_emu_order_from_environment sets it (cuda_emu_order_refused
// checks that any other value stops the program with a message).
TEST(EmulatedDevice, TheEnvironmentSetsTheStartingOrder) {
  const char* given = std::getenv("FKEMU_ORDER");
  const bool descending = given != nullptr && std::string(given) == "descending";
  EXPECT_EQ(fkemu::order(), descending ? fkemu::Order::kDescending : fkemu::Order::kAscending);
}

TEST(EmulatedDevice, ABarrierSomeThreadsNeverReachIsAnError) {
  std::vector<int> out(64);
  try {
    fkemu::launch(fkemu::config(1, 64), divergent_barrier_kernel, out.data());
    FAIL() << "the launch finished";
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("32 of 64 threads returned"), std::string::npos)
        << e.what();
  }
  // The emulator is usable after the failed launch.
  EXPECT_EQ(reversed(true, fkemu::Order::kAscending)[0], kBlock - 1);
}

// Each warp sums its lanes' values with shuffles down (a tree), and lane 0
// writes the sum; xor and up shuffles checked lane by lane.
void warp_kernel(const int* in, int* sums, int* xors, int* ups) {
  const int t = static_cast<int>(threadIdx.x);
  int v = in[t];
  for (int d = 16; d > 0; d /= 2) v += __shfl_down_sync(0xffffffffu, v, d);
  if (t % 32 == 0) sums[t / 32] = v;
  xors[t] = __shfl_xor_sync(0xffffffffu, in[t], 1);
  ups[t] = __shfl_up_sync(0xffffffffu, in[t], 3);
}

TEST(EmulatedDevice, WarpShufflesMoveLanesValues) {
  std::vector<int> in(kBlock), sums(3), xors(kBlock), ups(kBlock);
  for (int t = 0; t < kBlock; ++t) in[static_cast<size_t>(t)] = t * t + 1;
  for (fkemu::Order order : {fkemu::Order::kAscending, fkemu::Order::kDescending}) {
    fkemu::set_order(order);
    fkemu::launch(fkemu::config(1, kBlock), warp_kernel, in.data(), sums.data(), xors.data(),
                  ups.data());
    for (int w = 0; w < 3; ++w) {
      int want = 0;
      for (int l = 0; l < 32; ++l) want += in[static_cast<size_t>(w * 32 + l)];
      EXPECT_EQ(sums[static_cast<size_t>(w)], want) << "warp " << w;
    }
    for (int t = 0; t < kBlock; ++t) {
      EXPECT_EQ(xors[static_cast<size_t>(t)], in[static_cast<size_t>(t ^ 1)]);
      EXPECT_EQ(ups[static_cast<size_t>(t)], in[static_cast<size_t>(t % 32 >= 3 ? t - 3 : t)]);
    }
  }
  fkemu::set_order(fkemu::starting_order());
}

}  // namespace

namespace fkemu_fixture::cuda::emu {
void launch_read_before_write(int* before, int* after, int blocks);
}  // namespace fkemu_fixture::cuda::emu

namespace {

// A block's static shared memory starts as garbage (0xff bytes) in every
// block of every launch, as dynamic shared memory does: not as zeros (a
// function static's start), nor as the previous block's values.
TEST(EmulatedDevice, StaticSharedMemoryIsEachBlocksAndStartsAsGarbage) {
  for (int launch = 0; launch < 2; ++launch) {
    std::vector<int> before(3 * 64, 0), after(3 * 64, 0);
    fkemu_fixture::cuda::emu::launch_read_before_write(before.data(), after.data(), 3);
    for (int i = 0; i < 3 * 64; ++i) {
      ASSERT_EQ(before[static_cast<size_t>(i)], -1) << "launch " << launch << ", thread " << i;
      ASSERT_EQ(after[static_cast<size_t>(i)], i / 64 * 64 + 63 - i % 64) << i;
    }
  }
}

void index_kernel(int* out) {
  const int x = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int y = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  const int width = static_cast<int>(gridDim.x * blockDim.x);
  atomicAdd(&out[y * width + x], 1 + static_cast<int>(threadIdx.z));
}

TEST(EmulatedDevice, EveryThreadOfATwoDimensionalGridRunsOnce) {
  const dim3 grid(3, 2), block(4, 5, 2);
  std::vector<int> out(12 * 10);
  fkemu::launch(fkemu::config(grid, block), index_kernel, out.data());
  for (int v : out) EXPECT_EQ(v, 3);  // z = 0 adds 1, z = 1 adds 2
}

TEST(EmulatedDevice, LaunchesTheDeviceRefusesAreErrors) {
  std::vector<int> out(4096);
  EXPECT_THROW(fkemu::launch(fkemu::config(1, 1025), index_kernel, out.data()), fk::Error);
  EXPECT_THROW(fkemu::launch(fkemu::config(dim3(1, 65536), 1), index_kernel, out.data()),
               fk::Error);
}

// Each thread reads its slot of dynamic shared memory before and after
// writing it: garbage (0xff bytes) first, then its own value.
void dynamic_shared_kernel(int* before, int* after) {
  int* const s = static_cast<int*>(fkemu::dynamic_shared());
  const int t = static_cast<int>(threadIdx.x), i = static_cast<int>(blockIdx.x) * 64 + t;
  before[i] = s[t];
  s[t] = i;
  __syncthreads();
  after[i] = s[63 - t];
}

TEST(EmulatedDevice, DynamicSharedMemoryIsEachBlocksAndStartsAsGarbage) {
  std::vector<int> before(128), after(128);
  fkemu::launch(fkemu::config(2, 64, 64 * sizeof(int)), dynamic_shared_kernel, before.data(),
                after.data());
  for (int i = 0; i < 128; ++i) {
    EXPECT_EQ(before[static_cast<size_t>(i)], -1) << i;  // the previous block's values are gone
    EXPECT_EQ(after[static_cast<size_t>(i)], i / 64 * 64 + 63 - i % 64) << i;
  }
}

TEST(EmulatedDevice, DynamicSharedMemoryPast48KiBNeedsTheKernelsOptIn) {
  std::vector<int> before(64), after(64);
  const size_t big = 100 * 1024;
  EXPECT_THROW(
      fkemu::launch(fkemu::config(1, 64, big), dynamic_shared_kernel, before.data(), after.data()),
      fk::Error);
  ASSERT_EQ(
      fkemu::func_set_attribute(dynamic_shared_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                static_cast<int>(big)),
      cudaSuccess);
  fkemu::launch(fkemu::config(1, 64, big), dynamic_shared_kernel, before.data(), after.data());
  EXPECT_EQ(after[0], 63);
  // Past the device's 227 KiB even with an opt-in.
  EXPECT_NE(fkemu::func_set_attribute(dynamic_shared_kernel,
                                      cudaFuncAttributeMaxDynamicSharedMemorySize, 228 * 1024),
            cudaSuccess);
  EXPECT_THROW(fkemu::launch(fkemu::config(1, 64, 228 * 1024), dynamic_shared_kernel, before.data(),
                             after.data()),
               fk::Error);
}

// Three __syncthreads_or in a row in a 2-D block, each with its own
// predicate (none, one thread's, every odd thread's): every thread sees each
// call's own result, not the one before (the word is cleared in between).
void syncthreads_or_kernel(int* out, int one) {
  const int t = static_cast<int>(threadIdx.y * blockDim.x + threadIdx.x);
  const int none = __syncthreads_or(0);
  const int single = __syncthreads_or(t == one);
  const int odd = __syncthreads_or(t % 2);
  const int again = __syncthreads_or(0);
  out[t] = none + 2 * single + 4 * odd + 8 * again;
}

TEST(EmulatedDevice, SyncthreadsOrFoldsEachCallsPredicates) {
  for (fkemu::Order order : {fkemu::Order::kAscending, fkemu::Order::kDescending})
    for (int one : {0, 77, 95, -1}) {
      std::vector<int> out(kBlock, -1);
      fkemu::set_order(order);
      fkemu::launch(fkemu::config(1, dim3(32, 3)), syncthreads_or_kernel, out.data(), one);
      fkemu::set_order(fkemu::starting_order());
      for (int v : out) ASSERT_EQ(v, (one >= 0 ? 2 : 0) + 4) << "thread " << one;
    }
}

}  // namespace

namespace {

// Phase one writes a[i] = i over a grid stride, the grid syncs, phase two
// reads the cell another block wrote: only a grid barrier orders the two.
void grid_reverse_kernel(int* a, int* out, int n) {
  const int stride = static_cast<int>(gridDim.x * blockDim.x);
  for (int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x); i < n; i += stride)
    a[i] = i;
  fkemu::cooperative_groups::this_grid().sync();
  for (int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x); i < n; i += stride)
    out[i] = a[n - 1 - i];
}

TEST(EmulatedDevice, CooperativeLaunchesSyncTheirWholeGrid) {
  const void* id = fkemu::kernel_id(grid_reverse_kernel);
  const int n = 300;
  for (fkemu::Order order : {fkemu::Order::kAscending, fkemu::Order::kDescending}) {
    fkemu::set_order(order);
    std::vector<int> a(n, -1), out(n, -1);
    int* pa = a.data();
    int* po = out.data();
    int count = n;
    void* args[] = {&pa, &po, &count};
    ASSERT_EQ(fkemu::launch_cooperative_kernel(id, dim3(3), dim3(64), args, 0, nullptr),
              cudaSuccess);
    for (int i = 0; i < n; ++i) ASSERT_EQ(out[static_cast<size_t>(i)], n - 1 - i) << i;
  }
  fkemu::set_order(fkemu::starting_order());
}

TEST(EmulatedDevice, ACooperativeGridPastTheResidentBlocksIsRefused) {
  std::vector<int> a(8), out(8);
  int* pa = a.data();
  int* po = out.data();
  int count = 8;
  void* args[] = {&pa, &po, &count};
  fkemu::set_device(3, 2);  // two SMs, one block each
  EXPECT_EQ(fkemu::launch_cooperative_kernel(fkemu::kernel_id(grid_reverse_kernel), dim3(3),
                                             dim3(32), args, 0, nullptr),
            cudaErrorCooperativeLaunchTooLarge);
  fkemu::set_device(0);
}

TEST(EmulatedDevice, AGridSyncOutsideACooperativeLaunchIsAnError) {
  std::vector<int> a(8), out(8);
  EXPECT_THROW(fkemu::launch(fkemu::config(1, 32), grid_reverse_kernel, a.data(), out.data(), 8),
               fk::Error);
}

// One warp: D = A B + C for 16 x 16 half tiles, A row-major and B
// column-major (ldm past the tile), stored in `layout`; small integers, so
// every product and sum is exact. `skip_lane` (-1: none) skips mma_sync.
void wmma_kernel(const __half* a, const __half* b, float* d, nvcuda::wmma::layout_t layout,
                 int skip_lane) {
  namespace wmma = nvcuda::wmma;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::fill_fragment(acc, 1.0f);
  wmma::load_matrix_sync(fa, a, 24);
  wmma::load_matrix_sync(fb, b, 24);
  if (static_cast<int>(threadIdx.x) != skip_lane) wmma::mma_sync(acc, fa, fb, acc);
  wmma::store_matrix_sync(d, acc, 20, layout);
}

TEST(EmulatedDevice, WmmaMultipliesTilesInTheirLayouts) {
  alignas(32) __half a[16 * 24], b[16 * 24];
  for (int i = 0; i < 16 * 24; ++i) {
    a[i] = __float2half(static_cast<float>(i % 7 - 3));
    b[i] = __float2half(static_cast<float>(i % 5 - 2));
  }
  for (nvcuda::wmma::layout_t layout : {nvcuda::wmma::mem_row_major, nvcuda::wmma::mem_col_major}) {
    alignas(32) float d[16 * 20] = {};
    fkemu::launch(fkemu::config(1, 32), wmma_kernel, a, b, d, layout, -1);
    for (int m = 0; m < 16; ++m)
      for (int n = 0; n < 16; ++n) {
        float want = 1.0f;  // C
        // A(m, k) = a[m * 24 + k]; B(k, n) = b[n * 24 + k] (column-major).
        for (int k = 0; k < 16; ++k)
          want += __half2float(a[m * 24 + k]) * __half2float(b[n * 24 + k]);
        const float got = layout == nvcuda::wmma::mem_row_major ? d[m * 20 + n] : d[n * 20 + m];
        EXPECT_EQ(got, want) << "D(" << m << ", " << n << ")";
      }
  }
}

TEST(EmulatedDevice, AWmmaCallSomeLanesSkipStopsTheTest) {
  alignas(32) __half a[16 * 24] = {}, b[16 * 24] = {};
  alignas(32) float d[16 * 20];
  EXPECT_DEATH(
      fkemu::launch(fkemu::config(1, 32), wmma_kernel, a, b, d, nvcuda::wmma::mem_row_major, 5),
      "every lane of the warp must make each call");
}

TEST(EmulatedDevice, Tf32RoundsToNearestTiesAwayFromZero) {
  const float tie = 1.0f + 0x1p-11f;  // halfway between 1 and TF32's next, 1 + 2^-10
  EXPECT_EQ(nvcuda::wmma::__float_to_tf32(tie), 1.0f + 0x1p-10f);  // not to even (1)
  EXPECT_EQ(nvcuda::wmma::__float_to_tf32(-tie), -(1.0f + 0x1p-10f));
  EXPECT_EQ(nvcuda::wmma::__float_to_tf32(1.0f + 0x1p-11f - 0x1p-23f), 1.0f);
  EXPECT_EQ(nvcuda::wmma::__float_to_tf32(1.0f + 0x1p-11f + 0x1p-23f), 1.0f + 0x1p-10f);
  EXPECT_TRUE(std::isnan(nvcuda::wmma::__float_to_tf32(NAN)));
}

// One thread copies 16 bytes (or zeros) into shared memory, reading it back
// before and after waiting for the copy's group.
void cp_async_kernel(const int* in, bool present, int* before, int* after) {
  __shared__ __align__(16) int s[4];
  for (int i = 0; i < 4; ++i) s[i] = -1;
  minkowski::cuda::copy_16_bytes(s, in, present);
  minkowski::cuda::commit_copies();
  for (int i = 0; i < 4; ++i) before[i] = s[i];
  minkowski::cuda::wait_copies<0>();
  for (int i = 0; i < 4; ++i) after[i] = s[i];
}

TEST(EmulatedDevice, CpAsyncLandsAtTheWaitZerosWhenAbsent) {
  alignas(16) int in[4] = {1, 2, 3, 4};
  for (bool present : {true, false}) {
    int before[4], after[4];
    fkemu::launch(fkemu::config(1, 1), cp_async_kernel, in, present, before, after);
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(before[i], -1) << "copy landed before its wait";
      EXPECT_EQ(after[i], present ? in[i] : 0);
    }
  }
}

}  // namespace
