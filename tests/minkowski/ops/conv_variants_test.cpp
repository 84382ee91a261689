// Convolution variants beyond conv_test.cpp's basic cases: 4-D dilated,
// transposed and generative transposed, and per-axis kernel sizes, strides
// and dilations, against the plain-loop reference; f64 gradchecks of the
// variants the basic gradcheck leaves out; copy paths (fused, chunked,
// per-offset) and thread counts bit-identical on the non-submanifold variants
// in every dtype; empty inputs for every variant.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "fk/fk.h"
#include "fk/test_util.h"
#include "minkowski/minkowski.h"
#include "minkowski/ops/conv_kernel.h"
#include "minkowski/ops/conv_reference.h"

namespace minkowski {
namespace {

using namespace conv_ref;

using Offsets = std::vector<std::vector<int>>;
using RowSet = std::set<std::vector<int32_t>>;

// Box offsets with per-axis sizes and steps (dilation * tensor stride), in the
// documented order written out independently: axis 0 fastest; odd sizes
// centered, even sizes from 0.
Offsets box_offsets(const std::vector<int>& k, const std::vector<int>& step) {
  int d = static_cast<int>(k.size()), vol = 1;
  for (int v : k) vol *= v;
  Offsets o(vol, std::vector<int>(d));
  for (int i = 0; i < vol; ++i) {
    int rem = i;
    for (int a = 0; a < d; ++a) {
      int idx = rem % k[a];
      rem /= k[a];
      o[i][a] = (k[a] % 2 ? idx - k[a] / 2 : idx) * step[a];
    }
  }
  return o;
}

std::vector<int> times(const std::vector<int>& a, const std::vector<int>& b) {
  std::vector<int> r(a.size());
  for (size_t i = 0; i < a.size(); ++i) r[i] = a[i] * b[i];
  return r;
}

std::vector<int32_t> i32(const std::vector<int>& v) {
  return std::vector<int32_t>(v.begin(), v.end());
}

// floor(c / t) * t on every axis (t per axis).
RowSet strided_rows(const Rows& rows, const std::vector<int>& t) {
  RowSet s;
  for (auto r : rows) {
    for (size_t a = 1; a < r.size(); ++a)
      r[a] = static_cast<int32_t>(std::floor(r[a] / double(t[a - 1]))) * t[a - 1];
    s.insert(r);
  }
  return s;
}

// c + offset for every coordinate and offset.
RowSet expanded_rows(const Rows& rows, const Offsets& offs) {
  RowSet s;
  for (const auto& r : rows)
    for (const auto& o : offs) {
      auto c = r;
      for (size_t a = 1; a < c.size(); ++a) c[a] += o[a - 1];
      s.insert(c);
    }
  return s;
}

RowSet row_set(const Rows& r) {
  return RowSet(r.begin(), r.end());
}

fk::Tensor random_weight(fk::Dims s, unsigned seed) {
  return fk::test::random_tensor(s, fk::DType::F64, -1, 1, seed);
}

// ---- 4-D variants against the reference ------------------------------------

TEST(MinkowskiConvVariants, Dilated4D) {
  Case c = make_case(4, 150, 2, 1, 2, 3, 81, 401);
  SparseTensor x(c.f, to_tensor(c.rows));
  KernelRegion region = KernelRegion::cube({3}, {2});
  SparseTensor y = convolution(x, c.w, fk::Tensor(), region);
  EXPECT_EQ(y.key(), x.key());
  // more pairs than the centre offset alone: the dilated neighbours count
  ASSERT_GT(x.manager()->kernel_map(x.key(), x.key(), region, false)->pairs(), 2 * x.size());
  auto want = reference_conv(c.rows, c.fv, 2, c.rows, c.wv, 3, cube_offsets(4, 3, 2, 1), 1);
  fk::test::expect_close(y.F(), want, 1e-12);
}

TEST(MinkowskiConvVariants, Transposed4D) {
  // Down with stride 2, then back onto the fine map (the encoder's map reused
  // transposed): even, odd and dilated kernels.
  struct Kd {
    int k, dil;
  };
  for (Kd kd : {Kd{2, 1}, Kd{3, 1}, Kd{3, 2}}) {
    int vol = static_cast<int>(std::pow(kd.k, 4));
    Case c = make_case(4, 150, 3, 1, 2, 3, vol, 410 + kd.k + kd.dil);
    SparseTensor x(c.f, to_tensor(c.rows));
    KernelRegion region = KernelRegion::cube({kd.k}, {kd.dil});
    SparseTensor down = convolution(x, c.w, fk::Tensor(), region, {2});
    EXPECT_EQ(down.tensor_stride(), std::vector<int32_t>(4, 2));
    fk::Tensor wt = random_weight({vol, 3, 2}, 420 + kd.k);
    SparseTensor up = convolution_transpose(down, wt, fk::Tensor(), region, {2});
    EXPECT_EQ(up.key(), x.key());
    auto want = reference_conv(from_tensor(down.C()), down.F().to_vector<double>(), 3, c.rows,
                               wt.to_vector<double>(), 2, cube_offsets(4, kd.k, kd.dil, 1), -1);
    fk::test::expect_close(up.F(), want, 1e-12);
  }
}

TEST(MinkowskiConvVariants, GenerativeTranspose4D) {
  // Even kernel: 2^4 distinct children per coarse point; odd kernel:
  // neighbouring points share children, which sum both parents' terms.
  for (int k : {2, 3}) {
    int vol = static_cast<int>(std::pow(k, 4));
    Case c = make_case(4, 40, 2, 2, 3, 2, vol, 430 + k);
    SparseTensor x(c.f, to_tensor(c.rows), {2});
    SparseTensor y =
        generative_convolution_transpose(x, c.w, fk::Tensor(), KernelRegion::cube({k}), {2});
    EXPECT_EQ(y.tensor_stride(), std::vector<int32_t>(4, 1));
    Offsets offs = cube_offsets(4, k, 1, 1);
    RowSet want_set = expanded_rows(c.rows, offs);
    if (k == 3) {  // shared children exist
      ASSERT_LT(want_set.size(), c.rows.size() * vol);
    }
    Rows out = from_tensor(y.C());
    EXPECT_EQ(out.size(), want_set.size());
    EXPECT_EQ(row_set(out), want_set);
    auto want = reference_conv(c.rows, c.fv, 3, out, c.wv, 2, offs, -1);
    fk::test::expect_close(y.F(), want, 1e-12);
  }
}

TEST(MinkowskiConvVariants, GenerativeTransposeDilated) {
  Case c = make_case(3, 40, 3, 2, 2, 3, 27, 440);
  SparseTensor x(c.f, to_tensor(c.rows), {2});
  SparseTensor y =
      generative_convolution_transpose(x, c.w, fk::Tensor(), KernelRegion::cube({3}, {2}), {2});
  EXPECT_EQ(y.tensor_stride(), std::vector<int32_t>(3, 1));
  Offsets offs = cube_offsets(3, 3, 2, 1);  // dilation 2 x output tensor stride 1
  Rows out = from_tensor(y.C());
  EXPECT_EQ(out.size(), expanded_rows(c.rows, offs).size());
  EXPECT_EQ(row_set(out), expanded_rows(c.rows, offs));
  fk::test::expect_close(y.F(), reference_conv(c.rows, c.fv, 2, out, c.wv, 3, offs, -1), 1e-12);
}

TEST(MinkowskiConvVariants, OntoGivenCoordinatesOfOtherStrides) {
  Case c = make_case(3, 150, 4, 1, 2, 3, 27, 500);
  SparseTensor x(c.f, to_tensor(c.rows));
  auto& mgr = x.manager();
  // onto coarser given coordinates (tensor stride 2): offsets scale by the
  // input's tensor stride, as for a strided convolution
  Rows coarse = random_rows(3, 60, 2, 2, 2, 501);
  MapKey at2 = mgr->insert(to_tensor(coarse), {2}, "given coarse").key;
  SparseTensor y =
      convolution(x, c.w, fk::Tensor(), KernelRegion::cube({3}), {1}, MapRef{x.manager(), at2});
  EXPECT_EQ(y.key(), at2);
  fk::test::expect_close(
      y.F(), reference_conv(c.rows, c.fv, 2, coarse, c.wv, 3, cube_offsets(3, 3, 1, 1), 1), 1e-12);
  // transposed from the coarse map onto given fine coordinates (not the
  // input's map): offsets scale by the output's tensor stride
  fk::Tensor yf = fk::test::random_tensor({60, 3}, fk::DType::F64, -1, 1, 502);
  SparseTensor xc(yf, at2, mgr);
  Rows fine = random_rows(3, 120, 5, 1, 2, 503);
  MapKey at1 = mgr->insert(to_tensor(fine), {1}, "given fine").key;
  fk::Tensor wt = random_weight({27, 3, 2}, 504);
  SparseTensor up = convolution_transpose(xc, wt, fk::Tensor(), KernelRegion::cube({3}), {2},
                                          MapRef{xc.manager(), at1});
  EXPECT_EQ(up.key(), at1);
  fk::test::expect_close(up.F(),
                         reference_conv(coarse, yf.to_vector<double>(), 3, fine,
                                        wt.to_vector<double>(), 2, cube_offsets(3, 3, 1, 1), -1),
                         1e-12);
}

TEST(MinkowskiConvVariants, TransposedWithoutAFinerMapExpands) {
  // No map at the output stride exists: the transposed convolution creates
  // one as the generative variant does (every coordinate plus every offset).
  Case c = make_case(3, 40, 3, 2, 2, 3, 27, 510);
  SparseTensor x(c.f, to_tensor(c.rows), {2});
  SparseTensor y = convolution_transpose(x, c.w, fk::Tensor(), KernelRegion::cube({3}), {2});
  EXPECT_EQ(y.tensor_stride(), std::vector<int32_t>(3, 1));
  Offsets offs = cube_offsets(3, 3, 1, 1);
  Rows out = from_tensor(y.C());
  EXPECT_EQ(out.size(), expanded_rows(c.rows, offs).size());
  EXPECT_EQ(row_set(out), expanded_rows(c.rows, offs));
  fk::test::expect_close(y.F(), reference_conv(c.rows, c.fv, 2, out, c.wv, 3, offs, -1), 1e-12);
}

// ---- per-axis kernel sizes, strides, dilations (3-D) -------------------------

TEST(MinkowskiConvVariants, PerAxisSizesStridesDilations) {
  struct Config {
    std::vector<int> k, s, dil;
  };
  for (const Config& cf :
       {Config{{3, 1, 2}, {2, 1, 1}, {1, 2, 1}}, Config{{2, 3, 3}, {1, 2, 2}, {3, 1, 2}}}) {
    SCOPED_TRACE("kernel " + std::to_string(cf.k[0]) + std::to_string(cf.k[1]) +
                 std::to_string(cf.k[2]));
    int vol = cf.k[0] * cf.k[1] * cf.k[2];
    KernelRegion region = KernelRegion::cube(i32(cf.k), i32(cf.dil));
    ASSERT_EQ(region.volume(3), vol);
    Case c = make_case(3, 160, 4, 1, 2, 3, vol, 450 + vol);
    SparseTensor x(c.f, to_tensor(c.rows));
    // submanifold
    SparseTensor sub = convolution(x, c.w, fk::Tensor(), region);
    fk::test::expect_close(
        sub.F(), reference_conv(c.rows, c.fv, 2, c.rows, c.wv, 3, box_offsets(cf.k, cf.dil), 1),
        1e-12);
    // strided from tensor stride 1: per-axis output coordinates and stride
    SparseTensor down = convolution(x, c.w, fk::Tensor(), region, i32(cf.s));
    EXPECT_EQ(down.tensor_stride(), i32(cf.s));
    Rows coarse = from_tensor(down.C());
    EXPECT_EQ(coarse.size(), strided_rows(c.rows, cf.s).size());
    EXPECT_EQ(row_set(coarse), strided_rows(c.rows, cf.s));
    fk::test::expect_close(
        down.F(), reference_conv(c.rows, c.fv, 2, coarse, c.wv, 3, box_offsets(cf.k, cf.dil), 1),
        1e-12);
    // strided again from the per-axis tensor stride: offsets scale by it
    fk::Tensor w2 = random_weight({vol, 3, 2}, 460);
    SparseTensor down2 = convolution(down, w2, fk::Tensor(), region, {2});
    std::vector<int> ts2 = times(cf.s, {2, 2, 2});
    EXPECT_EQ(down2.tensor_stride(), i32(ts2));
    Rows coarse2 = from_tensor(down2.C());
    EXPECT_EQ(row_set(coarse2), strided_rows(coarse, ts2));
    fk::test::expect_close(
        down2.F(),
        reference_conv(coarse, down.F().to_vector<double>(), 3, coarse2, w2.to_vector<double>(), 2,
                       box_offsets(cf.k, times(cf.dil, cf.s)), 1),
        1e-12);
    // transposed back onto the fine map: offsets scale by its stride (1)
    fk::Tensor wt = random_weight({vol, 3, 2}, 470);
    SparseTensor up = convolution_transpose(down, wt, fk::Tensor(), region, i32(cf.s));
    EXPECT_EQ(up.key(), x.key());
    fk::test::expect_close(up.F(),
                           reference_conv(coarse, down.F().to_vector<double>(), 3, c.rows,
                                          wt.to_vector<double>(), 2, box_offsets(cf.k, cf.dil), -1),
                           1e-12);
    // generative from a per-axis tensor stride s down to 1
    Rows at_s = random_rows(3, 50, 3, 1, 2, 480 + vol);
    for (auto& r : at_s)
      for (int a = 0; a < 3; ++a) r[a + 1] *= cf.s[a];
    fk::Tensor fg = fk::test::random_tensor({50, 2}, fk::DType::F64, -1, 1, 481);
    SparseTensor xs(fg, to_tensor(at_s), i32(cf.s));
    SparseTensor gen = generative_convolution_transpose(xs, c.w, fk::Tensor(), region, i32(cf.s));
    EXPECT_EQ(gen.tensor_stride(), std::vector<int32_t>(3, 1));
    Offsets offs = box_offsets(cf.k, cf.dil);
    Rows out = from_tensor(gen.C());
    EXPECT_EQ(out.size(), expanded_rows(at_s, offs).size());
    EXPECT_EQ(row_set(out), expanded_rows(at_s, offs));
    fk::test::expect_close(
        gen.F(), reference_conv(at_s, fg.to_vector<double>(), 2, out, c.wv, 3, offs, -1), 1e-12);
  }
}

TEST(MinkowskiConvVariants, PerAxisCross) {
  // Cross sizes {3,5,1} with dilations {2,1,3}: centre, then per axis
  // +1..+r, -r..-1 (axis 2 has none), each scaled by dilation * tensor stride.
  Offsets offs{{0, 0, 0}, {2, 0, 0}, {-2, 0, 0}, {0, 1, 0}, {0, 2, 0}, {0, -2, 0}, {0, -1, 0}};
  KernelRegion region = KernelRegion::cross({3, 5, 1}, {2, 1, 3});
  ASSERT_EQ(region.volume(3), 7);
  Case c = make_case(3, 120, 4, 1, 2, 3, 7, 490);
  SparseTensor x(c.f, to_tensor(c.rows));
  fk::test::expect_close(convolution(x, c.w, fk::Tensor(), region).F(),
                         reference_conv(c.rows, c.fv, 2, c.rows, c.wv, 3, offs, 1), 1e-12);
  SparseTensor down = convolution(x, c.w, fk::Tensor(), region, {1, 2, 1});
  Rows coarse = from_tensor(down.C());
  EXPECT_EQ(row_set(coarse), strided_rows(c.rows, {1, 2, 1}));
  fk::test::expect_close(down.F(), reference_conv(c.rows, c.fv, 2, coarse, c.wv, 3, offs, 1),
                         1e-12);
}

// ---- gradients (f64 finite differences) --------------------------------------

// A small 2-D scene (14 of 25 cells) for the gradchecks.
struct GradScene {
  Rows rows = random_rows(2, 14, 2, 1, 1, 5);
  fk::Tensor coords = to_tensor(rows);
  fk::Tensor f = fk::test::random_tensor({14, 2}, fk::DType::F64, -1, 1, 1).set_requires_grad(true);
  std::shared_ptr<CoordinateManager> mgr = std::make_shared<CoordinateManager>(2);
  SparseTensor base{f.detach(), coords, {1}, QuantizationMode::RandomSubsample, mgr};
  SparseTensor on(const fk::Tensor& feat) const { return SparseTensor(feat, base.key(), mgr); }
  static fk::Tensor w(fk::Dims s, unsigned seed) {
    return random_weight(s, seed).set_requires_grad(true);
  }
};

TEST(MinkowskiConvVariantsGrad, DilatedAndPerAxis) {
  GradScene s;
  EXPECT_GRADCHECK(
      [&](const std::vector<fk::Tensor>& in) {
        return convolution(s.on(in[0]), in[1], in[2], KernelRegion::cube({3}, {2})).F();
      },
      (std::vector<fk::Tensor>{s.f, s.w({9, 2, 3}, 2), s.w({3}, 3)}));
  EXPECT_GRADCHECK(
      [&](const std::vector<fk::Tensor>& in) {
        return convolution(s.on(in[0]), in[1], fk::Tensor(), KernelRegion::cube({3}, {2}), {2}).F();
      },
      (std::vector<fk::Tensor>{s.f, s.w({9, 2, 3}, 4)}));
  // per-axis kernel {3,2}, dilation {1,2}, stride {2,1}
  EXPECT_GRADCHECK(
      [&](const std::vector<fk::Tensor>& in) {
        return convolution(s.on(in[0]), in[1], fk::Tensor(), KernelRegion::cube({3, 2}, {1, 2}),
                           {2, 1})
            .F();
      },
      (std::vector<fk::Tensor>{s.f, s.w({6, 2, 3}, 5)}));
  // dilated transposed, back onto the fine map
  EXPECT_GRADCHECK(
      [&](const std::vector<fk::Tensor>& in) {
        KernelRegion r = KernelRegion::cube({3}, {2});
        SparseTensor dn = convolution(s.on(in[0]), in[1], fk::Tensor(), r, {2});
        return convolution_transpose(dn, in[2], fk::Tensor(), r, {2}).F();
      },
      (std::vector<fk::Tensor>{s.f, s.w({9, 2, 2}, 6), s.w({9, 2, 3}, 7)}));
}

TEST(MinkowskiConvVariantsGrad, OntoGivenCoordinates) {
  GradScene s;
  MapKey target = s.mgr->insert(to_tensor(random_rows(2, 12, 3, 1, 1, 17)), {1}, "target").key;
  EXPECT_GRADCHECK(
      [&](const std::vector<fk::Tensor>& in) {
        return convolution(s.on(in[0]), in[1], in[2], KernelRegion::cube({3}), {1},
                           MapRef{s.mgr, target})
            .F();
      },
      (std::vector<fk::Tensor>{s.f, s.w({9, 2, 3}, 8), s.w({3}, 9)}));
  // transposed from the stride-2 map onto the given fine coordinates
  EXPECT_GRADCHECK(
      [&](const std::vector<fk::Tensor>& in) {
        SparseTensor dn =
            convolution(s.on(in[0]), in[1], fk::Tensor(), KernelRegion::cube({2}), {2});
        return convolution_transpose(dn, in[2], fk::Tensor(), KernelRegion::cube({3}), {2},
                                     MapRef{dn.manager(), target})
            .F();
      },
      (std::vector<fk::Tensor>{s.f, s.w({4, 2, 2}, 10), s.w({9, 2, 3}, 11)}));
}

TEST(MinkowskiConvVariantsGrad, GenerativeFromStrideTwo) {
  // Odd kernel from tensor stride 2: children shared between parents.
  Rows rows = random_rows(2, 6, 2, 2, 1, 21);
  fk::Tensor f = fk::test::random_tensor({6, 2}, fk::DType::F64, -1, 1, 22).set_requires_grad(true);
  EXPECT_GRADCHECK(
      [&](const std::vector<fk::Tensor>& in) {
        SparseTensor x(in[0], to_tensor(rows), {2}, QuantizationMode::RandomSubsample);
        return generative_convolution_transpose(x, in[1], in[2], KernelRegion::cube({3}), {2}).F();
      },
      (std::vector<fk::Tensor>{f, GradScene::w({9, 2, 3}, 23), GradScene::w({3}, 24)}));
}

TEST(MinkowskiConvVariantsGrad, ChannelwiseStridedDilatedOneByOne) {
  GradScene s;
  EXPECT_GRADCHECK(
      [&](const std::vector<fk::Tensor>& in) {
        return channelwise_convolution(s.on(in[0]), in[1], in[2], KernelRegion::cube({3}), {2}).F();
      },
      (std::vector<fk::Tensor>{s.f, s.w({9, 2}, 31), s.w({2}, 32)}));
  EXPECT_GRADCHECK(
      [&](const std::vector<fk::Tensor>& in) {
        return channelwise_convolution(s.on(in[0]), in[1], fk::Tensor(),
                                       KernelRegion::cube({3}, {2}))
            .F();
      },
      (std::vector<fk::Tensor>{s.f, s.w({9, 2}, 33)}));
  // 1x1 channelwise: the identity map
  EXPECT_GRADCHECK(
      [&](const std::vector<fk::Tensor>& in) {
        return channelwise_convolution(s.on(in[0]), in[1], fk::Tensor(), KernelRegion::cube({1}))
            .F();
      },
      (std::vector<fk::Tensor>{s.f, s.w({1, 2}, 34)}));
  // strided 1x1 (not an identity map)
  EXPECT_GRADCHECK(
      [&](const std::vector<fk::Tensor>& in) {
        return convolution(s.on(in[0]), in[1], fk::Tensor(), KernelRegion::cube({1}), {2}).F();
      },
      (std::vector<fk::Tensor>{s.f, s.w({1, 2, 3}, 35)}));
}

// ---- copy paths and thread counts ----------------------------------------------

struct KnobReset {
  ~KnobReset() {
    fk::mutable_knob("ME_FUSED_COPY").set_override(std::nullopt);
    fk::mutable_knob("ME_FUSED_COPY_MAX_MB").set_override(std::nullopt);
  }
};

struct ThreadCount {
  int before = fk::get_num_threads();
  explicit ThreadCount(int n) { fk::set_num_threads(n); }
  ~ThreadCount() { fk::set_num_threads(before); }
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
    EXPECT_FALSE(per_offset.forward.fused);
    EXPECT_FALSE(per_offset.backward.fused);
    fk::mutable_knob("ME_FUSED_COPY").set_override(std::nullopt);
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
