#include "minkowski/ops/conv_kernel.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include <omp.h>
#include <optional>
#include <string>
#include <vector>

#include "fk/blas.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/parallel.h"
#include "fk/profile.h"
#include "minkowski/coords/block_schedule.h"
#include "minkowski/ops/conv_kernel_common.h"
#include "minkowski/ops/conv_path.h"
#include "minkowski/ops/feature_rows.h"
#include "minkowski/ops/fused_copy.h"
#include "minkowski/ops/gather_gemm.h"
#include "minkowski/ops/gather_gemm_bf16.h"

namespace minkowski {

namespace {

// The CPU's copy path: `direct` where the f32 tiles read rows in place (fused
// stages nothing there), else fused only when asked for (fused_copy.h).
bool cpu_fused(bool direct) {
  const FusedCopy mode = fused_copy_mode();
  return direct ? mode != FusedCopy::Off : mode == FusedCopy::On;
}

thread_local ConvCallInfo tl_info;

void note_call(bool fused, int64_t groups, int64_t staging_bytes) {
  tl_info.fused = fused;
  tl_info.groups = groups;
  tl_info.staging_bytes = staging_bytes;
}

using namespace conv_detail;

// GEMM rows per BLAS call: fixed, so every path and thread count issues the
// same calls.
constexpr int64_t kRowBlock = 2048;
struct Gemm {
  bool ta, tb;
  int64_t m, n, k;
  const void *a, *b;
  int64_t lda, ldb;
  void* c;
  int64_t ldc;
};

// Runs the GEMMs (beta = 0) in one parallel region; results do not depend on
// the thread count (see kBlasSerialMnk).
void run_gemms(fk::DType dt, const std::vector<Gemm>& jobs) {
  double work = 0, biggest = 0;
  for (const Gemm& g : jobs) {
    double mnk = static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k);
    work += mnk;
    biggest = std::max(biggest, mnk);
  }
  auto one = [&](const Gemm& g) {
    fk::gemm(dt, g.ta, g.tb, g.m, g.n, g.k, 1.0, g.a, g.lda, g.b, g.ldb, 0.0, g.c, g.ldc);
  };
  int nt = fk::get_num_threads();
  int64_t nj = static_cast<int64_t>(jobs.size());
  if (nt < 2 || omp_in_parallel() || (biggest <= kBlasSerialMnk && work < 4.0 * kBlasSerialMnk)) {
    for (const Gemm& g : jobs) one(g);
    return;
  }
  fk::profile::count_launch();
  fk::profile::RegionCounts counts;  // the GEMMs' launches on every thread
#pragma omp parallel num_threads(nt)
  {
    const fk::profile::RegionCounts::Worker worker(counts);
    int64_t t = omp_get_thread_num(), n = omp_get_num_threads();
    // Contiguous ranges: neighbouring blocks share their weight slice.
    int64_t lo = nj * t / n, hi = nj * (t + 1) / n;
    for (int64_t j = lo; j < hi; ++j) one(jobs[j]);
  }
}

// Row-blocked jobs of C = A . op(B) for one offset.
void add_row_jobs(std::vector<Gemm>& jobs, bool tb, int64_t m, int64_t n, int64_t k, size_t es,
                  const void* a, int64_t lda, const void* b, int64_t ldb, void* c, int64_t ldc) {
  for (int64_t r = 0; r < m; r += kRowBlock) {
    int64_t rows = std::min(kRowBlock, m - r);
    jobs.push_back({false, tb, rows, n, k, static_cast<const char*>(a) + r * lda * es, b, lda, ldb,
                    static_cast<char*>(c) + r * ldc * es, ldc});
  }
}

// Runs the AVX2 gather-GEMM over [p0, p1) of each offset in [k0, k1):
// dst[p - base] = src[rows[p]] . mats[k], in blocks of pairs, one parallel region.
void gather_gemm_jobs(const KernelMap& m, int64_t k0, int64_t k1, int64_t base, const float* src,
                      int64_t ld_src, const int32_t* rows, const float* mats, int64_t rows_in,
                      int64_t cols_out, float* dst) {
  constexpr int64_t kPairBlock = 1536;
  struct Job {
    int64_t k, p0, p1;
  };
  std::vector<Job> jobs;
  for (int64_t k = k0; k < k1; ++k)
    for (int64_t p = m.offset_begin[k]; p < m.offset_begin[k + 1]; p += kPairBlock)
      jobs.push_back({k, p, std::min(p + kPairBlock, m.offset_begin[k + 1])});
  int64_t nj = static_cast<int64_t>(jobs.size());
  double work = static_cast<double>(m.offset_begin[k1] - m.offset_begin[k0]) * rows_in * cols_out;
  fk::parallel_for(0, nj, work < 4.0 * kBlasSerialMnk ? nj : 1, [&](int64_t lo, int64_t hi) {
    for (int64_t j = lo; j < hi; ++j) {
      const Job& b = jobs[j];
      // without a row list (identity map) pair p reads row p
      gather_gemm_f32(rows ? src : src + b.p0 * ld_src, ld_src, rows ? rows + b.p0 : nullptr,
                      b.p1 - b.p0, mats + b.k * rows_in * cols_out, rows_in, cols_out,
                      dst + (b.p0 - base) * cols_out, cols_out);
    }
  });
}

struct Group {
  int64_t k0, k1;  // offsets [k0, k1)
  int64_t p0, p1;  // pairs [p0, p1)
};

std::vector<Group> plan_groups(const KernelMap& m, bool fused, int64_t row_bytes) {
  std::vector<Group> g;
  int64_t K = m.volume;
  if (!fused) {
    for (int64_t k = 0; k < K; ++k)
      if (m.count(k) > 0) g.push_back({k, k + 1, m.offset_begin[k], m.offset_begin[k + 1]});
    return g;
  }
  double mb = fused_copy_cap_mb();
  if (!(mb > 0)) mb = 2048;
  // Rows under the cap, computed in double: any cap a knob accepts fits.
  const double cap = std::floor(mb * 1048576.0 / static_cast<double>(row_bytes));
  const int64_t cap_rows = cap >= 9e18 ? INT64_MAX : static_cast<int64_t>(cap);
  // An offset over the cap is cut into pieces of whole GEMM blocks (so its
  // BLAS calls stay those of the per-offset path): the cap holds down to one
  // block of kRowBlock rows.
  const int64_t piece = std::max(kRowBlock, cap_rows / kRowBlock * kRowBlock);
  int64_t k = 0;
  while (k < K) {
    if (m.count(k) > cap_rows) {
      for (int64_t p = m.offset_begin[k]; p < m.offset_begin[k + 1]; p += piece)
        g.push_back({k, k + 1, p, std::min(p + piece, m.offset_begin[k + 1])});
      ++k;
      continue;
    }
    int64_t k1 = k + 1;
    while (k1 < K && m.offset_begin[k1 + 1] - m.offset_begin[k] <= cap_rows) ++k1;
    if (m.offset_begin[k1] > m.offset_begin[k])
      g.push_back({k, k1, m.offset_begin[k], m.offset_begin[k1]});
    k = k1;
  }
  return g;
}

// Offset k's pairs inside group g: where they start in the group's staging
// and how many (a whole offset, or one piece of one cut by the cap).
std::pair<int64_t, int64_t> span_in_group(const KernelMap& m, int64_t k, const Group& g) {
  const int64_t lo = std::max(m.offset_begin[k], g.p0), hi = std::min(m.offset_begin[k + 1], g.p1);
  return {lo - g.p0, hi - lo};
}

int64_t max_rows(const std::vector<Group>& g) {
  int64_t r = 0;
  for (const auto& x : g) r = std::max(r, x.p1 - x.p0);
  return r;
}

// Zeroes n elements, in parallel when large (the outputs are tens of MiB).
template <typename T>
void zero_fill(T* p, int64_t n) {
  fk::parallel_for(0, n, int64_t{1} << 20,
                   [&](int64_t lo, int64_t hi) { std::fill(p + lo, p + hi, T(0)); });
}

template <typename T>
void gather_rows(const T* src, int64_t width, const int32_t* rows, int64_t n, T* dst) {
  fk::parallel_for(0, n, 8192, [&](int64_t lo, int64_t hi) {
    for (int64_t p = lo; p < hi; ++p)
      std::memcpy(dst + p * width, src + static_cast<int64_t>(rows[p]) * width, width * sizeof(T));
  });
}

// dst[rows[p]] += staged[p - p0] for p in [p0, p1): rows are unique in the range.
template <typename T>
void scatter_unique(const T* staged, int64_t width, const int32_t* rows, int64_t p0, int64_t p1,
                    T* dst) {
  fk::parallel_for(p0, p1, 8192, [&](int64_t lo, int64_t hi) {
    for (int64_t p = lo; p < hi; ++p)
      add_row(dst + static_cast<int64_t>(rows[p]) * width, staged + (p - p0) * width, width);
  });
}

// dst[r] += staged[p - p0] for every pair p of row r in [p0, p1), in pair
// (= offset) order; `cursor` remembers where each row's list stopped.
template <typename T>
void scatter_grouped(const T* staged, int64_t width, const RowIndex& idx, int64_t p0, int64_t p1,
                     std::vector<int64_t>& cursor, T* dst) {
  int64_t n = static_cast<int64_t>(idx.begin.size()) - 1;
  fk::parallel_for(0, n, 2048, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      int64_t j = cursor[r], e = idx.begin[r + 1];
      T* d = dst + r * width;
      for (; j < e; ++j) {
        int64_t p = idx.entries[j].pair;
        if (p >= p1) break;
        add_row(d, staged + (p - p0) * width, width);
      }
      cursor[r] = j;
    }
  });
}

// `out` (N_out x C_out) arrives uninitialised: the row-stationary path zeroes
// each block of rows in the thread that owns it, the others zero it first.
// `tiles`: the f32 register tiles (f32, gather_gemm_supported(cout)), else BLAS.
template <typename T>
void forward_impl(const T* F, int64_t cin, const T* W, int64_t cout, const KernelMap& m, T* out,
                  bool tiles) {
  constexpr fk::DType dt = dtype_of_t<T>();
  const bool fused = cpu_fused(std::is_same_v<T, float> && tiles);  // read on every path
  if (m.identity) {
    // Every row is written once (micro-kernel stores, GEMMs with beta = 0):
    // no zeroing first.
    note_call(true, 1, 0);
    if constexpr (std::is_same_v<T, float>) {
      if (tiles) {
        gather_gemm_jobs(m, 0, 1, 0, F, cin, nullptr, W, cin, cout, out);
        return;
      }
    }
    std::vector<Gemm> jobs;
    add_row_jobs(jobs, false, m.out_size, cout, cin, sizeof(T), F, cin, W, cout, out, cout);
    run_gemms(dt, jobs);
    return;
  }
  // f32 micro-kernels read input rows in place: no input staging; the fused
  // path then needs no staging at all (each output row accumulates its terms).
  bool direct = false;
  if constexpr (std::is_same_v<T, float>) {
    direct = tiles;
    if (direct && fused) {
      note_call(true, 1, 0);
      row_stationary_f32(m.row_blocks(false), F, W, cin, cout, out);
      return;
    }
  }
  zero_fill(out, m.out_size * cout);
  int64_t staged_cols = direct ? cout : cin + cout;
  auto groups = plan_groups(m, fused, staged_cols * static_cast<int64_t>(sizeof(T)));
  int64_t rows = max_rows(groups);
  note_call(fused, static_cast<int64_t>(groups.size()),
            rows * staged_cols * static_cast<int64_t>(sizeof(T)));
  if (groups.empty()) return;
  fk::Tensor sin = fk::empty({direct ? 0 : rows, cin}, {dt}), sout = fk::empty({rows, cout}, {dt});
  T* si = sin.data<T>();
  T* so = sout.data<T>();
  const RowIndex* idx = fused ? &m.by_out() : nullptr;
  std::vector<int64_t> cursor;
  if (fused) cursor.assign(idx->begin.begin(), idx->begin.end() - 1);
  for (const Group& g : groups) {
    if constexpr (std::is_same_v<T, float>) {
      if (direct) {
        gather_gemm_jobs(m, g.k0, g.k1, g.p0, F, cin, m.in_rows.data(), W, cin, cout, so);
        if (fused)
          scatter_grouped(so, cout, *idx, g.p0, g.p1, cursor, out);
        else
          scatter_unique(so, cout, m.out_rows.data(), g.p0, g.p1, out);
        fk::profile::count_launch(1);
        continue;
      }
    }
    gather_rows(F, cin, m.in_rows.data() + g.p0, g.p1 - g.p0, si);
    std::vector<Gemm> jobs;
    for (int64_t k = g.k0; k < g.k1; ++k) {
      auto [at, n] = span_in_group(m, k, g);
      add_row_jobs(jobs, false, n, cout, cin, sizeof(T), si + at * cin, cin, W + k * cin * cout,
                   cout, so + at * cout, cout);
    }
    run_gemms(dt, jobs);
    if (fused)
      scatter_grouped(so, cout, *idx, g.p0, g.p1, cursor, out);
    else
      scatter_unique(so, cout, m.out_rows.data(), g.p0, g.p1, out);
    fk::profile::count_launch(2);
  }
}

// The input gradient: `gin` (N_in x C_in) arrives uninitialised, like
// forward_impl's `out`. `tiles`: as forward_impl's, on C_in.
template <typename T>
void input_grad_impl(const T* G, int64_t cin, const T* W, int64_t cout, const KernelMap& m, T* gin,
                     bool tiles) {
  constexpr fk::DType dt = dtype_of_t<T>();
  if (m.identity) {
    note_call(true, 1, 0);
    zero_fill(gin, m.in_size * cin);
    std::vector<Gemm> jobs;
    add_row_jobs(jobs, true, m.in_size, cin, cout, sizeof(T), G, cout, W, cout, gin, cin);
    run_gemms(dt, jobs);
    return;
  }
  bool direct_in = false;
  if constexpr (std::is_same_v<T, float>) direct_in = tiles;
  const bool fused = cpu_fused(direct_in);
  int64_t staged_cols = direct_in ? cin : cin + cout;
  auto groups = plan_groups(m, fused, staged_cols * static_cast<int64_t>(sizeof(T)));
  int64_t rows = max_rows(groups);
  note_call(fused, static_cast<int64_t>(groups.size()),
            rows * staged_cols * static_cast<int64_t>(sizeof(T)));
  bool staged = !(direct_in && fused);
  if (staged) zero_fill(gin, m.in_size * cin);  // else row_stationary zeroes its blocks
  if (groups.empty() && staged) return;
  fk::Tensor sin = fk::empty({staged ? rows : 0, cin}, {dt}),
             sout = fk::empty({staged && !direct_in ? rows : 0, cout}, {dt});
  T* si = sin.data<T>();
  T* so = sout.data<T>();
  // The f32 micro-kernels compute grad_in from G rows in place, against W_k^T.
  bool direct = false;
  std::vector<T> wt;
  if constexpr (std::is_same_v<T, float>) {
    direct = tiles;
    if (direct) {
      wt.resize(static_cast<size_t>(m.volume * cin * cout));
      transpose_offsets(W, m.volume, cin, cout, wt.data());
    }
    if (direct && fused) {
      note_call(true, 1, 0);
      row_stationary_f32(m.row_blocks(true), G, wt.data(), cout, cin, gin);
      return;
    }
  }
  const RowIndex* idx = fused ? &m.by_in() : nullptr;
  std::vector<int64_t> cursor;
  if (idx) cursor.assign(idx->begin.begin(), idx->begin.end() - 1);
  for (const Group& g : groups) {
    if (!direct) gather_rows(G, cout, m.out_rows.data() + g.p0, g.p1 - g.p0, so);
    if constexpr (std::is_same_v<T, float>) {
      if (direct) {
        gather_gemm_jobs(m, g.k0, g.k1, g.p0, G, cout, m.out_rows.data(), wt.data(), cout, cin, si);
        if (idx)
          scatter_grouped(si, cin, *idx, g.p0, g.p1, cursor, gin);
        else
          scatter_unique(si, cin, m.in_rows.data(), g.p0, g.p1, gin);
        fk::profile::count_launch(2);
        continue;
      }
    }
    std::vector<Gemm> jobs;
    for (int64_t k = g.k0; k < g.k1; ++k) {
      auto [at, n] = span_in_group(m, k, g);
      add_row_jobs(jobs, true, n, cin, cout, sizeof(T), so + at * cout, cout, W + k * cin * cout,
                   cout, si + at * cin, cin);
    }
    run_gemms(dt, jobs);
    if (idx)
      scatter_grouped(si, cin, *idx, g.p0, g.p1, cursor, gin);
    else
      scatter_unique(si, cin, m.in_rows.data(), g.p0, g.p1, gin);
    fk::profile::count_launch(3);
  }
}

template <typename T>
void forward(const T* F, int64_t cin, const T* W, int64_t cout, const KernelMap& m, T* out) {
  const bool tiles_ok = std::is_same_v<T, float> && gather_gemm_supported(cout);
  const ConvShape s{ConvPass::Forward, m.pairs(), m.out_size, cin, cout, dtype_of_t<T>()};
  const ConvPath p = run_conv_pass(s, tiles_ok, [&](ConvPath path) {
    forward_impl(F, cin, W, cout, m, out, path == ConvPath::Tiles);
  });
  tl_info.path = p;
}

// `gin` uninitialised, `gw` zeroed; either may be null (not requested).
template <typename T>
void backward(const T* G, const T* F, int64_t cin, const T* W, int64_t cout, const KernelMap& m,
              T* gin, T* gw) {
  const int64_t blk = m.volume * cin * cout;
  std::optional<ConvPath> wp;
  if (gw) {
    // The identity map's weight gradient has only the blocked paths.
    const bool tiles_ok = std::is_same_v<T, float> && gather_gemm_supported(cout);
    const ConvShape s{ConvPass::WeightGrad, m.pairs(), m.out_size, cin, cout, dtype_of_t<T>()};
    wp = run_conv_pass(s, tiles_ok, [&](ConvPath path) {
      std::fill(gw, gw + blk, T(0));  // a measured first call runs it more than once
      weight_grad(F, G, cin, cout, m, gw, path == ConvPath::Tiles);
    });
  }
  ConvCallInfo info = tl_info;
  if (gin) {
    const bool tiles_ok = std::is_same_v<T, float> && gather_gemm_supported(cin) && !m.identity;
    const ConvShape s{ConvPass::InputGrad, m.pairs(), m.in_size, cin, cout, dtype_of_t<T>()};
    const ConvPath p = run_conv_pass(s, tiles_ok, [&](ConvPath path) {
      input_grad_impl(G, cin, W, cout, m, gin, path == ConvPath::Tiles);
    });
    info = tl_info;
    info.path = p;
  }
  if (wp) info.weight_path = *wp;
  tl_info = info;
}

}  // namespace

void conv_detail::check_operands(const char* where, const fk::Tensor& f, const fk::Tensor& w,
                                 const KernelMap& m) {
  FK_CHECK(w.defined(), where, "a weight tensor", "an undefined tensor");
  FK_CHECK(w.device() == f.device(), where,
           "the weight on " + f.device().str() + " (the features' device)",
           "the weight on " + w.device().str());
  FK_CHECK(fk::is_floating(f.dtype()), where, "f32, f64, f16 or bf16 features",
           fk::name(f.dtype()));
  FK_CHECK(w.dtype() == f.dtype(), where,
           "weights of the features' dtype " + std::string(fk::name(f.dtype())),
           fk::name(w.dtype()));
  FK_CHECK(f.dim() == 2 && f.size(0) == m.in_size, where,
           "features of shape " + fk::to_text(m.in_size) + " x C_in", f.shape().str());
}

void conv_detail::check_common(const char* where, const fk::Tensor& f, const fk::Tensor& w,
                               const KernelMap& m) {
  FK_CHECK(f.device().is_cpu() && w.device().is_cpu(), where,
           "CPU tensors (device features take convolve_features' device path, conv_device.h)",
           f.device().str() + " / " + w.device().str());
  check_operands(where, f, w, m);
}

namespace {

using detail::compute_dtype;

}  // namespace

ConvCallInfo last_conv_call() {
  return tl_info;
}

namespace {

// The f32 (or f64) dataflows on operands converted to the compute dtype, the
// result in the features' dtype.
fk::Tensor forward_converted(const fk::Tensor& features, const fk::Tensor& weight,
                             const KernelMap& m, int64_t cin, int64_t cout) {
  fk::DType ct = compute_dtype(features.dtype());
  fk::Tensor f = features.to(ct).contiguous(), w = weight.to(ct).contiguous();
  fk::Tensor out = fk::empty({m.out_size, cout}, {ct});  // forward_impl writes every row
  if (ct == fk::DType::F32)
    forward<float>(f.data<float>(), cin, w.data<float>(), cout, m, out.data<float>());
  else
    forward<double>(f.data<double>(), cin, w.data<double>(), cout, m, out.data<double>());
  return out.to(features.dtype());
}

ConvGrads backward_converted(const fk::Tensor& grad_out, const fk::Tensor& features,
                             const fk::Tensor& weight, const KernelMap& m, bool need_features,
                             bool need_weight) {
  int64_t cin = features.size(1), cout = weight.size(weight.dim() - 1);
  fk::DType ct = compute_dtype(features.dtype());
  fk::Tensor g = grad_out.to(ct).contiguous(), f = features.to(ct).contiguous(),
             w = weight.to(ct).contiguous();
  ConvGrads r;
  // input_grad_impl writes every row of gin
  fk::Tensor gin = need_features ? fk::empty({m.in_size, cin}, {ct}) : fk::Tensor();
  fk::Tensor gw = need_weight ? fk::zeros(weight.shape(), {ct}) : fk::Tensor();
  if (ct == fk::DType::F32)
    backward<float>(g.data<float>(), f.data<float>(), cin, w.data<float>(), cout, m,
                    need_features ? gin.data<float>() : nullptr,
                    need_weight ? gw.data<float>() : nullptr);
  else
    backward<double>(g.data<double>(), f.data<double>(), cin, w.data<double>(), cout, m,
                     need_features ? gin.data<double>() : nullptr,
                     need_weight ? gw.data<double>() : nullptr);
  if (need_features) r.features = gin.to(features.dtype());
  if (need_weight) r.weight = gw.to(weight.dtype());
  return r;
}

const uint16_t* words(const fk::Tensor& t) {
  return static_cast<const uint16_t*>(t.data_ptr());
}

}  // namespace

fk::Tensor conv_forward(const fk::Tensor& features, const fk::Tensor& weight, const KernelMap& m) {
  const char* where = "minkowski::convolution";
  check_common(where, features, weight, m);
  int64_t cin = features.size(1);
  bool ok = (weight.dim() == 3 && weight.size(0) == m.volume && weight.size(1) == cin) ||
            (m.identity && weight.dim() == 2 && weight.size(0) == cin);
  FK_CHECK(
      ok, where,
      "a weight of shape (K=" + fk::to_text(m.volume) + ", C_in=" + fk::to_text(cin) + ", C_out)",
      weight.shape().str());
  int64_t cout = weight.size(weight.dim() - 1);
  if (features.dtype() != fk::DType::BF16 || !gather_gemm_bf16_supported(cin, cout))
    return forward_converted(features, weight, m, cin, cout);
  // bf16 on a CPU with bf16 dot products: the bf16 tiles, or (gemm) the f32
  // dataflows on converted operands.
  const ConvShape s{ConvPass::Forward, m.pairs(), m.out_size, cin, cout, fk::DType::BF16};
  fk::Tensor out;
  const ConvPath p = run_conv_pass(s, true, [&](ConvPath path) {
    if (path == ConvPath::Gemm) {
      out = forward_converted(features, weight, m, cin, cout);
      return;
    }
    const fk::Tensor f = features.contiguous(), w = weight.contiguous();
    fk::Tensor o = fk::empty({m.out_size, cout}, {fk::DType::F32});
    forward_bf16(words(f), cin, words(w), cout, m, o.data<float>());
    note_call(true, 1, 0);
    out = o.to(fk::DType::BF16);
  });
  tl_info.path = p;
  return out;
}

// The bf16 weight gradient (K x C_in x C_out) on the bf16 tiles, or
// undefined where they do not take the map.
fk::Tensor weight_grad_tiles(const fk::Tensor& grad_out, const fk::Tensor& features,
                             const fk::Tensor& weight, const KernelMap& m) {
  const int64_t cin = features.size(1), cout = weight.size(weight.dim() - 1);
  const fk::Tensor g = grad_out.contiguous(), f = features.contiguous();
  fk::Tensor gw = fk::zeros(weight.shape(), {fk::DType::F32});
  if (!weight_grad_bf16(words(f), words(g), cin, cout, m, gw.data<float>())) return fk::Tensor();
  return gw.to(fk::DType::BF16);
}

ConvGrads conv_backward(const fk::Tensor& grad_out, const fk::Tensor& features,
                        const fk::Tensor& weight, const KernelMap& m, bool need_features,
                        bool need_weight) {
  // (ConvolutionBackward sends device features to device_conv_backward; a
  // direct call with one device operand would read it on the host)
  FK_CHECK(
      grad_out.device().is_cpu() && features.device().is_cpu() && weight.device().is_cpu(),
      "minkowski::convolution backward",
      "CPU gradient / features / weight (device features take device_conv_backward, "
      "conv_device.h)",
      grad_out.device().str() + " / " + features.device().str() + " / " + weight.device().str());
  int64_t cin = features.size(1), cout = weight.size(weight.dim() - 1);
  const bool bf16 = features.dtype() == fk::DType::BF16 && grad_out.dtype() == fk::DType::BF16 &&
                    weight.dtype() == fk::DType::BF16;
  const bool in_tiles = need_features && bf16 && gather_gemm_bf16_supported(cout, cin);
  // the weight gradient pairs pairs, not channels: any C_in
  const bool w_tiles = need_weight && bf16 && !m.identity && gather_gemm_bf16_supported(2, cout);
  if (!in_tiles && !w_tiles)
    return backward_converted(grad_out, features, weight, m, need_features, need_weight);
  // Each gradient on the bf16 tiles (or, gemm, converted) where they apply,
  // else converted.
  ConvGrads r;
  ConvCallInfo info = tl_info;
  if (need_features) {
    const ConvShape s{ConvPass::InputGrad, m.pairs(), m.in_size, cin, cout, fk::DType::BF16};
    info.path = run_conv_pass(s, in_tiles, [&](ConvPath path) {
      if (path == ConvPath::Gemm) {
        r.features = backward_converted(grad_out, features, weight, m, true, false).features;
        return;
      }
      const fk::Tensor g = grad_out.contiguous(), w = weight.contiguous();
      fk::Tensor gin = fk::empty({m.in_size, cin}, {fk::DType::F32});
      input_grad_bf16(words(g), cin, words(w), cout, m, gin.data<float>());
      note_call(true, 1, 0);
      r.features = gin.to(fk::DType::BF16);
    });
    info.fused = tl_info.fused, info.groups = tl_info.groups;
    info.staging_bytes = tl_info.staging_bytes;
  }
  if (need_weight) {
    const ConvShape s{ConvPass::WeightGrad, m.pairs(), m.out_size, cin, cout, fk::DType::BF16};
    info.weight_path = run_conv_pass(s, w_tiles, [&](ConvPath path) {
      if (path == ConvPath::Tiles) r.weight = weight_grad_tiles(grad_out, features, weight, m);
      if (!r.weight.defined() || path == ConvPath::Gemm)
        r.weight = backward_converted(grad_out, features, weight, m, false, true).weight;
    });
  }
  tl_info = info;
  return r;
}

}  // namespace minkowski
