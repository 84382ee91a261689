// Convolution variants beyond conv_test.cpp's basic cases: 4-D dilated,
// transposed and generative transposed, and per-axis kernel sizes, strides
// and dilations, against the plain-loop reference; f64 gradchecks of the
// variants the basic gradcheck leaves out. Their copy paths, thread counts and
// empty inputs are in conv_variant_paths_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "fk/fk.h"
#include "fk/test_util.h"
#include "minkowski/minkowski.h"
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

}  // namespace
}  // namespace minkowski
