// fk-info: what this build of fieldkit is, what it runs on, and every knob.
//   fk-info                   version, build, devices, knobs
//   fk-info --bench-overhead  also measures the dispatch cost of a small op;
//                             the last line is "<ns> ns/op"
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <system_error>
#include <vector>

#include "fk/blas.h"
#include "fk/cuda/runtime.h"
#include "fk/fk.h"
#include "flushed_status.h"

namespace {

void print_info() {
  fmt::print("fieldkit {}\n", FK_VERSION);
  fmt::print("build      C++{} {} ({})\n", __cplusplus / 100 % 100, __VERSION__,
#ifdef NDEBUG
             "optimised"
#else
             "debug"
#endif
  );
  fmt::print("blas       {}\n", fk::blas_config());
  fmt::print("fft        {} (CPU){}\n", fk::fft_backend(),
             fk::cuda::built_with_cuda() ? ", cuFFT (CUDA)" : "");
  fmt::print("cpu isa    {} (detected {}; FK_CPU_ISA caps it)\n", fk::cpu_isa_name(fk::cpu_isa()),
             fk::cpu_isa_name(fk::cpu_isa_detected()));
  fmt::print("threads    {}\n", fk::get_num_threads());
  fmt::print("cuda       {} (archs {})\n", fk::cuda::built_with_cuda() ? "built" : "not built",
             fk::cuda::archs());
  fmt::print("devices    cpu");
  for (int i = 0; i < fk::cuda_device_count(); ++i) fmt::print(", cuda:{}", i);
  fmt::print("\n\nknobs (name = value [default; read]: doc)\n");
  for (const fk::Knob* k : fk::knobs()) {
    fmt::print("  {} = {} [{}; {}]: {}\n", k->name(), k->raw(), k->default_value(),
               k->read() == fk::KnobRead::Latched ? "latched" : "per call", k->doc());
  }
}

struct Timing {
  double median_ns, min_ns;
};

// ns per call of f over `reps` batches of `inner` calls: the median, and the
// minimum (the better estimate when other work shares the cores).
template <typename F>
Timing time_ns(F&& f, int reps = 21, int inner = 20000) {
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < inner; ++i) f();
    auto t1 = std::chrono::steady_clock::now();
    t.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / inner);
  }
  std::sort(t.begin(), t.end());
  return {t[t.size() / 2], t.front()};
}

void bench_overhead() {
  fk::set_num_threads(1);
  fk::Tensor a = fk::ones({16}), b = fk::ones({16});
  fk::Tensor ag = fk::ones({16}).set_requires_grad(true);
  fk::Tensor bg = fk::ones({16}).set_requires_grad(true);
  fk::Tensor seed = fk::ones({16});
  Timing fwd = time_ns([&] { fk::Tensor c = fk::add(a, b); });
  Timing fwd_bwd = time_ns(
      [&] {
        fk::Tensor c = fk::add(ag, bg);
        c.backward(seed);
      },
      11, 5000);
  fmt::print("\ndispatch overhead: add of two 16-element f32 tensors, 1 thread (median; min)\n");
  fmt::print("  forward            {:.0f} ns/op; {:.0f}\n", fwd.median_ns, fwd.min_ns);
  fmt::print("  forward+backward   {:.0f} ns/op; {:.0f} (incl. accumulation into .grad)\n",
             fwd_bwd.median_ns, fwd_bwd.min_ns);
  fmt::print("{:.0f} ns/op\n", fwd.median_ns);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"fk-info: build, devices and knobs of this fieldkit"};
  bool overhead = false;
  app.add_flag("--bench-overhead", overhead, "measure the dispatch overhead of a small op");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {  // one line and status 2, as nefi's and minkowski's
    std::fprintf(stderr, "fk-info: %s\n", e.what());
    return 2;
  }
  try {
    for (const fk::Knob* k : fk::knobs()) k->validate();
    // OMP_NUM_THREADS is read here, not as a knob: a bad one refused before any line is printed.
    (void)fk::get_num_threads();
    print_info();
    if (overhead) bench_overhead();
  } catch (const fk::Error& e) {
    std::fprintf(stderr, "fk-info: %s\n", e.what());
    return 1;
  } catch (const std::system_error& e) {  // fmt's buffered write to stdout
    std::fprintf(stderr, "fk-info: error: could not write the standard output (%s)\n", e.what());
    return 1;
  }
  return cli_checks::flushed_status("fk-info", 0, 1);
}
