#pragma once
// Runs fieldkit's CUDA kernels on the CPU, for tests on machines without a
// GPU (and under ASan/UBSan, which see a kernel's out-of-bounds reads and
// writes as they see host code's). A .cu file is rewritten
// (rewrite_cuda_source.pl: its launches become fkemu::launch, its namespace
// gains ::emu so its launchers do not collide with the real ones linked into
// the same test) and compiled by the host compiler with device_surface.h
// (CUDA's built-in variables, intrinsics and atomics on this emulator)
// forced in first.
//
// The model: a launch runs its blocks one after another (a cooperative
// launch all of them together); a block's threads are fibers on the calling
// thread, each running until it reaches a barrier (__syncthreads, a warp
// shuffle, __syncwarp, a grid sync) or returns. A barrier opens when every
// live thread of its warp, block or (cooperative) grid waits at it; a warp
// runs on through its warp barriers before the next warp starts. The order
// threads run in between barriers (and warps and blocks) is fkemu::order():
// a test runs a kernel in both orders and compares, which exposes a read of
// another thread's (or warp's, or block's) write that nothing orders (a
// race on the device). Atomics are plain read-modify-writes: threads
// never interleave between barriers. What the device would hang on or
// refuse is an fk::Error from the launch: a barrier some live thread never
// reaches, a block past 1,024 threads, a grid past CUDA's limits.
//
// Not modelled: CUB beyond include/cub/'s stand-ins (DeviceRadixSort::
// SortPairs, DeviceScan::ExclusiveSum), inline PTX in a .cu
// (rewrite_cuda_source.pl refuses it; WMMA and cp.async run through
// stand-ins of their headers in include/, which say what they model),
// streams (every call runs at once, in order, unless the emulated runtime's
// stream model is linked: libraries/cudart_*.cpp), timing, and the memory
// model beyond "a barrier orders everything".
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>

namespace fkemu {

// The order the threads of a block run in between two barriers, and the
// order the blocks of a grid run in; FKEMU_ORDER (ascending, descending)
// sets it for a whole program.
enum class Order { kAscending, kDescending };
Order order();
void set_order(Order o);
// The order the program started in (FKEMU_ORDER's): what a test that sets
// another order restores.
Order starting_order();

struct Config {
  dim3 grid, block;
  size_t shared_bytes = 0;
  // cudaLaunchCooperativeKernel's: every block runs at once (their threads
  // all fibers together), so a grid sync can open.
  bool cooperative = false;
  cudaStream_t stream = nullptr;
};
inline Config config(dim3 grid, dim3 block, size_t shared_bytes = 0,
                     cudaStream_t stream = nullptr) {
  return Config{grid, block, shared_bytes, false, stream};
}

// Runs `work` (a launch, a copy, a fill) in `stream`'s order: at once unless
// a stream model is installed (the emulated CUDA runtime's, which may defer
// it or record it into a graph being captured).
using StreamWork = std::function<void()>;
void submit(cudaStream_t stream, StreamWork work);
using StreamModel = void (*)(cudaStream_t stream, StreamWork work);
void set_stream_model(StreamModel model);
StreamModel stream_model();  // the installed one (nullptr: none)

// Runs body once per thread of every block of c (fk::Error for a launch the
// device would refuse or a barrier that cannot open). `kernel` identifies
// the kernel for its dynamic shared memory opt-in (nullptr: not checked).
void run_grid(const Config& c, const std::function<void()>& body, const void* kernel = nullptr);
// run_grid's checks of c alone (block and grid sizes, dynamic shared memory
// and its opt-in), which CUDA makes at the launch: a launch makes them before
// a stream model defers it.
void check_config(const Config& c, const void* kernel = nullptr);

// kernel<<<c>>>(args...): the arguments converted to the kernel's parameter
// types once, as the device copies them, then passed by value to each thread.
template <typename... P, typename... A>
void launch(const Config& c, void (*kernel)(P...), A&&... args) {
  check_config(c, reinterpret_cast<const void*>(kernel));
  submit(c.stream, [c, kernel, params = std::tuple<std::decay_t<P>...>(std::forward<A>(args)...)] {
    run_grid(
        c, [&] { std::apply(kernel, params); }, reinterpret_cast<const void*>(kernel));
  });
}

// kernel<<<c>>>(args...) for a kernel template whose template arguments the
// call deduces (no function pointer names it until then): `call` is the
// rewriter's generic lambda calling it, each thread passing its own copies
// of the arguments.
template <typename F, typename... A>
void launch_deduced(const Config& c, F call, A&&... args) {
  check_config(c);
  submit(c.stream, [c, call, params = std::tuple<std::decay_t<A>...>(std::forward<A>(args)...)] {
    run_grid(c, [&] { std::apply(call, params); });
  });
}

// How many launches have started: per-launch state kept by a stand-in
// header (include/) tells a new launch by it.
uint64_t launch_count();

// The running thread's coordinates.
namespace detail {
// The running thread's coordinates, set at every switch into a fiber:
// threadIdx and blockIdx read them at every use, so they are plain loads
// (initial-exec: the emulator is linked into executables).
extern thread_local constinit uint3 running_thread [[gnu::tls_model("initial-exec")]];
extern thread_local constinit uint3 running_block [[gnu::tls_model("initial-exec")]];
}  // namespace detail
inline uint3 thread_index() {
  return detail::running_thread;
}
inline uint3 block_index() {
  return detail::running_block;
}
dim3 block_dims();
dim3 grid_dims();

// Barriers: every live thread of the block, or of the caller's warp, or
// (cooperative launches only) of the grid.
void sync_block();
void sync_warp();
void sync_grid();
// Each lane of the warp puts `bits` in, then reads lane `from`'s (its own
// when from is outside the warp; all bits set when lane `from` returned or
// is past a partial warp's end, where the device's value is undefined); one
// warp barrier either side.
uint64_t exchange(uint64_t bits, int from);
int lane();

// The running block's dynamic shared memory (Config::shared_bytes), 128-byte
// aligned and filled with 0xff bytes before each block (NaN as floats), so
// that a read before any write shows.
void* dynamic_shared();

// A __shared__ variable's start as garbage: the variable is a function
// static here (device_surface.h), and rewrite_cuda_source.pl declares one of
// these beside it; the first thread of each block to reach the declaration
// fills it with 0xff bytes, as dynamic shared memory is filled, so a read
// before any write in the block (of zeros, or of the previous block's
// values) shows.
class FreshShared {
 public:
  void fill(void* variable, size_t bytes);

 private:
  uint64_t block_ = 0;  // the block it was last filled for (block_serial)
};

// The launchers' host helpers (fk::cuda::detail's), without a CUDA runtime:
// nothing to check after a launch (its errors were thrown), a runtime call's
// status checked, copies and fills of host memory.
void check_launch(const char* where);
void check_cuda(cudaError_t e, const char* where);
[[noreturn]] void unsupported(const char* where, const char* expected, int dtype);
cudaError_t memcpy_async(void* dst, const void* src, size_t bytes, cudaMemcpyKind, cudaStream_t);
cudaError_t memset_async(void* dst, int value, size_t bytes, cudaStream_t);
cudaError_t malloc_async(void** p, size_t bytes, cudaStream_t);
cudaError_t free_async(void* p, cudaStream_t);
// cudaSuccess: a failed launch has already thrown.
cudaError_t get_last_error();
// Where the emulated CUDA runtime (libraries/cudart_*.cpp) is linked, the
// five calls above are its cudaMemcpyAsync, cudaMemsetAsync, cudaMallocAsync,
// cudaFreeAsync and cudaGetLastError: the launchers' runtime calls and the
// host code's reach one implementation (memory kinds, the pool, deferral,
// capture, the last error). Without it (cuda_emu_tests) they act at once.
struct RuntimeCalls {
  cudaError_t (*memcpy_async)(void*, const void*, size_t, cudaMemcpyKind, cudaStream_t);
  cudaError_t (*memset_async)(void*, int, size_t, cudaStream_t);
  cudaError_t (*malloc_async)(void**, size_t, cudaStream_t);
  cudaError_t (*free_async)(void*, cudaStream_t);
  cudaError_t (*get_last_error)();
};
void set_runtime_calls(const RuntimeCalls& calls);
// The emulated device is the device tool's H200 (compute capability 9.0, 132
// SMs, 227 KiB of shared memory per block with the opt-in, 48 KiB without);
// attributes device_get_attribute does not list are cudaErrorInvalidValue.
cudaError_t device_get_attribute(int* value, cudaDeviceAttr attr, int device);
// Only cudaFuncAttributeMaxDynamicSharedMemorySize: a launch with more than
// 48 KiB of dynamic shared memory must have opted in to at least as much.
cudaError_t opt_in_shared(const void* kernel, cudaFuncAttribute attr, int value);
// The dynamic shared memory `kernel` may launch with: its opt-in, else 48 KiB.
int max_dynamic_shared(const void* kernel);
template <typename K>
cudaError_t func_set_attribute(K* kernel, cudaFuncAttribute attr, int value) {
  return opt_in_shared(reinterpret_cast<const void*>(kernel), attr, value);
}

// The current device (cudaGetDevice's answer, 0 unless set) and how many
// SMs it reports (132, the H200's, unless set): a test takes another device
// with fewer SMs to make a cooperative grid (SMs x occupancy) small, and
// caches kept per device (nefi's resident blocks) see a new device.
void set_device(int device, int multiprocessors = 132);
int multiprocessors(int device);
// Blocks per SM the occupancy query reports for any kernel: 1, the fewest a
// launchable kernel has (the emulator does not know its registers).
inline constexpr int kCooperativeBlocksPerSm = 1;
template <typename K>
cudaError_t occupancy_max_active_blocks_per_multiprocessor(int* blocks, K*, int, size_t) {
  *blocks = kCooperativeBlocksPerSm;
  return cudaSuccess;
}
cudaError_t get_device(int* device);
// fk::cuda::detail::DeviceGuard on the emulated device: the current device
// for a scope.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    get_device(&prev_);
    set_device(device, multiprocessors(device));
  }
  ~DeviceGuard() { set_device(prev_, multiprocessors(prev_)); }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int prev_ = 0;
};
// cudaFuncGetAttributes: every kernel is built for the emulated device's
// architecture (ptxVersion and binaryVersion 90, the H200's); the other
// attributes are zero.
template <typename K>
cudaError_t func_get_attributes(cudaFuncAttributes* attr, K*) {
  *attr = cudaFuncAttributes{};
  attr->ptxVersion = 90;
  attr->binaryVersion = 90;
  return cudaSuccess;
}

// A cooperative launch names its kernel by an untyped pointer and passes
// its arguments as pointers: `reinterpret_cast<const void*>(kernel)` in the
// .cu becomes kernel_id(kernel), which records how to call it from them.
using CooperativeLaunch = std::function<void(const Config&, void**)>;
std::unordered_map<const void*, CooperativeLaunch>& cooperative_kernels();
template <typename... P>
const void* kernel_id(void (*kernel)(P...)) {
  const void* id = reinterpret_cast<const void*>(kernel);
  cooperative_kernels().try_emplace(id, [kernel, id](const Config& c, void** args) {
    // The arguments are read at the launch, as the device copies them.
    check_config(c, id);
    [&]<size_t... I>(std::index_sequence<I...>) {
      submit(c.stream,
             [c, kernel, id,
              params = std::tuple<std::decay_t<P>...>(*static_cast<std::decay_t<P>*>(args[I])...)] {
               run_grid(
                   c, [&] { std::apply(kernel, params); }, id);
             });
    }
    (std::index_sequence_for<P...>{});
  });
  return id;
}
cudaError_t launch_cooperative_kernel(const void* kernel, dim3 grid, dim3 block, void** args,
                                      size_t shared_bytes, cudaStream_t stream);

// cooperative_groups' grid, as kernels use it.
namespace cooperative_groups {
struct grid_group {
  void sync() const { sync_grid(); }
};
inline grid_group this_grid() {
  return {};
}
}  // namespace cooperative_groups

template <typename T>
T shuffle_from(T v, int from) {
  static_assert(sizeof(T) <= 8, "a shuffle moves at most 8 bytes");
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  bits = exchange(bits, from);
  T out;
  std::memcpy(&out, &bits, sizeof(T));
  return out;
}

}  // namespace fkemu
