// The emulated device's scheduler (emulated_device.h): a block's threads as
// ucontext fibers on the launching thread, run between barriers in
// fkemu::order().
#include "emulated_device.h"

#include <ucontext.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "fk/error.h"

#if defined(__SANITIZE_ADDRESS__)
#define FKEMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FKEMU_ASAN 1
#endif
#endif
#ifdef FKEMU_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

namespace fkemu {

namespace {

// A thread's stack: kernels keep little on it, but ASan's frames are larger
// (and its swapcontext clears the shadow of the whole stack at every switch,
// so a larger stack costs at every barrier).
#ifdef FKEMU_ASAN
constexpr size_t kStackBytes = size_t{128} << 10;
#else
constexpr size_t kStackBytes = size_t{64} << 10;
#endif
constexpr int kWarp = 32;

enum class State { kReady, kAtBlockBarrier, kAtWarpBarrier, kDone };

struct Fiber {
  ucontext_t context;
  char* stack = nullptr;  // one of g_stacks
  State state = State::kReady;
  uint3 index{};
  int linear = 0;
  void* fake_stack = nullptr;  // ASan's, while the fiber is switched out
};

struct Block {
  Config config;
  uint3 index{};
  const std::function<void()>* body = nullptr;
  std::vector<Fiber> fibers;
  int live = 0;
  Fiber* running = nullptr;
  ucontext_t scheduler;
  void* scheduler_fake_stack = nullptr;
  const void* scheduler_stack_bottom = nullptr;
  size_t scheduler_stack_size = 0;
  std::vector<uint64_t> lanes;        // exchange()'s slots, one per thread
  std::vector<unsigned char> shared;  // dynamic shared memory, 128 bytes of slack for alignment
};

Order g_order = Order::kAscending;
// Per kernel, the dynamic shared memory it opted in to (opt_in_shared).
std::unordered_map<const void*, int> g_opted_in;
constexpr size_t kSharedDefault = 48 * 1024, kSharedOptInLimit = 227 * 1024;
// Threads' stacks, kept from launch to launch (allocating them per launch
// dominated the emulator's time under ASan).
std::vector<std::unique_ptr<char[]>> g_stacks;
Block* g_block = nullptr;  // the block being run (launches do not nest)

char* stack(int thread) {
  while (static_cast<int>(g_stacks.size()) <= thread) g_stacks.emplace_back(new char[kStackBytes]);
  return g_stacks[static_cast<size_t>(thread)].get();
}

Fiber& running() {
  return *g_block->running;
}

void switch_to_scheduler(Fiber& f, bool done) {
  Block& b = *g_block;
#ifdef FKEMU_ASAN
  __sanitizer_start_switch_fiber(done ? nullptr : &f.fake_stack, b.scheduler_stack_bottom,
                                 b.scheduler_stack_size);
#endif
  swapcontext(&f.context, &b.scheduler);
#ifdef FKEMU_ASAN
  __sanitizer_finish_switch_fiber(f.fake_stack, nullptr, nullptr);
#endif
  (void)done;
}

void fiber_main() {
  Block& b = *g_block;
#ifdef FKEMU_ASAN
  // The stack switched from: the scheduler's, where every fiber returns to.
  __sanitizer_finish_switch_fiber(nullptr, &b.scheduler_stack_bottom, &b.scheduler_stack_size);
#endif
  (*b.body)();
  Fiber& f = running();
  f.state = State::kDone;
  --b.live;
  switch_to_scheduler(f, true);  // never resumed
}

void resume(Block& b, Fiber& f) {
  b.running = &f;
#ifdef FKEMU_ASAN
  __sanitizer_start_switch_fiber(&b.scheduler_fake_stack, f.stack, kStackBytes);
#endif
  swapcontext(&b.scheduler, &f.context);
#ifdef FKEMU_ASAN
  __sanitizer_finish_switch_fiber(b.scheduler_fake_stack, nullptr, nullptr);
#endif
  b.running = nullptr;
}

std::string block_name(const Block& b) {
  return "block (" + std::to_string(b.index.x) + ", " + std::to_string(b.index.y) + ", " +
         std::to_string(b.index.z) + ")";
}

// Runs one block to its end.
void run_block(Block& b) {
  const int n = static_cast<int>(b.fibers.size());
  for (Fiber& f : b.fibers) {
    f.state = State::kReady;
    getcontext(&f.context);
    f.context.uc_stack.ss_sp = f.stack;
    f.context.uc_stack.ss_size = kStackBytes;
    f.context.uc_link = nullptr;
    makecontext(&f.context, fiber_main, 0);
  }
  b.live = n;
  std::fill(b.shared.begin(), b.shared.end(), static_cast<unsigned char>(0xff));
  for (;;) {
    for (int i = 0; i < n; ++i) {
      Fiber& f = b.fibers[g_order == Order::kAscending ? i : n - 1 - i];
      if (f.state == State::kReady) resume(b, f);
    }
    if (b.live == 0) return;
    // Every live thread now waits at a barrier. Warps whose live lanes all
    // wait at a warp barrier go on first.
    bool released = false;
    for (int w0 = 0; w0 < n; w0 += kWarp) {
      bool all = true, any = false;
      for (int i = w0; i < std::min(n, w0 + kWarp); ++i) {
        if (b.fibers[i].state == State::kDone) continue;
        any = true;
        all = all && b.fibers[i].state == State::kAtWarpBarrier;
      }
      if (!any || !all) continue;
      for (int i = w0; i < std::min(n, w0 + kWarp); ++i)
        if (b.fibers[i].state == State::kAtWarpBarrier) b.fibers[i].state = State::kReady;
      released = true;
    }
    if (released) continue;
    bool all_at_block = true;
    for (const Fiber& f : b.fibers)
      all_at_block = all_at_block && (f.state == State::kDone || f.state == State::kAtBlockBarrier);
    FK_CHECK(all_at_block && b.live == n, "fkemu::launch",
             "every thread of a block at each __syncthreads (and every live lane of a warp at "
             "each warp barrier)",
             block_name(b) + ": " + std::to_string(n - b.live) + " of " + std::to_string(n) +
                 " threads returned while others wait at a barrier, or a warp barrier waits "
                 "on a lane held at __syncthreads");
    for (Fiber& f : b.fibers) f.state = State::kReady;
  }
}

}  // namespace

Order order() {
  return g_order;
}
void set_order(Order o) {
  g_order = o;
}

void run_grid(const Config& c, const std::function<void()>& body, const void* kernel) {
  FK_CHECK(g_block == nullptr, "fkemu::launch", "no launch from inside a kernel",
           "a launch while a block runs");
  const int64_t threads = int64_t{c.block.x} * c.block.y * c.block.z;
  FK_CHECK(threads >= 1 && threads <= 1024 && c.block.z <= 64, "fkemu::launch",
           "1 to 1024 threads per block (z up to 64)",
           std::to_string(c.block.x) + " x " + std::to_string(c.block.y) + " x " +
               std::to_string(c.block.z));
  FK_CHECK(c.grid.x >= 1 && c.grid.y >= 1 && c.grid.z >= 1 && c.grid.y <= 65535 &&
               c.grid.z <= 65535 && c.grid.x <= 2147483647u,
           "fkemu::launch", "a grid of 1..2^31-1 x 1..65535 x 1..65535 blocks",
           std::to_string(c.grid.x) + " x " + std::to_string(c.grid.y) + " x " +
               std::to_string(c.grid.z));
  if (kernel != nullptr && c.shared_bytes > kSharedDefault) {
    const auto it = g_opted_in.find(kernel);
    const size_t opted = it == g_opted_in.end() ? 0 : static_cast<size_t>(it->second);
    FK_CHECK(c.shared_bytes <= opted, "fkemu::launch",
             "dynamic shared memory past 48 KiB opted in by cudaFuncSetAttribute",
             std::to_string(c.shared_bytes) + " bytes, " + std::to_string(opted) + " opted in");
  }
  FK_CHECK(c.shared_bytes <= kSharedOptInLimit, "fkemu::launch",
           "at most 227 KiB of dynamic shared memory", std::to_string(c.shared_bytes) + " bytes");
  Block b;
  b.config = c;
  b.body = &body;
  b.fibers.resize(static_cast<size_t>(threads));
  b.lanes.resize(static_cast<size_t>(threads));
  b.shared.resize(c.shared_bytes > 0 ? c.shared_bytes + 128 : 0);
  int linear = 0;
  for (unsigned z = 0; z < c.block.z; ++z)
    for (unsigned y = 0; y < c.block.y; ++y)
      for (unsigned x = 0; x < c.block.x; ++x, ++linear) {
        Fiber& f = b.fibers[static_cast<size_t>(linear)];
        f.stack = stack(linear);
        f.index = uint3{x, y, z};
        f.linear = linear;
      }
  g_block = &b;
  try {
    // Blocks run in the threads' order too, so one block reading what
    // another writes in the same launch shows as well.
    const bool down = g_order == Order::kDescending;
    for (unsigned z = 0; z < c.grid.z; ++z)
      for (unsigned y = 0; y < c.grid.y; ++y)
        for (unsigned x = 0; x < c.grid.x; ++x) {
          b.index =
              down ? uint3{c.grid.x - 1 - x, c.grid.y - 1 - y, c.grid.z - 1 - z} : uint3{x, y, z};
          run_block(b);
        }
  } catch (...) {
    g_block = nullptr;
    throw;
  }
  g_block = nullptr;
}

uint3 thread_index() {
  return running().index;
}
uint3 block_index() {
  return g_block->index;
}
dim3 block_dims() {
  return g_block->config.block;
}
dim3 grid_dims() {
  return g_block->config.grid;
}
int lane() {
  return running().linear % kWarp;
}

void sync_block() {
  Fiber& f = running();
  f.state = State::kAtBlockBarrier;
  switch_to_scheduler(f, false);
}

void sync_warp() {
  Fiber& f = running();
  f.state = State::kAtWarpBarrier;
  switch_to_scheduler(f, false);
}

uint64_t exchange(uint64_t bits, int from) {
  Block& b = *g_block;
  const int self = running().linear, base = self - self % kWarp;
  b.lanes[static_cast<size_t>(self)] = bits;
  sync_warp();
  const int n = static_cast<int>(b.fibers.size());
  const int source = from >= 0 && from < kWarp && base + from < n ? base + from : self;
  const uint64_t out = b.lanes[static_cast<size_t>(source)];
  sync_warp();  // every lane has read before any writes its next value
  return out;
}

void* dynamic_shared() {
  std::vector<unsigned char>& shared = g_block->shared;
  if (shared.empty()) return nullptr;
  const auto at = reinterpret_cast<uintptr_t>(shared.data());
  return shared.data() + ((128 - at % 128) % 128);
}

void check_launch(const char*) {}

void check_cuda(cudaError_t e, const char* where) {
  FK_CHECK(e == cudaSuccess, where, "cudaSuccess", "error code " + std::to_string(e));
}

cudaError_t memcpy_async(void* dst, const void* src, size_t bytes, cudaMemcpyKind, cudaStream_t) {
  if (bytes > 0) std::memmove(dst, src, bytes);
  return cudaSuccess;
}

cudaError_t memset_async(void* dst, int value, size_t bytes, cudaStream_t) {
  if (bytes > 0) std::memset(dst, value, bytes);
  return cudaSuccess;
}

cudaError_t malloc_async(void** p, size_t bytes, cudaStream_t) {
  *p = std::malloc(bytes > 0 ? bytes : 1);
  return *p != nullptr ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t free_async(void* p, cudaStream_t) {
  std::free(p);
  return cudaSuccess;
}

cudaError_t get_last_error() {
  return cudaSuccess;
}

cudaError_t device_get_attribute(int* value, cudaDeviceAttr attr, int) {
  switch (attr) {
    case cudaDevAttrComputeCapabilityMajor:
      *value = 9;
      return cudaSuccess;
    case cudaDevAttrComputeCapabilityMinor:
      *value = 0;
      return cudaSuccess;
    case cudaDevAttrMultiProcessorCount:
      *value = 132;
      return cudaSuccess;
    case cudaDevAttrMaxThreadsPerBlock:
      *value = 1024;
      return cudaSuccess;
    case cudaDevAttrWarpSize:
      *value = kWarp;
      return cudaSuccess;
    case cudaDevAttrMaxSharedMemoryPerBlock:
      *value = static_cast<int>(kSharedDefault);
      return cudaSuccess;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin:
      *value = static_cast<int>(kSharedOptInLimit);
      return cudaSuccess;
    default:
      return cudaErrorInvalidValue;
  }
}

cudaError_t opt_in_shared(const void* kernel, cudaFuncAttribute attr, int value) {
  if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize || value < 0 ||
      static_cast<size_t>(value) > kSharedOptInLimit)
    return cudaErrorInvalidValue;
  g_opted_in[kernel] = value;
  return cudaSuccess;
}

void unsupported(const char* where, const char* expected, int dtype) {
  throw fk::Error(where, expected, "dtype code " + std::to_string(dtype));
}

}  // namespace fkemu
