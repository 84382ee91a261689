// The convolution's forward and input gradient on the bf16 tiles
// (gather_gemm_bf16.h): bf16 features, weights and output gradients read as
// they are, f32 results. One copy path, the row-stationary one (every row
// owned by one thread, its terms in offset order), so the bits do not depend
// on ME_FUSED_COPY, its cap or the thread count.
#include <algorithm>
#include <vector>

#include "fk/parallel.h"
#include "fk/profile.h"
#include "minkowski/ops/conv_kernel_common.h"
#include "minkowski/ops/gather_gemm_bf16.h"

namespace minkowski::conv_detail {

namespace {

// Every offset's C_in x C_out matrix as channel pairs (K x C_in/2 x C_out).
std::vector<uint32_t> packed(const uint16_t* w, int64_t k, int64_t cin, int64_t cout) {
  std::vector<uint32_t> p(static_cast<size_t>(k * (cin / 2) * cout));
  for (int64_t o = 0; o < k; ++o)
    pack_pairs_bf16(w + o * cin * cout, cin, cout, p.data() + o * (cin / 2) * cout);
  return p;
}

// dst[r] = src[r] . W for every row (a 1x1 convolution on an identity map),
// in fixed blocks of rows.
void rows_times(const uint16_t* src, int64_t n, const uint32_t* wp, int64_t cin, int64_t cout,
                float* dst) {
  constexpr int64_t kBlock = 1536;
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  const double work = static_cast<double>(n) * cin * cout;
  fk::parallel_for(0, blocks, work < 4.0 * kBlasSerialMnk ? blocks : 1,
                   [&](int64_t lo, int64_t hi) {
                     for (int64_t b = lo; b < hi; ++b) {
                       const int64_t r0 = b * kBlock, rows = std::min(kBlock, n - r0);
                       gather_gemm_bf16(src + r0 * cin, cin, nullptr, rows, wp, cin, cout,
                                        dst + r0 * cout, cout);
                     }
                   });
}

}  // namespace

void forward_bf16(const uint16_t* F, int64_t cin, const uint16_t* W, int64_t cout,
                  const KernelMap& m, float* out) {
  const std::vector<uint32_t> wp = packed(W, m.volume, cin, cout);
  if (m.identity) return rows_times(F, m.out_size, wp.data(), cin, cout, out);
  row_stationary_bf16(m.row_blocks(false), F, wp.data(), cin, cout, out);
}

void input_grad_bf16(const uint16_t* G, int64_t cin, const uint16_t* W, int64_t cout,
                     const KernelMap& m, float* gin) {
  // W_k^T (C_out x C_in) as pairs of output channels.
  std::vector<uint16_t> wt(static_cast<size_t>(m.volume * cin * cout));
  transpose_offsets(W, m.volume, cin, cout, wt.data());
  const std::vector<uint32_t> wp = packed(wt.data(), m.volume, cout, cin);
  if (m.identity) return rows_times(G, m.in_size, wp.data(), cout, cin, gin);
  row_stationary_bf16(m.row_blocks(true), G, wp.data(), cout, cin, gin);
}

}  // namespace minkowski::conv_detail
