#include "bench_conv_ladder.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "bench_timing.h"
#include "fk/blas.h"

namespace minkowski_app {

namespace {

using minkowski::KernelMap;

int64_t in_row(const KernelMap& m, int64_t p) {
  return m.identity ? p : m.in_rows[p];
}
int64_t out_row(const KernelMap& m, int64_t p) {
  return m.identity ? p : m.out_rows[p];
}

void gather(const float* src, int64_t width, const KernelMap& m, int64_t p0, int64_t n, bool in,
            float* dst) {
  fk::parallel_for(0, n, 4096, [&](int64_t lo, int64_t hi) {
    for (int64_t p = lo; p < hi; ++p) {
      const int64_t r = in ? in_row(m, p0 + p) : out_row(m, p0 + p);
      std::memcpy(dst + p * width, src + r * width, width * sizeof(float));
    }
  });
}

// dst[row(p)] += src[p]: rows are unique within one offset.
void scatter_add(const float* src, int64_t width, const KernelMap& m, int64_t p0, int64_t n,
                 bool in, float* dst) {
  fk::parallel_for(0, n, 4096, [&](int64_t lo, int64_t hi) {
    for (int64_t p = lo; p < hi; ++p) {
      float* d = dst + (in ? in_row(m, p0 + p) : out_row(m, p0 + p)) * width;
      const float* s = src + p * width;
      for (int64_t c = 0; c < width; ++c) d[c] += s[c];
    }
  });
}

int64_t largest_offset(const KernelMap& m) {
  int64_t r = 0;
  for (int64_t k = 0; k < m.volume; ++k) r = std::max(r, m.count(k));
  return r;
}

// The peers' forward: out = sum_k scatter(gather(F, in_k) . W_k, out_k).
void peer_forward(const KernelMap& m, const fk::Tensor& f, const fk::Tensor& w, fk::Tensor& out,
                  fk::Tensor& a, fk::Tensor& b) {
  const int64_t cin = f.size(1), cout = w.size(2);
  float* o = out.data<float>();
  std::fill(o, o + out.numel(), 0.0f);
  for (int64_t k = 0; k < m.volume; ++k) {
    const int64_t n = m.count(k), p0 = m.offset_begin[k];
    if (n == 0) continue;
    gather(f.data<float>(), cin, m, p0, n, true, a.data<float>());
    fk::gemm(fk::DType::F32, false, false, n, cout, cin, 1.0, a.data<float>(), cin,
             w.data<float>() + k * cin * cout, cout, 0.0, b.data<float>(), cout);
    scatter_add(b.data<float>(), cout, m, p0, n, false, o);
  }
}

// The peers' backward: grad_F by gather(G) . W_k^T scattered to the inputs,
// grad_W_k = gather(F)^T gather(G).
void peer_backward(const KernelMap& m, const fk::Tensor& f, const fk::Tensor& w,
                   const fk::Tensor& g, fk::Tensor& gin, fk::Tensor& gw, fk::Tensor& a,
                   fk::Tensor& b, fk::Tensor& c) {
  const int64_t cin = f.size(1), cout = w.size(2);
  std::fill(gin.data<float>(), gin.data<float>() + gin.numel(), 0.0f);
  for (int64_t k = 0; k < m.volume; ++k) {
    const int64_t n = m.count(k), p0 = m.offset_begin[k];
    if (n == 0) continue;
    gather(g.data<float>(), cout, m, p0, n, false, b.data<float>());
    gather(f.data<float>(), cin, m, p0, n, true, a.data<float>());
    fk::gemm(fk::DType::F32, false, true, n, cin, cout, 1.0, b.data<float>(), cout,
             w.data<float>() + k * cin * cout, cout, 0.0, c.data<float>(), cin);
    scatter_add(c.data<float>(), cin, m, p0, n, true, gin.data<float>());
    fk::gemm(fk::DType::F32, true, false, cin, cout, n, 1.0, a.data<float>(), cin, b.data<float>(),
             cout, 0.0, gw.data<float>() + k * cin * cout, cout);
  }
}

struct Times {
  MinTimes fwd, bwd;
};

Times time_conv(const KernelMap& m, const fk::Tensor& f, const fk::Tensor& w, const fk::Tensor& g,
                int repeats) {
  using namespace minkowski;
  const int nt = fk::get_num_threads();
  Times t;
  conv_forward(f, w, m);
  t.fwd = min_times(repeats, nt, [&] { conv_forward(f, w, m); });
  conv_backward(g, f, w, m, true, true);
  t.bwd = min_times(repeats, nt, [&] { conv_backward(g, f, w, m, true, true); });
  return t;
}

MinTimes sgemm_times(int64_t rows, int64_t c, int repeats) {
  fk::Tensor A = random_uniform({rows, c}, 1, 4), B = random_uniform({c, c}, 1, 5),
             C = fk::empty({rows, c});
  auto call = [&] {
    fk::gemm(fk::DType::F32, false, false, rows, c, c, 1.0, A.data<float>(), c, B.data<float>(), c,
             0.0, C.data<float>(), c);
  };
  call();
  return min_times(repeats, fk::get_num_threads(), call);
}

nlohmann::json one_width(const KernelMap& m, int c, int repeats, const fk::FmaPeak& peak) {
  using namespace minkowski;
  const fk::Tensor f = random_uniform({m.in_size, c}, 1.0, 1),
                   w = random_uniform({m.volume, c, c}, 1.0 / std::sqrt(c * m.volume), 2),
                   g = random_uniform({m.out_size, c}, 1.0, 3);
  clear_conv_path_choices();  // this width's first calls measure
  conv_forward(f, w, m);
  const ConvPath fwd_path = last_conv_call().path;
  conv_backward(g, f, w, m, true, true);
  const ConvCallInfo bwd = last_conv_call();
  const Times chosen = time_conv(m, f, w, g, repeats);
  Times tiles, gemm;
  {
    KnobOverride k("ME_CONV_PATH", "tiles");
    tiles = time_conv(m, f, w, g, repeats);
  }
  {
    KnobOverride k("ME_CONV_PATH", "gemm");
    gemm = time_conv(m, f, w, g, repeats);
  }
  const int64_t big = largest_offset(m);
  fk::Tensor a = fk::empty({big, c}), b = fk::empty({big, c}), cc = fk::empty({big, c});
  fk::Tensor out = fk::empty({m.out_size, c}), gin = fk::empty({m.in_size, c}),
             gw = fk::empty({m.volume, c, c});
  const int nt = fk::get_num_threads();
  peer_forward(m, f, w, out, a, b);
  Times peer;
  peer.fwd = min_times(repeats, nt, [&] { peer_forward(m, f, w, out, a, b); });
  peer_backward(m, f, w, g, gin, gw, a, b, cc);
  peer.bwd = min_times(repeats, nt, [&] { peer_backward(m, f, w, g, gin, gw, a, b, cc); });
  const MinTimes sg = sgemm_times(m.out_size, c, repeats);
  const double sgemm_flop = 2.0 * static_cast<double>(m.out_size) * c * c;
  const double sgemm_cpu = sgemm_flop / (sg.cpu * 1e6), sgemm_wall = sgemm_flop / (sg.wall * 1e6);
  const double flop = 2.0 * static_cast<double>(m.pairs()) * c * c;
  auto row = [&](const char* pass, const std::string& path, const MinTimes& t, double mult,
                 const MinTimes& p, const MinTimes& ti, const MinTimes& ge) {
    const double gf = mult * flop / (t.cpu * 1e6), gf_wall = mult * flop / (t.wall * 1e6);
    fmt::print(
        "  {:>4}  {:<8}  {:<11} {:9.2f} {:8.1f} {:6.0f} {:8.2f} {:7.2f} {:9.2f} {:9.2f} {:9.2f}\n",
        c, pass, path, t.cpu, gf, peak.cpu > 0 ? 100 * gf / peak.cpu : 0.0, gf / sgemm_cpu,
        p.cpu / t.cpu, ti.cpu, ge.cpu, t.wall);
    return nlohmann::json{{"path", path},
                          {"cpu_ms", t.cpu},
                          {"ms", t.wall},
                          {"gflops", gf},
                          {"gflops_wall", gf_wall},
                          {"share_of_fma_peak", peak.cpu > 0 ? gf / peak.cpu : 0},
                          {"over_sgemm", gf / sgemm_cpu},
                          {"peer_cpu_ms", p.cpu},
                          {"peer_ms", p.wall},
                          {"peer_over_ours", p.cpu / t.cpu},
                          {"tiles_cpu_ms", ti.cpu},
                          {"gemm_cpu_ms", ge.cpu}};
  };
  nlohmann::json j{{"channels", c}, {"sgemm_gflops", sgemm_cpu}, {"sgemm_gflops_wall", sgemm_wall}};
  j["forward"] =
      row("forward", conv_path_name(fwd_path), chosen.fwd, 1, peer.fwd, tiles.fwd, gemm.fwd);
  j["backward"] = row(
      "backward", fmt::format("{}/{}", conv_path_name(bwd.path), conv_path_name(bwd.weight_path)),
      chosen.bwd, 2, peer.bwd, tiles.bwd, gemm.bwd);
  return j;
}

}  // namespace

nlohmann::json conv_ladder(const KernelMap& map, const std::vector<int>& widths, int repeats,
                           const fk::FmaPeak& peak) {
  fmt::print(
      "  ladder: f32, {} threads, {:.2f} pairs/row, least of {} runs. Rates from the process CPU "
      "time at 1 thread (what an undisturbed run takes), the wall time at more; wall ms last): FMA "
      "peak {:.1f} GFLOP/s "
      "({}, {} threads); x sgemm = ours over OpenBLAS sgemm of rows x C x C; x peer = per-offset "
      "gather -> sgemm -> scatter-add over ours; all in this run\n",
      fk::get_num_threads(), static_cast<double>(map.pairs()) / std::max<int64_t>(map.out_size, 1),
      repeats, peak.cpu, fk::fma_peak_isa(), fk::get_num_threads());
  fmt::print("  {:>4}  {:<8}  {:<11} {:>9} {:>8} {:>6} {:>8} {:>7} {:>9} {:>9} {:>9}\n", "C",
             "pass", "path(in/w)", "cpu-ms", "GFLOP/s", "%peak", "x sgemm", "x peer", "tiles",
             "gemm", "wall ms");
  nlohmann::json rows = nlohmann::json::array();
  for (int c : widths) rows.push_back(one_width(map, c, repeats, peak));
  return rows;
}

}  // namespace minkowski_app
