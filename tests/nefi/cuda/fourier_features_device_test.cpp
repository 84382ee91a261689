// FourierFeatures::retarget on a device (what keeps a captured CUDA graph of
// the field's forward valid while bands open; step_graph_test.cpp replays
// one): after it, a forward gives bitwise what a fresh encoding's forward at
// that progress gives; across the last band opening it
// refuses (the forward's work changes), and between two fully open
// progresses it accepts with nothing to write. Skips without a device.
#include <gtest/gtest.h>

#include <vector>

#include "fk/cuda/runtime.h"
#include "fk/factory.h"
#include "nefi/cuda/device_test_util.h"
#include "nefi/field/fourier_features.h"

namespace {

std::vector<float> on_fresh_encoding(const fk::Tensor& x, double progress) {
  nefi::FourierFeatures enc(2, 4);
  enc.to(fk::cuda_device(0));
  return enc.forward(x, progress).to_vector<float>();
}

TEST(NefiFourierFeaturesDevice, RetargetRewritesTheGateInPlace) {
  NEFI_SKIP_WITHOUT_GPU();
  const fk::Tensor x =
      fk::from_vector(std::vector<float>{-0.5f, 0.25f, 0.1f, 0.9f, 0.3f, -0.7f}, fk::Dims{3, 2});
  nefi::FourierFeatures enc(2, 4);
  enc.to(fk::cuda_device(0));
  const fk::Tensor first = enc.forward(x, 0.1);
  for (double p : {0.35, 0.6, 0.9}) {
    ASSERT_TRUE(enc.retarget(p)) << p;
    EXPECT_EQ(enc.forward(x, p).to_vector<float>(), on_fresh_encoding(x, p)) << p;
  }
  EXPECT_NE(first.to_vector<float>(), on_fresh_encoding(x, 0.9));
  // The last band opens: the forward becomes the cached features alone.
  EXPECT_FALSE(enc.retarget(1.0));
  EXPECT_EQ(enc.forward(x, 1.0).to_vector<float>(), on_fresh_encoding(x, 1.0));
  EXPECT_TRUE(enc.retarget(1.0));
  // On the host there is nothing to retarget.
  nefi::FourierFeatures host(2, 4);
  host.forward(x, 0.1);
  EXPECT_FALSE(host.retarget(0.2));
}

}  // namespace
