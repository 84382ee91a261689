#include "minkowski/ops/conv_path.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <tuple>

#include "fk/cpu_isa.h"
#include "fk/error.h"
#include "fk/knobs.h"
#include "fk/parallel.h"
#include "minkowski/ops/conv.h"

namespace minkowski {

namespace {

fk::Knob kConvPath("ME_CONV_PATH", fk::KnobChoices{{"auto", "tiles", "gemm"}}, "auto",
                   "minkowski convolution dataflow: auto (measured per shape on first use), tiles "
                   "(f32 register tiles where they apply) or gemm (gather, BLAS GEMM, scatter)",
                   fk::KnobRead::PerCall);
fk::Knob kConvPathCache("ME_CONV_PATH_CACHE", fk::KnobType::String, "",
                        "minkowski convolution: file keeping auto's per-shape path choices "
                        "across processes (empty: this process only)",
                        fk::KnobRead::Latched);

// Passes with fewer multiply-adds take the tiles unmeasured.
constexpr double kMeasuredWork = 16.0 * 1048576.0;

// pass, pairs per row (halves), log2 pairs, C_in, C_out, dtype, threads, and
// the CPU ISA the tiles ran at (a choice timed with AVX-512 tiles says
// nothing of FK_CPU_ISA=avx2's)
using Key = std::tuple<int, int64_t, int, int64_t, int64_t, int, int, int>;

struct Choices {
  std::mutex mu;
  std::map<Key, ConvPath> chosen;
  bool file_read = false;
};

Choices& choices() {
  static Choices c;
  return c;
}

Key key_of(const ConvShape& s) {
  const int threads = omp_in_parallel() ? 1 : fk::get_num_threads();
  const int64_t per_row = s.rows > 0 ? std::llround(2.0 * s.pairs / s.rows) : 0;
  const int size = s.pairs > 0 ? static_cast<int>(std::log2(static_cast<double>(s.pairs))) : 0;
  return {static_cast<int>(s.pass),
          per_row,
          size,
          s.cin,
          s.cout,
          static_cast<int>(s.dtype),
          threads,
          static_cast<int>(fk::cpu_isa())};
}

// One line per choice: the key's eight integers, then tiles|gemm. Lines that
// do not parse are skipped (a file from another version, a torn write).
// The file must be one this process can append to (opened so here, which
// creates a missing one): a path that cannot keep the choices is refused by
// name at the first measured pass, not ignored.
void read_file(Choices& c, const std::string& path) {
  FK_CHECK(!std::filesystem::is_directory(path) && std::ofstream(path, std::ios::app).good(),
           "knob ME_CONV_PATH_CACHE", "a file this process can read and append to",
           "'" + path + "'");
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    Key k;
    std::string p;
    auto& [a, b, d, e, f, g, h, i] = k;
    if ((ls >> a >> b >> d >> e >> f >> g >> h >> i >> p) && (p == "tiles" || p == "gemm"))
      c.chosen[k] = p == "tiles" ? ConvPath::Tiles : ConvPath::Gemm;
  }
}

void append_file(const std::string& path, const Key& k, ConvPath p) {
  std::ofstream out(path, std::ios::app);
  const auto& [a, b, d, e, f, g, h, i] = k;
  out << a << ' ' << b << ' ' << d << ' ' << e << ' ' << f << ' ' << g << ' ' << h << ' ' << i
      << ' ' << conv_path_name(p) << '\n';
}

double time_ms(const std::function<void(ConvPath)>& run, ConvPath p) {
  const auto t0 = std::chrono::steady_clock::now();
  run(p);
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

const char* conv_path_name(ConvPath p) {
  return p == ConvPath::Tiles ? "tiles" : "gemm";
}

ConvPath run_conv_pass(const ConvShape& shape, bool tiles_ok,
                       const std::function<void(ConvPath)>& run) {
  const std::string want = kConvPath.as_string();
  ConvPath p = ConvPath::Gemm;
  if (!tiles_ok || want != "auto") {
    p = tiles_ok && want == "tiles" ? ConvPath::Tiles : ConvPath::Gemm;
    run(p);
    return p;
  }
  if (is_deterministic()) {
    run(ConvPath::Tiles);  // the paths differ in rounding: keep one
    return ConvPath::Tiles;
  }
  // Small passes (under ~16M multiply-adds) are dominated by fixed costs the
  // tiles do not have (staging, BLAS calls) and too short to time reliably.
  const double work = static_cast<double>(shape.pairs) * shape.cin * shape.cout;
  if (work < kMeasuredWork) {
    run(ConvPath::Tiles);
    return ConvPath::Tiles;
  }
  const Key k = key_of(shape);
  const std::string file = kConvPathCache.as_string();
  Choices& c = choices();
  bool known = false;
  {
    std::lock_guard<std::mutex> lock(c.mu);
    if (!c.file_read && !file.empty()) read_file(c, file);
    c.file_read = true;
    auto it = c.chosen.find(k);
    if (it != c.chosen.end()) p = it->second, known = true;
  }
  if (known) {
    run(p);
    return p;
  }
  // First sight: gemm, tiles, gemm, tiles (the least of two runs each, so
  // one run slowed by other work does not decide); gemm must beat the tiles
  // by 20 % (they need no staging memory), and runs once more when it does.
  double gemm_ms = time_ms(run, ConvPath::Gemm), tiles_ms = time_ms(run, ConvPath::Tiles);
  gemm_ms = std::min(gemm_ms, time_ms(run, ConvPath::Gemm));
  tiles_ms = std::min(tiles_ms, time_ms(run, ConvPath::Tiles));
  p = gemm_ms < 0.8 * tiles_ms ? ConvPath::Gemm : ConvPath::Tiles;
  if (p == ConvPath::Gemm) run(p);
  std::lock_guard<std::mutex> lock(c.mu);
  if (c.chosen.emplace(k, p).second && !file.empty()) append_file(file, k, p);
  return p;
}

void clear_conv_path_choices() {
  Choices& c = choices();
  std::lock_guard<std::mutex> lock(c.mu);
  c.chosen.clear();
  c.file_read = false;
}

}  // namespace minkowski
