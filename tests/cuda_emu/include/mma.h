#pragma once
// <mma.h> on the emulated device (emulated_device.h): nvcuda::wmma's
// fragments, loads, stores and products, for the shapes and types fieldkit's
// kernels use: m16n16k16 with __half or __nv_bfloat16 operands, m16n16k8
// with precision::tf32 operands, f32 accumulators. Found before CUDA's own
// <mma.h> (tests/cuda_emu/include comes first on the include path), which
// declares nothing for host code.
//
// Modelled:
// - Collectives: every "_sync" call waits at a warp barrier before it acts,
//   as the device's wait for the whole warp, and every lane must have made
//   the same call (its call site and count): a call some lane skips, or a
//   lane that returned before it, aborts the test with a message (the device
//   would hang or misread).
//   The emulator opens a warp barrier only once every thread of the block
//   waits at one, so these barriers also keep the block's warps in step,
//   which hides a race between warps (a buffer refilled while another warp
//   still reads it): fkemu::set_wmma_barriers(false) drops them, and a test
//   runs a kernel both ways.
// - Each lane holds the whole tile (num_elements its size, x[] row-major),
//   so loops over x[] that treat elements alike mean what they mean on the
//   device.
// - load_matrix_sync / store_matrix_sync: either layout, any ldm; the
//   device's rules (pointer 32-byte aligned, ldm a multiple of 16 bytes)
//   abort the test with a message, as the device would fault or misread.
// - mma_sync: D = A B + C, each product exact in f32 (operands have at most
//   11 significant bits) and added onto C's element in k order, rounded to
//   f32 each time. A TF32 operand is read with its low 13 mantissa bits
//   dropped (the tensor cores read only TF32's bits; the PTX ISA leaves an
//   unconverted operand's value unspecified): a kernel that skips
//   __float_to_tf32 (round to nearest, ties away, as cvt.rna does) differs.
// Not modelled: which lane holds which element (a kernel that indexes x[]
// by position, or writes lanes' fragments differently, is not emulated
// faithfully); the device's order and width of the sum inside one mma (its
// f32 results may differ from these in the last bits); a check that the
// warp's lanes pass the same pointer and ldm; the checks of calls without
// the warp barriers; cooperative launches; other shapes and types.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <source_location>
#include <type_traits>
#include <vector>

#include "cuda_emu/emulated_device.h"

namespace fkemu {

// Whether WMMA's "_sync" calls wait at a warp barrier (see above).
inline bool& wmma_barriers() {
  static bool on = true;
  return on;
}
inline void set_wmma_barriers(bool on) {
  wmma_barriers() = on;
}

}  // namespace fkemu

namespace nvcuda::wmma {

struct row_major;
struct col_major;
struct matrix_a;
struct matrix_b;
struct accumulator;
namespace precision {
struct tf32;
}
enum layout_t { mem_row_major, mem_col_major };

namespace detail {

template <typename T>
struct Storage {
  using type = T;
};
template <>
struct Storage<precision::tf32> {
  using type = float;
};

// A fragment's tile: A is M x K, B is K x N, the accumulator M x N.
template <typename Use, int M, int N, int K>
struct Extent;
template <int M, int N, int K>
struct Extent<matrix_a, M, N, K> {
  static constexpr int rows = M, cols = K;
};
template <int M, int N, int K>
struct Extent<matrix_b, M, N, K> {
  static constexpr int rows = K, cols = N;
};
template <int M, int N, int K>
struct Extent<accumulator, M, N, K> {
  static constexpr int rows = M, cols = N;
};

[[noreturn]] inline void fault(const char* call, const char* rule) {
  std::fprintf(stderr, "fkemu: nvcuda::wmma::%s: %s (the device would fault or misread)\n", call,
               rule);
  std::abort();
}

// A lane's collective calls so far in its block of the current launch, and
// where the last one was made.
struct Arrival {
  uint64_t launch = 0;
  uint3 block{};
  int64_t calls = 0;
  std::source_location site;
};

inline bool same_site(const std::source_location& a, const std::source_location& b) {
  return a.line() == b.line() && a.column() == b.column() &&
         std::strcmp(a.file_name(), b.file_name()) == 0;
}

// Waits for the warp, then checks every lane arrived from the same call: the
// first lane to leave the barrier sees each lane's last call as it arrived
// (a lane that left earlier has made one more), so a lane that skipped the
// call, called another, or returned shows at least there.
inline void arrive(const std::source_location& site) {
  if (!::fkemu::wmma_barriers()) return;
  static std::vector<Arrival> lanes;  // blocks run one at a time
  const uint3 t = ::fkemu::thread_index(), b = ::fkemu::block_index();
  const dim3 d = ::fkemu::block_dims();
  const size_t threads = size_t{d.x} * d.y * d.z, i = t.x + d.x * (t.y + size_t{d.y} * t.z);
  if (lanes.size() < threads) lanes.resize(threads);
  const uint64_t launch = ::fkemu::launch_count();
  auto current = [&](const Arrival& a) {
    return a.launch == launch && a.block.x == b.x && a.block.y == b.y && a.block.z == b.z;
  };
  Arrival& me = lanes[i];
  if (!current(me)) me = Arrival{launch, b, 0, site};
  ++me.calls;
  me.site = site;
  ::fkemu::sync_warp();
  const size_t base = i - i % 32;
  for (size_t j = base; j < std::min(base + 32, threads); ++j) {
    const Arrival& other = lanes[j];
    const int64_t calls = current(other) ? other.calls : 0;
    if (calls > me.calls || (calls == me.calls && same_site(other.site, site))) continue;
    std::fprintf(stderr,
                 "fkemu: nvcuda::wmma: thread %zu calls %s (%s:%u) as its collective call %lld, "
                 "where thread %zu %s: every lane of the warp must make each call (the device "
                 "would hang or misread)\n",
                 i, site.function_name(), site.file_name(), site.line(),
                 static_cast<long long>(me.calls), j,
                 calls < me.calls ? "has made fewer" : "made another call");
    std::abort();
  }
}

inline void check_operand(const char* call, const void* p, unsigned ldm, size_t element_bytes) {
  if (reinterpret_cast<uintptr_t>(p) % 32 != 0) fault(call, "pointer not 32-byte aligned");
  if (ldm * element_bytes % 16 != 0) fault(call, "ldm not a multiple of 16 bytes");
}

inline float as_float(float v) {
  return v;
}
inline float as_float(__half v) {
  return __half2float(v);
}
inline float as_float(__nv_bfloat16 v) {
  return __bfloat162float(v);
}

// The bits of a TF32 operand the tensor cores read.
inline float tf32_bits(float v) {
  uint32_t b = 0;
  std::memcpy(&b, &v, 4);
  b &= 0xffffe000u;
  std::memcpy(&v, &b, 4);
  return v;
}

}  // namespace detail

template <typename Use, int M, int N, int K, typename T, typename Layout = void>
class fragment {
  static_assert(M == 16 && N == 16, "the emulated WMMA has 16 x 16 tiles only");
  static_assert(std::is_same_v<Use, accumulator>
                    ? std::is_same_v<T, float> && std::is_void_v<Layout> && (K == 8 || K == 16)
                    : (std::is_same_v<T, precision::tf32> && K == 8) ||
                          ((std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>)&&K ==
                           16),
                "the emulated WMMA has f16/bf16 m16n16k16, tf32 m16n16k8, f32 accumulators");

 public:
  using element_type = T;
  using storage_element_type = typename detail::Storage<T>::type;
  static constexpr int rows = detail::Extent<Use, M, N, K>::rows;
  static constexpr int cols = detail::Extent<Use, M, N, K>::cols;
  enum { num_elements = rows * cols };
  storage_element_type x[num_elements];  // row-major
};

// cvt.rna.tf32.f32: to nearest, ties away from zero (the magnitude's half
// ulp added, then truncated); infinities and NaNs kept.
inline float __float_to_tf32(float in) {
  uint32_t b = 0;
  std::memcpy(&b, &in, 4);
  if ((b & 0x7f800000u) != 0x7f800000u) b = (b + 0x1000u) & 0xffffe000u;
  float out;
  std::memcpy(&out, &b, 4);
  return out;
}

template <typename Use, int M, int N, int K, typename T, typename Layout>
void fill_fragment(fragment<Use, M, N, K, T, Layout>& f,
                   const typename fragment<Use, M, N, K, T, Layout>::storage_element_type& v) {
  for (auto& e : f.x) e = v;
}

// A or B: the layout is the fragment's.
template <typename Use, int M, int N, int K, typename T, typename Layout, typename P>
void load_matrix_sync(fragment<Use, M, N, K, T, Layout>& f, const P* p, unsigned ldm,
                      std::source_location site = std::source_location::current()) {
  using F = fragment<Use, M, N, K, T, Layout>;
  static_assert(!std::is_void_v<Layout>, "an accumulator load takes a layout_t");
  static_assert(std::is_same_v<P, typename F::storage_element_type>, "pointer of the element type");
  detail::arrive(site);
  detail::check_operand("load_matrix_sync", p, ldm, sizeof(P));
  constexpr bool kRowMajor = std::is_same_v<Layout, row_major>;
  for (int r = 0; r < F::rows; ++r)
    for (int c = 0; c < F::cols; ++c)
      f.x[r * F::cols + c] = kRowMajor ? p[r * ldm + c] : p[c * ldm + r];
}

template <int M, int N, int K>
void store_matrix_sync(float* p, const fragment<accumulator, M, N, K, float>& f, unsigned ldm,
                       layout_t layout,
                       std::source_location site = std::source_location::current()) {
  using F = fragment<accumulator, M, N, K, float>;
  detail::arrive(site);
  detail::check_operand("store_matrix_sync", p, ldm, sizeof(float));
  for (int r = 0; r < F::rows; ++r)
    for (int c = 0; c < F::cols; ++c)
      (layout == mem_row_major ? p[r * ldm + c] : p[c * ldm + r]) = f.x[r * F::cols + c];
}

namespace detail {

// D = A B + C, element by element in k order.
template <typename FragD, typename FragA, typename FragB>
void multiply(FragD& d, const FragA& a, const FragB& b, const FragD& c) {
  constexpr int M = FragA::rows, K = FragA::cols, N = FragB::cols;
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      float acc = c.x[m * N + n];
      for (int k = 0; k < K; ++k) {
        float x = as_float(a.x[m * K + k]), y = as_float(b.x[k * N + n]);
        if constexpr (std::is_same_v<typename FragA::element_type, precision::tf32>) {
          x = tf32_bits(x);
          y = tf32_bits(y);
        }
        acc += x * y;
      }
      d.x[m * N + n] = acc;
    }
}

}  // namespace detail

template <int M, int N, int K, typename T, typename LayoutA, typename LayoutB>
void mma_sync(fragment<accumulator, M, N, K, float>& d,
              const fragment<matrix_a, M, N, K, T, LayoutA>& a,
              const fragment<matrix_b, M, N, K, T, LayoutB>& b,
              const fragment<accumulator, M, N, K, float>& c,
              std::source_location site = std::source_location::current()) {
  using FragA = fragment<matrix_a, M, N, K, T, LayoutA>;
  using FragB = fragment<matrix_b, M, N, K, T, LayoutB>;
  using FragC = fragment<accumulator, M, N, K, float>;
  detail::arrive(site);
  // The lanes of a warp hold the same tiles and make the same calls, one
  // lane after another (a few calls each between barriers): the last calls'
  // operands and results are kept, and a lane whose operands are the same
  // bytes takes the result (the emulator's time, not its meaning).
  struct Kept {
    FragA a;
    FragB b;
    FragC c, d;
  };
  constexpr int kKept = 8;
  static Kept kept[kKept];
  static int filled = 0, next = 0;
  for (int i = 0; i < filled; ++i)
    if (std::memcmp(&a, &kept[i].a, sizeof(a)) == 0 &&
        std::memcmp(&b, &kept[i].b, sizeof(b)) == 0 &&
        std::memcmp(&c, &kept[i].c, sizeof(c)) == 0) {
      d = kept[i].d;
      return;
    }
  Kept& k = kept[next];
  next = (next + 1) % kKept;
  if (filled < kKept) ++filled;
  std::memcpy(&k.a, &a, sizeof(a));
  std::memcpy(&k.b, &b, sizeof(b));
  std::memcpy(&k.c, &c, sizeof(c));
  detail::multiply(k.d, a, b, c);
  d = k.d;  // d may be c
}

}  // namespace nvcuda::wmma
