// The convolution's copy paths (fused, chunked, per-offset) and thread counts
// bit-identical in f32 and f64 (also on uneven density); half precision
// against f32; the f32 kernels against the dense-grid reference (repeated
// offsets, weight gradient over many row chunks and chunks without an offset,
// strided, transposed and 1x1).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "fk/fk.h"
#include "fk/test_util.h"
#include "fk/thread_count.h"
#include "minkowski/minkowski.h"
#include "minkowski/ops/conv_reference.h"

namespace minkowski {
namespace {

using namespace conv_ref;

struct KnobGuard {
  ~KnobGuard() {
    fk::mutable_knob("ME_FUSED_COPY").set_override(std::nullopt);
    fk::mutable_knob("ME_FUSED_COPY_MAX_MB").set_override(std::nullopt);
    fk::mutable_knob("ME_CONV_PATH").set_override(std::nullopt);
  }
};

TEST(MinkowskiConv, HalfPrecisionAgainstF32) {
  // 8 channels: the f32 micro-kernels run underneath (forward, input and
  // weight gradient), with halves converted in and rounded once out.
  Case c = make_case(3, 300, 5, 1, 8, 8, 27, 50);
  SparseTensor x(c.f.to(fk::DType::F32), to_tensor(c.rows));
  fk::Tensor w32 = c.w.to(fk::DType::F32).set_requires_grad(true);
  fk::Tensor f32 = x.F().clone().set_requires_grad(true);
  fk::Tensor y32 = convolution(SparseTensor(f32, x.key(), x.manager()), w32, fk::Tensor(),
                               KernelRegion::cube({3}))
                       .F();
  fk::sum(y32).backward();
  // tolerances: inputs rounded to 16 bits (f16 2^-11, bf16 2^-8 relative), sums
  // of up to 27*8 products of magnitude <= 1, output rounded once; weight
  // gradients (here up to ~37) sum up to ~300 features per offset (absolute
  // part) and are rounded once (relative part).
  struct Tol {
    fk::DType dt;
    double abs, rel;
  };
  for (Tol t : {Tol{fk::DType::F16, 0.05, 2e-3}, Tol{fk::DType::BF16, 0.4, 1e-2}}) {
    SparseTensor xh(c.f.to(t.dt), x.key(), x.manager());
    fk::Tensor wh = c.w.to(t.dt).set_requires_grad(true);
    fk::Tensor fh = xh.F().clone().set_requires_grad(true);
    fk::Tensor yh = convolution(SparseTensor(fh, x.key(), x.manager()), wh, fk::Tensor(),
                                KernelRegion::cube({3}))
                        .F();
    EXPECT_EQ(yh.dtype(), t.dt);
    fk::test::expect_close(yh, y32.to_vector<double>(), t.abs);
    fk::sum(yh).backward();
    EXPECT_EQ(fh.grad().dtype(), t.dt);
    EXPECT_EQ(wh.grad().dtype(), t.dt);
    auto near = [&](const fk::Tensor& got, const fk::Tensor& want, double abs) {
      auto a = got.to_vector<double>(), b = want.to_vector<double>();
      ASSERT_EQ(a.size(), b.size());
      for (size_t i = 0; i < a.size(); ++i)
        EXPECT_NEAR(a[i], b[i], abs + t.rel * std::abs(b[i])) << fk::name(t.dt) << " at " << i;
    };
    near(fh.grad(), f32.grad(), t.abs);
    near(wh.grad(), w32.grad(), 10 * t.abs);
  }
}

// f32 runs the AVX2 micro-kernels (row-stationary fused path, per-pair
// per-offset path) where the CPU has them; f64 runs BLAS over staged rows,
// where the staging cap splits the offsets into groups.
void check_paths_bit_identical(fk::DType dt, const KernelRegion& region = KernelRegion::cube({3})) {
  KnobGuard guard;
  fk::mutable_knob("ME_FUSED_COPY").set_override("1");  // fused on every path, staged ones too
  set_deterministic(true);
  // A dense-ish blob so offsets hold several 2048-row GEMM blocks.
  Rows rows = random_rows(3, 12000, 12, 1, 1, 3);
  fk::Tensor f = fk::test::random_tensor({12000, 16}, dt, -1, 1, 4);
  fk::Tensor w = fk::test::random_tensor({region.volume(3), 16, 8}, dt, -1, 1, 5);
  SparseTensor x(f, to_tensor(rows));
  auto run = [&]() {
    fk::Tensor ff = f.clone().set_requires_grad(true), ww = w.clone().set_requires_grad(true);
    fk::Tensor y =
        convolution(SparseTensor(ff, x.key(), x.manager()), ww, fk::Tensor(), region).F();
    fk::Tensor g = fk::test::random_tensor(y.shape(), dt, -1, 1, 6);
    y.backward(g);
    return std::vector<fk::Tensor>{y, ff.grad(), ww.grad()};
  };
  auto base = run();
  auto same = [&](const std::vector<fk::Tensor>& r, const char* what) {
    const char* names[3] = {"output", "feature gradient", "weight gradient"};
    for (int i = 0; i < 3; ++i)
      EXPECT_TRUE(r[i].to_vector<double>() == base[i].to_vector<double>())
          << fk::name(dt) << " " << what << ": " << names[i];
  };
  bool staged = dt == fk::DType::F64;
  if (staged) {
    EXPECT_EQ(last_conv_call().groups, 1);
  }
  fk::mutable_knob("ME_FUSED_COPY_MAX_MB").set_override("0.001");
  same(run(), "chunked per offset");
  if (staged) {
    // Below one 2048-row GEMM block: every offset alone, the big ones cut
    // into blocks, so the staging holds at most one block of (16 + 8) f64.
    EXPECT_GT(last_conv_call().groups, region.volume(3));
    EXPECT_LE(last_conv_call().staging_bytes, 2048 * (16 + 8) * 8);
  }
  fk::mutable_knob("ME_FUSED_COPY_MAX_MB").set_override("0.8");
  same(run(), "chunked 0.8 MiB");
  if (staged) {  // 0.8 MiB of 192-byte rows: 4369 rows, cut to 2 blocks
    EXPECT_LE(last_conv_call().staging_bytes, 0.8 * 1048576);
  }
  fk::mutable_knob("ME_FUSED_COPY_MAX_MB").set_override("3");
  same(run(), "chunked 3 MiB");
  if (staged) {
    EXPECT_GT(last_conv_call().groups, 1);
  }
  fk::mutable_knob("ME_FUSED_COPY_MAX_MB").set_override(std::nullopt);
  fk::mutable_knob("ME_FUSED_COPY").set_override("0");
  same(run(), "per-offset");
  EXPECT_FALSE(last_conv_call().fused);
  // auto (the default): fused where it stages nothing, per offset where it
  // would stage (the faster on the CPU, fused_copy.h)
  fk::mutable_knob("ME_FUSED_COPY").set_override(std::nullopt);
  same(run(), "auto");
  EXPECT_EQ(last_conv_call().fused, !staged);
  fk::mutable_knob("ME_FUSED_COPY").set_override("1");
  std::vector<fk::Tensor> one;
  {
    const fk::test::ThreadCount threads(1);
    one = run();
  }
  same(one, "1 thread");
  // and the values are right (against the f64 BLAS path)
  if (!staged) {
    SparseTensor x64(f.to(fk::DType::F64), x.key(), x.manager());
    fk::Tensor y64 = convolution(x64, w.to(fk::DType::F64), fk::Tensor(), region).F();
    fk::test::expect_close(base[0], y64.to_vector<double>(), 1e-4);
  }
  set_deterministic(false);
  EXPECT_FALSE(is_deterministic());
}

TEST(MinkowskiConv, FusedPerOffsetChunkedAndThreadsBitIdenticalF32) {
  check_paths_bit_identical(fk::DType::F32);
}

TEST(MinkowskiConv, FusedPerOffsetChunkedAndThreadsBitIdenticalF32Cross) {
  // A symmetric map whose mirror does not reverse the offset order: the
  // input gradient reads by_out through the mirror with a sort.
  check_paths_bit_identical(fk::DType::F32, KernelRegion::cross({5}));
}

TEST(MinkowskiConv, FusedPerOffsetChunkedAndThreadsBitIdenticalF64) {
  check_paths_bit_identical(fk::DType::F64);
}

TEST(MinkowskiConv, F32KernelsAgainstReference) {
  // Channel counts that exercise every column panel of the f32 micro-kernels
  // (8..96 outputs) and odd input widths, forward and backward, vs f64.
  for (auto [cin, cout] :
       {std::pair{3, 8}, std::pair{8, 24}, std::pair{16, 40}, std::pair{24, 96}}) {
    Case c = make_case(3, 200, 4, 1, cin, cout, 27, 300 + cin);
    SparseTensor x(c.f, to_tensor(c.rows));
    fk::Tensor f32 = c.f.to(fk::DType::F32).set_requires_grad(true);
    fk::Tensor w32 = c.w.to(fk::DType::F32).set_requires_grad(true);
    fk::Tensor y = convolution(SparseTensor(f32, x.key(), x.manager()), w32, fk::Tensor(),
                               KernelRegion::cube({3}))
                       .F();
    auto want = reference_conv(c.rows, c.fv, cin, c.rows, c.wv, cout, cube_offsets(3, 3, 1, 1), 1);
    fk::test::expect_close(y, want, 1e-4);
    fk::Tensor f64 = c.f.clone().set_requires_grad(true), w64 = c.w.clone().set_requires_grad(true);
    fk::Tensor y64 = convolution(SparseTensor(f64, x.key(), x.manager()), w64, fk::Tensor(),
                                 KernelRegion::cube({3}))
                         .F();
    fk::Tensor g = fk::test::random_tensor(y.shape(), fk::DType::F64, -1, 1, 3);
    y.backward(g.to(fk::DType::F32));
    y64.backward(g);
    fk::test::expect_close(f32.grad(), f64.grad().to_vector<double>(), 1e-4);
    fk::test::expect_close(w32.grad(), w64.grad().to_vector<double>(), 1e-3);
  }
}

TEST(MinkowskiConv, F32RepeatedOffsetsGetTheirOwnWeights) {
  // A symmetric custom region with the zero offset twice: no mirror (it would
  // be ambiguous), each copy uses its own weight slice, forward and backward.
  std::vector<int32_t> off{0, 0, 1, 0, -1, 0, 0, 0, 0, 1, 0, -1};
  KernelRegion region = KernelRegion::custom(off, 2);
  Case c = make_case(2, 300, 12, 1, 8, 16, 6, 41);
  SparseTensor x(c.f, to_tensor(c.rows));
  auto km = x.manager()->kernel_map(x.key(), x.key(), region, false);
  EXPECT_TRUE(km->mirror.empty());
  fk::Tensor f32 = c.f.to(fk::DType::F32).set_requires_grad(true);
  fk::Tensor w32 = c.w.to(fk::DType::F32).set_requires_grad(true);
  fk::Tensor y =
      convolution(SparseTensor(f32, x.key(), x.manager()), w32, fk::Tensor(), region).F();
  std::vector<std::vector<int>> offs{{0, 0}, {1, 0}, {-1, 0}, {0, 0}, {0, 1}, {0, -1}};
  auto want = reference_conv(c.rows, c.fv, 8, c.rows, c.wv, 16, offs, 1);
  fk::test::expect_close(y, want, 1e-4);
  fk::Tensor f64 = c.f.clone().set_requires_grad(true), w64 = c.w.clone().set_requires_grad(true);
  fk::Tensor y64 =
      convolution(SparseTensor(f64, x.key(), x.manager()), w64, fk::Tensor(), region).F();
  fk::Tensor g = fk::test::random_tensor(y.shape(), fk::DType::F64, -1, 1, 3);
  y.backward(g.to(fk::DType::F32));
  y64.backward(g);
  fk::test::expect_close(f32.grad(), f64.grad().to_vector<double>(), 1e-4);
  fk::test::expect_close(w32.grad(), w64.grad().to_vector<double>(), 1e-3);
}

TEST(MinkowskiConv, F32WeightGradientOverManyRowChunks) {
  // Thousands of rows: the f32 weight gradient sums several fixed row chunks;
  // against f64, and bit-identical at 1 and 2 threads.
  KnobGuard guard;
  fk::mutable_knob("ME_CONV_PATH").set_override("tiles");  // the row-chunked tiles
  Rows rows = random_rows(3, 9000, 30, 1, 1, 12);
  SparseTensor x64(fk::test::random_tensor({9000, 8}, fk::DType::F64, -1, 1, 13), to_tensor(rows));
  ASSERT_GT(x64.size(), 6000);
  fk::Tensor w = fk::test::random_tensor({27, 8, 16}, fk::DType::F64, -1, 1, 14);
  fk::Tensor g = fk::test::random_tensor({x64.size(), 16}, fk::DType::F64, -1, 1, 15);
  auto grad_w = [&](fk::DType dt) {
    fk::Tensor ww = w.to(dt).set_requires_grad(true);
    fk::Tensor y = convolution(SparseTensor(x64.F().to(dt), x64.key(), x64.manager()), ww,
                               fk::Tensor(), KernelRegion::cube({3}))
                       .F();
    y.backward(g.to(dt));
    return ww.grad();
  };
  fk::Tensor two, one;
  {
    const fk::test::ThreadCount threads(2);
    two = grad_w(fk::DType::F32);
    threads.set(1);
    one = grad_w(fk::DType::F32);
  }
  EXPECT_TRUE(one.to_vector<float>() == two.to_vector<float>());
  fk::test::expect_close(one, grad_w(fk::DType::F64).to_vector<double>(), 2e-3);
}

TEST(MinkowskiConv, F32WeightGradientSkipsChunksWithoutAnOffset) {
  // The f32 weight gradient keeps one partial per (row chunk of 4096 rows,
  // offset), written from zero by its first pair and never zero-filled. Here
  // the first chunk holds only isolated rows (batch 0, three apart: the centre
  // offset alone), so its other 26 partials are never written and must not be
  // summed; NaNs are left in the allocator's cache in their size class.
  Rows rows;
  for (int i = 0; i < 5000; ++i)
    rows.push_back({0, 3 * (i % 30), 3 * (i / 30 % 30), 3 * (i / 900)});
  for (auto& r : random_rows(3, 4000, 20, 1, 1, 31)) rows.push_back({1, r[1], r[2], r[3]});
  const int64_t n = static_cast<int64_t>(rows.size());
  fk::Tensor f = fk::test::random_tensor({n, 8}, fk::DType::F64, -1, 1, 32);
  fk::Tensor w = fk::test::random_tensor({27, 8, 16}, fk::DType::F64, -1, 1, 33);
  SparseTensor x(f, to_tensor(rows));
  fk::Tensor g = fk::test::random_tensor({x.size(), 16}, fk::DType::F64, -1, 1, 34);
  auto grad_w = [&](fk::DType dt) {
    fk::Tensor ww = w.to(dt).set_requires_grad(true);
    SparseTensor xx(x.F().to(dt), x.key(), x.manager());
    fk::Tensor y = convolution(xx, ww, fk::Tensor(), KernelRegion::cube({3})).F();
    {
      // 3 chunks x 27 offsets x 8 x 16 floats: poison several blocks of that class.
      std::vector<fk::Tensor> nan;
      for (int i = 0; i < 8; ++i)
        nan.push_back(fk::full({3 * 27 * 8 * 16}, std::nan(""), {fk::DType::F32}));
    }
    y.backward(g.to(dt));
    return ww.grad();
  };
  fk::Tensor got = grad_w(fk::DType::F32);
  for (float v : got.to_vector<float>()) ASSERT_FALSE(std::isnan(v));
  fk::test::expect_close(got, grad_w(fk::DType::F64).to_vector<double>(), 2e-3);
}

// On one dataflow path (ME_CONV_PATH: the register tiles or BLAS):
void check_uneven_density(const char* path) {
  KnobGuard guard;
  SCOPED_TRACE(path);
  fk::mutable_knob("ME_CONV_PATH").set_override(path);
  // The f32 fused kernels hand out row blocks to threads on demand, so which
  // thread computes a row depends on timing; the results must not. A dense
  // blob (about 20 neighbours a row) beside scattered isolated rows, so blocks
  // differ in cost; a submanifold conv (symmetric map: the input gradient
  // reads by_out through the mirror) and one onto given coordinates, some far
  // from every input, whose rows get no terms and must still come out 0 (the
  // outputs are no longer zeroed before the kernels run).
  Rows rows = random_rows(3, 4000, 8, 1, 1, 21);
  for (auto& r : random_rows(3, 3000, 60, 1, 1, 22)) rows.push_back({1, r[1], r[2], r[3]});
  Rows target = random_rows(3, 2500, 9, 1, 1, 23);
  for (auto& r : random_rows(3, 500, 40, 1, 1, 24)) target.push_back({0, r[1] + 200, r[2], r[3]});
  const int64_t n = static_cast<int64_t>(rows.size());
  fk::Tensor f = fk::test::random_tensor({n, 16}, fk::DType::F64, -1, 1, 25);
  fk::Tensor w = fk::test::random_tensor({27, 16, 16}, fk::DType::F64, -1, 1, 26);
  SparseTensor x(f.to(fk::DType::F32), to_tensor(rows));
  ASSERT_EQ(x.size(), n);
  MapKey onto = x.manager()->insert(to_tensor(target), {1}, "target").key;
  auto run = [&](int threads) {
    const fk::test::ThreadCount count(threads);
    fk::Tensor ff = x.F().clone().set_requires_grad(true);
    fk::Tensor ww = w.to(fk::DType::F32).set_requires_grad(true);
    // Leave NaNs in the allocator's cache where the outputs will land (after
    // the inputs are made, so no input takes the poisoned blocks).
    for (int64_t rows_out : {n, static_cast<int64_t>(target.size())})
      fk::full({rows_out, 16}, std::nan(""), {fk::DType::F32});
    SparseTensor xx(ff, x.key(), x.manager());
    fk::Tensor y1 = convolution(xx, ww, fk::Tensor(), KernelRegion::cube({3})).F();
    fk::Tensor y2 =
        convolution(xx, ww, fk::Tensor(), KernelRegion::cube({3}), {1}, MapRef{x.manager(), onto})
            .F();
    y1.backward(fk::test::random_tensor(y1.shape(), fk::DType::F32, -1, 1, 27));
    y2.backward(fk::test::random_tensor(y2.shape(), fk::DType::F32, -1, 1, 28));
    return std::vector<std::vector<float>>{y1.to_vector<float>(), y2.to_vector<float>(),
                                           ff.grad().to_vector<float>(),
                                           ww.grad().to_vector<float>()};
  };
  auto one = run(1);
  for (int threads : {2, 3}) {
    auto r = run(threads);
    const char* names[4] = {"submanifold output", "output onto given coordinates",
                            "feature gradient", "weight gradient"};
    for (int i = 0; i < 4; ++i) EXPECT_TRUE(r[i] == one[i]) << threads << " threads: " << names[i];
  }
  // and the values are right: against the plain-loop reference in f64
  auto want1 = reference_conv(rows, f.to_vector<double>(), 16, rows, w.to_vector<double>(), 16,
                              cube_offsets(3, 3, 1, 1), 1);
  auto want2 = reference_conv(rows, f.to_vector<double>(), 16, target, w.to_vector<double>(), 16,
                              cube_offsets(3, 3, 1, 1), 1);
  fk::test::expect_close(fk::from_vector(one[0], fk::Dims{n, 16}), want1, 1e-4);
  fk::Tensor y2 = fk::from_vector(one[1], fk::Dims{static_cast<int64_t>(target.size()), 16});
  fk::test::expect_close(y2, want2, 1e-4);
  for (size_t i = 2500 * 16; i < one[1].size(); ++i) ASSERT_EQ(one[1][i], 0.0f) << i;
}

TEST(MinkowskiConv, F32ThreadCountsBitIdenticalOnUnevenDensity) {
  for (const char* path : {"tiles", "gemm"}) check_uneven_density(path);
}

TEST(MinkowskiConv, F32StridedTransposedOneByOne) {
  // The f32 kernels on non-submanifold maps and the identity map, vs f64.
  Case c = make_case(3, 300, 5, 1, 8, 16, 8, 77);
  SparseTensor x(c.f.to(fk::DType::F32), to_tensor(c.rows));
  SparseTensor x64(c.f, x.key(), x.manager());
  auto both = [&](const std::function<SparseTensor(const SparseTensor&, fk::DType)>& op) {
    fk::Tensor a = op(x, fk::DType::F32).F(), b = op(x64, fk::DType::F64).F();
    fk::test::expect_close(a, b.to_vector<double>(), 1e-4);
  };
  fk::Tensor w_down = fk::test::random_tensor({8, 8, 16}, fk::DType::F64, -1, 1, 1);
  fk::Tensor w_up = fk::test::random_tensor({8, 16, 8}, fk::DType::F64, -1, 1, 2);
  fk::Tensor w_1 = fk::test::random_tensor({8, 16}, fk::DType::F64, -1, 1, 3);
  both([&](const SparseTensor& in, fk::DType dt) {
    return convolution(in, w_down.to(dt), fk::Tensor(), KernelRegion::cube({2}), {2});
  });
  both([&](const SparseTensor& in, fk::DType dt) {
    SparseTensor dn = convolution(in, w_down.to(dt), fk::Tensor(), KernelRegion::cube({2}), {2});
    return convolution_transpose(dn, w_up.to(dt), fk::Tensor(), KernelRegion::cube({2}), {2});
  });
  both([&](const SparseTensor& in, fk::DType dt) {
    fk::Tensor w = w_1.to(dt);
    // NaNs in the allocator's cache where the output lands: the 1x1 path
    // writes every row without zeroing first.
    fk::full({in.size(), 16}, std::nan(""), {dt});
    return convolution(in, w, fk::Tensor(), KernelRegion::cube({1}));
  });
  // 1x1 gradients in f32 against f64
  fk::Tensor f32 = x.F().clone().set_requires_grad(true), f64 = c.f.clone().set_requires_grad(true);
  fk::Tensor w32 = w_1.to(fk::DType::F32).set_requires_grad(true),
             w64 = w_1.clone().set_requires_grad(true);
  fk::sum(convolution(SparseTensor(f32, x.key(), x.manager()), w32, fk::Tensor(),
                      KernelRegion::cube({1}))
              .F())
      .backward();
  fk::sum(convolution(SparseTensor(f64, x.key(), x.manager()), w64, fk::Tensor(),
                      KernelRegion::cube({1}))
              .F())
      .backward();
  fk::test::expect_close(f32.grad(), f64.grad().to_vector<double>(), 1e-4);
  fk::test::expect_close(w32.grad(), w64.grad().to_vector<double>(), 1e-3);
}

TEST(MinkowskiConv, OneByOneOverManyRowBlocks) {
  // The 1x1 tiles run in blocks of 1536 rows; each block reads its own rows
  // (the f32 tiles once read the first block's rows for every block). f32
  // tiles and bf16 (tiles where the CPU has bf16 dot products) vs f64.
  KnobGuard guard;
  fk::mutable_knob("ME_CONV_PATH").set_override("tiles");
  const int n = 4000;
  Case c = make_case(3, n, 14, 1, 16, 8, 1, 91);
  SparseTensor x(c.f, to_tensor(c.rows));
  fk::Tensor w = fk::test::random_tensor({16, 8}, fk::DType::F64, -1, 1, 4);
  const fk::Tensor want = convolution(x, w, fk::Tensor(), KernelRegion::cube({1})).F();
  for (auto [dt, tol] : {std::pair{fk::DType::F32, 1e-5}, std::pair{fk::DType::BF16, 2e-2}}) {
    SparseTensor xh(c.f.to(dt), x.key(), x.manager());
    fk::Tensor y = convolution(xh, w.to(dt), fk::Tensor(), KernelRegion::cube({1})).F();
    const auto got = y.to_vector<double>(), ref = want.to_vector<double>();
    ASSERT_EQ(got.size(), static_cast<size_t>(n) * 8);
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_NEAR(got[i], ref[i], tol * (1 + std::abs(ref[i]))) << fk::name(dt) << " at " << i;
  }
}

}  // namespace
}  // namespace minkowski
