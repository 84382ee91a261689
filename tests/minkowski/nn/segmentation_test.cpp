// nn::evaluate's precision: bf16 and fp16 run the forward under autocast
// (the logits differ from f32's by 16-bit rounding, no more) and hand back
// f32 logits; any other dtype is an error.
#include "minkowski/nn/segmentation.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "fk/fk.h"
#include "minkowski/data/batch.h"
#include "minkowski/nn/minkunet.h"

namespace minkowski::nn {
namespace {

MinkUNetOptions small_unet() {
  MinkUNetOptions o = minkunet_options("14", 3, data::kSceneClasses, 3);
  o.planes = {8, 16, 16, 16, 16, 16, 8, 8};
  o.init_dim = 8;
  return o;
}

TEST(NnSegmentation, EvaluateUnderAutocastTracksF32) {
  fk::manual_seed(3);
  MinkUNet net(small_unet());
  const data::Batch b = data::scene_batch({}, {7}, 0.4);
  ConfusionMatrix c32(data::kSceneClasses);
  const std::vector<float> ref =
      evaluate(net, b.input, b.labels, c32).to(fk::DType::F32).to_vector<float>();
  float scale = 0;
  for (float v : ref) scale = std::max(scale, std::abs(v));
  ASSERT_GT(scale, 0.0f);
  for (fk::DType p : {fk::DType::BF16, fk::DType::F16}) {
    ConfusionMatrix c(data::kSceneClasses);
    const fk::Tensor logits = evaluate(net, b.input, b.labels, c, -100, p);
    EXPECT_EQ(logits.dtype(), fk::DType::F32) << fk::name(p);
    const std::vector<float> got = logits.to_vector<float>();
    ASSERT_EQ(got.size(), ref.size());
    float worst = 0;
    for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::abs(got[i] - ref[i]));
    EXPECT_GT(worst, 0.0f) << fk::name(p) << ": no 16-bit rounding, autocast did not run";
    EXPECT_LT(worst, (p == fk::DType::BF16 ? 0.1f : 0.02f) * scale) << fk::name(p);
  }
  ConfusionMatrix c(data::kSceneClasses);
  EXPECT_THROW(evaluate(net, b.input, b.labels, c, -100, fk::DType::F64), fk::Error);
}

}  // namespace
}  // namespace minkowski::nn
