#include "bench_ops.h"

#include <fmt/core.h>

#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <stdexcept>
#include <tuple>

#include "bench_ops_cases.h"
#include "fk/fk.h"
#include "minkowski/minkowski.h"
#include "output_path.h"
#include "scene.h"
#include "stream_triad.h"

namespace minkowski_app {

namespace ops_bench {

fk::Tensor random_uniform(fk::Dims shape, uint64_t seed, fk::DType dt) {
  fk::Tensor t = fk::empty(shape, {fk::DType::F32});
  float* p = t.data<float>();
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (int64_t i = 0; i < t.numel(); ++i) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    p[i] = static_cast<float>(static_cast<double>(s >> 11) / 9007199254740992.0 * 2 - 1);
  }
  return t.to(dt);
}

}  // namespace ops_bench

namespace {

using namespace minkowski;
using ops_bench::Case;
using ops_bench::Fixture;
using ops_bench::random_uniform;

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Reads a buffer larger than the last-level cache, so that a timed run
// starts with its data in memory (a scene's features, ~26 MB at 100k x 64
// f32, would otherwise stay in a 32 MiB L3 between runs) and with no dirty
// lines of the previous run left to write back. The triad passes start the
// same way, so both are judged from cold caches.
void evict_caches(const std::vector<uint64_t>& junk) {
  static volatile uint64_t sink = 0;
  uint64_t sums[64] = {};
  const int64_t n = static_cast<int64_t>(junk.size());
  fk::parallel_for(0, n, int64_t{1} << 20, [&](int64_t lo, int64_t hi) {
    uint64_t s = 0;
    for (int64_t i = lo; i < hi; ++i) s += junk[i];
    sums[(lo * 64) / std::max<int64_t>(n, 1)] = s;
  });
  for (uint64_t s : sums) sink = sink + s;
}

// Wall seconds of one run of f from cold caches.
double cold_run_s(const std::vector<uint64_t>& junk, const std::function<void()>& f) {
  evict_caches(junk);
  double t0 = now_s();
  f();
  return now_s() - t0;
}

std::vector<int32_t> load_rows(const BenchOpsOptions& o, std::string& source) {
  if (o.points > 0) {
    source = fmt::format("synthetic({})", o.points);
    return synthetic_scene(o.points).rows;
  }
  source = o.scene;
  // The default scene's path is relative to the repository root.
  FK_CHECK(o.scene != BenchOpsOptions{}.scene || std::filesystem::is_regular_file(o.scene),
           "minkowski bench ops --scene",
           "the default scene " + o.scene +
               " (run from the repository root), or --scene FILE "
               "or --points N",
           "no such file from " + std::filesystem::current_path().string());
  return read_scene(o.scene);
}

void check_options(const BenchOpsOptions& o) {
  if (o.points > 0 && o.scene != BenchOpsOptions{}.scene)
    throw std::runtime_error("give --scene or --points, not both");
  if (o.channels < 1) throw std::runtime_error("--channels must be positive");
  if (o.repeats < 1) throw std::runtime_error("--repeats must be positive");
  if (o.triad_mib < 1) throw std::runtime_error("--triad-mib must be positive");
  if (o.evict_mib < -1) throw std::runtime_error("--evict-mib must be >= 0 (or -1: auto)");
  if (o.threads.empty()) throw std::runtime_error("--threads needs at least one count");
  for (int t : o.threads)
    if (t < 1) throw std::runtime_error("--threads counts must be positive");
}

void build_fixture(const BenchOpsOptions& o, Fixture& fx) {
  fx.dtype = fk::dtype_from_name(o.dtype);
  if (!fk::is_floating(fx.dtype)) throw std::runtime_error("--dtype must be f32, f64, f16 or bf16");
  std::vector<int32_t> rows = load_rows(o, fx.source);
  fx.input_rows = static_cast<int64_t>(rows.size() / 4);
  fx.channels = o.channels;
  fx.elem = static_cast<double>(fk::itemsize(fx.dtype));
  fx.mgr = std::make_shared<CoordinateManager>(3);
  fx.fine = fx.mgr->insert(fk::from_vector(rows, fk::Dims{fx.input_rows, 4}), {1}).key;
  const MapKey& fine = fx.fine;
  MapKey coarse = fx.mgr->stride(fine, {2});
  fx.rows = fx.mgr->size(fine);
  fx.coarse_rows = fx.mgr->size(coarse);
  fx.k2 = fx.mgr->kernel_map(fine, coarse, KernelRegion::cube({2}), false);
  fx.k3 = fx.mgr->kernel_map(fine, coarse, KernelRegion::cube({3}), false);
  fx.up = fx.mgr->kernel_map(coarse, fine, KernelRegion::cube({2}), true);
  const int64_t c = fx.channels;
  fx.f = random_uniform({fx.rows, c}, 1, fx.dtype);
  fx.fc = random_uniform({fx.coarse_rows, c}, 2, fx.dtype);
  fx.gc = random_uniform({fx.coarse_rows, c}, 3, fx.dtype);
  fx.gf = random_uniform({fx.rows, c}, 4, fx.dtype);
  fx.items = std::make_shared<const RowGroups>(batch_groups(*fx.mgr->map(fine), "bench"));
  SparseTensor x(fx.f, fine, fx.mgr), glob = global_avg_pooling(x);
  fx.glob = glob.F();
  fx.glob_rows = broadcast_groups(x, glob, "bench");
}

// Forward and backward of one pooling on map m (in -> out rows).
void add_pooling(const Fixture& fx, std::vector<Case>& cases, const std::string& name,
                 const KernelMap& m, const fk::Tensor& in, const fk::Tensor& grad,
                 PoolingMode mode) {
  const double pairs = static_cast<double>(m.pairs()), ni = static_cast<double>(m.in_size),
               no = static_cast<double>(m.out_size), cd = static_cast<double>(fx.channels);
  const double feats = (ni + no) * cd * fx.elem, index = pairs * 12;
  const double amax = mode == PoolingMode::Max ? no * cd * 4 : 0;
  const double counts = mode == PoolingMode::Average ? (no + 1) * 8 : 0;
  auto argmax = std::make_shared<fk::Tensor>(pool_forward(in, m, mode).argmax);
  cases.push_back({name, "forward", feats + index + (no + 1) * 8 + amax,
                   [&m, in, mode] { pool_forward(in, m, mode); }});
  cases.push_back({name, "backward", feats + index + (ni + 1) * 8 + counts + amax,
                   [&m, grad, mode, argmax] { pool_backward(grad, m, mode, *argmax); }});
}

void add_pooling_cases(const Fixture& fx, std::vector<Case>& cases) {
  for (auto [mode, tag] : {std::pair{PoolingMode::Sum, "sum"},
                           {PoolingMode::Average, "avg"},
                           {PoolingMode::Max, "max"}}) {
    add_pooling(fx, cases, fmt::format("{}_pool k2 s2", tag), *fx.k2, fx.f, fx.gc, mode);
    add_pooling(fx, cases, fmt::format("{}_pool k3 s2", tag), *fx.k3, fx.f, fx.gc, mode);
  }
  add_pooling(fx, cases, "sum_unpool k2 s2", *fx.up, fx.fc, fx.gf, PoolingMode::Sum);
}

void add_global_and_broadcast_cases(const Fixture& fx, std::vector<Case>& cases) {
  const int64_t c = fx.channels, nb = fx.items->groups;
  const double rows = static_cast<double>(fx.rows) * 4,  // the grouping's labels
      feat = static_cast<double>(fx.rows * c) * fx.elem,
               glob = static_cast<double>(nb * c) * fx.elem;
  for (auto [mode, tag] :
       {std::pair{PoolingMode::Average, "global_avg"}, {PoolingMode::Max, "global_max"}}) {
    const double amax = mode == PoolingMode::Max ? static_cast<double>(nb * c) * 4 : 0;
    auto argmax = std::make_shared<fk::Tensor>(global_pool_forward(fx.f, *fx.items, mode).argmax);
    fk::Tensor g = random_uniform({nb, c}, 5, fx.dtype);
    cases.push_back({tag, "forward", feat + rows + glob + amax,
                     [&fx, mode] { global_pool_forward(fx.f, *fx.items, mode); }});
    cases.push_back({tag, "backward", feat + rows + glob + amax, [&fx, mode, g, argmax] {
                       global_pool_backward(g, *fx.items, mode, *argmax);
                     }});
  }
  // add: the features' gradient is the output's own (no traffic), the
  // glob's a sum over rows; multiply: G and x read, the features' gradient
  // written; concatenate: G read, the features' columns written.
  for (auto [mode, tag, fwd, bwd] : {std::tuple{BroadcastMode::Add, "broadcast_add", 2.0, 1.0},
                                     {BroadcastMode::Multiply, "broadcast_mul", 2.0, 3.0},
                                     {BroadcastMode::Concatenate, "broadcast_cat", 3.0, 3.0}}) {
    const bool cat = mode == BroadcastMode::Concatenate;
    fk::Tensor g = cat ? random_uniform({fx.rows, 2 * c}, 6, fx.dtype) : fx.gf;
    // Concatenate's backward reads only the widths of the two inputs.
    fk::Tensor xin = cat ? fk::empty({0, c}, {fx.dtype}) : fx.f;
    fk::Tensor gin = cat ? fk::empty({0, c}, {fx.dtype}) : fx.glob;
    cases.push_back({tag, "forward", fwd * feat + rows + glob,
                     [&fx, mode] { broadcast_forward(fx.f, fx.glob, fx.glob_rows, mode); }});
    cases.push_back({tag, "backward", bwd * feat + rows + glob, [&fx, mode, g, xin, gin] {
                       broadcast_backward(g, xin, gin, fx.glob_rows, mode, true, true);
                     }});
  }
}

struct Timings {
  std::map<int, double> triad;            // bytes/s per thread count
  std::vector<std::vector<double>> secs;  // [case][thread count index]
};

// Per thread count: after a warm-up of everything (which also builds the
// cached indices an op needs, e.g. a map's by-input rows), each round runs
// one triad pass and every case once, all from cold caches; the best of the
// rounds is kept. Interleaved so that, on a shared machine, the triad and the
// cases see the same load, and in a fresh order each round so that no case
// keeps meeting a periodic disturbance (another process's loop) at one phase.
Timings measure(const BenchOpsOptions& o, const std::vector<Case>& cases) {
  Timings tm;
  tm.secs.resize(cases.size());
  const int before = fk::get_num_threads();
  std::vector<uint64_t> junk(static_cast<size_t>(o.evict_mib) << 17, 1);
  StreamTriad stream(o.triad_mib);
  std::mt19937 shuffle(12345);
  for (int t : o.threads) {
    fk::set_num_threads(t);
    stream.pass(t);
    for (const Case& k : cases) k.run();
    double best_triad = 0;
    std::vector<double> best(cases.size(), 1e300);
    std::vector<size_t> order(cases.size());
    std::iota(order.begin(), order.end(), size_t{0});
    for (int r = 0; r < o.repeats; ++r) {
      evict_caches(junk);
      best_triad = std::max(best_triad, stream.pass(t));
      std::shuffle(order.begin(), order.end(), shuffle);
      for (size_t i : order) best[i] = std::min(best[i], cold_run_s(junk, cases[i].run));
    }
    tm.triad[t] = best_triad;
    for (size_t i = 0; i < cases.size(); ++i) tm.secs[i].push_back(best[i]);
  }
  fk::set_num_threads(before);
  return tm;
}

std::string command_line(const BenchOpsOptions& o) {
  std::string threads;
  for (int t : o.threads) threads += fmt::format("{}{}", threads.empty() ? "" : ",", t);
  return fmt::format(
      "minkowski bench ops {} --channels {} --dtype {} --threads {} --repeats {} --triad-mib {} "
      "--evict-mib {}",
      o.points > 0 ? fmt::format("--points {}", o.points) : "--scene " + o.scene, o.channels,
      o.dtype, threads, o.repeats, o.triad_mib, o.evict_mib);
}

// Prints the table; returns its rows as JSON.
nlohmann::json print_table(const BenchOpsOptions& o, const std::vector<Case>& cases,
                           const Timings& tm) {
  std::string head = fmt::format("  {:<18} {:<9} {:>8}", "op", "pass", "MB");
  for (int t : o.threads)
    head += fmt::format(" | {:>2} thr: {:>8} {:>6} {:>6}", t, "ms", "GB/s", "triad");
  fmt::print("{}\n", head);
  nlohmann::json ops = nlohmann::json::array();
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& k = cases[i];
    std::string line = fmt::format("  {:<18} {:<9} {:>8.1f}", k.op, k.pass, k.bytes / 1e6);
    nlohmann::json runs = nlohmann::json::array();
    for (size_t j = 0; j < o.threads.size(); ++j) {
      const int t = o.threads[j];
      const double sec = tm.secs[i][j], bps = k.bytes / sec, triad = tm.triad.at(t);
      line += fmt::format(" | {:>2} thr: {:>8.3f} {:>6.1f} {:>5.0f}%", t, sec * 1e3, bps / 1e9,
                          100 * bps / triad);
      runs.push_back({{"threads", t},
                      {"ms", sec * 1e3},
                      {"bytes_per_s", bps},
                      {"triad_fraction", bps / triad}});
    }
    fmt::print("{}\n", line);
    ops.push_back({{"op", k.op}, {"pass", k.pass}, {"bytes", k.bytes}, {"runs", runs}});
  }
  return ops;
}

}  // namespace

// -1 (the default): twice this machine's L3, at least 128 MiB. A fixed 128
// left a third of a 480 MiB L3's worth of inputs warm, and the "% of triad"
// read 10-15 % high there.
static int64_t eviction_mib(int64_t given) {
  if (given >= 0) return given;
  const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  return std::max<int64_t>(128,
                           l3 > 0 ? 2 * ((static_cast<int64_t>(l3) + (1 << 20) - 1) >> 20) : 0);
}

int bench_ops(const BenchOpsOptions& given) {
  BenchOpsOptions o = given;
  check_writable(o.json, "minkowski bench ops --json");
  check_options(o);
  o.evict_mib = eviction_mib(o.evict_mib);
  Fixture fx;
  build_fixture(o, fx);
  std::vector<Case> cases;
  add_pooling_cases(fx, cases);
  add_global_and_broadcast_cases(fx, cases);
  ops_bench::add_norm_and_relu_cases(fx, cases);
  ops_bench::add_indexed_cases(fx, cases);
  const Timings tm = measure(o, cases);

  const std::string command = command_line(o);
  fmt::print("minkowski bench ops: {} | {} input rows -> {} unique, C {} {}, best of {}\n",
             fx.source, fx.input_rows, fx.rows, fx.channels, o.dtype, o.repeats);
  fmt::print("  command: {}\n", command);
  fmt::print("  stride 2: {} rows; pairs k2 {}, k3 {}; {} batch item(s)\n", fx.coarse_rows,
             fx.k2->pairs(), fx.k3->pairs(), fx.items->groups);
  std::string triad_line = fmt::format("  stream triad (same run, 3 x {} MiB):", o.triad_mib);
  nlohmann::json triad = nlohmann::json::object();
  for (int t : o.threads) {
    triad_line += fmt::format(" {} thr {:.1f} GB/s", t, tm.triad.at(t) / 1e9);
    triad[std::to_string(t)] = tm.triad.at(t);
  }
  fmt::print("{}\n", triad_line);
  nlohmann::json ops = print_table(o, cases, tm);
  if (o.json.empty()) return 0;
  nlohmann::json j{{"command", command},
                   {"source", fx.source},
                   {"input_rows", fx.input_rows},
                   {"unique_rows", fx.rows},
                   {"stride2_rows", fx.coarse_rows},
                   {"pairs_k2", fx.k2->pairs()},
                   {"pairs_k3", fx.k3->pairs()},
                   {"batch_items", fx.items->groups},
                   {"channels", fx.channels},
                   {"dtype", o.dtype},
                   {"repeats", o.repeats},
                   {"threads", o.threads},
                   {"triad_mib", o.triad_mib},
                   {"evict_mib", o.evict_mib},
                   {"triad_bytes_per_s", triad},
                   {"ops", ops}};
  std::ofstream out(o.json);
  if (!out) throw std::runtime_error("cannot write " + o.json);
  // A path that is not UTF-8 (the scene's) is written with replacement
  // characters, not refused after the whole benchmark ran.
  out << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  out.close();
  if (out.fail()) throw std::runtime_error("cannot write " + o.json + " (a failed write)");
  return 0;
}

}  // namespace minkowski_app
