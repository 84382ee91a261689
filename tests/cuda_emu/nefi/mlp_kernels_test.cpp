// mlp_kernels.cu's kernels run on the emulated device (emulated_device.h):
// the bias + activation epilogue (in place, and with the angle kept), the
// activation gradient in f32, f16 and bf16 with its per-chunk column sums,
// and the column sums over chunks, each against a host loop of the
// arithmetic mlp_kernels.h documents (each product and sum rounded once,
// sums in row then chunk order), bit for bit, in both thread orders. Layers
// 1 to 300 columns wide (one warp to three runs of 128 threads) over
// row counts that leave the last 64-row chunk partial.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cuda_emu/emulated_device.h"
#include "cuda_emu/emulated_test_util.h"
#include "fk/cuda/kernels.h"
#include "fk/error.h"
#include "nefi/cuda/mlp_kernels.h"

// The emulated launchers this file runs: mlp_kernels.h's, in ::emu (a
// signature that drifts from its definition fails to link).
namespace nefi::cuda::emu {
void launch_bias_activation(const float* acc, const float* bias, int64_t n, int64_t out, int act,
                            float w0, float* y, float* z, void* stream);
void launch_activation_grad(const float* g, const float* ref, int64_t n, int64_t out, int act,
                            float w0, void* gz, int gz_dtype, float* partials, void* stream);
void launch_column_sums(const float* partials, int64_t chunks, int64_t out, float* db,
                        void* stream);
}  // namespace nefi::cuda::emu

namespace nc = nefi::cuda;
using fkemu_test::dtype_code;
using fkemu_test::expect_same_bits;
using fkemu_test::in_both_orders;

using fkemu_test::narrow;

namespace {

constexpr float kPoison = -777.f;
constexpr float kW0 = 30.f;

size_t at(int64_t i) {
  return static_cast<size_t>(i);
}

std::vector<float> random_matrix(int64_t count, float scale, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> m(at(count));
  for (float& v : m) v = u(rng);
  // Exact zeros: relu's kink (y = 0 passes no gradient).
  for (size_t i = 0; i < m.size(); i += 7) m[i] = 0.f;
  return m;
}

float activated(int act, float v) {
  switch (act) {
    case nc::kMlpTanh:
      return std::tanh(v);
    case nc::kMlpRelu:
      return v > 0.f ? v : 0.f;
    case nc::kMlpSine:
      return std::sin(kW0 * v);
    default:
      return v;
  }
}

float activation_grad(int act, float g, float ref) {
  switch (act) {
    case nc::kMlpTanh:
      return g * (1.f - ref * ref);
    case nc::kMlpRelu:
      return ref > 0.f ? g : 0.f;
    case nc::kMlpSine:
      return g * std::cos(kW0 * ref) * kW0;
    default:
      return g;
  }
}

const char* name_of(int act) {
  static const char* names[] = {"none", "tanh", "relu", "sine"};
  return names[act];
}

TEST(EmulatedMlpKernels, BiasActivationOfEveryActivation) {
  const int64_t n = 37, out = 19;  // 703 elements: three blocks, the last partial
  const std::vector<float> acc = random_matrix(n * out, 1.f, 1);
  const std::vector<float> bias = random_matrix(out, 0.5f, 2);
  for (int act : {nc::kMlpNone, nc::kMlpTanh, nc::kMlpRelu, nc::kMlpSine}) {
    SCOPED_TRACE(name_of(act));
    std::vector<float> want_y(acc.size()), want_z(acc.size());
    for (int64_t r = 0; r < n; ++r)
      for (int64_t c = 0; c < out; ++c) {
        want_z[at(r * out + c)] = acc[at(r * out + c)] + bias[at(c)];
        want_y[at(r * out + c)] = activated(act, want_z[at(r * out + c)]);
      }
    in_both_orders([&](fkemu::Order) {
      // y apart, z kept; then in place (y = acc), as mlp_dense.cpp runs the non-sine layers.
      std::vector<float> y(acc.size(), kPoison), z(acc.size(), kPoison);
      nc::emu::launch_bias_activation(acc.data(), bias.data(), n, out, act, kW0, y.data(), z.data(),
                                      nullptr);
      expect_same_bits(y, want_y, "y");
      expect_same_bits(z, want_z, "z");
      std::vector<float> in_place(acc);
      nc::emu::launch_bias_activation(in_place.data(), bias.data(), n, out, act, kW0,
                                      in_place.data(), nullptr, nullptr);
      expect_same_bits(in_place, want_y, "y in place");
      // The sine layer's way: the angle back into acc, y apart.
      std::vector<float> angle(acc), y2(acc.size(), kPoison);
      nc::emu::launch_bias_activation(angle.data(), bias.data(), n, out, act, kW0, y2.data(),
                                      angle.data(), nullptr);
      expect_same_bits(y2, want_y, "y beside z in acc");
      expect_same_bits(angle, want_z, "z in acc");
    });
  }
}

TEST(EmulatedMlpKernels, BiasActivationOfAnEmptyLayerWritesNothing) {
  std::vector<float> y(4, kPoison);
  nc::emu::launch_bias_activation(nullptr, nullptr, 0, 4, nc::kMlpTanh, kW0, y.data(), nullptr,
                                  nullptr);
  nc::emu::launch_bias_activation(nullptr, nullptr, 4, 0, nc::kMlpTanh, kW0, y.data(), nullptr,
                                  nullptr);
  EXPECT_EQ(y, std::vector<float>(4, kPoison));
}

template <typename S>
uint16_t bits16(S v) {
  uint16_t b;
  std::memcpy(&b, &v, 2);
  return b;
}

// gz in S and the f32 chunk sums, then db over the chunks, for one layer.
template <typename S>
void check_gradient(int64_t n, int64_t out, int act) {
  SCOPED_TRACE(std::string(name_of(act)) + ", " + std::to_string(n) + " x " + std::to_string(out) +
               ", gz dtype " + std::to_string(dtype_code<S>()));
  const std::vector<float> g = random_matrix(n * out, 2.f, static_cast<uint32_t>(n * out));
  const std::vector<float> ref = random_matrix(n * out, 1.f, static_cast<uint32_t>(n + out));
  const int64_t chunks = nc::grad_chunks(n);
  ASSERT_EQ(chunks, (n + 63) / 64);
  std::vector<float> want_gz(at(n * out)), want_partials(at(chunks * out)), want_db(at(out));
  for (int64_t k = 0; k < chunks; ++k)
    for (int64_t c = 0; c < out; ++c) {
      float sum = 0.f;
      for (int64_t r = 64 * k; r < std::min(n, 64 * (k + 1)); ++r) {
        const float v = activation_grad(act, g[at(r * out + c)], ref[at(r * out + c)]);
        want_gz[at(r * out + c)] = v;
        sum += v;
      }
      want_partials[at(k * out + c)] = sum;
    }
  for (int64_t c = 0; c < out; ++c) {
    float sum = 0.f;
    for (int64_t k = 0; k < chunks; ++k) sum += want_partials[at(k * out + c)];
    want_db[at(c)] = sum;
  }
  // None reads no reference (mlp_dense.cpp passes none).
  const float* r = act == nc::kMlpNone ? nullptr : ref.data();
  in_both_orders([&](fkemu::Order) {
    std::vector<S> gz(at(n * out), narrow<S>(kPoison));
    std::vector<float> partials(at(chunks * out), kPoison), db(at(out), kPoison);
    nc::emu::launch_activation_grad(g.data(), r, n, out, act, kW0, gz.data(), dtype_code<S>(),
                                    partials.data(), nullptr);
    if constexpr (std::is_same_v<S, float>) {
      expect_same_bits(gz, want_gz, "gz");
    } else {
      int64_t wrong = 0;
      for (size_t i = 0; i < gz.size(); ++i)
        if (bits16(gz[i]) != bits16(narrow<S>(want_gz[i])) && wrong++ < 5)
          ADD_FAILURE() << "gz [" << i << "]: got " << static_cast<float>(gz[i]) << ", want "
                        << want_gz[i] << " rounded";
      EXPECT_EQ(wrong, 0);
    }
    expect_same_bits(partials, want_partials, "chunk sums");
    nc::emu::launch_column_sums(partials.data(), chunks, out, db.data(), nullptr);
    expect_same_bits(db, want_db, "db");
  });
}

TEST(EmulatedMlpKernels, ActivationGradientF32OfEveryActivation) {
  for (int act : {nc::kMlpNone, nc::kMlpTanh, nc::kMlpRelu, nc::kMlpSine}) {
    check_gradient<float>(150, 33, act);  // 64 threads, chunks of 64, 64 and 22 rows
    check_gradient<float>(70, 300, act);  // three runs of 128 columns, the last partial
  }
}

TEST(EmulatedMlpKernels, ActivationGradientStoredInHalves) {
  for (int act : {nc::kMlpTanh, nc::kMlpSine}) {
    check_gradient<__half>(100, 1, act);  // one warp, one live lane
    check_gradient<__nv_bfloat16>(129, 97, act);
  }
  check_gradient<__half>(65, 260, nc::kMlpRelu);
  check_gradient<__nv_bfloat16>(3, 128, nc::kMlpNone);
}

TEST(EmulatedMlpKernels, ActivationGradientRefusesOtherDtypes) {
  std::vector<float> g(4), gz(8), partials(4);
  EXPECT_THROW(nc::emu::launch_activation_grad(g.data(), nullptr, 2, 2, nc::kMlpNone, kW0,
                                               gz.data(), fk::cuda::kF64, partials.data(), nullptr),
               fk::Error);
}

TEST(EmulatedMlpKernels, EmptyGradientAndColumnSumsWriteNothing) {
  std::vector<float> partials(4, kPoison), db(4, kPoison);
  nc::emu::launch_activation_grad(nullptr, nullptr, 0, 4, nc::kMlpTanh, kW0, nullptr,
                                  fk::cuda::kF32, partials.data(), nullptr);
  EXPECT_EQ(partials, std::vector<float>(4, kPoison));
  nc::emu::launch_column_sums(partials.data(), 1, 0, db.data(), nullptr);
  EXPECT_EQ(db, std::vector<float>(4, kPoison));
  // No chunks: every column's sum is 0.
  nc::emu::launch_column_sums(nullptr, 0, 4, db.data(), nullptr);
  EXPECT_EQ(db, std::vector<float>(4, 0.f));
}

}  // namespace
