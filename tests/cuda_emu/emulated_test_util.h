#pragma once
// What the emulated-device tests of every layer share: running a check in both
// thread orders (a read of another thread's write that no barrier orders then
// shows as a difference between them), bitwise comparison of results with the
// first few differences reported, uniform random values, and the f16/bf16
// conversions a host reference uses for kernels that store rows in halves.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <gtest/gtest.h>

#include <complex>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "cuda_emu/emulated_device.h"
#include "fk/cuda/kernels.h"

namespace fkemu_test {

inline const char* order_name(fkemu::Order o) {
  return o == fkemu::Order::kAscending ? "ascending" : "descending";
}

// Sets an order for a scope (or keeps the current one) and restores the
// program's starting order however the scope ends.
class OrderScope {
 public:
  OrderScope() = default;
  explicit OrderScope(fkemu::Order o) { fkemu::set_order(o); }
  ~OrderScope() { fkemu::set_order(fkemu::starting_order()); }
  OrderScope(const OrderScope&) = delete;
  OrderScope& operator=(const OrderScope&) = delete;
};

// check(order) once per thread order; the emulator is left in the order the
// program started in.
template <typename F>
void in_both_orders(F&& check) {
  for (fkemu::Order o : {fkemu::Order::kAscending, fkemu::Order::kDescending}) {
    fkemu::set_order(o);
    SCOPED_TRACE(std::string("thread order ") + order_name(o));
    check(o);
  }
  fkemu::set_order(fkemu::starting_order());
}

template <typename T>
bool same_bits(T a, T b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

// got == want bit for bit (NaNs included), at most five differences reported.
template <typename T>
void expect_same_bits(const std::vector<T>& got, const std::vector<T>& want,
                      const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int64_t wrong = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (!same_bits(got[i], want[i]) && wrong++ < 5)
      ADD_FAILURE() << what << " [" << i << "]: got " << got[i] << ", want " << want[i];
  EXPECT_EQ(wrong, 0) << what << ": elements differing from the reference";
}

// The same, for rows of `cols` channels: differences reported by row and channel.
template <typename T>
void expect_same_bits(const std::vector<T>& got, const std::vector<T>& want, int64_t cols,
                      const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int64_t wrong = 0;
  for (size_t e = 0; e < got.size(); ++e)
    if (!same_bits(got[e], want[e]) && wrong++ < 5)
      ADD_FAILURE() << what << ": row " << e / static_cast<size_t>(cols) << " channel "
                    << e % static_cast<size_t>(cols) << " is " << got[e] << ", the CPU's "
                    << want[e];
  EXPECT_EQ(wrong, 0) << what;
}

// n values drawn uniformly from [lo, hi), each rounded to T.
template <typename T>
std::vector<T> random_values(int64_t n, double lo, double hi, std::mt19937& rng) {
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<T> v(static_cast<size_t>(n));
  for (T& x : v) x = static_cast<T>(u(rng));
  return v;
}

// n values uniform in [-1, 1) from a generator seeded with `seed`, each rounded to T.
template <typename T>
std::vector<T> random_values(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  return random_values<T>(n, -1, 1, rng);
}

// n complex values, the real then the imaginary part uniform in [-1, 1).
inline std::vector<std::complex<double>> random_complex(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<std::complex<double>> v(static_cast<size_t>(n));
  for (std::complex<double>& e : v) e = {u(rng), u(rng)};
  return v;
}

// An element of S as the kernels compute with it: f16 and bf16 as float,
// float and double as themselves.
template <typename S>
auto widen(S v) {
  if constexpr (std::is_same_v<S, __half>)
    return __half2float(v);
  else if constexpr (std::is_same_v<S, __nv_bfloat16>)
    return __bfloat162float(v);
  else
    return v;
}

// v stored as an S, halves rounded to nearest from float.
template <typename S>
S narrow(double v) {
  if constexpr (std::is_same_v<S, __half>)
    return __float2half_rn(static_cast<float>(v));
  else if constexpr (std::is_same_v<S, __nv_bfloat16>)
    return __float2bfloat16_rn(static_cast<float>(v));
  else
    return static_cast<S>(v);
}

// fk's dtype code (fk/cuda/kernels.h) of a launcher's element type.
template <typename S>
int dtype_code() {
  if constexpr (std::is_same_v<S, __half>)
    return fk::cuda::kF16;
  else if constexpr (std::is_same_v<S, __nv_bfloat16>)
    return fk::cuda::kBF16;
  else if constexpr (std::is_same_v<S, double>)
    return fk::cuda::kF64;
  else
    return fk::cuda::kF32;
}

}  // namespace fkemu_test
