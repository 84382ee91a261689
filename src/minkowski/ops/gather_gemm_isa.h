#pragma once
// The per-ISA bodies behind gather_gemm.h's entry points (internal). Each
// variant keeps the contracts of gather_gemm.h and gives the same bits: every
// output element is one FMA chain over the input channels (or pairs) in
// ascending order, from zero (or from the partial), whatever the vector width
// or tile shape, so AVX2 and AVX-512 results are bit-identical.
#include <xmmintrin.h>

#include <cstdint>

namespace minkowski::detail {

// Pulls gathered rows towards L1 (Hint = _MM_HINT_T0) or L2 (_MM_HINT_T1)
// ahead of their tiles: they come from anywhere in the feature matrix
// (L2/L3), and without it their misses stall the tiles.
template <int Hint = _MM_HINT_T0, typename T>
inline void prefetch_rows(const T* const* a, int64_t n, int64_t width) {
  static_assert(Hint == _MM_HINT_T0 || Hint == _MM_HINT_T1);
  const int64_t lines = (width * static_cast<int64_t>(sizeof(T)) + 63) / 64;
  for (int64_t r = 0; r < n; ++r) {
    const char* q = reinterpret_cast<const char*>(a[r]);
    // the builtin (locality 3 = T0, 2 = T1): clang's _mm_prefetch takes no _mm_hint
    for (int64_t l = 0; l < lines; ++l) __builtin_prefetch(q + 64 * l, 0, Hint);
  }
}

// AVX-512 (F, BW, DQ, VL) variants; call only when fk::cpu_isa() >= Avx512.
void gather_gemm_f32_avx512(const float* f, int64_t ldf, const int32_t* rows, int64_t n,
                            const float* w, int64_t cin, int64_t cout, float* out, int64_t ldo);
void gather_gemm_add_f32_avx512(const float* const* a, float* const* c, int64_t n, const float* w,
                                int64_t cin, int64_t cout);
// outer_accumulate_f32's tiles over n > 0 pairs, rows read in place (the
// caller prefetches them).
void outer_accumulate_f32_avx512(const float* const* a, const float* const* g, int64_t n,
                                 int64_t cin, int64_t cout, float* part, bool fresh);
// The same for wide C_out (n > 0): sub-blocks of pairs whose input rows are
// packed as panels of input channels and gradient rows at a padded stride,
// the partial loaded and stored once per sub-block.
void outer_accumulate_blocked_f32_avx512(const float* const* a, const float* const* g, int64_t n,
                                         int64_t cin, int64_t cout, float* part, bool fresh);

}  // namespace minkowski::detail
