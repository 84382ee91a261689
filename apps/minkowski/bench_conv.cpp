#include "bench_conv.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "bench_conv_ladder.h"
#include "bench_timing.h"
#include "fk/blas.h"
#include "fk/fk.h"
#include "fk/fma_peak.h"
#include "minkowski/minkowski.h"
#include "output_path.h"
#include "scene.h"

namespace minkowski_app {

namespace {

// The bench's inputs, checked.
struct Setup {
  fk::DType dtype = fk::DType::F32;
  int cin = 0, cout = 0;
};

Setup check_options(const BenchConvOptions& o) {
  if (o.points < 1) throw std::runtime_error("--points must be positive");
  if (o.channels.empty() ||
      std::any_of(o.channels.begin(), o.channels.end(), [](int c) { return c < 1; }))
    throw std::runtime_error("--channels must be positive");
  if (o.out_channels < 0) throw std::runtime_error("--out-channels must be >= 0 (0: --channels)");
  if (o.kernel < 1 || o.stride < 1)
    throw std::runtime_error("--kernel and --stride must be positive");
  if (o.repeats < 1) throw std::runtime_error("--repeats must be positive");
  Setup s;
  s.dtype = fk::dtype_from_name(o.dtype);
  if (!fk::is_floating(s.dtype)) throw std::runtime_error("--dtype must be f32, f64, f16 or bf16");
  s.cin = o.channels[0];
  s.cout = o.out_channels > 0 ? o.out_channels : o.channels[0];
  return s;
}

struct Scene {
  std::vector<int32_t> rows;  // N x 4
  std::string source;
  std::string note;  // how a synthetic scene was made
};

Scene load_scene(const BenchConvOptions& o) {
  if (!o.scene.empty()) return {read_scene(o.scene), o.scene, ""};
  SyntheticScene s = synthetic_scene(o.points);
  std::string note =
      fmt::format("{} voxels in {} room(s) with {} shapes", s.rows.size() / 4, s.rooms, s.shapes);
  return {std::move(s.rows), fmt::format("synthetic({})", o.points), std::move(note)};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
double minimum(const std::vector<double>& v) {
  return *std::min_element(v.begin(), v.end());
}

// The kernel map built from scratch `repeats` times (a fresh manager each
// time: insert + map), wall and CPU time of each step; the last build is kept.
struct MapBuild {
  std::shared_ptr<minkowski::CoordinateManager> mgr;
  minkowski::MapKey in_key, out_key;
  std::shared_ptr<const minkowski::KernelMap> map;
  std::vector<double> t_insert, t_kmap, t_index, t_by_in, c_insert, c_kmap, c_index, c_by_in;
};

MapBuild build_maps(const fk::Tensor& coords, const minkowski::KernelRegion& region,
                    const BenchConvOptions& o) {
  using namespace minkowski;
  MapBuild b;
  for (int r = 0; r < o.repeats; ++r) {
    b.map.reset();  // free the previous build outside the timed spans
    b.mgr = std::make_shared<CoordinateManager>(3);
    double t0 = now_ms(), c0 = cpu_ms();
    b.in_key = b.mgr->insert(coords, {1}).key;
    double t1 = now_ms(), c1 = cpu_ms();
    b.out_key = b.mgr->stride(b.in_key, {o.stride});
    b.map = b.mgr->kernel_map(b.in_key, b.out_key, region, false);
    double t2 = now_ms(), c2 = cpu_ms();
    b.map->by_out();  // built with the map
    double t3 = now_ms(), c3 = cpu_ms();
    b.map->by_in();  // only paths that need it (not the f32 fused ones on a symmetric map)
    b.t_by_in.push_back(now_ms() - t3);
    b.c_by_in.push_back(cpu_ms() - c3);
    b.c_insert.push_back(c1 - c0);
    b.c_kmap.push_back(c2 - c1);
    b.c_index.push_back(c3 - c2);
    b.t_insert.push_back(t1 - t0);
    b.t_kmap.push_back(t2 - t1);
    b.t_index.push_back(t3 - t2);
  }
  return b;
}

// The convolution's operands: features, weight and output gradient.
struct Operands {
  fk::Tensor f, w, g;
};

struct Pass {
  double fwd = 0, bwd = 0, fwd_cpu = 0, bwd_cpu = 0;
  double bwd_in = 0, bwd_w = 0, bwd_in_cpu = 0, bwd_w_cpu = 0;
  int64_t staging = 0, groups = 0;
};

// Forward, backward and the backward's two halves under one setting of the
// fused-copy knobs.
Pass time_pass(const Operands& x, const minkowski::KernelMap& map, int repeats, const char* fused,
               const char* cap) {
  using namespace minkowski;
  KnobOverride a("ME_FUSED_COPY", fused), b("ME_FUSED_COPY_MAX_MB", cap);
  Pass p;
  conv_forward(x.f, x.w, map);  // warm-up (allocator, pages)
  p.fwd = median_ms(repeats, [&] { conv_forward(x.f, x.w, map); });
  p.fwd_cpu = g_last_cpu_ms;
  p.staging = last_conv_call().staging_bytes;
  p.groups = last_conv_call().groups;
  conv_backward(x.g, x.f, x.w, map, true, true);
  p.bwd = median_ms(repeats, [&] { conv_backward(x.g, x.f, x.w, map, true, true); });
  p.bwd_cpu = g_last_cpu_ms;
  // the two halves of the backward on their own
  p.bwd_in = median_ms(repeats, [&] { conv_backward(x.g, x.f, x.w, map, true, false); });
  p.bwd_in_cpu = g_last_cpu_ms;
  p.bwd_w = median_ms(repeats, [&] { conv_backward(x.g, x.f, x.w, map, false, true); });
  p.bwd_w_cpu = g_last_cpu_ms;
  return p;
}

struct Scaling {
  double fwd1 = 1e300, fwdn = 1e300, bwd1 = 1e300, bwdn = 1e300;
};

// Thread scaling of the default path: one thread and all `nt` threads
// alternate call by call, so both see the same load on a shared machine; the
// minimum wall time of each is the least disturbed run.
Scaling time_scaling(const Operands& x, const minkowski::KernelMap& map, int repeats, int nt) {
  using namespace minkowski;
  Scaling sc;
  // Wall ms only: process CPU ms at more than one thread undercounts (pool
  // threads asleep through part of a call; min_times), and its ratio to one
  // thread's read 0.53 for a split that cannot do less work.
  auto timed = [](const std::function<void()>& f) {
    const double t0 = now_ms();
    f();
    return now_ms() - t0;
  };
  for (int r = 0; r < repeats; ++r)
    for (int threads : {1, nt}) {
      fk::set_num_threads(threads);
      const double tf = timed([&] { conv_forward(x.f, x.w, map); });
      const double tb = timed([&] { conv_backward(x.g, x.f, x.w, map, true, true); });
      double& f = threads == 1 ? sc.fwd1 : sc.fwdn;
      double& b = threads == 1 ? sc.bwd1 : sc.bwdn;
      f = std::min(f, tf);
      b = std::min(b, tb);
    }
  fk::set_num_threads(nt);
  return sc;
}

// This machine's sgemm on the conv's GEMM shape (100k rows of C_in times
// C_in x C_out), same threads, same run.
struct Gemm {
  int64_t m = 100000, k = 0, n = 0;
  double ms = 0, gflops = 0, cpu = 0;
};

Gemm time_sgemm(int cin, int cout, int repeats) {
  Gemm r;
  r.k = cin;
  r.n = cout;
  const int64_t gm = r.m, gk = r.k, gn = r.n;
  fk::Tensor A = random_uniform({gm, gk}, 1, 4), B = random_uniform({gk, gn}, 1, 5),
             C = fk::empty({gm, gn});
  auto call = [&] {
    fk::gemm(fk::DType::F32, false, false, gm, gn, gk, 1.0, A.data<float>(), gk, B.data<float>(),
             gn, 0.0, C.data<float>(), gn);
  };
  call();
  r.ms = median_ms(repeats, call);
  r.gflops = 2.0 * gm * gn * gk / (r.ms * 1e6);
  r.cpu = g_last_cpu_ms;
  return r;
}

// Everything one run measured.
struct Report {
  std::string source, note;
  int64_t n_in = 0, n_unique = 0, n_out = 0, pairs = 0, map_bytes = 0;
  int cin = 0, cout = 0, nt = 1;
  MapBuild maps;
  Pass fused, chunked, per_offset;
  Scaling scaling;
  Gemm sgemm;
  double peak = 0;  // the f32 FMA ceiling at the run's thread count
  // GFLOP/s of `mult` convolutions' worth of work in `ms`.
  double gflops(double ms, double mult) const {
    return mult * 2.0 * static_cast<double>(pairs) * cin * cout / (ms * 1e6);
  }
};

void print_report(const Report& r, const BenchConvOptions& o) {
  const MapBuild& b = r.maps;
  auto gf = [&](double ms, double mult) { return r.gflops(ms, mult); };
  fmt::print("minkowski bench conv: {} | {} input rows -> {} unique, {} output rows\n", r.source,
             r.n_in, r.n_unique, r.n_out);
  if (!r.note.empty()) fmt::print("  scene: {}\n", r.note);
  fmt::print("  kernel {}^3 stride {}, C_in {} C_out {}, {}, {} threads, median of {}\n", o.kernel,
             o.stride, r.cin, r.cout, o.dtype, fk::get_num_threads(), o.repeats);
  fmt::print("  pairs {} ({:.2f} per output row), kernel map {:.1f} MB\n", r.pairs,
             static_cast<double>(r.pairs) / std::max<int64_t>(r.n_out, 1), r.map_bytes / 1e6);
  fmt::print(
      "  insert {:.2f} ms, kernel map {:.2f} ms, row index by_out {:.2f} ms, by_in {:.2f} ms "
      "(wall, median)\n",
      median(b.t_insert), median(b.t_kmap), median(b.t_index), median(b.t_by_in));
  fmt::print(
      "  insert {:.2f} ms, kernel map {:.2f} ms, row index by_out {:.2f} ms, by_in {:.2f} ms "
      "(cpu, min)\n",
      minimum(b.c_insert), minimum(b.c_kmap), minimum(b.c_index), minimum(b.c_by_in));
  auto line = [&](const std::string& name, const Pass& p) {
    fmt::print(
        "  {:<12} forward {:8.2f} ms ({:6.1f} GFLOP/s)  backward {:8.2f} ms ({:6.1f} GFLOP/s)  "
        "staging {:.1f} MB in {} group(s)\n",
        name, p.fwd, gf(p.fwd, 1), p.bwd, gf(p.bwd, 2), p.staging / 1e6, p.groups);
  };
  auto cpu_line = [&](const std::string& name, const Pass& p) {
    fmt::print("  {:<12} forward {:8.2f} cpu-ms ({:6.1f} GFLOP/cpu-s) backward {:8.2f} cpu-ms\n",
               name, p.fwd_cpu, gf(p.fwd_cpu, 1), p.bwd_cpu);
  };
  const std::string chunked = fmt::format("chunked{}MB", o.chunk_mb);
  line("fused", r.fused);
  line(chunked, r.chunked);
  line("per-offset", r.per_offset);
  fmt::print("  fused/per-offset time: forward {:.2f}, backward {:.2f}\n",
             r.fused.fwd / r.per_offset.fwd, r.fused.bwd / r.per_offset.bwd);
  fmt::print(
      "  fused backward halves: input grad {:.2f} ms ({:.1f} GFLOP/s), weight grad {:.2f} ms "
      "({:.1f} GFLOP/s); cpu {:.2f} / {:.2f} cpu-ms\n",
      r.fused.bwd_in, gf(r.fused.bwd_in, 1), r.fused.bwd_w, gf(r.fused.bwd_w, 1),
      r.fused.bwd_in_cpu, r.fused.bwd_w_cpu);
  cpu_line("fused", r.fused);
  cpu_line(chunked, r.chunked);
  cpu_line("per-offset", r.per_offset);
  fmt::print("  sgemm {}x{}x{}: {:.2f} ms, {:.1f} GFLOP/s ({:.2f} cpu-ms)\n", r.sgemm.m, r.sgemm.k,
             r.sgemm.n, r.sgemm.ms, r.sgemm.gflops, r.sgemm.cpu);
  if (r.peak > 0)
    fmt::print(
        "  f32 FMA peak ({} threads, {}, same run): {:.1f} GFLOP/s; fused forward {:.0f} %, "
        "input grad {:.0f} %, weight grad {:.0f} % of it\n",
        r.nt, fk::fma_peak_isa(), r.peak, 100 * gf(r.fused.fwd, 1) / r.peak,
        100 * gf(r.fused.bwd_in, 1) / r.peak, 100 * gf(r.fused.bwd_w, 1) / r.peak);
  if (r.nt > 1) {
    // On a shared machine the scheduler may cap this process's share whatever
    // its thread count (autogroups), so the wall ratio may show no scaling.
    const Scaling& sc = r.scaling;
    fmt::print(
        "  scaling (fused, 1 vs {} threads interleaved, min wall): forward {:.2f} / {:.2f} ms "
        "({:.2f}x), backward {:.2f} / {:.2f} ms ({:.2f}x)\n",
        r.nt, sc.fwd1, sc.fwdn, sc.fwd1 / sc.fwdn, sc.bwd1, sc.bwdn, sc.bwd1 / sc.bwdn);
  }
}

nlohmann::json report_json(const Report& r, const BenchConvOptions& o) {
  const MapBuild& b = r.maps;
  const Scaling& sc = r.scaling;
  auto pass_json = [&](const Pass& p) {
    return nlohmann::json{{"forward_ms", p.fwd},
                          {"backward_ms", p.bwd},
                          {"forward_cpu_ms", p.fwd_cpu},
                          {"backward_cpu_ms", p.bwd_cpu},
                          {"backward_input_grad_ms", p.bwd_in},
                          {"backward_weight_grad_ms", p.bwd_w},
                          {"backward_input_grad_cpu_ms", p.bwd_in_cpu},
                          {"backward_weight_grad_cpu_ms", p.bwd_w_cpu},
                          {"forward_gflops", r.gflops(p.fwd, 1)},
                          {"backward_gflops", r.gflops(p.bwd, 2)},
                          {"staging_bytes", p.staging},
                          {"groups", p.groups}};
  };
  return nlohmann::json{
      {"source", r.source},
      {"input_rows", r.n_in},
      {"unique_rows", r.n_unique},
      {"output_rows", r.n_out},
      {"kernel", o.kernel},
      {"stride", o.stride},
      {"c_in", r.cin},
      {"c_out", r.cout},
      {"dtype", o.dtype},
      {"threads", fk::get_num_threads()},
      {"repeats", o.repeats},
      {"pairs", r.pairs},
      {"kernel_map_bytes", r.map_bytes},
      {"insert_ms", median(b.t_insert)},
      {"kernel_map_ms", median(b.t_kmap)},
      {"row_index_ms", median(b.t_index)},
      {"insert_cpu_ms", minimum(b.c_insert)},
      {"kernel_map_cpu_ms", minimum(b.c_kmap)},
      {"row_index_cpu_ms", minimum(b.c_index)},
      {"by_in_ms", median(b.t_by_in)},
      {"by_in_cpu_ms", minimum(b.c_by_in)},
      {"fused", pass_json(r.fused)},
      {"chunked", pass_json(r.chunked)},
      {"chunk_mb", o.chunk_mb},
      {"per_offset", pass_json(r.per_offset)},
      {"fused_over_per_offset_forward", r.fused.fwd / r.per_offset.fwd},
      {"fused_over_per_offset_backward", r.fused.bwd / r.per_offset.bwd},
      {"scaling", r.nt > 1 ? nlohmann::json{{"forward_1_thread_min_ms", sc.fwd1},
                                            {"forward_n_threads_min_ms", sc.fwdn},
                                            {"backward_1_thread_min_ms", sc.bwd1},
                                            {"backward_n_threads_min_ms", sc.bwdn}}
                           : nlohmann::json()},
      {"sgemm_shape", {r.sgemm.m, r.sgemm.k, r.sgemm.n}},
      {"sgemm_ms", r.sgemm.ms},
      {"sgemm_gflops", r.sgemm.gflops},
      {"sgemm_cpu_ms", r.sgemm.cpu},
      {"fma_peak_gflops", r.peak},
      {"blas", fk::blas_config()}};
}

void write_json(const BenchConvOptions& o, const nlohmann::json& j) {
  if (o.json.empty()) return;
  std::ofstream out(o.json);
  if (!out) throw std::runtime_error("cannot write " + o.json);
  out << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  out.close();
  if (out.fail()) throw std::runtime_error("cannot write " + o.json + " (a failed write)");
}

// Several widths: the ladder only (f32, C_in = C_out = each width).
int ladder_only(const Report& r, const BenchConvOptions& o, const Setup& s,
                const minkowski::KernelMap& map, const fk::FmaPeak& peak) {
  fmt::print("minkowski bench conv: {} | {} input rows -> {} unique, {} output rows\n", r.source,
             r.n_in, r.n_unique, r.n_out);
  fmt::print("  kernel {}^3 stride {}, pairs {}, median of {}\n", o.kernel, o.stride, r.pairs,
             o.repeats);
  if (s.dtype != fk::DType::F32 || o.out_channels > 0)
    throw std::runtime_error("--channels with several widths runs f32 with C_out = C_in");
  nlohmann::json ladder = conv_ladder(map, o.channels, o.repeats, peak);
  // The peak again, after the ladder: a shift in the machine's clock during
  // the run shows as a gap between the two.
  const fk::FmaPeak after = fk::measure_fma_peak(r.nt);
  fmt::print("  FMA peak after the ladder: {:.1f} GFLOP/s ({} threads; the rows used {:.1f})\n",
             after.cpu, r.nt, peak.cpu);
  write_json(o, nlohmann::json{{"source", r.source},
                               {"pairs", r.pairs},
                               {"output_rows", r.n_out},
                               {"threads", r.nt},
                               {"repeats", o.repeats},
                               {"fma_peak_gflops", peak.wall},
                               {"fma_peak_cpu_gflops", peak.cpu},
                               {"fma_peak_after_cpu_gflops", after.cpu},
                               {"fma_peak_threads", r.nt},
                               {"fma_peak_isa", fk::fma_peak_isa()},
                               {"blas", fk::blas_config()},
                               {"ladder", std::move(ladder)}});
  return 0;
}

}  // namespace

int bench_conv(const BenchConvOptions& o) {
  if (o.threads > 0) fk::set_num_threads(o.threads);
  const Setup s = check_options(o);
  check_writable(o.json, "minkowski bench conv --json");
  Scene scene = load_scene(o);
  Report r;
  r.source = scene.source;
  r.note = scene.note;
  r.n_in = static_cast<int64_t>(scene.rows.size() / 4);  // >= 1: read_scene refuses none
  r.cin = s.cin;
  r.cout = s.cout;
  r.nt = fk::get_num_threads();
  const fk::Tensor coords = fk::from_vector(scene.rows, fk::Dims{r.n_in, 4});
  r.maps = build_maps(coords, minkowski::KernelRegion::cube({o.kernel}), o);
  const minkowski::KernelMap& map = *r.maps.map;
  r.n_unique = r.maps.mgr->size(r.maps.in_key);
  r.n_out = r.maps.mgr->size(r.maps.out_key);
  r.pairs = map.pairs();
  r.map_bytes = map.bytes();
  const fk::FmaPeak peak = fk::measure_fma_peak(r.nt);
  r.peak = peak.wall;
  if (o.channels.size() > 1) return ladder_only(r, o, s, map, peak);
  const Operands x{
      random_uniform({r.n_unique, s.cin}, 1.0, 1).to(s.dtype),
      random_uniform({map.volume, s.cin, s.cout}, 1.0 / std::sqrt(s.cin * map.volume), 2)
          .to(s.dtype),
      random_uniform({r.n_out, s.cout}, 1.0, 3).to(s.dtype)};
  r.fused = time_pass(x, map, o.repeats, "1", "2048");
  r.chunked = time_pass(x, map, o.repeats, "1", fmt::format("{}", o.chunk_mb).c_str());
  r.per_offset = time_pass(x, map, o.repeats, "0", "2048");
  if (r.nt > 1) r.scaling = time_scaling(x, map, o.repeats, r.nt);
  r.sgemm = time_sgemm(s.cin, s.cout, o.repeats);
  print_report(r, o);
  nlohmann::json j = report_json(r, o);
  if (s.dtype == fk::DType::F32 && s.cin == s.cout)
    j["ladder"] = conv_ladder(map, {s.cin}, o.repeats, peak);
  write_json(o, j);
  return 0;
}

}  // namespace minkowski_app
