// Convolutions against an independent dense-grid reference, gradchecks,
// errors and empty tensors. Copy paths, thread counts, half precision and the
// f32 kernels' own cases are in conv_determinism_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "fk/fk.h"
#include "fk/test_util.h"
#include "minkowski/minkowski.h"
#include "minkowski/ops/conv_reference.h"

namespace minkowski {
namespace {

using namespace conv_ref;

void check_submanifold(int d, int n, int range, int k, int dil) {
  Case c = make_case(d, n, range, 1, 3, 4, static_cast<int>(std::pow(k, d)), 10 + d);
  SparseTensor x(c.f, to_tensor(c.rows));
  SparseTensor y = convolution(x, c.w, fk::Tensor(), KernelRegion::cube({k}, {dil}));
  EXPECT_EQ(y.key(), x.key());
  auto want = reference_conv(c.rows, c.fv, 3, c.rows, c.wv, 4, cube_offsets(d, k, dil, 1), 1);
  fk::test::expect_close(y.F(), want, 1e-12);
}

TEST(MinkowskiConv, Submanifold2D3D4D) {
  check_submanifold(2, 60, 5, 3, 1);
  check_submanifold(3, 120, 4, 3, 1);
  check_submanifold(4, 150, 2, 3, 1);
  check_submanifold(3, 80, 4, 2, 1);  // even kernel: offsets {0,1}
}

TEST(MinkowskiConv, Dilated) {
  check_submanifold(2, 80, 6, 3, 2);
  check_submanifold(3, 100, 5, 3, 2);
}

void check_strided(int d, int k, int s, int ts) {
  int vol = static_cast<int>(std::pow(k, d));
  Case c = make_case(d, 90, 6, ts, 2, 3, vol, 40 + d * k + s);
  SparseTensor x(c.f, to_tensor(c.rows), {ts});
  SparseTensor y = convolution(x, c.w, fk::Tensor(), KernelRegion::cube({k}), {s});
  EXPECT_EQ(y.tensor_stride(), std::vector<int32_t>(d, ts * s));
  // Output coordinates: floor(c / (ts*s)) * (ts*s), computed here independently.
  std::set<std::vector<int32_t>> want_set;
  int t = ts * s;
  for (auto r : c.rows) {
    for (int a = 1; a <= d; ++a) r[a] = static_cast<int32_t>(std::floor(r[a] / double(t))) * t;
    want_set.insert(r);
  }
  Rows out = from_tensor(y.C());
  EXPECT_EQ(std::set<std::vector<int32_t>>(out.begin(), out.end()), want_set);
  EXPECT_EQ(out.size(), want_set.size());
  auto want = reference_conv(c.rows, c.fv, 2, out, c.wv, 3, cube_offsets(d, k, 1, ts), 1);
  fk::test::expect_close(y.F(), want, 1e-12);
}

TEST(MinkowskiConv, Strided) {
  check_strided(2, 3, 2, 1);
  check_strided(2, 2, 2, 1);
  check_strided(3, 3, 2, 2);
  check_strided(3, 2, 2, 1);
  check_strided(4, 2, 2, 1);
}

TEST(MinkowskiConv, TransposedReusesEncoderMap) {
  for (int d : {2, 3}) {
    Case c = make_case(d, 80, 5, 1, 2, 3, static_cast<int>(std::pow(2, d)), 70 + d);
    SparseTensor x(c.f, to_tensor(c.rows));
    fk::Tensor w_down = fk::test::random_tensor(c.w.shape(), fk::DType::F64, -1, 1, 3);
    SparseTensor down = convolution(x, w_down, fk::Tensor(), KernelRegion::cube({2}), {2});
    int64_t maps_before = x.manager()->num_kernel_maps();
    // transpose back: weight (K, 3, 2) from coarse (3 channels) to fine (2)
    fk::Tensor wt = fk::test::random_tensor({c.w.size(0), 3, 2}, fk::DType::F64, -1, 1, 5);
    SparseTensor up = convolution_transpose(down, wt, fk::Tensor(), KernelRegion::cube({2}), {2});
    EXPECT_EQ(up.key(), x.key());
    EXPECT_EQ(x.manager()->num_kernel_maps(), maps_before + 1);  // the swap, no rebuild of F
    Rows coarse = from_tensor(down.C());
    auto want = reference_conv(coarse, down.F().to_vector<double>(), 3, c.rows,
                               wt.to_vector<double>(), 2, cube_offsets(d, 2, 1, 1), -1);
    fk::test::expect_close(up.F(), want, 1e-12);
  }
}

TEST(MinkowskiConv, TransposedOddKernel) {
  Case c = make_case(2, 70, 6, 1, 2, 3, 9, 91);
  SparseTensor x(c.f, to_tensor(c.rows));
  fk::Tensor w1 = fk::test::random_tensor({9, 2, 3}, fk::DType::F64, -1, 1, 4);
  SparseTensor down = convolution(x, w1, fk::Tensor(), KernelRegion::cube({3}), {2});
  fk::Tensor wt = fk::test::random_tensor({9, 3, 2}, fk::DType::F64, -1, 1, 6);
  SparseTensor up = convolution_transpose(down, wt, fk::Tensor(), KernelRegion::cube({3}), {2});
  EXPECT_EQ(up.key(), x.key());
  auto want = reference_conv(from_tensor(down.C()), down.F().to_vector<double>(), 3, c.rows,
                             wt.to_vector<double>(), 2, cube_offsets(2, 3, 1, 1), -1);
  fk::test::expect_close(up.F(), want, 1e-12);
}

TEST(MinkowskiConv, GenerativeTranspose) {
  for (int d : {2, 3}) {
    int vol = static_cast<int>(std::pow(2, d));
    Case c = make_case(d, 30, 4, 2, 3, 2, vol, 80 + d);
    SparseTensor x(c.f, to_tensor(c.rows), {2});
    SparseTensor y =
        generative_convolution_transpose(x, c.w, fk::Tensor(), KernelRegion::cube({2}), {2});
    EXPECT_EQ(y.tensor_stride(), std::vector<int32_t>(d, 1));
    EXPECT_EQ(y.size(), 30 * vol);  // 2^D distinct children per coarse point
    Rows out = from_tensor(y.C());
    auto want = reference_conv(c.rows, c.fv, 3, out, c.wv, 2, cube_offsets(d, 2, 1, 1), -1);
    fk::test::expect_close(y.F(), want, 1e-12);
  }
}

TEST(MinkowskiConv, OntoGivenCoordinates) {
  Case c = make_case(2, 50, 5, 1, 2, 3, 9, 33);
  SparseTensor x(c.f, to_tensor(c.rows));
  Rows target = random_rows(2, 40, 6, 1, 2, 99);
  MapKey ok = x.manager()->insert(to_tensor(target), {1}, "target").key;
  SparseTensor y =
      convolution(x, c.w, fk::Tensor(), KernelRegion::cube({3}), {1}, MapRef{x.manager(), ok});
  EXPECT_EQ(y.key(), ok);
  auto want = reference_conv(c.rows, c.fv, 2, target, c.wv, 3, cube_offsets(2, 3, 1, 1), 1);
  fk::test::expect_close(y.F(), want, 1e-12);
}

TEST(MinkowskiConv, OneByOneAndBias) {
  Case c = make_case(3, 40, 4, 1, 3, 5, 1, 12);
  SparseTensor x(c.f, to_tensor(c.rows));
  fk::Tensor b = fk::test::random_tensor({5}, fk::DType::F64, -1, 1, 2);
  SparseTensor y = convolution(x, c.w.reshape({3, 5}), b, KernelRegion::cube({1}));
  auto bv = b.to_vector<double>();
  auto want = reference_conv(c.rows, c.fv, 3, c.rows, c.wv, 5, cube_offsets(3, 1, 1, 1), 1);
  for (size_t i = 0; i < want.size(); ++i) want[i] += bv[i % 5];
  fk::test::expect_close(y.F(), want, 1e-12);
  EXPECT_TRUE(x.manager()->kernel_map(x.key(), x.key(), KernelRegion::cube({1}), false)->identity);
}

TEST(MinkowskiConv, ChannelwiseAndCross) {
  Case c = make_case(2, 60, 5, 1, 3, 3, 9, 21);
  SparseTensor x(c.f, to_tensor(c.rows));
  fk::Tensor w = fk::test::random_tensor({9, 3}, fk::DType::F64, -1, 1, 8);
  SparseTensor y = channelwise_convolution(x, w, fk::Tensor(), KernelRegion::cube({3}));
  // channelwise == full conv with a diagonal weight
  std::vector<double> wd(9 * 3 * 3, 0.0), wv = w.to_vector<double>();
  for (int k = 0; k < 9; ++k)
    for (int ch = 0; ch < 3; ++ch) wd[(k * 3 + ch) * 3 + ch] = wv[k * 3 + ch];
  auto want = reference_conv(c.rows, c.fv, 3, c.rows, wd, 3, cube_offsets(2, 3, 1, 1), 1);
  fk::test::expect_close(y.F(), want, 1e-12);
  // hypercross: center, +x, -x, +y, -y
  fk::Tensor wc = fk::test::random_tensor({5, 3, 2}, fk::DType::F64, -1, 1, 9);
  SparseTensor z = convolution(x, wc, fk::Tensor(), KernelRegion::cross({3}));
  std::vector<std::vector<int>> cross{{0, 0}, {1, 0}, {-1, 0}, {0, 1}, {0, -1}};
  fk::test::expect_close(
      z.F(), reference_conv(c.rows, c.fv, 3, c.rows, wc.to_vector<double>(), 2, cross, 1), 1e-12);
}

// ---- gradients ------------------------------------------------------------

TEST(MinkowskiConvGrad, EveryVariant) {
  Rows rows = random_rows(2, 10, 2, 1, 1, 5);
  fk::Tensor coords = to_tensor(rows);
  fk::Tensor f = fk::test::random_tensor({10, 2}, fk::DType::F64, -1, 1, 1).set_requires_grad(true);
  auto mgr = std::make_shared<CoordinateManager>(2);
  SparseTensor base(f.detach(), coords, {1}, QuantizationMode::RandomSubsample, mgr);
  auto w = [](fk::Dims s, unsigned seed) {
    return fk::test::random_tensor(s, fk::DType::F64, -1, 1, seed).set_requires_grad(true);
  };
  auto on = [&](const fk::Tensor& feat) { return SparseTensor(feat, base.key(), mgr); };
  fk::Tensor b = w({3}, 4);
  EXPECT_GRADCHECK(
      [&](const std::vector<fk::Tensor>& in) {
        return convolution(on(in[0]), in[1], in[2], KernelRegion::cube({3})).F();
      },
      (std::vector<fk::Tensor>{f, w({9, 2, 3}, 2), b}));
  EXPECT_GRADCHECK(
      [&](const std::vector<fk::Tensor>& in) {
        return convolution(on(in[0]), in[1], fk::Tensor(), KernelRegion::cube({3}), {2}).F();
      },
      (std::vector<fk::Tensor>{f, w({9, 2, 3}, 3)}));
  EXPECT_GRADCHECK(
      [&](const std::vector<fk::Tensor>& in) {
        SparseTensor dn = convolution(on(in[0]), in[1], fk::Tensor(), KernelRegion::cube({2}), {2});
        return convolution_transpose(dn, in[2], fk::Tensor(), KernelRegion::cube({2}), {2}).F();
      },
      (std::vector<fk::Tensor>{f, w({4, 2, 2}, 5), w({4, 2, 3}, 6)}));
  EXPECT_GRADCHECK(
      [&](const std::vector<fk::Tensor>& in) {
        SparseTensor x(in[0], coords, {1}, QuantizationMode::RandomSubsample);
        return generative_convolution_transpose(x, in[1], fk::Tensor(), KernelRegion::cube({2}),
                                                {1})
            .F();
      },
      (std::vector<fk::Tensor>{f, w({4, 2, 2}, 7)}));
  EXPECT_GRADCHECK(
      [&](const std::vector<fk::Tensor>& in) {
        return channelwise_convolution(on(in[0]), in[1], fk::Tensor(), KernelRegion::cube({3})).F();
      },
      (std::vector<fk::Tensor>{f, w({9, 2}, 8)}));
  EXPECT_GRADCHECK(
      [&](const std::vector<fk::Tensor>& in) {
        return convolution(on(in[0]), in[1], fk::Tensor(), KernelRegion::cube({1})).F();
      },
      (std::vector<fk::Tensor>{f, w({2, 3}, 9)}));
  // non-contiguous (transposed) features
  fk::Tensor ft =
      fk::test::random_tensor({2, 10}, fk::DType::F64, -1, 1, 11).set_requires_grad(true);
  EXPECT_GRADCHECK(
      [&](const std::vector<fk::Tensor>& in) {
        return convolution(on(in[0].t()), in[1], fk::Tensor(), KernelRegion::cross({3})).F();
      },
      (std::vector<fk::Tensor>{ft, w({5, 2, 3}, 12)}));
}

// ---- dtypes, copy paths, determinism ---------------------------------------

TEST(MinkowskiConv, Errors) {
  Case c = make_case(2, 20, 3, 1, 2, 3, 9, 60);
  SparseTensor x(c.f, to_tensor(c.rows));
  try {
    convolution(x, fk::zeros({8, 2, 3}, {fk::DType::F64}), fk::Tensor(), KernelRegion::cube({3}));
    FAIL();
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("K=9"), std::string::npos) << e.what();
  }
  EXPECT_THROW(
      convolution(x, fk::zeros({9, 3, 3}, {fk::DType::F64}), fk::Tensor(), KernelRegion::cube({3})),
      fk::Error);
  EXPECT_THROW(convolution(x, c.w.to(fk::DType::F32), fk::Tensor(), KernelRegion::cube({3})),
               fk::Error);
  EXPECT_THROW(convolution(x, c.w, fk::zeros({4}, {fk::DType::F64}), KernelRegion::cube({3})),
               fk::Error);
  // A target map of another manager is refused even though its key (stride 1,
  // tag "") also names a map of x's manager, and even when that map is the
  // one the convolution would use anyway.
  SparseTensor other(c.f, to_tensor(c.rows));
  ASSERT_NE(other.manager(), x.manager());
  ASSERT_EQ(other.key(), x.key());
  ASSERT_TRUE(x.manager()->has(other.key()));
  try {
    convolution(x, c.w, fk::Tensor(), KernelRegion::cube({3}), {1}, other.map_ref());
    FAIL();
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("of another manager"), std::string::npos) << e.what();
  }
  EXPECT_THROW(convolution(x, c.w, fk::Tensor(), KernelRegion::cube({3}), {1},
                           MapRef{other.manager(), x.key()}),
               fk::Error);
  EXPECT_THROW(
      convolution_transpose(x, c.w, fk::Tensor(), KernelRegion::cube({3}), {1}, other.map_ref()),
      fk::Error);
  EXPECT_THROW(check_same_manager(x, other, "test"), fk::Error);
  // a target without a manager, or a key its manager does not hold
  EXPECT_THROW(
      convolution(x, c.w, fk::Tensor(), KernelRegion::cube({3}), {1}, MapRef{nullptr, x.key()}),
      fk::Error);
  EXPECT_THROW(convolution(x, c.w, fk::Tensor(), KernelRegion::cube({3}), {1},
                           MapRef{x.manager(), MapKey{{1, 1}, "absent"}}),
               fk::Error);
  // x's own map as a target is accepted
  EXPECT_EQ(convolution(x, c.w, fk::Tensor(), KernelRegion::cube({3}), {1}, x.map_ref()).key(),
            x.key());
  // transpose stride must divide the tensor stride
  EXPECT_THROW(convolution_transpose(x, c.w, fk::Tensor(), KernelRegion::cube({3}), {2}),
               fk::Error);
  EXPECT_THROW(convolution(x, c.w, fk::Tensor(), KernelRegion::cube({3}), {1, 2, 3}), fk::Error);
}

TEST(MinkowskiConv, EmptyTensors) {
  SparseTensor x(fk::zeros({0, 2}, {fk::DType::F64}), fk::empty({0, 3}, {fk::DType::I32}));
  fk::Tensor w =
      fk::test::random_tensor({9, 2, 3}, fk::DType::F64, -1, 1, 1).set_requires_grad(true);
  SparseTensor y = convolution(x, w, fk::Tensor(), KernelRegion::cube({3}));
  EXPECT_EQ(y.F().shape(), (fk::Dims{0, 3}));
  SparseTensor z = convolution(x, w, fk::Tensor(), KernelRegion::cube({3}), {2});
  EXPECT_EQ(z.size(), 0);
  fk::sum(y.F()).backward();
  EXPECT_EQ(w.grad().to_vector<double>(), std::vector<double>(54, 0.0));
  SparseTensor g = generative_convolution_transpose(z, fk::zeros({4, 3, 1}, {fk::DType::F64}),
                                                    fk::Tensor(), KernelRegion::cube({2}), {2});
  EXPECT_EQ(g.size(), 0);
}

}  // namespace
}  // namespace minkowski
