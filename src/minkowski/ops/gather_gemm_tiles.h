#pragma once
// The AVX-512 tile drivers shared by the f32 and bf16 micro-kernels
// (internal): the loops over rows and column panels, the per-pair row slices
// and the weight gradient's panel loops. Each kernel file keeps only its
// register tiles and supplies them as a policy:
//
//   row kernel K:   K::Src, K::Mat (row and matrix element types);
//                   K::depth(cin) (the tile loop's trip count: channels or
//                   channel pairs); K::tile<R, NV, Add>(a, w, depth, ldw, c,
//                   last): c[r][0:cols] (+)= a[r] . W for R rows and NV
//                   vectors of columns, the last under `last`.
//   outer kernel O: O::tile<R, NV>(rows, a0, g, g0, n, part, ldp, fresh,
//                   last): R rows of `part` (input channels from a0 of
//                   `rows`) x NV vectors of gradient channels (from g0 of
//                   `g`) summed over n pairs.
//
// Include only from a file that defines MK_TILE_TARGET (the target attribute
// its tiles are compiled with: every driver must carry it to inline them);
// everything here has internal linkage, so the two files' copies (compiled
// for different targets) never meet.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <utility>

#include "minkowski/ops/gather_gemm_isa.h"

#ifndef MK_TILE_TARGET
#error "define MK_TILE_TARGET before including gather_gemm_tiles.h"
#endif

namespace minkowski::detail {
namespace {

// Rows per tile for NV vectors of columns: 24 accumulators at NV = 3, 4 (27
// and 28 registers with the weight vectors); 8 rows below, enough
// independent chains to cover the FMA latency on two pipes.
template <int NV>
constexpr int kTileRows = NV == 4 ? 6 : 8;

MK_TILE_TARGET inline __mmask16 lane_mask(int64_t lanes) {
  return lanes >= 16 ? __mmask16(0xFFFF) : static_cast<__mmask16>((1u << lanes) - 1u);
}

// Calls Panel::template run<NV>(col, cols, args...) for every column panel:
// 64-column panels (NV = 4), then one panel of the rest (NV = 1..4, its last
// vector possibly half full).
template <typename Panel, typename... Args>
MK_TILE_TARGET inline void for_column_panels(int64_t cout, Args... args) {
  int64_t col = 0;
  for (; col + 64 <= cout; col += 64) Panel::template run<4>(col, int64_t{64}, args...);
  const int64_t rest = cout - col;
  switch ((rest + 15) / 16) {
    case 4:
      Panel::template run<4>(col, rest, args...);
      break;
    case 3:
      Panel::template run<3>(col, rest, args...);
      break;
    case 2:
      Panel::template run<2>(col, rest, args...);
      break;
    case 1:
      Panel::template run<1>(col, rest, args...);
      break;
    default:
      break;
  }
}

// ---- row kernels: c[i] (+)= a[i] . W ----

// K::tile<rest, NV, Add> for rest in [1, kTileRows<NV>): the row tail.
template <typename K, int NV, bool Add, size_t... I>
MK_TILE_TARGET void tail_tile(int rest, const typename K::Src* const* a, const typename K::Mat* w,
                              int64_t depth, int64_t ldw, float* const* c, __mmask16 last,
                              std::index_sequence<I...>) {
  ((rest == static_cast<int>(I) + 1 ? K::template tile<I + 1, NV, Add>(a, w, depth, ldw, c, last)
                                    : void()),
   ...);
}

// All n rows of one column panel (NV vectors, `cols` columns from `col`),
// the rows two tiles ahead pulled into L1 on the first panel.
template <typename K, bool Add>
struct RowPanel {
  template <int NV>
  MK_TILE_TARGET static void run(int64_t col, int64_t cols, const typename K::Src* const* a,
                                 float* const* c, int64_t n, const typename K::Mat* w, int64_t cin,
                                 int64_t ldw) {
    constexpr int R = kTileRows<NV>;
    const __mmask16 last = lane_mask(cols - 16 * (NV - 1));
    const int64_t depth = K::depth(cin);
    float* cc[R];
    int64_t i = 0;
    if (col == 0) prefetch_rows(a, std::min<int64_t>(n, 2 * R), cin);
    for (; i + R <= n; i += R) {
      if (col == 0 && i + 2 * R < n)
        prefetch_rows(a + i + 2 * R, std::min<int64_t>(R, n - i - 2 * R), cin);
      for (int r = 0; r < R; ++r) cc[r] = c[i + r] + col;
      K::template tile<R, NV, Add>(a + i, w + col, depth, ldw, cc, last);
    }
    const int rest = static_cast<int>(n - i);
    for (int r = 0; r < rest; ++r) cc[r] = c[i + r] + col;
    if (rest > 0)
      tail_tile<K, NV, Add>(rest, a + i, w + col, depth, ldw, cc, last,
                            std::make_index_sequence<R - 1>());
  }
};

// c[i][0:cout] (+)= a[i] . W for i in [0, n): every column panel.
template <typename K, bool Add>
MK_TILE_TARGET void all_panels(const typename K::Src* const* a, float* const* c, int64_t n,
                               const typename K::Mat* w, int64_t cin, int64_t cout) {
  for_column_panels<RowPanel<K, Add>>(cout, a, c, n, w, cin, cout);
}

// out[p] = f[rows[p]] . W for p in [0, n) (rows == nullptr: row p), ldo
// apart: row pointers in slices, so the tiles see the add kernel's layout.
template <typename K>
MK_TILE_TARGET void rows_times(const typename K::Src* f, int64_t ldf, const int32_t* rows,
                               int64_t n, const typename K::Mat* w, int64_t cin, int64_t cout,
                               float* out, int64_t ldo) {
  constexpr int64_t kSlice = 96;
  const typename K::Src* a[kSlice];
  float* c[kSlice];
  for (int64_t p0 = 0; p0 < n; p0 += kSlice) {
    const int64_t m = std::min(kSlice, n - p0);
    for (int64_t p = 0; p < m; ++p) {
      a[p] = f + (rows ? static_cast<int64_t>(rows[p0 + p]) : p0 + p) * ldf;
      c[p] = out + (p0 + p) * ldo;
    }
    all_panels<K, false>(a, c, m, w, cin, cout);
  }
}

// ---- outer kernels: part[ci][co] (+)= sum_p a[p][ci] g[p][co] ----

// Rows read through pointer arrays (in place) or at a fixed stride (packed:
// no pointer loads in the pair loop).
template <typename T>
struct PointedRows {
  const T* const* p;
  const T* operator[](int64_t i) const { return p[i]; }
};
template <typename T>
struct StridedRows {
  const T* base;
  int64_t ld;
  const T* operator[](int64_t i) const { return base + i * ld; }
};

// The input side of the outer tiles: every input channel at its own column
// of the same rows (tiles of kTileRows<NV> channels).
template <typename Rows>
struct ChannelColumns {
  Rows rows;
  template <int NV>
  static constexpr int kRows = kTileRows<NV>;
  Rows at(int64_t) const { return rows; }
  static int64_t first(int64_t ci) { return ci; }
};

template <typename O, int NV, typename ARows, typename GRows, size_t... I>
MK_TILE_TARGET void outer_tail(int rest, ARows a, int64_t a0, GRows g, int64_t g0, int64_t n,
                               float* part, int64_t ldp, bool fresh, __mmask16 last,
                               std::index_sequence<I...>) {
  ((rest == static_cast<int>(I) + 1
        ? O::template tile<I + 1, NV>(a, a0, g, g0, n, part, ldp, fresh, last)
        : void()),
   ...);
}

// All input channels of one panel of gradient channels [g0, g0 + cols).
// `in`: the input side (ChannelColumns, or packed panels of channels: at(ci)
// gives the rows holding channel ci at column first(ci)).
template <typename O>
struct OuterPanel {
  template <int NV, typename In, typename GRows>
  MK_TILE_TARGET static void run(int64_t g0, int64_t cols, In in, int64_t cin, GRows g, int64_t n,
                                 float* part, int64_t cout, bool fresh) {
    constexpr int R = In::template kRows<NV>;
    const __mmask16 last = lane_mask(cols - 16 * (NV - 1));
    int64_t ci = 0;
    for (; ci + R <= cin; ci += R) {
      // The next tile's accumulators, while this one runs: they come from L2
      // or L3 (the partial is one offset's C_in x C_out), and their loads,
      // all at the tile's start, stalled it (C = 128: 1.1-1.25x).
      if (!fresh)
        for (int64_t r = ci + R; r < std::min(cin, ci + 2 * R); ++r)
          for (int v = 0; v < NV; ++v)
            _mm_prefetch(reinterpret_cast<const char*>(part + r * cout + g0 + 16 * v), _MM_HINT_T0);
      O::template tile<R, NV>(in.at(ci), In::first(ci), g, g0, n, part + ci * cout + g0, cout,
                              fresh, last);
    }
    const int rest = static_cast<int>(cin - ci);
    if (rest > 0)
      outer_tail<O, NV>(rest, in.at(ci), In::first(ci), g, g0, n, part + ci * cout + g0, cout,
                        fresh, last, std::make_index_sequence<R - 1>());
  }
};

// part (C_in x C_out) (+)= the n pairs' outer products: every panel of
// gradient channels.
template <typename O, typename In, typename GRows>
MK_TILE_TARGET void outer_panels(In in, GRows g, int64_t n, int64_t cin, int64_t cout, float* part,
                                 bool fresh) {
  for_column_panels<OuterPanel<O>>(cout, in, cin, g, n, part, cout, fresh);
}

}  // namespace
}  // namespace minkowski::detail
