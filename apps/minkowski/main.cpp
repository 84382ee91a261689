// The minkowski command-line tool. `minkowski bench conv --help` for options.
// Errors print one line on stderr and exit non-zero.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "bench_conv.h"
#include "bench_ops.h"

int main(int argc, char** argv) {
  CLI::App app{"minkowski: sparse convolution engine tools"};
  app.require_subcommand(1);
  CLI::App* bench = app.add_subcommand("bench", "benchmarks");
  bench->require_subcommand(1);
  CLI::App* conv = bench->add_subcommand("conv", "sparse convolution forward/backward timing");
  minkowski_app::BenchConvOptions o;
  conv->add_option("--points", o.points, "voxels of the synthetic scene (20k-500k typical)");
  conv->add_option("--channels", o.channels, "input channels");
  conv->add_option("--out-channels", o.out_channels, "output channels (default: --channels)");
  conv->add_option("--kernel", o.kernel, "kernel size (cube)");
  conv->add_option("--stride", o.stride, "stride");
  conv->add_option("--dtype", o.dtype, "f32, f64, f16 or bf16");
  conv->add_option("--threads", o.threads, "threads (default: OMP_NUM_THREADS or all cores)");
  conv->add_option("--repeats", o.repeats, "timed runs per measurement (median reported)");
  conv->add_option("--chunk-mb", o.chunk_mb, "ME_FUSED_COPY_MAX_MB of the chunked variant");
  conv->add_option("--scene", o.scene, "N x 4 int32 .npy scene (batch, x, y, z)");
  conv->add_option("--json", o.json, "also write the results as JSON to this file");
  CLI::App* ops = bench->add_subcommand(
      "ops", "pooling, unpooling, global pooling and broadcast: bytes/s vs a stream triad");
  minkowski_app::BenchOpsOptions oo;
  ops->add_option("--scene", oo.scene, "N x 4 int32 .npy scene (batch, x, y, z)");
  ops->add_option("--points", oo.points, "a synthetic scene of this many voxels instead");
  ops->add_option("--channels", oo.channels, "feature channels");
  ops->add_option("--dtype", oo.dtype, "f32, f64, f16 or bf16");
  ops->add_option("--threads", oo.threads, "thread counts to run at (e.g. 1,2)")->delimiter(',');
  ops->add_option("--repeats", oo.repeats, "timed runs per measurement (best reported)");
  ops->add_option("--triad-mib", oo.triad_mib, "MiB per stream triad array");
  ops->add_option("--evict-mib", oo.evict_mib, "MiB read before each timed run (0: warm)");
  ops->add_option("--json", oo.json, "also write the results as JSON to this file");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "minkowski: %s\n", e.what());
    return 2;
  }
  try {
    if (*conv) return minkowski_app::bench_conv(o);
    if (*ops) return minkowski_app::bench_ops(oo);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "minkowski: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
