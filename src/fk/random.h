#pragma once
// Random tensors from a counter-based generator: Philox4x32-10 (Salmon et al.,
// "Parallel random numbers: as easy as 1, 2, 3", SC'11). A Generator is a key
// (the seed) and an offset; block j of a call is philox(counter = offset + j,
// key = seed), four 32-bit words. Element i of a call reads block i / per_block
// (per_block = 4 for f32 uniforms and normals, 2 for f64 and 64-bit integers),
// so every value depends only on (seed, offset, index): tensors are generated
// in parallel and are identical for any thread count. Each call advances the
// offset by the number of blocks it used, so consecutive calls never overlap.
//
// Dtypes: rand/uniform/randn/normal give f32 (default), f64, f16 or bf16 (half
// outputs are generated in f32 and rounded; rand draws only as many bits as
// the half significand holds, so it stays below 1, while uniform(lo, hi) in
// half precision may round up to hi); randint gives i64 (default), i32
// or a floating dtype; randperm gives i64 (default) or i32. Tensors for a CUDA
// device are generated on the CPU and copied, so both devices see the same
// numbers. Memory: the output only (half outputs add an f32 staging buffer).
#include <array>
#include <atomic>
#include <cstdint>

#include "fk/factory.h"
#include "fk/tensor.h"

namespace fk {

// One Philox4x32-10 block.
std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> counter, std::array<uint32_t, 2> key);

class Generator {
 public:
  explicit Generator(uint64_t seed = 0) : seed_(seed) {}
  Generator(const Generator& o) : seed_(o.seed_), offset_(o.offset()) {}
  Generator& operator=(const Generator& o) {
    seed_ = o.seed_;
    set_offset(o.offset());
    return *this;
  }

  uint64_t seed() const { return seed_; }
  uint64_t offset() const { return offset_.load(std::memory_order_relaxed); }
  // Re-seeds and rewinds the offset to 0. Not synchronized with draws running
  // concurrently on other threads (reserve() is).
  void manual_seed(uint64_t seed) {
    seed_ = seed;
    set_offset(0);
  }
  void set_offset(uint64_t offset) { offset_.store(offset, std::memory_order_relaxed); }
  // Reserves n blocks and returns the offset of the first; thread-safe, so
  // concurrent calls on one generator get disjoint streams.
  uint64_t reserve(uint64_t n) { return offset_.fetch_add(n, std::memory_order_relaxed); }
  // The Philox block at absolute counter c under this generator's key (the seed).
  std::array<uint32_t, 4> block(uint64_t c) const;

 private:
  uint64_t seed_;
  std::atomic<uint64_t> offset_{0};
};

// The process-wide generator used when none is passed (seed 0 until manual_seed).
Generator& default_generator();
void manual_seed(uint64_t seed);

// Uniform on [0, 1).
Tensor rand(const Dims& shape, TensorOptions options = {}, Generator* gen = nullptr);
// Uniform on [lo, hi).
Tensor uniform(const Dims& shape, double lo, double hi, TensorOptions options = {},
               Generator* gen = nullptr);
// Standard normal (Box–Muller).
Tensor randn(const Dims& shape, TensorOptions options = {}, Generator* gen = nullptr);
Tensor normal(const Dims& shape, double mean, double std, TensorOptions options = {},
              Generator* gen = nullptr);
// Integers uniform on [lo, hi).
Tensor randint(int64_t lo, int64_t hi, const Dims& shape, TensorOptions options = {DType::I64},
               Generator* gen = nullptr);
// A uniformly random permutation of 0 .. n-1 (Fisher–Yates, serial: O(n)).
Tensor randperm(int64_t n, TensorOptions options = {DType::I64}, Generator* gen = nullptr);

}  // namespace fk
