// Convolution variants (strided, transposed, generative, onto given
// coordinates, per-axis, channelwise) on every copy path (fused, chunked,
// per-offset) and thread count: bit-identical in every dtype and against the
// plain-loop reference; empty inputs and zero channels for every variant.
// The variants' own references and gradchecks are in conv_variants_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "fk/fk.h"
#include "fk/test_util.h"
#include "fk/thread_count.h"
#include "minkowski/minkowski.h"
#include "minkowski/ops/conv_kernel.h"
#include "minkowski/ops/conv_reference.h"
#include "minkowski/ops/gather_gemm_bf16.h"

namespace minkowski {
namespace {

using namespace conv_ref;
using fk::test::ThreadCount;

using Offsets = std::vector<std::vector<int>>;

struct KnobReset {
  ~KnobReset() {
    fk::mutable_knob("ME_FUSED_COPY").set_override(std::nullopt);
    fk::mutable_knob("ME_FUSED_COPY_MAX_MB").set_override(std::nullopt);
  }
};

// A 3-D scene holding the input map of every variant in one manager: a
// dense-ish fine blob (about half the cells), its stride-2 map, a sparser map
// at tensor stride 2 for the generative variant, and given output coordinates
// (partly inside the blob, partly far from it: those rows get no terms).
struct PathScene {
  Rows fine = random_rows(3, 2500, 8, 1, 1, 51);
  Rows gen = random_rows(3, 150, 4, 2, 1, 52);
  Rows target;
  std::shared_ptr<CoordinateManager> mgr = std::make_shared<CoordinateManager>(3);
  MapKey fine_key, coarse_key, gen_key, target_key;
  PathScene() {
    target = random_rows(3, 1200, 9, 1, 1, 53);
    for (auto& r : random_rows(3, 100, 5, 1, 1, 54)) target.push_back({0, r[1] + 40, r[2], r[3]});
    fine_key = mgr->insert(to_tensor(fine), {1}).key;
    coarse_key = mgr->stride(fine_key, {2});
    gen_key = mgr->insert(to_tensor(gen), {2}, "gen").key;
    target_key = mgr->insert(to_tensor(target), {1}, "target").key;
  }
};

struct Variant {
  std::string name;
  bool channelwise = false;
  std::function<MapKey(const PathScene&)> input;
  std::function<SparseTensor(const PathScene&, const SparseTensor&, const fk::Tensor&)> op;
  // The reference: input offsets (sign +1) or output offsets (sign -1).
  Offsets offsets;
  int sign = 1;
};

std::vector<Variant> path_variants() {
  const KernelRegion k3 = KernelRegion::cube({3});
  auto fine = [](const PathScene& s) { return s.fine_key; };
  std::vector<Variant> v;
  v.push_back({"submanifold", false, fine,
               [=](const PathScene&, const SparseTensor& x, const fk::Tensor& w) {
                 return convolution(x, w, fk::Tensor(), k3);
               },
               cube_offsets(3, 3, 1, 1), 1});
  v.push_back({"strided", false, fine,
               [=](const PathScene&, const SparseTensor& x, const fk::Tensor& w) {
                 return convolution(x, w, fk::Tensor(), k3, {2});
               },
               cube_offsets(3, 3, 1, 1), 1});
  v.push_back({"transposed", false, [](const PathScene& s) { return s.coarse_key; },
               [=](const PathScene&, const SparseTensor& x, const fk::Tensor& w) {
                 return convolution_transpose(x, w, fk::Tensor(), k3, {2});
               },
               cube_offsets(3, 3, 1, 1), -1});
  v.push_back({"generative", false, [](const PathScene& s) { return s.gen_key; },
               [=](const PathScene&, const SparseTensor& x, const fk::Tensor& w) {
                 return generative_convolution_transpose(x, w, fk::Tensor(), k3, {2});
               },
               cube_offsets(3, 3, 1, 1), -1});
  v.push_back({"onto given coordinates", false, fine,
               [=](const PathScene& s, const SparseTensor& x, const fk::Tensor& w) {
                 return convolution(x, w, fk::Tensor(), k3, {1}, MapRef{x.manager(), s.target_key});
               },
               cube_offsets(3, 3, 1, 1), 1});
  v.push_back({"channelwise", true, fine,
               [=](const PathScene&, const SparseTensor& x, const fk::Tensor& w) {
                 return channelwise_convolution(x, w, fk::Tensor(), k3);
               },
               cube_offsets(3, 3, 1, 1), 1});
  v.push_back({"channelwise strided", true, fine,
               [=](const PathScene&, const SparseTensor& x, const fk::Tensor& w) {
                 return channelwise_convolution(x, w, fk::Tensor(), k3, {2});
               },
               cube_offsets(3, 3, 1, 1), 1});
  return v;
}

struct PathRun {
  std::vector<std::vector<double>> values;  // output, feature gradient, weight gradient
  ConvCallInfo forward, backward;
};

PathRun run_variant(const PathScene& s, const Variant& v, fk::DType dt, int64_t cin, int64_t cout) {
  MapKey in = v.input(s);
  int64_t n = s.mgr->size(in);
  fk::Tensor f =
      fk::test::random_tensor({n, cin}, fk::DType::F64, -1, 1, 61).to(dt).set_requires_grad(true);
  fk::Dims ws = v.channelwise ? fk::Dims{27, cin} : fk::Dims{27, cin, cout};
  fk::Tensor w =
      fk::test::random_tensor(ws, fk::DType::F64, -1, 1, 62).to(dt).set_requires_grad(true);
  PathRun r;
  fk::Tensor y = v.op(s, SparseTensor(f, in, s.mgr), w).F();
  r.forward = last_conv_call();
  y.backward(fk::test::random_tensor(y.shape(), fk::DType::F64, -1, 1, 63).to(dt));
  r.backward = last_conv_call();
  r.values = {y.to_vector<double>(), f.grad().to_vector<double>(), w.grad().to_vector<double>()};
  return r;
}

// A variant's output against the plain-loop reference in f64, from the same
// inputs rounded to dt; the tolerance covers f32 accumulation and, for 16-bit
// types, the one rounding of the output (relative 2^-11 f16, 2^-8 bf16).
void check_against_reference(const PathScene& s, const Variant& v, fk::DType dt, int64_t cin,
                             int64_t cout, const std::vector<double>& got) {
  MapKey in = v.input(s);
  int64_t n = s.mgr->size(in);
  auto rounded = [&](int64_t count, unsigned seed) {
    return fk::test::random_tensor({count}, fk::DType::F64, -1, 1, seed).to(dt).to_vector<double>();
  };
  auto f = rounded(n * cin, 61);
  auto w = rounded(27 * cin * (v.channelwise ? 1 : cout), 62);
  // the output map, rebuilt here the same way the variant builds it
  fk::Tensor y =
      v.op(s, SparseTensor(fk::zeros({n, cin}, {fk::DType::F64}), in, s.mgr),
           fk::zeros(v.channelwise ? fk::Dims{27, cin} : fk::Dims{27, cin, cout}, {fk::DType::F64}))
          .C();
  Rows out = from_tensor(y);
  Rows in_rows = from_tensor(s.mgr->coordinates(in));
  std::vector<double> want;
  if (v.channelwise) {
    // channel by channel: a 1 -> 1 convolution with that channel's weights
    want.assign(out.size() * cin, 0.0);
    for (int64_t c = 0; c < cin; ++c) {
      std::vector<double> fc(n), wc(27);
      for (int64_t i = 0; i < n; ++i) fc[i] = f[i * cin + c];
      for (int64_t k = 0; k < 27; ++k) wc[k] = w[k * cin + c];
      auto r = reference_conv(in_rows, fc, 1, out, wc, 1, v.offsets, v.sign);
      for (size_t o = 0; o < out.size(); ++o) want[o * cin + c] = r[o];
    }
  } else {
    want = reference_conv(in_rows, f, static_cast<int>(cin), out, w, static_cast<int>(cout),
                          v.offsets, v.sign);
  }
  double abs = dt == fk::DType::F64 ? 1e-12 : 1e-4;
  double rel = dt == fk::DType::F16 ? 1e-3 : dt == fk::DType::BF16 ? 8e-3 : 0.0;
  ASSERT_EQ(got.size(), want.size());
  double largest = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], abs + rel * std::abs(want[i])) << v.name << " " << i;
    largest = std::max(largest, std::abs(want[i]));
  }
  EXPECT_GT(largest, 1.0);  // not a test of zeros
}

// Fused (default) == chunked under a cap (several groups) == chunked one
// offset a group == per-offset, and 1 == 2 == 3 threads, bit for bit, for the
// output and both gradients. `staged_fwd`/`staged_bwd`: whether that pass
// stages rows (BLAS path), so the cap must split it into groups.
void check_variant_paths(fk::DType dt, int64_t cin, int64_t cout, bool channelwise_only = false) {
  KnobReset reset;
  fk::mutable_knob("ME_FUSED_COPY").set_override("1");  // fused on every path, staged ones too
  PathScene s;
  const bool gemm = fk::mutable_knob("ME_CONV_PATH").as_string() == "gemm";
  const bool staged_fwd = gemm || dt == fk::DType::F64 || cout % 8 != 0;
  const bool staged_bwd = gemm || dt == fk::DType::F64 || cin % 8 != 0;
  for (const Variant& v : path_variants()) {
    if ((v.channelwise && cin != cout) || (channelwise_only && !v.channelwise)) continue;
    SCOPED_TRACE(std::string(fk::name(dt)) + " " + v.name + " C_in " + std::to_string(cin) +
                 " C_out " + std::to_string(cout));
    PathRun base;
    {
      ThreadCount two(2);
      base = run_variant(s, v, dt, cin, cout);
    }
    ASSERT_FALSE(base.values[0].empty());
    if (!channelwise_only || dt == fk::DType::F64) {  // the wide channelwise reference is slow
      check_against_reference(s, v, dt, cin, cout, base.values[0]);
    }
    auto same = [&](const PathRun& r, const std::string& what) {
      const char* names[3] = {"output", "feature gradient", "weight gradient"};
      for (int i = 0; i < 3; ++i)
        EXPECT_TRUE(r.values[i] == base.values[i]) << what << ": " << names[i];
    };
    for (int threads : {1, 3}) {
      ThreadCount t(threads);
      PathScene fresh;  // maps and row indices built at this thread count too
      same(run_variant(fresh, v, dt, cin, cout), std::to_string(threads) + " threads");
    }
    if (v.channelwise) continue;  // one path only: the knobs do not apply
    if (staged_fwd) {
      EXPECT_EQ(base.forward.groups, 1);
      EXPECT_GT(base.forward.staging_bytes, 0);
    }
    if (staged_bwd) {
      EXPECT_EQ(base.backward.groups, 1);
    }
    ThreadCount two(2);
    // a cap of about a third of the whole staging: several groups of offsets
    double third_mb = std::max<int64_t>(base.forward.staging_bytes, 3) / 3.0 / 1048576.0;
    fk::mutable_knob("ME_FUSED_COPY_MAX_MB").set_override(std::to_string(third_mb));
    PathRun chunked = run_variant(s, v, dt, cin, cout);
    same(chunked, "chunked by a third");
    if (staged_fwd) {
      EXPECT_GT(chunked.forward.groups, 1);
    }
    if (staged_bwd) {
      EXPECT_GT(chunked.backward.groups, 1);
    }
    fk::mutable_knob("ME_FUSED_COPY_MAX_MB").set_override("0.001");
    PathRun each = run_variant(s, v, dt, cin, cout);
    same(each, "chunked one offset a group");
    if (staged_fwd) {
      EXPECT_GT(each.forward.groups, chunked.forward.groups);
    }
    fk::mutable_knob("ME_FUSED_COPY_MAX_MB").set_override(std::nullopt);
    fk::mutable_knob("ME_FUSED_COPY").set_override("0");
    PathRun per_offset = run_variant(s, v, dt, cin, cout);
    same(per_offset, "per-offset");
    // the bf16 tiles have one copy path (row-stationary) whatever the knob
    const bool bf16 = dt == fk::DType::BF16 && !gemm;
    EXPECT_EQ(per_offset.forward.fused, bf16 && gather_gemm_bf16_supported(cin, cout));
    EXPECT_EQ(per_offset.backward.fused, bf16 && gather_gemm_bf16_supported(cout, cin));
    // auto (the default): per offset where fused would stage rows
    fk::mutable_knob("ME_FUSED_COPY").set_override(std::nullopt);
    PathRun automatic = run_variant(s, v, dt, cin, cout);
    same(automatic, "auto");
    if (staged_fwd && !bf16) {
      EXPECT_FALSE(automatic.forward.fused);
    }
    fk::mutable_knob("ME_FUSED_COPY").set_override("1");
  }
}

TEST(MinkowskiConvVariants, PathsAndThreadsBitIdenticalF64) {
  check_variant_paths(fk::DType::F64, 6, 5);
  check_variant_paths(fk::DType::F64, 4, 4, true);  // channelwise
}

// Each dataflow path on its own (ME_CONV_PATH; the auto choice between them
// depends on timing, and they differ in rounding: conv_path.h).
TEST(MinkowskiConvVariants, PathsAndThreadsBitIdenticalF32) {
  for (const char* path : {"tiles", "gemm"}) {
    SCOPED_TRACE(path);
    fk::mutable_knob("ME_CONV_PATH").set_override(path);
    check_variant_paths(fk::DType::F32, 8, 16);       // micro-kernels, no staging
    check_variant_paths(fk::DType::F32, 5, 6);        // staged BLAS both ways
    check_variant_paths(fk::DType::F32, 6, 8);        // row-stationary forward, staged input grad
    check_variant_paths(fk::DType::F32, 8, 8, true);  // channelwise
  }
  fk::mutable_knob("ME_CONV_PATH").set_override(std::nullopt);
}

TEST(MinkowskiConvVariants, PathsAndThreadsBitIdenticalF16BF16) {
  for (const char* path : {"tiles", "gemm"}) {
    SCOPED_TRACE(path);
    fk::mutable_knob("ME_CONV_PATH").set_override(path);
    for (fk::DType dt : {fk::DType::F16, fk::DType::BF16}) {
      check_variant_paths(dt, 8, 8);
      check_variant_paths(dt, 5, 6);
    }
  }
  fk::mutable_knob("ME_CONV_PATH").set_override(std::nullopt);
}

TEST(MinkowskiConvVariants, ChannelwiseThreadsBitIdenticalOverManyPairs) {
  // pairs x channels >= 2^20: the channelwise weight gradient sums its blocks
  // of pairs in parallel (below that, in one chunk).
  PathScene s;
  ASSERT_GE(s.mgr->kernel_map(s.fine_key, s.fine_key, KernelRegion::cube({3}), false)->pairs() * 40,
            int64_t{1} << 20);
  for (fk::DType dt : {fk::DType::F64, fk::DType::F32, fk::DType::F16, fk::DType::BF16})
    check_variant_paths(dt, 40, 40, true);
}

// ---- empty inputs -----------------------------------------------------------------

TEST(MinkowskiConvVariants, EmptyInputsEveryVariant) {
  for (fk::DType dt : {fk::DType::F64, fk::DType::F32}) {
    SCOPED_TRACE(fk::name(dt));
    fk::Tensor f = fk::zeros({0, 2}, {dt}).set_requires_grad(true);
    SparseTensor x(f, fk::empty({0, 3}, {fk::DType::I32}));
    auto w = [&](fk::Dims s) {
      return fk::test::random_tensor(s, dt, -1, 1, 3).set_requires_grad(true);
    };
    // Runs y = op(), checks its shape, then backward: zero weight gradients
    // and an empty feature gradient.
    auto check = [&](const char* what, int64_t rows, int64_t cols, const fk::Tensor& wt,
                     const std::function<SparseTensor()>& op) {
      SCOPED_TRACE(what);
      SparseTensor y = op();
      EXPECT_EQ(y.F().shape(), (fk::Dims{rows, cols}));
      EXPECT_EQ(y.F().dtype(), dt);
      for (double v : y.F().to_vector<double>()) EXPECT_EQ(v, 0.0);
      fk::sum(y.F()).backward();
      fk::Tensor gw = wt.grad();
      ASSERT_TRUE(gw.defined());
      EXPECT_EQ(gw.shape(), wt.shape());
      for (double v : gw.to_vector<double>()) EXPECT_EQ(v, 0.0);
      if (f.grad().defined()) {
        EXPECT_EQ(f.grad().shape(), (fk::Dims{0, 2}));
      }
    };
    KernelRegion k3 = KernelRegion::cube({3}), k2 = KernelRegion::cube({2});
    fk::Tensor w93 = w({9, 2, 3});
    check("submanifold", 0, 3, w93, [&] { return convolution(x, w93, fk::Tensor(), k3); });
    fk::Tensor wd = w({9, 2, 3});
    check("dilated", 0, 3, wd,
          [&] { return convolution(x, wd, fk::Tensor(), KernelRegion::cube({3}, {2})); });
    fk::Tensor ws = w({4, 2, 3});
    SparseTensor down = convolution(SparseTensor(f.detach(), x.key(), x.manager()), ws.detach(),
                                    fk::Tensor(), k2, {2});
    check("strided", 0, 3, ws, [&] { return convolution(x, ws, fk::Tensor(), k2, {2}); });
    EXPECT_EQ(down.tensor_stride(), std::vector<int32_t>(2, 2));
    fk::Tensor wt = w({4, 3, 2});
    check("transposed", 0, 2, wt,
          [&] { return convolution_transpose(down, wt, fk::Tensor(), k2, {2}); });
    fk::Tensor wg = w({9, 3, 2});
    check("generative", 0, 2, wg,
          [&] { return generative_convolution_transpose(down, wg, fk::Tensor(), k3, {2}); });
    fk::Tensor w1 = w({2, 3});
    check("1x1", 0, 3, w1,
          [&] { return convolution(x, w1, fk::Tensor(), KernelRegion::cube({1})); });
    fk::Tensor wc = w({9, 2});
    check("channelwise", 0, 2, wc,
          [&] { return channelwise_convolution(x, wc, fk::Tensor(), k3); });
    fk::Tensor wcs = w({9, 2});
    check("channelwise strided", 0, 2, wcs,
          [&] { return channelwise_convolution(x, wcs, fk::Tensor(), k3, {2}); });
    // onto given (non-empty) coordinates from an empty input: rows with no terms
    MapKey target = x.manager()->insert(to_tensor(random_rows(2, 7, 3, 1, 1, 4)), {1}, "t").key;
    fk::Tensor wo = w({9, 2, 3});
    check("onto given coordinates", 7, 3, wo, [&] {
      return convolution(x, wo, fk::Tensor(), k3, {1}, MapRef{x.manager(), target});
    });
    // and a non-empty input onto empty given coordinates: zero feature gradient
    Rows rows = random_rows(2, 5, 3, 1, 1, 5);
    fk::Tensor fe = fk::test::random_tensor({5, 2}, dt, -1, 1, 6).set_requires_grad(true);
    SparseTensor xe(fe, to_tensor(rows));
    MapKey none = xe.manager()->insert(fk::empty({0, 3}, {fk::DType::I32}), {1}, "none").key;
    fk::Tensor woe = w({9, 2, 3});
    SparseTensor ye = convolution(xe, woe, fk::Tensor(), k3, {1}, MapRef{xe.manager(), none});
    EXPECT_EQ(ye.F().shape(), (fk::Dims{0, 3}));
    fk::sum(ye.F()).backward();
    EXPECT_EQ(fe.grad().to_vector<double>(), std::vector<double>(10, 0.0));
    EXPECT_EQ(woe.grad().to_vector<double>(), std::vector<double>(54, 0.0));
  }
}

// ---- zero channels ---------------------------------------------------------------

// Every variant with C_in and/or C_out zero: outputs of the right shape, all
// zero (no terms), and zero gradients of the right shapes. `backward` false:
// forward only.
void check_zero_channels(fk::DType dt, int64_t cin, int64_t cout, bool backward) {
  SCOPED_TRACE(std::string(fk::name(dt)) + " C_in " + std::to_string(cin) + " C_out " +
               std::to_string(cout));
  Rows rows = random_rows(2, 60, 4, 1, 1, 7);
  SparseTensor x(fk::zeros({60, cin}, {dt}), to_tensor(rows));
  auto& mgr = x.manager();
  MapKey coarse = mgr->stride(x.key(), {2});
  MapKey target = mgr->insert(to_tensor(random_rows(2, 30, 5, 1, 1, 8)), {1}, "t").key;
  KernelRegion k3 = KernelRegion::cube({3});
  struct Op {
    const char* name;
    MapKey in;
    bool channelwise;
    std::function<SparseTensor(const SparseTensor&, const fk::Tensor&)> run;
  };
  std::vector<Op> ops{
      {"submanifold", x.key(), false,
       [&](const SparseTensor& t, const fk::Tensor& w) { return convolution(t, w, {}, k3); }},
      {"strided", x.key(), false,
       [&](const SparseTensor& t, const fk::Tensor& w) { return convolution(t, w, {}, k3, {2}); }},
      {"transposed", coarse, false,
       [&](const SparseTensor& t, const fk::Tensor& w) {
         return convolution_transpose(t, w, {}, k3, {2});
       }},
      {"generative", coarse, false,
       [&](const SparseTensor& t, const fk::Tensor& w) {
         return generative_convolution_transpose(t, w, {}, k3, {2});
       }},
      {"onto given coordinates", x.key(), false,
       [&](const SparseTensor& t, const fk::Tensor& w) {
         return convolution(t, w, {}, k3, {1}, MapRef{t.manager(), target});
       }},
      {"1x1", x.key(), false,
       [&](const SparseTensor& t, const fk::Tensor& w) {
         return convolution(t, w, {}, KernelRegion::cube({1}));
       }},
      {"channelwise", x.key(), true,
       [&](const SparseTensor& t, const fk::Tensor& w) {
         return channelwise_convolution(t, w, {}, k3);
       }},
  };
  for (const Op& op : ops) {
    SCOPED_TRACE(op.name);
    if (op.channelwise && cin != cout) continue;
    int64_t n = mgr->size(op.in);
    int64_t vol = std::string(op.name) == "1x1" ? 1 : 9;
    fk::Tensor f = fk::test::random_tensor({n, cin}, fk::DType::F64, -1, 1, 9).to(dt);
    fk::Tensor w =
        fk::test::random_tensor(op.channelwise ? fk::Dims{vol, cin} : fk::Dims{vol, cin, cout},
                                fk::DType::F64, -1, 1, 10)
            .to(dt);
    if (backward) {
      f.set_requires_grad(true);
      w.set_requires_grad(true);
    }
    // NaNs in the allocator's cache where an uninitialised output would land
    fk::full({n * 4, std::max<int64_t>(cout, 1)}, std::nan(""), {dt});
    SparseTensor y = op.run(SparseTensor(f, op.in, mgr), w);
    EXPECT_EQ(y.F().shape(), (fk::Dims{y.size(), cout}));
    EXPECT_GT(y.size(), 0);
    for (double v : y.F().to_vector<double>()) ASSERT_EQ(v, 0.0);
    if (!backward) continue;
    fk::sum(y.F()).backward();
    EXPECT_EQ(f.grad().shape(), f.shape());
    EXPECT_EQ(w.grad().shape(), w.shape());
    for (double v : f.grad().to_vector<double>()) ASSERT_EQ(v, 0.0);
    for (double v : w.grad().to_vector<double>()) ASSERT_EQ(v, 0.0);
  }
}

TEST(MinkowskiConvVariants, ZeroChannels) {
  for (fk::DType dt : {fk::DType::F64, fk::DType::F32, fk::DType::F16, fk::DType::BF16}) {
    check_zero_channels(dt, 0, 0, true);
    check_zero_channels(dt, 0, 3, true);
    check_zero_channels(dt, 2, 0, true);
    // C_in 0 with C_out a multiple of 8: the f32 micro-kernels' weight
    // gradient once divided by the empty partials' size there (SIGFPE)
    check_zero_channels(dt, 0, 8, true);
  }
}

}  // namespace
}  // namespace minkowski
