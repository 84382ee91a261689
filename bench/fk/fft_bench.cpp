// fk's FFT against raw FFTW on the same arrays: a 2-D real round trip
// (rfftn + irfftn) in f32, one thread. fk adds the plan-cache lookup, the
// output allocations, the scratch spectrum its irfftn needs (FFTW's c2r
// destroys its input; fk never destroys the caller's) and the 1/N scaling,
// which raw FFTW leaves out. Goal: fk >= 90 % of raw FFTW's throughput.
// Run: cmake --build build/h --target fk_bench && build/h/bin/fk_bench --benchmark_filter=Rfft2
// BM_Dct2RoundtripPaired: fk::dct beside fk's own rfft round trip and raw
// FFTW REDFT plans (build/h/bin/fk_bench --benchmark_filter=Dct2).
#include <benchmark/benchmark.h>
#include <fftw3.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

#include "fk/fk.h"

namespace {

// The fastest repetition: on a shared, loaded machine the minimum is the
// figure least disturbed by other processes (--benchmark_repetitions=N).
double min_of(const std::vector<double>& v) {
  return *std::min_element(v.begin(), v.end());
}

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

// A deterministic non-trivial n x n signal.
fk::Tensor signal(int64_t n) {
  std::vector<float> v(static_cast<size_t>(n * n));
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(0.37f * static_cast<float>(i)) + 0.1f;
  return fk::from_vector(v, {n, n});
}

void BM_FkRfft2Roundtrip(benchmark::State& state) {
  fk::set_num_threads(1);
  const int64_t n = state.range(0);
  fk::Tensor x = signal(n);
  fk::Tensor y = fk::irfftn(fk::rfftn(x));  // plans made outside the loop
  for (auto _ : state) {
    y = fk::irfftn(fk::rfftn(x));
    benchmark::DoNotOptimize(y.data_ptr());
  }
  state.SetItemsProcessed(state.iterations() * n * n);
}
BENCHMARK(BM_FkRfft2Roundtrip)->Arg(64)->Arg(256)->ComputeStatistics("min", min_of);

void BM_FftwRfft2Roundtrip(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  fk::Tensor x = signal(n);
  fk::Tensor spectrum = fk::empty({n, n / 2 + 1}, {fk::DType::C64});
  fk::Tensor y = fk::empty({n, n}, {fk::DType::F32});
  auto* in = x.data<float>();
  auto* freq = reinterpret_cast<fftwf_complex*>(spectrum.data<fk::c64>());
  auto* out = y.data<float>();
  fftwf_plan fwd = fftwf_plan_dft_r2c_2d(n, n, in, freq, FFTW_ESTIMATE);
  fftwf_plan inv = fftwf_plan_dft_c2r_2d(n, n, freq, out, FFTW_ESTIMATE);
  for (auto _ : state) {
    fftwf_execute(fwd);
    fftwf_execute(inv);
    benchmark::DoNotOptimize(out);
    benchmark::ClobberMemory();
  }
  fftwf_destroy_plan(fwd);
  fftwf_destroy_plan(inv);
  state.SetItemsProcessed(state.iterations() * n * n);
}
BENCHMARK(BM_FftwRfft2Roundtrip)->Arg(64)->Arg(256)->ComputeStatistics("min", min_of);

// The two side by side: every iteration times one fk round trip and one raw
// FFTW round trip back to back, so both see the same machine state (a loaded
// or frequency-shifting VM moves both), and the ratio of the medians is the
// figure. Counters: fk_us, fftw_us (medians), fk_vs_fftw = fftw / fk time.
void BM_Rfft2RoundtripPaired(benchmark::State& state) {
  using Clock = std::chrono::steady_clock;
  fk::set_num_threads(1);
  const int n = static_cast<int>(state.range(0));
  fk::Tensor x = signal(n);
  fk::Tensor y = fk::irfftn(fk::rfftn(x));
  fk::Tensor spectrum = fk::empty({n, n / 2 + 1}, {fk::DType::C64});
  fk::Tensor yr = fk::empty({n, n}, {fk::DType::F32});
  auto* freq = reinterpret_cast<fftwf_complex*>(spectrum.data<fk::c64>());
  fftwf_plan fwd = fftwf_plan_dft_r2c_2d(n, n, x.data<float>(), freq, FFTW_ESTIMATE);
  fftwf_plan inv = fftwf_plan_dft_c2r_2d(n, n, freq, yr.data<float>(), FFTW_ESTIMATE);
  std::vector<double> t_fk, t_raw;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    y = fk::irfftn(fk::rfftn(x));
    benchmark::DoNotOptimize(y.data_ptr());
    const auto t1 = Clock::now();
    fftwf_execute(fwd);
    fftwf_execute(inv);
    benchmark::ClobberMemory();
    const auto t2 = Clock::now();
    t_fk.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    t_raw.push_back(std::chrono::duration<double, std::micro>(t2 - t1).count());
  }
  fftwf_destroy_plan(fwd);
  fftwf_destroy_plan(inv);
  const double fk_us = median(t_fk), raw_us = median(t_raw);
  state.counters["fk_us"] = fk_us;
  state.counters["fftw_us"] = raw_us;
  state.counters["fk_vs_fftw"] = raw_us / fk_us;
}
BENCHMARK(BM_Rfft2RoundtripPaired)->Arg(64)->Arg(256);

// fk::dct's round trip (a DCT-II then a DCT-III over both dims: a spectral
// field's backward and forward) beside fk's rfft round trip and beside raw
// FFTW REDFT10 / REDFT01 plans on the same n x n f32 signal, timed back to
// back each iteration. Counters: dct_us, rfft_us, redft_us (medians),
// dct_vs_rfft = rfft / dct time (fk::dct runs a 1-D real FFT per dim with a
// pass either side, where the round trip runs one 2-D plan each way: about
// 1/2 is this layout's reach), dct_vs_redft = FFTW's REDFT / dct time
// (estimated plans, as fk's own).
void BM_Dct2RoundtripPaired(benchmark::State& state) {
  using Clock = std::chrono::steady_clock;
  fk::set_num_threads(1);
  const int n = static_cast<int>(state.range(0));
  fk::Tensor x = signal(n);
  fk::Tensor y = fk::dct(fk::dct(x, fk::DctType::II), fk::DctType::III);
  y = fk::irfftn(fk::rfftn(x));
  fk::Tensor mid = fk::empty({n, n}, {fk::DType::F32});
  fk::Tensor yr = fk::empty({n, n}, {fk::DType::F32});
  fftwf_plan fwd = fftwf_plan_r2r_2d(n, n, x.data<float>(), mid.data<float>(), FFTW_REDFT10,
                                     FFTW_REDFT10, FFTW_ESTIMATE);
  fftwf_plan inv = fftwf_plan_r2r_2d(n, n, mid.data<float>(), yr.data<float>(), FFTW_REDFT01,
                                     FFTW_REDFT01, FFTW_ESTIMATE);
  std::vector<double> t_dct, t_rfft, t_redft;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    y = fk::dct(fk::dct(x, fk::DctType::II), fk::DctType::III);
    benchmark::DoNotOptimize(y.data_ptr());
    const auto t1 = Clock::now();
    y = fk::irfftn(fk::rfftn(x));
    benchmark::DoNotOptimize(y.data_ptr());
    const auto t2 = Clock::now();
    fftwf_execute(fwd);
    fftwf_execute(inv);
    benchmark::ClobberMemory();
    const auto t3 = Clock::now();
    t_dct.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    t_rfft.push_back(std::chrono::duration<double, std::micro>(t2 - t1).count());
    t_redft.push_back(std::chrono::duration<double, std::micro>(t3 - t2).count());
  }
  fftwf_destroy_plan(fwd);
  fftwf_destroy_plan(inv);
  const double dct_us = median(t_dct), rfft_us = median(t_rfft), redft_us = median(t_redft);
  state.counters["dct_us"] = dct_us;
  state.counters["rfft_us"] = rfft_us;
  state.counters["redft_us"] = redft_us;
  state.counters["dct_vs_rfft"] = rfft_us / dct_us;
  state.counters["dct_vs_redft"] = redft_us / dct_us;
}
BENCHMARK(BM_Dct2RoundtripPaired)->Arg(64)->Arg(256)->Arg(512);

}  // namespace
