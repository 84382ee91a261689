#include "bench_ops.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <stdexcept>

#include "fk/fk.h"
#include "minkowski/minkowski.h"
#include "npy.h"
#include "scene.h"
#include "stream_triad.h"

namespace minkowski_app {

namespace {

using namespace minkowski;

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

struct Case {
  std::string op, pass;
  double bytes;
  std::function<void()> run;
};

std::vector<int32_t> load_rows(const BenchOpsOptions& o, std::string& source) {
  if (o.points > 0) {
    source = fmt::format("synthetic({})", o.points);
    return synthetic_scene(o.points);
  }
  NpyInts a = read_npy_ints(o.scene);
  if (a.cols != 4)
    throw std::runtime_error(o.scene + ": expected N x 4 (batch, x, y, z), got N x " +
                             std::to_string(a.cols));
  source = o.scene;
  return std::move(a.data);
}

void check_options(const BenchOpsOptions& o) {
  if (o.channels < 1) throw std::runtime_error("--channels must be positive");
  if (o.repeats < 1) throw std::runtime_error("--repeats must be positive");
  if (o.triad_mib < 1) throw std::runtime_error("--triad-mib must be positive");
  if (o.evict_mib < 0) throw std::runtime_error("--evict-mib must be >= 0");
  if (o.threads.empty()) throw std::runtime_error("--threads needs at least one count");
  for (int t : o.threads)
    if (t < 1) throw std::runtime_error("--threads counts must be positive");
}

}  // namespace

int bench_ops(const BenchOpsOptions& o) {
  check_options(o);
  fk::DType dt = fk::dtype_from_name(o.dtype);
  if (!fk::is_floating(dt)) throw std::runtime_error("--dtype must be f32, f64, f16 or bf16");
  std::string source;
  std::vector<int32_t> rows = load_rows(o, source);
  const int64_t n_in = static_cast<int64_t>(rows.size() / 4);
  const int64_t c = o.channels;
  const double es = static_cast<double>(fk::itemsize(dt));

  auto mgr = std::make_shared<CoordinateManager>(3);
  MapKey fine = mgr->insert(fk::from_vector(rows, fk::Dims{n_in, 4}), {1}).key;
  MapKey coarse = mgr->stride(fine, {2});
  const int64_t n = mgr->size(fine), nc = mgr->size(coarse);
  auto k2 = mgr->kernel_map(fine, coarse, KernelRegion::cube({2}), false);
  auto k3 = mgr->kernel_map(fine, coarse, KernelRegion::cube({3}), false);
  auto up = mgr->kernel_map(coarse, fine, KernelRegion::cube({2}), true);
  fk::Tensor f = random_uniform({n, c}, 1, dt), fc = random_uniform({nc, c}, 2, dt),
             gc = random_uniform({nc, c}, 3, dt), gf = random_uniform({n, c}, 4, dt);
  SparseTensor x(f, fine, mgr);

  std::vector<Case> cases;
  auto pool_cases = [&](const std::string& name, const KernelMap& m, const fk::Tensor& in,
                        const fk::Tensor& grad, PoolingMode mode) {
    const double pairs = static_cast<double>(m.pairs()), ni = static_cast<double>(m.in_size),
                 no = static_cast<double>(m.out_size), cd = static_cast<double>(c);
    const double index = pairs * 12, amax = mode == PoolingMode::Max ? no * cd * 4 : 0;
    auto argmax = std::make_shared<fk::Tensor>(pool_forward(in, m, mode).argmax);
    cases.push_back({name, "forward", (ni + no) * cd * es + index + (no + 1) * 8 + amax,
                     [&m, in, mode] { pool_forward(in, m, mode); }});
    const double counts = mode == PoolingMode::Average ? (no + 1) * 8 : 0;
    cases.push_back({name, "backward", (ni + no) * cd * es + index + (ni + 1) * 8 + counts + amax,
                     [&m, grad, mode, argmax] { pool_backward(grad, m, mode, *argmax); }});
  };
  for (auto [mode, tag] : {std::pair{PoolingMode::Sum, "sum"},
                           {PoolingMode::Average, "avg"},
                           {PoolingMode::Max, "max"}}) {
    pool_cases(fmt::format("{}_pool k2 s2", tag), *k2, f, gc, mode);
    pool_cases(fmt::format("{}_pool k3 s2", tag), *k3, f, gc, mode);
  }
  pool_cases("sum_unpool k2 s2", *up, fc, gf, PoolingMode::Sum);

  auto groups = std::make_shared<const RowGroups>(batch_groups(*mgr->map(fine), "bench"));
  const double rows_bytes = static_cast<double>(n) * 4, nb = static_cast<double>(groups->groups),
               feat = static_cast<double>(n * c) * es, gfeat = nb * c * es;
  for (auto [mode, tag] :
       {std::pair{PoolingMode::Average, "global_avg"}, {PoolingMode::Max, "global_max"}}) {
    const double amax = mode == PoolingMode::Max ? nb * c * 4 : 0;
    auto argmax = std::make_shared<fk::Tensor>(global_pool_forward(f, *groups, mode).argmax);
    fk::Tensor g = random_uniform({groups->groups, c}, 5, dt);
    cases.push_back({tag, "forward", feat + rows_bytes + gfeat + amax,
                     [&, mode] { global_pool_forward(f, *groups, mode); }});
    cases.push_back({tag, "backward", feat + rows_bytes + gfeat + amax,
                     [&, mode, g, argmax] { global_pool_backward(g, *groups, mode, *argmax); }});
  }

  SparseTensor glob = global_avg_pooling(x);
  RowGroups bg = broadcast_groups(x, glob, "bench");
  fk::Tensor gv = glob.F();
  for (auto [mode, tag] : {std::pair{BroadcastMode::Add, "broadcast_add"},
                           {BroadcastMode::Multiply, "broadcast_mul"}}) {
    cases.push_back({tag, "forward", 2 * feat + rows_bytes + gfeat,
                     [&, mode] { broadcast_forward(f, gv, bg, mode); }});
    // add: the features' gradient is the output's (no traffic), the glob's a
    // sum over rows; multiply: G and x read, the features' gradient written
    const double bwd = mode == BroadcastMode::Add ? feat : 3 * feat;
    cases.push_back({tag, "backward", bwd + rows_bytes + gfeat,
                     [&, mode] { broadcast_backward(gf, f, gv, bg, mode, true, true); }});
  }
  {
    fk::Tensor gcat = random_uniform({n, 2 * c}, 6, dt);
    fk::Tensor widths_f = fk::empty({0, c}, {dt}), widths_g = fk::empty({0, c}, {dt});
    cases.push_back({"broadcast_cat", "forward", 3 * feat + rows_bytes + gfeat,
                     [&] { broadcast_forward(f, gv, bg, BroadcastMode::Concatenate); }});
    cases.push_back(
        {"broadcast_cat", "backward", 3 * feat + rows_bytes + gfeat, [&, gcat, widths_f, widths_g] {
           broadcast_backward(gcat, widths_f, widths_g, bg, BroadcastMode::Concatenate, true, true);
         }});
  }

  // Measure, per thread count: after a warm-up of everything (which also
  // builds the cached indices an op needs, e.g. a map's by-input rows), each
  // round runs one triad pass and every case once; the best of the rounds is
  // kept. Interleaved so that, on a shared machine, the triad and the cases
  // see the same load, and in a fresh order each round so that no case keeps
  // meeting a periodic disturbance (another process's loop) at the same phase.
  std::map<int, double> triad;
  std::vector<std::vector<double>> secs(cases.size());
  const int before = fk::get_num_threads();
  std::vector<uint64_t> junk(static_cast<size_t>(o.evict_mib) << 17, 1);
  StreamTriad stream(o.triad_mib);
  for (int t : o.threads) {
    fk::set_num_threads(t);
    stream.pass(t);
    for (const Case& k : cases) k.run();
    double best_triad = 0;
    std::vector<double> best(cases.size(), 1e300);
    std::vector<size_t> order(cases.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::mt19937 shuffle(12345);
    for (int r = 0; r < o.repeats; ++r) {
      evict_caches(junk);
      best_triad = std::max(best_triad, stream.pass(t));
      std::shuffle(order.begin(), order.end(), shuffle);
      for (size_t i : order) best[i] = std::min(best[i], cold_run_s(junk, cases[i].run));
    }
    triad[t] = best_triad;
    for (size_t i = 0; i < cases.size(); ++i) secs[i].push_back(best[i]);
  }
  fk::set_num_threads(before);

  std::string threads_list;
  for (int t : o.threads) threads_list += fmt::format("{}{}", threads_list.empty() ? "" : ",", t);
  const std::string command = fmt::format(
      "minkowski bench ops {} --channels {} --dtype {} --threads {} --repeats {} --triad-mib {} "
      "--evict-mib {}",
      o.points > 0 ? fmt::format("--points {}", o.points) : "--scene " + o.scene, c, o.dtype,
      threads_list, o.repeats, o.triad_mib, o.evict_mib);
  fmt::print("minkowski bench ops: {} | {} input rows -> {} unique, C {} {}, best of {}\n", source,
             n_in, n, c, o.dtype, o.repeats);
  fmt::print("  command: {}\n", command);
  fmt::print("  stride 2: {} rows; pairs k2 {}, k3 {}; {} batch item(s)\n", nc, k2->pairs(),
             k3->pairs(), groups->groups);
  std::string triad_line =
      "  stream triad (same run, 3 x " + std::to_string(o.triad_mib) + " MiB):";
  for (int t : o.threads) triad_line += fmt::format(" {} thr {:.1f} GB/s", t, triad[t] / 1e9);
  fmt::print("{}\n", triad_line);
  std::string head = fmt::format("  {:<18} {:<9} {:>8}", "op", "pass", "MB");
  for (int t : o.threads)
    head += fmt::format(" | {:>2} thr: {:>8} {:>6} {:>6}", t, "ms", "GB/s", "triad");
  fmt::print("{}\n", head);
  nlohmann::json jops = nlohmann::json::array();
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& k = cases[i];
    std::string line = fmt::format("  {:<18} {:<9} {:>8.1f}", k.op, k.pass, k.bytes / 1e6);
    nlohmann::json runs = nlohmann::json::array();
    for (size_t j = 0; j < o.threads.size(); ++j) {
      const int t = o.threads[j];
      const double bps = k.bytes / secs[i][j];
      line += fmt::format(" | {:>2} thr: {:>8.3f} {:>6.1f} {:>5.0f}%", t, secs[i][j] * 1e3,
                          bps / 1e9, 100 * bps / triad[t]);
      runs.push_back({{"threads", t},
                      {"ms", secs[i][j] * 1e3},
                      {"bytes_per_s", bps},
                      {"triad_fraction", bps / triad[t]}});
    }
    fmt::print("{}\n", line);
    jops.push_back({{"op", k.op}, {"pass", k.pass}, {"bytes", k.bytes}, {"runs", runs}});
  }
  if (!o.json.empty()) {
    nlohmann::json jt = nlohmann::json::object();
    for (int t : o.threads) jt[std::to_string(t)] = triad[t];
    nlohmann::json j{{"command", command},
                     {"source", source},
                     {"input_rows", n_in},
                     {"unique_rows", n},
                     {"stride2_rows", nc},
                     {"pairs_k2", k2->pairs()},
                     {"pairs_k3", k3->pairs()},
                     {"batch_items", groups->groups},
                     {"channels", c},
                     {"dtype", o.dtype},
                     {"repeats", o.repeats},
                     {"threads", o.threads},
                     {"triad_mib", o.triad_mib},
                     {"evict_mib", o.evict_mib},
                     {"triad_bytes_per_s", jt},
                     {"ops", jops}};
    std::ofstream out(o.json);
    if (!out) throw std::runtime_error("cannot write " + o.json);
    out << j.dump(2) << "\n";
  }
  return 0;
}

}  // namespace minkowski_app
