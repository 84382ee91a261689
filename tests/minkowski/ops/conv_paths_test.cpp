// The convolution's dataflow paths (ME_CONV_PATH: register tiles or gather ->
// BLAS -> scatter) and ISA variants of the tiles (FK_CPU_ISA: AVX-512, AVX2,
// generic) against the plain dense-grid reference, forward and both
// gradients; the per-shape choice, its cache file and its errors.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "fk/cpu_isa.h"
#include "fk/fk.h"
#include "fk/test_util.h"
#include "minkowski/minkowski.h"
#include "minkowski/ops/conv_kernel.h"
#include "minkowski/ops/conv_reference.h"
#include "scratch_dir.h"

namespace minkowski {
namespace {

using namespace conv_ref;

struct Knobs {
  ~Knobs() {
    for (const char* k : {"ME_CONV_PATH", "ME_CONV_PATH_CACHE", "FK_CPU_ISA", "ME_FUSED_COPY"})
      fk::mutable_knob(k).set_override(std::nullopt);
    clear_conv_path_choices();
    set_deterministic(false);
  }
};

// W (K x C_in x C_out) -> W^T per offset (K x C_out x C_in).
std::vector<double> transpose_weights(const std::vector<double>& w, int k, int cin, int cout) {
  std::vector<double> t(w.size());
  for (int o = 0; o < k; ++o)
    for (int a = 0; a < cin; ++a)
      for (int b = 0; b < cout; ++b) t[(o * cout + b) * cin + a] = w[(o * cin + a) * cout + b];
  return t;
}

struct F32Run {
  std::vector<float> y, gf, gw;
  ConvCallInfo fwd, bwd;
};

// A 3^3 submanifold conv in f32 with its backward, under the knobs in force.
F32Run run_f32(const Case& c, const SparseTensor& x, const fk::Tensor& g) {
  fk::Tensor f = c.f.to(fk::DType::F32).set_requires_grad(true);
  fk::Tensor w = c.w.to(fk::DType::F32).set_requires_grad(true);
  fk::Tensor y =
      convolution(SparseTensor(f, x.key(), x.manager()), w, fk::Tensor(), KernelRegion::cube({3}))
          .F();
  F32Run r;
  r.fwd = last_conv_call();
  y.backward(g.to(fk::DType::F32));
  r.bwd = last_conv_call();
  r.y = y.to_vector<float>();
  r.gf = f.grad().to_vector<float>();
  r.gw = w.grad().to_vector<float>();
  return r;
}

void expect_near_all(const std::vector<float>& got, const std::vector<double>& want, double tol,
                     const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * (1 + std::abs(want[i]))) << what << " at " << i;
}

// C_in x C_out pairs that reach every AVX-512 panel width (1..4 vectors, a
// half vector at the end) and AVX2's, and a row tail of each tile height;
// the weight gradient's packed sub-blocks (C_out >= 128) and its whole-chunk
// row blocks (C_in x C_out x 4 >= 128 KiB).
const std::vector<std::pair<int, int>> kWidths = {{8, 8},   {16, 24},  {24, 40},  {40, 56},
                                                  {72, 64}, {64, 136}, {200, 168}};

TEST(MinkowskiConvPaths, ForcedPathsAgreeWithDenseReference) {
  Knobs knobs;
  for (auto [cin, cout] : kWidths) {
    Case c = make_case(3, 160, 4, 1, cin, cout, 27, 500 + cin);
    SparseTensor x(c.f, to_tensor(c.rows));
    const auto offs = cube_offsets(3, 3, 1, 1);
    fk::Tensor g = fk::test::random_tensor({x.size(), cout}, fk::DType::F64, -1, 1, 9);
    const auto gv = g.to_vector<double>();
    const auto want_y = reference_conv(c.rows, c.fv, cin, c.rows, c.wv, cout, offs, 1);
    const auto want_gf = reference_conv(c.rows, gv, cout, c.rows,
                                        transpose_weights(c.wv, 27, cin, cout), cin, offs, -1);
    const auto want_gw = reference_weight_grad(c.rows, c.fv, cin, gv, cout, offs);
    for (const char* path : {"tiles", "gemm"}) {
      const std::string what =
          std::string(path) + " C_in " + std::to_string(cin) + " C_out " + std::to_string(cout);
      fk::mutable_knob("ME_CONV_PATH").set_override(path);
      F32Run r = run_f32(c, x, g);
      const ConvPath want_path = std::string(path) == "tiles" && fk::cpu_isa() >= fk::CpuIsa::Avx2
                                     ? ConvPath::Tiles
                                     : ConvPath::Gemm;
      EXPECT_EQ(r.fwd.path, want_path) << what;
      EXPECT_EQ(r.bwd.path, want_path) << what;
      EXPECT_EQ(r.bwd.weight_path, want_path) << what;
      expect_near_all(r.y, want_y, 2e-5, what + " output");
      expect_near_all(r.gf, want_gf, 2e-5, what + " feature gradient");
      expect_near_all(r.gw, want_gw, 1e-4, what + " weight gradient");
    }
  }
}

TEST(MinkowskiConvPaths, Avx512TilesBitIdenticalToAvx2AndNearGeneric) {
  if (fk::cpu_isa_detected() < fk::CpuIsa::Avx512) GTEST_SKIP() << "no AVX-512 on this CPU";
  Knobs knobs;
  fk::mutable_knob("ME_CONV_PATH").set_override("tiles");
  for (auto [cin, cout] : kWidths) {
    Case c = make_case(3, 160, 4, 1, cin, cout, 27, 700 + cin);
    SparseTensor x(c.f, to_tensor(c.rows));
    fk::Tensor g = fk::test::random_tensor({x.size(), cout}, fk::DType::F64, -1, 1, 11);
    auto run_isa = [&](const char* isa, const char* fused) {
      fk::mutable_knob("FK_CPU_ISA").set_override(isa);
      fk::mutable_knob("ME_FUSED_COPY").set_override(fused);
      return run_f32(c, x, g);
    };
    const std::string what = "C_in " + std::to_string(cin) + " C_out " + std::to_string(cout);
    // fused: the row-stationary tiles; per-offset: the per-pair tiles + scatter
    for (const char* fused : {"1", "0"}) {
      F32Run wide = run_isa("avx512", fused), narrow = run_isa("avx2", fused);
      F32Run generic = run_isa("generic", fused);  // BLAS
      EXPECT_EQ(generic.fwd.path, ConvPath::Gemm);
      EXPECT_TRUE(wide.y == narrow.y) << what << " output, fused " << fused;
      EXPECT_TRUE(wide.gf == narrow.gf) << what << " feature gradient, fused " << fused;
      EXPECT_TRUE(wide.gw == narrow.gw) << what << " weight gradient, fused " << fused;
      std::vector<double> gy(generic.y.begin(), generic.y.end()),
          gf(generic.gf.begin(), generic.gf.end()), gw(generic.gw.begin(), generic.gw.end());
      expect_near_all(wide.y, gy, 2e-5, what + " output vs generic");
      expect_near_all(wide.gf, gf, 2e-5, what + " feature gradient vs generic");
      expect_near_all(wide.gw, gw, 1e-4, what + " weight gradient vs generic");
    }
  }
}

TEST(MinkowskiConvPaths, Avx512OneByOneAndStrided) {
  if (fk::cpu_isa_detected() < fk::CpuIsa::Avx512) GTEST_SKIP() << "no AVX-512 on this CPU";
  Knobs knobs;
  // The per-pair tiles without a row list (1x1) and the strided maps (few
  // pairs per row: row tails everywhere), AVX-512 vs AVX2 bit for bit.
  Case c = make_case(3, 300, 5, 1, 24, 40, 8, 77);
  SparseTensor x(c.f.to(fk::DType::F32), to_tensor(c.rows));
  fk::Tensor w1 = fk::test::random_tensor({24, 40}, fk::DType::F32, -1, 1, 3);
  fk::Tensor w2 = c.w.to(fk::DType::F32);
  auto run = [&](const char* isa) {
    fk::mutable_knob("FK_CPU_ISA").set_override(isa);
    fk::Tensor f = x.F().clone().set_requires_grad(true);
    SparseTensor xx(f, x.key(), x.manager());
    fk::Tensor a = convolution(xx, w1, fk::Tensor(), KernelRegion::cube({1})).F();
    fk::Tensor b = convolution(xx, w2, fk::Tensor(), KernelRegion::cube({2}), {2}).F();
    fk::sum(fk::mul(b, b)).backward();
    return std::vector<std::vector<float>>{a.to_vector<float>(), b.to_vector<float>(),
                                           f.grad().to_vector<float>()};
  };
  auto wide = run("avx512"), narrow = run("avx2");
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(wide[i] == narrow[i]) << i;
  auto generic = run("generic");
  for (int i = 0; i < 3; ++i)
    expect_near_all(wide[i], std::vector<double>(generic[i].begin(), generic[i].end()), 2e-5,
                    "vs generic " + std::to_string(i));
}

TEST(MinkowskiConvPaths, AutoChoosesOnceKeepsItAndReadsTheCacheFile) {
  Knobs knobs;
  const std::string file = (fieldkit_test::scratch_dir() / "conv_path_choices.txt").string();
  std::remove(file.c_str());
  fk::mutable_knob("ME_CONV_PATH_CACHE").set_override(file);
  clear_conv_path_choices();
  // Dense enough to be measured (over 16M multiply-adds a pass).
  Case c = make_case(3, 1500, 7, 1, 64, 64, 27, 31, 1);
  SparseTensor x(c.f.to(fk::DType::F32), to_tensor(c.rows));
  fk::Tensor w = c.w.to(fk::DType::F32);
  auto forward = [&] {
    fk::Tensor y = convolution(x, w, fk::Tensor(), KernelRegion::cube({3})).F();
    return std::pair{y.to_vector<float>(), last_conv_call().path};
  };
  auto [y1, p1] = forward();
  auto [y2, p2] = forward();
  EXPECT_EQ(p1, p2);
  EXPECT_TRUE(y1 == y2);  // the measured first call returns the chosen path's result
  if (fk::cpu_isa() < fk::CpuIsa::Avx2) {
    clear_conv_path_choices();
    GTEST_SKIP() << "FK_CPU_ISA below avx2: no tiles, so nothing is measured or kept";
  }
  // The file holds the choice; flip it there and a fresh process (cleared
  // choices) takes the file's word.
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  std::string s = text.str();
  ASSERT_FALSE(s.empty());
  const std::string was = conv_path_name(p1), other = p1 == ConvPath::Tiles ? "gemm" : "tiles";
  ASSERT_EQ(s.substr(s.size() - was.size() - 1), was + "\n");
  s = s.substr(0, s.size() - was.size() - 1) + other + "\n";
  std::ofstream(file) << "not a choice line\n" << s;
  clear_conv_path_choices();
  auto [y3, p3] = forward();
  EXPECT_NE(p3, p1);
  fk::test::expect_close(fk::from_vector(y3, fk::Dims{x.size(), 64}),
                         std::vector<double>(y1.begin(), y1.end()), 2e-5);
  // set_deterministic pins the tiles whatever was measured
  set_deterministic(true);
  forward();
  EXPECT_EQ(last_conv_call().path, ConvPath::Tiles);
  set_deterministic(false);
  std::remove(file.c_str());
  // A path that cannot keep the choices (a directory here) is refused by
  // name at the first measured pass, not ignored.
  fk::mutable_knob("ME_CONV_PATH_CACHE").set_override(fieldkit_test::scratch_dir().string());
  clear_conv_path_choices();
  try {
    forward();
    ADD_FAILURE() << "a directory was taken as the cache file";
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("knob ME_CONV_PATH_CACHE: expected a file this process "
                                         "can read and append to"),
              std::string::npos)
        << e.what();
  }
  clear_conv_path_choices();
}

// A malformed staging cap is refused at the first convolution, whichever
// path it takes (the tiles plan no groups and never read it before).
TEST(MinkowskiConvPaths, AMalformedStagingCapIsRefusedAtTheFirstConvolution) {
  Knobs knobs;
  Case c = make_case(2, 50, 5, 1, 8, 8, 9, 3);
  SparseTensor x(c.f.to(fk::DType::F32), to_tensor(c.rows));
  setenv("ME_FUSED_COPY_MAX_MB", "nan", 1);
  for (const char* path : {"tiles", "gemm"}) {
    fk::mutable_knob("ME_CONV_PATH").set_override(path);
    EXPECT_THROW(convolution(x, c.w.to(fk::DType::F32), fk::Tensor(), KernelRegion::cube({3})),
                 fk::Error)
        << path;
  }
  unsetenv("ME_FUSED_COPY_MAX_MB");
}

TEST(MinkowskiConvPaths, UnknownPathIsAnError) {
  Knobs knobs;
  Case c = make_case(2, 50, 5, 1, 8, 8, 9, 3);
  SparseTensor x(c.f.to(fk::DType::F32), to_tensor(c.rows));
  // Refused by the knob itself, set or read from the environment.
  try {
    fk::mutable_knob("ME_CONV_PATH").set_override("fast");
    ADD_FAILURE() << "ME_CONV_PATH=fast was accepted";
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("one of auto, tiles or gemm, got 'fast'"),
              std::string::npos)
        << e.what();
  }
  setenv("ME_CONV_PATH", "fast", 1);
  EXPECT_THROW(convolution(x, c.w.to(fk::DType::F32), fk::Tensor(), KernelRegion::cube({3})),
               fk::Error);
  unsetenv("ME_CONV_PATH");
}

// The row-stationary and weight-gradient tiles give each offset's bucket one
// slot a row (a row meets an offset at most once in a kernel map); a
// hand-made map that breaks this gets an error naming it, not a write past
// the buckets.
TEST(MinkowskiConvPaths, TilesRefuseARowMeetingAnOffsetTwice) {
  Knobs knobs;
  fk::mutable_knob("ME_CONV_PATH").set_override("tiles");
  if (!(fk::cpu_isa() >= fk::CpuIsa::Avx2)) GTEST_SKIP() << "no f32 tiles on this CPU";
  KernelMap m;
  m.volume = 1;
  m.in_size = 2;
  m.out_size = 1;
  m.offset_begin = {0, 2};
  m.in_rows = {0, 1};
  m.out_rows = {0, 0};
  const fk::Tensor f = fk::ones({2, 8}), w = fk::ones({1, 8, 8});
  try {
    conv_forward(f, w, m);
    FAIL() << "no error";
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("at most one pair per row and offset"), std::string::npos)
        << e.what();
  }
  // the weight gradient's buckets are by output row too
  EXPECT_THROW(conv_backward(fk::ones({1, 8}), f, w, m, false, true), fk::Error);
}

}  // namespace
}  // namespace minkowski
