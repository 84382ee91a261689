// The emulated device's scheduler (emulated_device.h): a block's threads as
// fibers on the launching thread, run between barriers in fkemu::order(). A
// fiber switch is switch_stack below: the callee-saved registers pushed on
// one stack and popped from the other (glibc's swapcontext makes a
// signal-mask system call at every switch, and its longjmp walks the
// thread's cleanup handlers). A fiber whose thread returns goes on to start
// the next thread in that order (a thread starts on the stack of the fiber
// that reaches it), so a kernel without barriers costs one start per block
// rather than one per thread.
#include "emulated_device.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
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
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

namespace fkemu {

namespace detail {
thread_local constinit uint3 running_thread [[gnu::tls_model("initial-exec")]]{};
thread_local constinit uint3 running_block [[gnu::tls_model("initial-exec")]]{};
}  // namespace detail

namespace {

// A thread's stack: kernels keep little on it, but ASan's frames are larger.
#ifdef FKEMU_ASAN
constexpr size_t kStackBytes = size_t{128} << 10;
#else
constexpr size_t kStackBytes = size_t{64} << 10;
#endif
constexpr int kWarp = 32;

enum class State { kNotStarted, kReady, kAtBlockBarrier, kAtWarpBarrier, kAtGridBarrier, kDone };

#if !defined(__x86_64__)
#error "the emulated device's fiber switch (switch_stack) is written for x86-64"
#endif
// fkemu_switch_stack(save, to): pushes the callee-saved registers, MXCSR and
// the x87 control word (the SysV ABI's preserved state) on the running
// stack, stores its pointer in *save, and resumes the stack `to` points at,
// popping its state and returning into it. fkemu_leave_stack(to) resumes
// `to` and abandons the running stack (noreturn, so ASan unpoisons what its
// frames held). A fresh stack (fresh_stack) returns into fkemu_fiber_entry,
// which calls fkemu_fiber_main.
extern "C" void fkemu_switch_stack(void** save, void* to);
extern "C" [[noreturn]] void fkemu_leave_stack(void* to);
extern "C" void fkemu_fiber_entry();
asm(R"(
  .text
  .p2align 4
  .type fkemu_switch_stack, @function
fkemu_switch_stack:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
.Lfkemu_resume:
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size fkemu_switch_stack, .-fkemu_switch_stack
  .p2align 4
  .type fkemu_leave_stack, @function
fkemu_leave_stack:
  movq %rdi, %rsp
  jmp .Lfkemu_resume
  .size fkemu_leave_stack, .-fkemu_leave_stack
  .p2align 4
  .type fkemu_fiber_entry, @function
fkemu_fiber_entry:
  andq $-16, %rsp
  call fkemu_fiber_main
  ud2
  .size fkemu_fiber_entry, .-fkemu_fiber_entry
)");

// A stack of `bytes` at `base` laid out as switch_stack leaves a suspended
// one, returning into fkemu_fiber_entry with the running thread's MXCSR and
// x87 control word and zeroed registers; the pointer to resume it from.
void* fresh_stack(char* base, size_t bytes) {
  auto* top =
      reinterpret_cast<uint64_t*>(reinterpret_cast<uintptr_t>(base + bytes) & ~uintptr_t{15});
  uint64_t* sp = top - 9;  // control words, six registers, the return address, padding
  std::memset(sp, 0, 9 * sizeof(uint64_t));
  uint32_t mxcsr = 0;
  uint16_t x87 = 0;
  asm volatile("stmxcsr %0" : "=m"(mxcsr));
  asm volatile("fnstcw %0" : "=m"(x87));
  std::memcpy(sp, &mxcsr, sizeof(mxcsr));
  std::memcpy(reinterpret_cast<char*>(sp) + 4, &x87, sizeof(x87));
  sp[7] = reinterpret_cast<uint64_t>(&fkemu_fiber_entry);
  return sp;
}

// One thread of the blocks being run.
struct Fiber {
  void* context = nullptr;     // its suspended stack (at a barrier)
  char* stack = nullptr;       // one of g_stacks, where a fiber started here runs
  char* running_on = nullptr;  // the stack it runs on (that of the fiber that started it)
  State state = State::kReady;
  uint3 index{};
  int linear = 0;              // within its block
  int block = 0;               // its block's position in the run
  void* fake_stack = nullptr;  // ASan's, while the fiber is switched out
};

// The blocks that run together: one at a time, or a cooperative launch's
// whole grid (its grid barriers need every block alive).
struct Run {
  Config config;
  bool cooperative = false;
  std::vector<uint3> blocks;
  int threads = 0;  // per block
  const std::function<void()>* body = nullptr;
  std::vector<Fiber> fibers;  // block b's threads at [b threads, (b + 1) threads)
  int live = 0;
  Fiber* running = nullptr;
  int start_at = 0;           // the position (in the run's order) a new fiber starts at
  void* scheduler = nullptr;  // the launching thread's stack, suspended while a fiber runs
  void* scheduler_fake_stack = nullptr;
  const void* scheduler_stack_bottom = nullptr;
  size_t scheduler_stack_size = 0;
  std::vector<uint64_t> lanes;  // exchange()'s slots, one per thread
  // Dynamic shared memory per block, 128 bytes of slack for alignment.
  std::vector<std::vector<unsigned char>> shared;
};

// FKEMU_ORDER=descending starts every program in descending order (a whole
// test suite run once each way); unset or "ascending", ascending.
// Read before main: a value it does not take stops the program with one
// line, as a bad command-line flag would.
Order order_from_environment() {
  const char* v = std::getenv("FKEMU_ORDER");
  const std::string given = v == nullptr ? "ascending" : v;
  if (given != "ascending" && given != "descending") {
    std::fprintf(stderr, "FKEMU_ORDER: expected \"ascending\" or \"descending\", got \"%s\"\n",
                 given.c_str());
    std::exit(2);
  }
  return given == "ascending" ? Order::kAscending : Order::kDescending;
}
const Order g_starting_order = order_from_environment();
Order g_order = g_starting_order;
int g_device = 0;
std::unordered_map<int, int> g_multiprocessors;  // per device; 132 where unset
// Per kernel, the dynamic shared memory it opted in to (opt_in_shared).
std::unordered_map<const void*, int> g_opted_in;
// A launch reads g_opted_in on its own thread before a stream model takes
// it (and serializes the runs).
std::mutex g_opted_in_mutex;

int opted_in(const void* kernel) {
  std::lock_guard<std::mutex> lock(g_opted_in_mutex);
  const auto it = g_opted_in.find(kernel);
  return it == g_opted_in.end() ? -1 : it->second;
}
constexpr size_t kSharedDefault = 48 * 1024, kSharedOptInLimit = 227 * 1024;
// Threads' stacks, kept from launch to launch (allocating them per launch
// dominated the emulator's time under ASan).
std::vector<std::unique_ptr<char[]>> g_stacks;
// The blocks being run on this thread (launches do not nest; with the
// emulated runtime's stream model other threads launch meanwhile).
thread_local constinit Run* g_run [[gnu::tls_model("initial-exec")]] = nullptr;
uint64_t g_launches = 0;
// Counts the blocks (or cooperative grids) run, from 1: FreshShared's record
// of the one it filled for. Runs are serialized, but may move between
// threads.
std::atomic<uint64_t> g_block_serial{0};

char* stack(int thread) {
  while (static_cast<int>(g_stacks.size()) <= thread) g_stacks.emplace_back(new char[kStackBytes]);
  return g_stacks[static_cast<size_t>(thread)].get();
}

Fiber& running() {
  return *g_run->running;
}

// f runs from now on (thread_index and block_index answer for it).
void enter(Run& r, Fiber& f) {
  r.running = &f;
  detail::running_thread = f.index;
  detail::running_block = r.blocks[static_cast<size_t>(f.block)];
}

// The thread at `position` in the order threads run in.
Fiber& at(Run& r, int position) {
  const int n = static_cast<int>(r.fibers.size());
  return r.fibers[static_cast<size_t>(g_order == Order::kAscending ? position : n - 1 - position)];
}

// f's position in that order.
int position_of(const Run& r, const Fiber& f) {
  const int i = static_cast<int>(&f - r.fibers.data());
  return g_order == Order::kAscending ? i : static_cast<int>(r.fibers.size()) - 1 - i;
}

void switch_to_scheduler(Fiber& f, bool done) {
  Run& r = *g_run;
#ifdef FKEMU_ASAN
  __sanitizer_start_switch_fiber(done ? nullptr : &f.fake_stack, r.scheduler_stack_bottom,
                                 r.scheduler_stack_size);
#endif
  if (done) fkemu_leave_stack(r.scheduler);
  fkemu_switch_stack(&f.context, r.scheduler);
#ifdef FKEMU_ASAN
  __sanitizer_finish_switch_fiber(f.fake_stack, nullptr, nullptr);
#endif
}

// Whether a returning thread f's fiber may go on to start `next`: within
// f's warp always; into another warp only when no lane of f's warp waits at
// a warp barrier, since that warp runs on through its warp barriers before
// the next one starts (run_blocks).
bool may_start_next(const Run& r, const Fiber& f, const Fiber& next) {
  if (next.block == f.block && next.linear / kWarp == f.linear / kWarp) return true;
  const int lo = f.block * r.threads + f.linear - f.linear % kWarp;
  const int hi = std::min(lo + kWarp, (f.block + 1) * r.threads);
  for (int i = lo; i < hi; ++i)
    if (r.fibers[static_cast<size_t>(i)].state == State::kAtWarpBarrier) return false;
  return true;
}
}  // namespace

// A fiber: runs threads from r.start_at on, one after another while each
// returns and the next has not started. Called by fkemu_fiber_entry only.
extern "C" [[noreturn, gnu::used]] void fkemu_fiber_main() {
  Run& r = *g_run;
#ifdef FKEMU_ASAN
  // The stack switched from: the scheduler's, where every fiber returns to.
  __sanitizer_finish_switch_fiber(nullptr, &r.scheduler_stack_bottom, &r.scheduler_stack_size);
#endif
  const int n = static_cast<int>(r.fibers.size());
  char* const stack = running().running_on;
  for (int position = r.start_at;;) {
    (*r.body)();
    Fiber& f = running();  // the thread that returned (it may have been resumed since)
    f.state = State::kDone;
    --r.live;
    position = position_of(r, f) + 1;
    if (position == n || at(r, position).state != State::kNotStarted ||
        !may_start_next(r, f, at(r, position)))
      switch_to_scheduler(f, true);  // does not return
    Fiber& next = at(r, position);
    next.state = State::kReady;
    next.running_on = stack;
    enter(r, next);
  }
}

namespace {

// Runs f until it waits at a barrier or its fiber ends: a new fiber (on f's
// own stack) when f has not started.
void resume(Run& r, Fiber& f) {
  const bool fresh = f.state == State::kNotStarted;
  if (fresh) {
    f.state = State::kReady;
    f.running_on = f.stack;
    f.context = fresh_stack(f.stack, kStackBytes);
    r.start_at = position_of(r, f);
  }
  enter(r, f);
#ifdef FKEMU_ASAN
  __sanitizer_start_switch_fiber(&r.scheduler_fake_stack, f.running_on, kStackBytes);
#endif
  fkemu_switch_stack(&r.scheduler, f.context);
#ifdef FKEMU_ASAN
  __sanitizer_finish_switch_fiber(r.scheduler_fake_stack, nullptr, nullptr);
#endif
  r.running = nullptr;
}

std::string block_name(uint3 b) {
  return "block (" + std::to_string(b.x) + ", " + std::to_string(b.y) + ", " + std::to_string(b.z) +
         ")";
}

// Opens the barriers of fibers [lo, hi) (a warp or a block) whose live
// threads all wait at `at`; whether one opened. A block barrier that some of
// the block's threads returned before is an error (the device would hang or
// worse).
bool open_if_all_wait(Run& r, int lo, int hi, State at) {
  int waiting = 0, done = 0;
  for (int i = lo; i < hi; ++i) {
    waiting += r.fibers[static_cast<size_t>(i)].state == at;
    done += r.fibers[static_cast<size_t>(i)].state == State::kDone;
  }
  if (waiting == 0) return false;
  FK_CHECK(at == State::kAtWarpBarrier || done == 0, "fkemu::launch",
           "every thread of a block at each __syncthreads",
           block_name(r.blocks[static_cast<size_t>(lo / r.threads)]) + ": " + std::to_string(done) +
               " of " + std::to_string(r.threads) +
               " threads returned while others wait at a barrier");
  if (waiting + done < hi - lo) return false;
  for (int i = lo; i < hi; ++i)
    if (r.fibers[static_cast<size_t>(i)].state == at)
      r.fibers[static_cast<size_t>(i)].state = State::kReady;
  return true;
}

// Runs r's blocks to their end. Each warp in turn (in the order) runs as far
// as it can alone: its threads in the order up to their next barrier, again
// and again while its warp barrier opens, until they wait at __syncthreads
// (or a grid sync) or return; then the block barriers open. So a warp runs
// ahead of the others through its shuffles, __syncwarp and WMMA calls, as
// the device may run it: a read of another warp's shared memory that only a
// warp barrier (not __syncthreads) stands before shows as an order-dependent
// result, as a missing __syncthreads between threads does.
void run_blocks(Run& r) {
  const int n = static_cast<int>(r.fibers.size());
  for (Fiber& f : r.fibers) f.state = State::kNotStarted;
  r.live = n;
  for (auto& shared : r.shared) std::fill(shared.begin(), shared.end(), 0xff);
  g_block_serial.fetch_add(1, std::memory_order_relaxed);
  const int warps_per_block = (r.threads + kWarp - 1) / kWarp;
  const int warps = n / r.threads * warps_per_block;
  for (;;) {
    for (int k = 0; k < warps; ++k) {
      const int w = g_order == Order::kAscending ? k : warps - 1 - k;
      const int b0 = w / warps_per_block * r.threads;
      const int lo = b0 + w % warps_per_block * kWarp, hi = std::min(lo + kWarp, b0 + r.threads);
      do {
        for (int j = 0; j < hi - lo; ++j) {
          Fiber& f =
              r.fibers[static_cast<size_t>(g_order == Order::kAscending ? lo + j : hi - 1 - j)];
          if (f.state == State::kNotStarted || f.state == State::kReady) resume(r, f);
        }
      } while (open_if_all_wait(r, lo, hi, State::kAtWarpBarrier));
    }
    if (r.live == 0) return;
    // Every live thread now waits at a block or grid barrier (or, held
    // between the two, at a warp barrier: refused below).
    bool opened = false;
    for (int b0 = 0; b0 < n; b0 += r.threads)
      opened |= open_if_all_wait(r, b0, b0 + r.threads, State::kAtBlockBarrier);
    if (opened) continue;
    bool grid = r.cooperative && r.live == n;
    for (const Fiber& f : r.fibers) grid = grid && f.state == State::kAtGridBarrier;
    FK_CHECK(grid, "fkemu::launch",
             "every live thread of a warp, block or grid at each of its barriers",
             "threads held at different barriers (a warp barrier waiting on a lane held at "
             "__syncthreads, a grid sync some thread returned before, or one outside a "
             "cooperative launch)");
    for (Fiber& f : r.fibers) f.state = State::kReady;
  }
}

}  // namespace

Order order() {
  return g_order;
}
void set_order(Order o) {
  g_order = o;
}
Order starting_order() {
  return g_starting_order;
}
void set_device(int device, int multiprocessors) {
  FK_CHECK(device >= 0 && multiprocessors >= 1, "fkemu::set_device",
           "a device index >= 0 with at least 1 SM",
           std::to_string(device) + " with " + std::to_string(multiprocessors));
  g_device = device;
  g_multiprocessors[device] = multiprocessors;
}

void check_config(const Config& c, const void* kernel) {
  FK_CHECK(g_run == nullptr, "fkemu::launch", "no launch from inside a kernel",
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
    const size_t opted = static_cast<size_t>(std::max(opted_in(kernel), 0));
    FK_CHECK(c.shared_bytes <= opted, "fkemu::launch",
             "dynamic shared memory past 48 KiB opted in by cudaFuncSetAttribute",
             std::to_string(c.shared_bytes) + " bytes, " + std::to_string(opted) + " opted in");
  }
  FK_CHECK(c.shared_bytes <= kSharedOptInLimit, "fkemu::launch",
           "at most 227 KiB of dynamic shared memory", std::to_string(c.shared_bytes) + " bytes");
}

void run_grid(const Config& c, const std::function<void()>& body, const void* kernel) {
  check_config(c, kernel);
  const int64_t threads = int64_t{c.block.x} * c.block.y * c.block.z;
  // Blocks run in the threads' order too, so one block reading what another
  // writes in the same launch shows as well.
  std::vector<uint3> blocks;
  const bool down = g_order == Order::kDescending;
  for (unsigned z = 0; z < c.grid.z; ++z)
    for (unsigned y = 0; y < c.grid.y; ++y)
      for (unsigned x = 0; x < c.grid.x; ++x)
        blocks.push_back(down ? uint3{c.grid.x - 1 - x, c.grid.y - 1 - y, c.grid.z - 1 - z}
                              : uint3{x, y, z});
  const size_t together = c.cooperative ? blocks.size() : 1;
  Run r;
  r.config = c;
  r.cooperative = c.cooperative;
  r.threads = static_cast<int>(threads);
  r.body = &body;
  r.fibers.resize(together * static_cast<size_t>(threads));
  r.lanes.resize(r.fibers.size());
  r.shared.assign(together,
                  std::vector<unsigned char>(c.shared_bytes > 0 ? c.shared_bytes + 128 : 0));
  for (size_t b = 0; b < together; ++b) {
    int linear = 0;
    for (unsigned z = 0; z < c.block.z; ++z)
      for (unsigned y = 0; y < c.block.y; ++y)
        for (unsigned x = 0; x < c.block.x; ++x, ++linear) {
          const size_t i = b * static_cast<size_t>(threads) + static_cast<size_t>(linear);
          Fiber& f = r.fibers[i];
          f.stack = stack(static_cast<int>(i));
          f.index = uint3{x, y, z};
          f.linear = linear;
          f.block = static_cast<int>(b);
        }
  }
  ++g_launches;
  g_run = &r;
  try {
    for (size_t b0 = 0; b0 < blocks.size(); b0 += together) {
      r.blocks.assign(blocks.begin() + static_cast<std::ptrdiff_t>(b0),
                      blocks.begin() + static_cast<std::ptrdiff_t>(b0 + together));
      run_blocks(r);
    }
  } catch (...) {
#ifdef FKEMU_ASAN
    // Fibers left at a barrier never return through their frames: their
    // stacks' shadow is cleared for the threads of later launches.
    for (size_t i = 0; i < r.fibers.size(); ++i)
      ASAN_UNPOISON_MEMORY_REGION(stack(static_cast<int>(i)), kStackBytes);
#endif
    g_run = nullptr;
    throw;
  }
  g_run = nullptr;
}

uint64_t launch_count() {
  return g_launches;
}
dim3 block_dims() {
  return g_run->config.block;
}
dim3 grid_dims() {
  return g_run->config.grid;
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

void sync_grid() {
  // Outside a cooperative launch the scheduler refuses it (a throw here would
  // leave the fiber's stack).
  Fiber& f = running();
  f.state = State::kAtGridBarrier;
  switch_to_scheduler(f, false);
}

uint64_t exchange(uint64_t bits, int from) {
  Run& r = *g_run;
  const Fiber& f = running();
  const int block0 = f.block * r.threads;
  const int self = f.linear, base = self - self % kWarp;
  r.lanes[static_cast<size_t>(block0 + self)] = bits;
  sync_warp();
  const int source = from >= 0 && from < kWarp ? base + from : self;
  // The device's value from a lane that returned, or that a partial warp
  // lacks, is undefined: all bits set (a NaN, -1) makes a use of it show.
  const bool absent =
      source >= r.threads || r.fibers[static_cast<size_t>(block0 + source)].state == State::kDone;
  const uint64_t out = absent ? ~uint64_t{0} : r.lanes[static_cast<size_t>(block0 + source)];
  sync_warp();  // every lane has read before any writes its next value
  return out;
}

void* dynamic_shared() {
  std::vector<unsigned char>& shared = g_run->shared[static_cast<size_t>(running().block)];
  if (shared.empty()) return nullptr;
  const auto at = reinterpret_cast<uintptr_t>(shared.data());
  return shared.data() + ((128 - at % 128) % 128);
}

void FreshShared::fill(void* variable, size_t bytes) {
  const uint64_t block = g_block_serial.load(std::memory_order_relaxed);
  if (block_ == block) return;
  std::memset(variable, 0xff, bytes);
  block_ = block;
}

void check_launch(const char*) {}

void check_cuda(cudaError_t e, const char* where) {
  FK_CHECK(e == cudaSuccess, where, "cudaSuccess", "error code " + std::to_string(e));
}

namespace {
StreamModel g_stream_model = nullptr;
RuntimeCalls g_runtime{};  // members null: no runtime linked
}  // namespace

StreamModel stream_model() {
  return g_stream_model;
}

void set_stream_model(StreamModel model) {
  g_stream_model = model;
}

void set_runtime_calls(const RuntimeCalls& calls) {
  g_runtime = calls;
}

void submit(cudaStream_t stream, StreamWork work) {
  if (g_stream_model != nullptr)
    g_stream_model(stream, std::move(work));
  else
    work();
}

cudaError_t memcpy_async(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                         cudaStream_t stream) {
  if (g_runtime.memcpy_async != nullptr)
    return g_runtime.memcpy_async(dst, src, bytes, kind, stream);
  if (bytes > 0) submit(stream, [=] { std::memmove(dst, src, bytes); });
  return cudaSuccess;
}

cudaError_t memset_async(void* dst, int value, size_t bytes, cudaStream_t stream) {
  if (g_runtime.memset_async != nullptr) return g_runtime.memset_async(dst, value, bytes, stream);
  if (bytes > 0) submit(stream, [=] { std::memset(dst, value, bytes); });
  return cudaSuccess;
}

cudaError_t malloc_async(void** p, size_t bytes, cudaStream_t stream) {
  if (g_runtime.malloc_async != nullptr) return g_runtime.malloc_async(p, bytes, stream);
  *p = std::malloc(bytes > 0 ? bytes : 1);
  return *p != nullptr ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t free_async(void* p, cudaStream_t stream) {
  if (g_runtime.free_async != nullptr) return g_runtime.free_async(p, stream);
  std::free(p);
  return cudaSuccess;
}

cudaError_t get_last_error() {
  if (g_runtime.get_last_error != nullptr) return g_runtime.get_last_error();
  return cudaSuccess;
}

cudaError_t device_get_attribute(int* value, cudaDeviceAttr attr, int device) {
  switch (attr) {
    case cudaDevAttrComputeCapabilityMajor:
      *value = 9;
      return cudaSuccess;
    case cudaDevAttrComputeCapabilityMinor:
      *value = 0;
      return cudaSuccess;
    case cudaDevAttrMultiProcessorCount:
      *value = multiprocessors(device);
      return cudaSuccess;
    case cudaDevAttrCooperativeLaunch:
      *value = 1;
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
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor:
      *value = 228 * 1024;
      return cudaSuccess;
    case cudaDevAttrMaxThreadsPerMultiProcessor:
      *value = 2048;
      return cudaSuccess;
    case cudaDevAttrMaxBlocksPerMultiprocessor:
      *value = 32;
      return cudaSuccess;
    case cudaDevAttrMaxRegistersPerBlock:
    case cudaDevAttrMaxRegistersPerMultiprocessor:
      *value = 65536;
      return cudaSuccess;
    case cudaDevAttrMaxBlockDimX:
    case cudaDevAttrMaxBlockDimY:
      *value = 1024;
      return cudaSuccess;
    case cudaDevAttrMaxBlockDimZ:
      *value = 64;
      return cudaSuccess;
    case cudaDevAttrMaxGridDimX:
      *value = 2147483647;
      return cudaSuccess;
    case cudaDevAttrMaxGridDimY:
    case cudaDevAttrMaxGridDimZ:
      *value = 65535;
      return cudaSuccess;
    case cudaDevAttrTotalConstantMemory:
      *value = 64 * 1024;
      return cudaSuccess;
    case cudaDevAttrL2CacheSize:
      *value = 50 * 1024 * 1024;
      return cudaSuccess;
    case cudaDevAttrGlobalMemoryBusWidth:
      *value = 6144;
      return cudaSuccess;
    // The emulator's memory is the host's: one address space, host memory
    // mapped, stream-ordered pools present.
    case cudaDevAttrUnifiedAddressing:
    case cudaDevAttrCanMapHostMemory:
    case cudaDevAttrMemoryPoolsSupported:
    case cudaDevAttrConcurrentKernels:
    case cudaDevAttrManagedMemory:
      *value = 1;
      return cudaSuccess;
    case cudaDevAttrIntegrated:
    case cudaDevAttrTccDriver:
      *value = 0;
      return cudaSuccess;
    default:
      return cudaErrorInvalidValue;
  }
}

int multiprocessors(int device) {
  const auto it = g_multiprocessors.find(device);
  return it == g_multiprocessors.end() ? 132 : it->second;
}

std::unordered_map<const void*, CooperativeLaunch>& cooperative_kernels() {
  static std::unordered_map<const void*, CooperativeLaunch> kernels;
  return kernels;
}

cudaError_t launch_cooperative_kernel(const void* kernel, dim3 grid, dim3 block, void** args,
                                      size_t shared_bytes, cudaStream_t stream) {
  const auto it = cooperative_kernels().find(kernel);
  FK_CHECK(it != cooperative_kernels().end(), "fkemu::launch_cooperative_kernel",
           "a kernel named by kernel_id (reinterpret_cast<const void*>(kernel) in the .cu)",
           "an unknown kernel pointer");
  // Every block must be resident at once: occupancy_blocks per SM.
  if (int64_t{grid.x} * grid.y * grid.z >
      int64_t{multiprocessors(g_device)} * kCooperativeBlocksPerSm)
    return cudaErrorCooperativeLaunchTooLarge;
  Config c{grid, block, shared_bytes, true, stream};
  it->second(c, args);
  return cudaSuccess;
}

cudaError_t get_device(int* device) {
  *device = g_device;
  return cudaSuccess;
}

cudaError_t opt_in_shared(const void* kernel, cudaFuncAttribute attr, int value) {
  if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize || value < 0 ||
      static_cast<size_t>(value) > kSharedOptInLimit)
    return cudaErrorInvalidValue;
  std::lock_guard<std::mutex> lock(g_opted_in_mutex);
  g_opted_in[kernel] = value;
  return cudaSuccess;
}

int max_dynamic_shared(const void* kernel) {
  const int opted = opted_in(kernel);
  return opted < 0 ? static_cast<int>(kSharedDefault) : opted;
}

void unsupported(const char* where, const char* expected, int dtype) {
  throw fk::Error(where, expected, "dtype code " + std::to_string(dtype));
}

}  // namespace fkemu
