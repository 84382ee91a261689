// TensorField: voxelizing continuous points and slicing sparse features back.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "fk/fk.h"
#include "fk/test_util.h"
#include "minkowski/minkowski.h"

namespace minkowski {
namespace {

// 2-D points in two batches, voxel size 0.5:
//   row 0: b0 ( 0.1, 0.2 )  -> ( 0, 0)      map row 0
//   row 1: b0 (-0.1, 0.5 )  -> (-1, 1)      map row 1 (0.5 is on a boundary)
//   row 2: b1 ( 0.1, 0.2 )  -> ( 0, 0)      map row 2 (other batch)
//   row 3: b0 ( 0.4, 0.0 )  -> ( 0, 0)      duplicate of row 0
//   row 4: b0 (-0.5, 0.49)  -> (-1, 0)      map row 3 (-0.5 is on a boundary)
//   row 5: b1 ( 0.3, 0.4 )  -> ( 0, 0)      duplicate of row 2
struct Points {
  fk::Tensor c = fk::from_vector(std::vector<double>{0, 0.1, 0.2, 0, -0.1, 0.5, 1, 0.1, 0.2, 0, 0.4,
                                                     0.0, 0, -0.5, 0.49, 1, 0.3, 0.4},
                                 fk::Dims{6, 3});
  fk::Tensor f = fk::from_vector(std::vector<double>{1, -1, 2, -2, 3, -3, 5, -5, 4, -4, 7, -7},
                                 fk::Dims{6, 2});
};

TEST(TensorField, QuantizesByHand) {
  Points p;
  TensorField field(p.f, p.c);
  EXPECT_EQ(field.dimension(), 2);
  EXPECT_TRUE(field.inverse_mapping().empty());
  SparseTensor s = field.sparse(0.5);
  ASSERT_EQ(s.size(), 4);
  EXPECT_EQ(s.C().to_vector<int32_t>(),
            (std::vector<int32_t>{0, 0, 0, 0, -1, 1, 1, 0, 0, 0, -1, 0}));
  EXPECT_EQ(field.inverse_mapping(), (std::vector<int64_t>{0, 1, 2, 0, 3, 2}));
  EXPECT_EQ(s.tensor_stride(), (std::vector<int32_t>{1, 1}));
  fk::test::expect_close(s.F(), {3, -3, 2, -2, 5, -5, 4, -4}, 1e-12);  // default: average

  // Per-axis sizes: y voxels of 1.0 merge rows 1 and 4 into (-1, 0).
  SparseTensor t = field.sparse(std::vector<double>{0.5, 1.0});
  EXPECT_EQ(t.C().to_vector<int32_t>(), (std::vector<int32_t>{0, 0, 0, 0, -1, 0, 1, 0, 0}));
  EXPECT_EQ(field.inverse_mapping(), (std::vector<int64_t>{0, 1, 2, 0, 1, 2}));

  // f32 coordinates, f32 features, non-contiguous coordinates (a transposed copy).
  fk::Tensor c32 = p.c.to(fk::DType::F32).transpose(0, 1).contiguous().transpose(0, 1);
  ASSERT_FALSE(c32.is_contiguous());
  TensorField f32(p.f.to(fk::DType::F32), c32);
  SparseTensor s32 = f32.sparse(0.5);
  EXPECT_EQ(s32.C().to_vector<int32_t>(), s.C().to_vector<int32_t>());
  fk::test::expect_close(s32.F(), {3, -3, 2, -2, 5, -5, 4, -4}, 1e-6);
}

TEST(TensorField, Modes) {
  Points p;
  TensorField field(p.f, p.c);
  fk::test::expect_close(field.sparse(0.5, QuantizationMode::UnweightedSum).F(),
                         {6, -6, 2, -2, 10, -10, 4, -4}, 1e-12);
  fk::test::expect_close(field.sparse(0.5, QuantizationMode::MaxPool).F(),
                         {5, -1, 2, -2, 7, -3, 4, -4}, 1e-12);
  fk::test::expect_close(field.sparse(0.5, QuantizationMode::FirstOccurrence).F(),
                         {1, -1, 2, -2, 3, -3, 4, -4}, 1e-12);
  // RandomSubsample: voxel 0 keeps point 0 or 3, voxel 2 point 2 or 5; the
  // seed reaches the draw (the first 32 seeds give all four combinations).
  std::set<std::vector<double>> outcomes;
  for (uint64_t seed = 0; seed < 32; ++seed) {
    SparseTensor s = field.sparse(0.5, QuantizationMode::RandomSubsample, nullptr, {1}, seed);
    auto v = s.F().to_vector<double>();
    ASSERT_EQ(v.size(), 8u);
    EXPECT_TRUE(v[0] == 1 || v[0] == 5) << v[0];
    EXPECT_TRUE(v[4] == 3 || v[4] == 7) << v[4];
    EXPECT_EQ(v[1], -v[0]);
    EXPECT_EQ(v[5], -v[4]);
    EXPECT_EQ((std::vector<double>{v[2], v[3], v[6], v[7]}), (std::vector<double>{2, -2, 4, -4}));
    EXPECT_EQ(v, field.sparse(0.5, QuantizationMode::RandomSubsample, nullptr, {1}, seed)
                     .F()
                     .to_vector<double>());
    outcomes.insert(v);
  }
  EXPECT_EQ(outcomes.size(), 4u);
}

TEST(TensorField, SliceGathersVoxelFeatures) {
  Points p;
  TensorField field(p.f, p.c);
  auto mgr = std::make_shared<CoordinateManager>(2);
  SparseTensor s = field.sparse(0.5, QuantizationMode::UnweightedAverage, mgr);
  EXPECT_EQ(s.manager(), mgr);
  EXPECT_EQ(field.quantized_manager(), mgr);
  fk::Tensor back = field.slice(s);
  ASSERT_EQ(back.shape(), (fk::Dims{6, 2}));
  fk::test::expect_close(back, {3, -3, 2, -2, 5, -5, 3, -3, 4, -4, 5, -5}, 1e-12);

  // New features on the same map (another channel count).
  fk::Tensor g = fk::from_vector(std::vector<double>{10, 20, 30, 40}, fk::Dims{4, 1});
  fk::test::expect_close(field.slice(SparseTensor(g, s.key(), mgr)), {10, 20, 30, 10, 40, 30}, 0);
  // Identical coordinates in another manager are accepted.
  SparseTensor copy(g, s.C());
  ASSERT_NE(copy.manager(), mgr);
  fk::test::expect_close(field.slice(copy), {10, 20, 30, 10, 40, 30}, 0);
}

TEST(TensorField, Gradients) {
  Points p;
  fk::Tensor c = p.c;
  auto through = [c](QuantizationMode mode) {
    return [c, mode](const std::vector<fk::Tensor>& in) {
      TensorField field(in[0], c);
      SparseTensor s = field.sparse(0.5, mode);
      // A conv-free op on the voxel features, on the same map.
      SparseTensor sq(fk::mul(s.F(), s.F()), s.key(), s.manager());
      return field.slice(sq);
    };
  };
  for (auto mode : {QuantizationMode::UnweightedAverage, QuantizationMode::UnweightedSum,
                    QuantizationMode::MaxPool}) {
    fk::Tensor f = p.f.clone().set_requires_grad(true);
    EXPECT_GRADCHECK(through(mode), std::vector<fk::Tensor>{f});
  }
  // Non-contiguous features: gradcheck hands the function contiguous inputs,
  // so the function makes the transposed-strides view itself.
  auto transposed = [](const fk::Tensor& f) {
    return f.transpose(0, 1).contiguous().transpose(0, 1);
  };
  ASSERT_FALSE(transposed(p.f).is_contiguous());
  auto on_transposed = [through, transposed](const std::vector<fk::Tensor>& in) {
    return through(QuantizationMode::UnweightedAverage)({transposed(in[0])});
  };
  fk::Tensor f = p.f.clone().set_requires_grad(true);
  EXPECT_GRADCHECK(on_transposed, std::vector<fk::Tensor>{f});
}

TEST(TensorField, CatSliceAppendsTheFieldsFeatures) {
  Points p;
  TensorField field(p.f, p.c);
  SparseTensor s = field.sparse(0.5);
  fk::Tensor g = fk::from_vector(std::vector<double>{10, 20, 30, 40}, fk::Dims{4, 1});
  TensorField out = s.with_features(g).cat_slice(field);
  ASSERT_EQ(out.F().shape(), (fk::Dims{6, 3}));
  EXPECT_TRUE(out.C().is_same(field.C()));
  EXPECT_EQ(out.inverse_mapping(), field.inverse_mapping());
  fk::test::expect_close(out.F(),
                         {10, 1, -1, 20, 2, -2, 30, 3, -3, 10, 5, -5, 40, 4, -4, 30, 7, -7}, 0);
  // slice() is the first channels of cat_slice(); both are differentiable.
  fk::test::expect_close(s.slice(field).F(), {3, -3, 2, -2, 5, -5, 3, -3, 4, -4, 5, -5}, 1e-12);
  fk::Tensor c = p.c;
  EXPECT_GRADCHECK(
      [c](const std::vector<fk::Tensor>& in) {
        TensorField f(in[0], c);
        SparseTensor v = f.sparse(0.5);
        return v.with_features(fk::mul(v.F(), in[1])).cat_slice(f).F();
      },
      (std::vector<fk::Tensor>{p.f,
                               fk::from_vector(std::vector<double>{0.5, -2}, fk::Dims{1, 2})}));
  // The features of both sides must share a dtype; with_features keeps the row count.
  EXPECT_THROW(s.with_features(s.F().to(fk::DType::F32)).cat_slice(field), fk::Error);
  EXPECT_THROW(s.with_features(fk::zeros({3, 2}, {fk::DType::F64})), fk::Error);
}

TEST(TensorField, SparseByModeUsesVoxelSizeOne) {
  Points p;
  TensorField field(p.f, fk::mul(p.c, 4.0));  // batch 4 and 0: still integers
  SparseTensor a = field.sparse(QuantizationMode::UnweightedSum);
  auto inverse = field.inverse_mapping();
  SparseTensor b = field.sparse(1.0, QuantizationMode::UnweightedSum);
  EXPECT_EQ(a.C().to_vector<int32_t>(), b.C().to_vector<int32_t>());
  EXPECT_EQ(inverse, field.inverse_mapping());
  fk::test::expect_close(a.F(), b.F().to_vector<double>(), 0);
}

TEST(TensorField, Errors) {
  Points p;
  // coordinate width: no spatial axis
  EXPECT_THROW(TensorField(p.f, fk::zeros({6, 1}, {fk::DType::F64})), fk::Error);
  // integer coordinates
  try {
    TensorField(p.f, fk::zeros({6, 3}, {fk::DType::I32}));
    FAIL();
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("f32 or f64 coordinates"), std::string::npos);
  }
  // row count mismatch
  try {
    TensorField(fk::ones({5, 2}, {fk::DType::F64}), p.c);
    FAIL();
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("as many feature rows"), std::string::npos);
  }
  // integer features
  EXPECT_THROW(TensorField(fk::ones({6, 2}, {fk::DType::I32}), p.c), fk::Error);

  TensorField field(p.f, p.c);
  EXPECT_THROW(field.sparse(0.0), fk::Error);
  EXPECT_THROW(field.sparse(-1.0), fk::Error);
  EXPECT_THROW(field.sparse(std::vector<double>{0.5, 0.5, 0.5}), fk::Error);
  // slice before sparse()
  EXPECT_THROW(field.slice(SparseTensor(p.f, fk::zeros({6, 3}, {fk::DType::I32}))), fk::Error);
  // a batch index that is not finite (one a little off an integer is rounded,
  // as the reference: the same map as the exact one)
  auto cv = p.c.to_vector<double>();
  cv[3] = NAN;
  TensorField bad(p.f, fk::from_vector(cv, fk::Dims{6, 3}));
  try {
    bad.sparse(0.5);
    FAIL();
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("finite batch index"), std::string::npos);
  }
  cv = p.c.to_vector<double>();
  for (size_t r = 0; r < cv.size(); r += 3) cv[r] += r % 2 ? 1e-7 : -0.4;
  TensorField off(p.f, fk::from_vector(cv, fk::Dims{6, 3}));
  EXPECT_EQ(off.sparse(0.5).C().to_vector<int32_t>(),
            TensorField(p.f, p.c).sparse(0.5).C().to_vector<int32_t>());
  // slice of a tensor on a different map (the stride-2 map of the same manager)
  SparseTensor s = field.sparse(0.5);
  SparseTensor other(fk::ones({1, 2}, {fk::DType::F64}),
                     fk::from_vector(std::vector<int32_t>{0, 2, 2}, fk::Dims{1, 3}), {2},
                     QuantizationMode::RandomSubsample, s.manager());
  try {
    field.slice(other);
    FAIL();
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find(") of field point "), std::string::npos);
  }
  // a stride that is not a multiple of the field's
  field.sparse(0.5, QuantizationMode::UnweightedAverage, nullptr, {2});
  SparseTensor s3(fk::ones({1, 2}, {fk::DType::F64}),
                  fk::from_vector(std::vector<int32_t>{0, 3, 3}, fk::Dims{1, 3}), {3});
  try {
    field.slice(s3);
    FAIL();
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("multiple of the field"), std::string::npos);
  }
  EXPECT_THROW(field.sparse(0.5, QuantizationMode::UnweightedAverage, nullptr, {0}), fk::Error);
  EXPECT_THROW(field.sparse(0.5, QuantizationMode::UnweightedAverage, nullptr, {1, 1, 1}),
               fk::Error);
}

TEST(TensorField, SparseWithTensorStride) {
  // Voxels (0,0) (-1,1) (0,0)b1 (0,0) (-1,0) (0,0)b1 floored to stride 2:
  // b0 (0,0) <- points 0, 3; b0 (-2,0) <- points 1, 4; b1 (0,0) <- points 2, 5.
  Points p;
  TensorField field(p.f, p.c);
  SparseTensor s = field.sparse(0.5, QuantizationMode::UnweightedAverage, nullptr, {2});
  EXPECT_EQ(s.tensor_stride(), (std::vector<int32_t>{2, 2}));
  EXPECT_EQ(s.C().to_vector<int32_t>(), (std::vector<int32_t>{0, 0, 0, 0, -2, 0, 1, 0, 0}));
  fk::test::expect_close(s.F(), {3, -3, 3, -3, 5, -5}, 1e-12);
  EXPECT_EQ(field.inverse_mapping(), (std::vector<int64_t>{0, 1, 2, 0, 1, 2}));
  fk::test::expect_close(field.slice(s), {3, -3, 3, -3, 5, -5, 3, -3, 3, -3, 5, -5}, 1e-12);
}

TEST(TensorField, VoxelsFlooredToTheStrideMustStayWithinInt32) {
  // -2^31 + 2 is within int32; floored to
  // stride 5 it is -2^31 - 2, which an int32 cannot hold (the conversion was
  // undefined before the stride-floored value was the one checked).
  TensorField field(fk::ones({1, 1}, {fk::DType::F64}),
                    fk::from_vector(std::vector<double>{0, -2147483646.0, 0}, fk::Dims{1, 3}));
  try {
    field.sparse(1.0, QuantizationMode::UnweightedAverage, nullptr, {5});
    FAIL();
  } catch (const fk::Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("TensorField::sparse: expected finite voxel coordinates within int32, after "
                     "flooring to the tensor stride (row 0), got -2147483650"),
              std::string::npos)
        << m;
  }
}

// The batch index may be any int32 (as a SparseTensor's): 2^31 - 1 was
// refused by a strict bound, though the Python field and the map took it.
TEST(TensorField, TheLargestInt32BatchIndexIsABatch) {
  TensorField field(fk::ones({2, 1}, {fk::DType::F64}),
                    fk::from_vector(std::vector<double>{2147483647.0, 3, 0, 0, 1, 2}, {2, 3}));
  const SparseTensor s = field.sparse(1.0);
  EXPECT_EQ(s.C().to_vector<int32_t>(), (std::vector<int32_t>{2147483647, 3, 0, 0, 1, 2}));
  TensorField past(fk::ones({1, 1}, {fk::DType::F64}),
                   fk::from_vector(std::vector<double>{2147483648.0, 0, 0}, {1, 3}));
  EXPECT_THROW(past.sparse(1.0), fk::Error);
}

TEST(TensorField, SliceFromStridedAndReorderedMaps) {
  Points p;
  TensorField field(p.f, p.c);
  SparseTensor s = field.sparse(0.5);
  // The stride-2 map of the field's map (as a strided convolution makes it;
  // rows in coordinate order).
  MapKey k2 = s.manager()->stride(s.key(), {2});
  ASSERT_EQ(s.manager()->coordinates(k2).to_vector<int32_t>(),
            (std::vector<int32_t>{0, -2, 0, 0, 0, 0, 1, 0, 0}));
  fk::Tensor g = fk::from_vector(std::vector<double>{10, 20, 30}, fk::Dims{3, 1});
  SparseTensor coarse(g, k2, s.manager());
  fk::test::expect_close(field.slice(coarse), {20, 10, 30, 20, 10, 30}, 0);
  EXPECT_EQ(field.inverse_mapping(coarse), (std::vector<int64_t>{1, 0, 2, 1, 0, 2}));
  // The field's voxels in another manager, rows in another order.
  fk::Tensor c = s.C();
  auto cv = c.to_vector<int32_t>();
  std::vector<int32_t> rev;
  for (int r = 3; r >= 0; --r) rev.insert(rev.end(), cv.begin() + 3 * r, cv.begin() + 3 * r + 3);
  SparseTensor reordered(fk::from_vector(std::vector<double>{4, 3, 2, 1}, fk::Dims{4, 1}),
                         fk::from_vector(rev, fk::Dims{4, 3}));
  // field rows 0..3 are rows 3..0 there
  fk::test::expect_close(field.slice(reordered), {1, 2, 3, 1, 4, 3}, 0);
  // SparseTensor::slice(field): a field on the same points.
  TensorField back = coarse.slice(field);
  EXPECT_EQ(back.size(), 6);
  EXPECT_EQ(back.C().to_vector<double>(), p.c.to_vector<double>());
  fk::test::expect_close(back.F(), {20, 10, 30, 20, 10, 30}, 0);
  EXPECT_EQ(back.inverse_mapping(), field.inverse_mapping());
  // gradients flow through the composed mapping
  fk::Tensor gg = g.clone().set_requires_grad(true);
  fk::sum(field.slice(SparseTensor(gg, k2, s.manager()))).backward();
  fk::test::expect_close(gg.grad(), {2, 2, 2}, 0);
}

}  // namespace
}  // namespace minkowski
