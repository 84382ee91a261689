// The convolution's weight gradient, grad_W_k = sum over map_k of F[i]^T G[o]:
// the f32 register tiles walking output rows, or BLAS over gathered blocks of
// pairs (conv_kernel.h).
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <vector>

#include "fk/blas.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/profile.h"
#include "minkowski/coords/block_schedule.h"
#include "minkowski/ops/conv_kernel_common.h"
#include "minkowski/ops/gather_gemm.h"
#include "minkowski/ops/gather_gemm_bf16.h"

namespace minkowski::conv_detail {

namespace {

// f32 weight gradient walking output rows instead of offsets: fixed chunks of
// output rows (their count depends only on the map's size), each chunk in
// blocks of rows whose gradient rows and neighbouring feature rows fit L2,
// the block's pairs bucketed by offset (rows ascending within a bucket), so
// those rows stay in cache across all offsets (walking offsets streams both
// matrices from memory once per offset), and each bucket, hundreds of pairs,
// accumulates into its C_in x C_out partial in one call (outer_accumulate_f32:
// register accumulators over sub-blocks of pairs). One partial per (chunk,
// offset), each element summing the chunk's pairs in row order whatever the
// block size; partials summed in chunk order: independent of copy path and
// thread count. A partial is written from zero by its first bucket and
// skipped by the sum when no pair touched it, so the partials are never
// zero-filled (x + 0.0f == x for every sum that starts from +0, so skipping
// changes no bit). Returns false (nothing done) when the partials would exceed
// 64 MiB for even one chunk.
// `acc`: outer_accumulate_f32 or _bf16 (the rows' element type Src).
//
// Rows per block: where one offset's partial is small (C_in x C_out x 4 <
// 128 KiB), blocks whose gradient rows and their neighbours' feature rows
// (about twice as many) fit in L2 with room to spare, so both stay cached
// across the offsets; buckets hold a few hundred pairs, where the tiles
// measured fastest. Where it is large, a bucket of such a block (~70 pairs
// at C = 256) pays the whole partial's load and store (from L3: the K
// partials are megabytes) for little work, so blocks are 4096 rows (a whole
// chunk at 20k rows): each offset's partial is then visited once per block,
// its ~2000 pairs streaming their rows (1.4x at C = 256, 1 thread; equal at
// 128).
int64_t weight_grad_block_rows(int64_t cin, int64_t cout) {
  if (cin * cout * static_cast<int64_t>(sizeof(float)) >= (int64_t{128} << 10)) return 4096;
  return std::max<int64_t>(kRowTile, (int64_t{384} << 10) / ((cin + cout) * 8));
}

template <typename Src, typename Acc>
bool weight_grad_by_rows(const Src* F, const Src* G, int64_t cin, int64_t cout, const KernelMap& m,
                         float* gw, const Acc& acc) {
  const int64_t K = m.volume, blk = cin * cout, n = m.out_size;
  const int64_t per_chunk = K * blk * static_cast<int64_t>(sizeof(float));
  const int64_t budget = int64_t{64} << 20;
  if (per_chunk == 0 || per_chunk > budget || n == 0) return false;
  // Chunks of >= 4096 rows: enough of them to share among threads, few enough
  // that the partials stay small.
  const int64_t chunks = std::max<int64_t>(1, std::min((n + 4095) / 4096, budget / per_chunk));
  const RowIndex& idx = m.by_out();
  // From the caching allocator (no page faults on repeated calls).
  fk::Tensor part_t = fk::empty({chunks * K * blk}, {fk::DType::F32});
  float* part = part_t.data<float>();
  std::vector<char> touched(static_cast<size_t>(chunks * K), 0);
  const int64_t block_rows = weight_grad_block_rows(cin, cout);
  double work = static_cast<double>(m.pairs()) * blk;
  std::atomic<bool> bad{false};
  for_blocks(chunks, 1, parallel_worth(work, chunks), [&](auto&& each_chunk) {
    std::vector<int64_t> count(K);
    std::vector<const Src*> a, g;
    each_chunk([&](int64_t c) {
      const int64_t c0 = n * c / chunks, c1 = n * (c + 1) / chunks;
      for (int64_t r0 = c0, r1 = c0; r0 < c1; r0 = r1) {
        r1 = std::min(c1, r0 + block_rows);
        // Bucket k (offset k's pairs, rows ascending) gets one slot per row
        // of the block, as in the row-stationary tiles: no counting pass.
        const int64_t cap = r1 - r0;
        a.resize(K * cap);
        g.resize(K * cap);
        std::fill(count.begin(), count.end(), 0);
        const Src** ap = a.data();
        const Src** gp = g.data();
        int64_t* cnt = count.data();
        const RowEntry* e = idx.entries.data();
        const int64_t* rb = idx.begin.data();
        for (int64_t r = r0; r < r1; ++r) {
          const Src* grow = G + r * cout;
          for (int64_t j = rb[r], je = rb[r + 1]; j < je; ++j) {
            const int64_t k = e[j].offset;
            if (cnt[k] == cap) {  // not a kernel map (reported below)
              bad.store(true, std::memory_order_relaxed);
              continue;
            }
            const int64_t at = k * cap + cnt[k]++;
            ap[at] = F + static_cast<int64_t>(e[j].other) * cin;
            gp[at] = grow;
          }
        }
        char* written = touched.data() + c * K;
        for (int64_t k = 0; k < K; ++k)
          if (cnt[k] > 0) {
            acc(ap + k * cap, gp + k * cap, cnt[k], cin, cout, part + (c * K + k) * blk,
                !written[k]);
            written[k] = 1;
          }
      }
    });
  });
  FK_CHECK(!bad.load(), "minkowski::convolution",
           "a kernel map with at most one pair per row and offset", "a row met an offset twice");
  // Every element sums its chunks in chunk order, whoever sums it: split the
  // K x C_in x C_out elements in fixed spans among the threads.
  const int64_t total = K * blk, span = 4096;
  const int64_t spans = (total + span - 1) / span;
  for_blocks(spans, 4, parallel_worth(static_cast<double>(total) * chunks, spans),
             [&](auto&& each_span) {
               each_span([&](int64_t s) {
                 const int64_t x0 = s * span, x1 = std::min(total, x0 + span);
                 for (int64_t c = 0; c < chunks; ++c)
                   for (int64_t k = x0 / blk; k * blk < x1; ++k)
                     if (touched[c * K + k]) {
                       const int64_t y0 = std::max(x0, k * blk), y1 = std::min(x1, (k + 1) * blk);
                       add_row(gw + y0, part + c * total + y0, y1 - y0);
                     }
               });
             });
  return true;
}

// grad_W_k = sum over fixed blocks of pairs of F[in]^T . G[out], each block
// gathered into per-thread buffers (cache-sized, no conv-sized staging) and
// multiplied by BLAS, blocks summed in order: independent of copy path, group
// plan and thread count.
template <typename T>
void weight_grad_blocked(const T* F, const T* G, int64_t cin, int64_t cout, const KernelMap& m,
                         T* gw, bool tiles) {
  if (cin * cout == 0) return;  // the gradient has no elements
  constexpr fk::DType dt = dtype_of_t<T>();
  struct Job {
    int64_t k, p0, p1;
  };
  std::vector<Job> jobs;
  std::vector<int64_t> first(m.volume + 1, 0);
  for (int64_t k = 0; k < m.volume; ++k) {
    first[k] = static_cast<int64_t>(jobs.size());
    for (int64_t p = m.offset_begin[k]; p < m.offset_begin[k + 1]; p += kWeightBlock)
      jobs.push_back({k, p, std::min(p + kWeightBlock, m.offset_begin[k + 1])});
  }
  first[m.volume] = static_cast<int64_t>(jobs.size());
  int64_t nj = static_cast<int64_t>(jobs.size()), blk = cin * cout;
  if (nj == 0) return;
  if constexpr (std::is_same_v<T, float>) {
    if (tiles && !m.identity && weight_grad_by_rows(F, G, cin, cout, m, gw, outer_accumulate_f32))
      return;
  }
  std::vector<T> part(static_cast<size_t>(nj * blk));
  bool direct = false;
  if constexpr (std::is_same_v<T, float>) direct = tiles;
  auto run = [&](int64_t lo, int64_t hi) {
    if constexpr (std::is_same_v<T, float>) {
      if (direct) {  // rows read in place, no gather
        std::vector<const float*> a(kWeightBlock), b(kWeightBlock);
        for (int64_t j = lo; j < hi; ++j) {
          const Job& q = jobs[j];
          int64_t n = q.p1 - q.p0;
          for (int64_t p = 0; p < n; ++p) {
            a[p] = F + (m.identity ? q.p0 + p : m.in_rows[q.p0 + p]) * cin;
            b[p] = G + (m.identity ? q.p0 + p : m.out_rows[q.p0 + p]) * cout;
          }
          outer_accumulate_f32(a.data(), b.data(), n, cin, cout, part.data() + j * blk, true);
        }
        return;
      }
    }
    std::vector<T> a(static_cast<size_t>(kWeightBlock * cin)),
        b(static_cast<size_t>(kWeightBlock * cout));
    for (int64_t j = lo; j < hi; ++j) {
      const Job& q = jobs[j];
      int64_t n = q.p1 - q.p0;
      for (int64_t p = 0; p < n; ++p) {
        int64_t i = m.identity ? q.p0 + p : m.in_rows[q.p0 + p];
        int64_t o = m.identity ? q.p0 + p : m.out_rows[q.p0 + p];
        std::memcpy(a.data() + p * cin, F + i * cin, cin * sizeof(T));
        std::memcpy(b.data() + p * cout, G + o * cout, cout * sizeof(T));
      }
      fk::gemm(dt, true, false, cin, cout, n, 1.0, a.data(), cin, b.data(), cout, 0.0,
               part.data() + j * blk, cout);
    }
  };
  int nt = fk::get_num_threads();
  double work = static_cast<double>(m.pairs()) * blk;
  if (nt < 2 || omp_in_parallel() || work < 4.0 * kBlasSerialMnk) {
    run(0, nj);  // every job at most ~kBlasSerialMnk x 4: BLAS keeps such calls serial
  } else {
    fk::profile::count_launch();
    fk::profile::RegionCounts counts;  // the GEMMs' launches on every thread
#pragma omp parallel num_threads(nt)
    {
      const fk::profile::RegionCounts::Worker worker(counts);
      int64_t t = omp_get_thread_num(), n = omp_get_num_threads();
      run(nj * t / n, nj * (t + 1) / n);
    }
  }
  for (int64_t k = 0; k < m.volume; ++k)
    for (int64_t j = first[k]; j < first[k + 1]; ++j)
      add_row(gw + k * blk, part.data() + j * blk, blk);
}

}  // namespace

template <typename T>
void weight_grad(const T* F, const T* G, int64_t cin, int64_t cout, const KernelMap& m, T* gw,
                 bool tiles) {
  weight_grad_blocked(F, G, cin, cout, m, gw, tiles && gather_gemm_supported(cout));
}

bool weight_grad_bf16(const uint16_t* F, const uint16_t* G, int64_t cin, int64_t cout,
                      const KernelMap& m, float* gw) {
  if (m.identity || cin * cout == 0) return false;
  return weight_grad_by_rows(F, G, cin, cout, m, gw, outer_accumulate_bf16);
}

template void weight_grad<float>(const float*, const float*, int64_t, int64_t, const KernelMap&,
                                 float*, bool);
template void weight_grad<double>(const double*, const double*, int64_t, int64_t, const KernelMap&,
                                  double*, bool);

}  // namespace minkowski::conv_detail
