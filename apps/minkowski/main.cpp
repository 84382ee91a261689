// The minkowski command-line tool. `minkowski bench conv --help` for options.
// Errors print one line on stderr and exit non-zero.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "bench_conv.h"
#include "bench_ops.h"
#include "cli_checks.h"
#include "fk/error.h"
#include "fk/knobs.h"
#include "fk/parallel.h"
#include "flushed_status.h"
#include "train.h"

namespace {

using cli_checks::non_negative;
using cli_checks::non_negative_seed;
using cli_checks::thread_count;

// Every subcommand's options, filled by CLI11 as it parses.
struct Options {
  minkowski_app::BenchConvOptions o;
  minkowski_app::BenchOpsOptions oo;
  minkowski_app::BenchTrainOptions bto;
  minkowski_app::TrainOptions to;
  minkowski_app::PredictOptions po;
};

struct Commands {
  CLI::App *conv, *ops, *bench_train, *train, *predict;
};

Commands add_bench_commands(CLI::App& bench, Options& opt, Commands c) {
  auto& o = opt.o;
  auto& oo = opt.oo;
  auto& bto = opt.bto;
  CLI::App* conv = bench.add_subcommand("conv", "sparse convolution forward/backward timing");
  conv->add_option("--points", o.points, "voxels of the synthetic scene (20k-500k typical)")
      ->check(CLI::Range(int64_t{1}, int64_t{100000000}));
  conv->add_option("--channels", o.channels,
                   "input channels; several (32,64,128,256): the ladder of C_in = C_out widths")
      ->delimiter(',')
      ->check(CLI::Range(1, 4096));
  conv->add_option("--out-channels", o.out_channels, "output channels (default: --channels)")
      ->check(CLI::Range(0, 4096));
  conv->add_option("--kernel", o.kernel, "kernel size (cube)")->check(CLI::Range(1, 15));
  conv->add_option("--stride", o.stride, "stride")->check(CLI::Range(1, 64));
  conv->add_option("--dtype", o.dtype, "f32, f64, f16 or bf16");
  conv->add_option("--threads", o.threads, "threads (default: OMP_NUM_THREADS or all cores)")
      ->check(thread_count());
  conv->add_option("--repeats", o.repeats, "timed runs per measurement (median reported)")
      ->check(CLI::Range(1, 10000));
  conv->add_option("--chunk-mb", o.chunk_mb, "ME_FUSED_COPY_MAX_MB of the chunked variant")
      ->check(CLI::Range(0.0, 1e6));
  conv->add_option("--scene", o.scene, "N x 4 int32 .npy scene (batch, x, y, z)");
  conv->add_option("--json", o.json, "also write the results as JSON to this file");
  CLI::App* ops = bench.add_subcommand(
      "ops",
      "pooling, unpooling, global pooling, broadcast, relu, batch and instance norm, prune, "
      "union, interpolate and spmm: bytes/s vs a stream triad");
  ops->add_option("--scene", oo.scene,
                  "N x 4 int32 .npy scene (batch, x, y, z); default "
                  "../shared/data/indoor_scene_100k.npy, from the repository root");
  ops->add_option("--points", oo.points, "a synthetic scene of this many voxels instead")
      ->check(CLI::Range(int64_t{1}, int64_t{100000000}));
  ops->add_option("--channels", oo.channels, "feature channels")->check(CLI::Range(1, 4096));
  ops->add_option("--dtype", oo.dtype, "f32, f64, f16 or bf16");
  ops->add_option("--threads", oo.threads, "thread counts to run at (e.g. 1,2)")
      ->delimiter(',')
      ->check(thread_count(1));
  ops->add_option("--repeats", oo.repeats, "timed runs per measurement (best reported)")
      ->check(CLI::Range(1, 10000));
  ops->add_option("--triad-mib", oo.triad_mib, "MiB per stream triad array")
      ->check(CLI::Range(1, 65536));
  ops->add_option("--evict-mib", oo.evict_mib,
                  "MiB read before each timed run (0: warm; -1: twice the L3, at least 128)")
      ->check(CLI::Range(-1, 65536));
  ops->add_option("--json", oo.json, "also write the results as JSON to this file");
  CLI::App* bench_train = bench.add_subcommand("train", "MinkUNet training step timing");
  bench_train->add_option("--variant", bto.variant,
                          "MinkUNet variant (14, 14A-D, 18, 18A/B/D, 34, 34A-C, 50, 101)");
  bench_train->add_option("--points", bto.points, "voxels of the synthetic scene")
      ->check(CLI::Range(int64_t{1}, int64_t{100000000}));
  bench_train->add_option("--steps", bto.steps, "timed steps per thread count")
      ->check(CLI::Range(1, 100000));
  bench_train->add_option("--threads", bto.threads, "thread counts, comma-separated")
      ->delimiter(',')
      ->check(thread_count(1));
  bench_train
      ->add_option("--precision", bto.precisions, "precisions, comma-separated (f32, bf16, fp16)")
      ->delimiter(',');
  bench_train->add_option("--device", bto.device, "cpu, cuda or cuda:N");
  bench_train->add_flag("--device-coords", bto.device_coords,
                        "coordinates on --device too: maps and kernel maps built there");
  bench_train
      ->add_option("--ops", bto.ops, "list this many of the traced step's largest host-time events")
      ->check(CLI::Range(0, 100000));
  bench_train->add_option("--trace", bto.trace,
                          "write each traced step's chrome trace, PATH.json -> "
                          "PATH-<threads>-<precision>-<copy path>.json");
  c.conv = conv;
  c.ops = ops;
  c.bench_train = bench_train;
  return c;
}

Commands add_model_commands(CLI::App& app, Options& opt, Commands c) {
  auto& to = opt.to;
  auto& po = opt.po;
  CLI::App* train =
      app.add_subcommand("train", "train MinkUNet on scenes or point files, or a ResNet on shapes");
  train->add_option("--model", to.model,
                    "minkunet (segmentation) or resnet14, 18, 34, 50, 101 (shape classification)");
  train->add_option("--variant", to.variant,
                    "MinkUNet variant (14, 14A-D, 18, 18A/B/D, 34, 34A-C, 50, 101; default 14A)");
  train->add_option("--planes", to.planes,
                    "ResNet stage widths a,b,c,d (stem: a; default 64,128,256,512)");
  train->add_option("--data", to.data,
                    "folder of labelled .ply/.npy/.xyz files (default: generated)");
  train
      ->add_option("--classes", to.classes,
                   "number of classes (default: generated scenes 5, shapes 4)")
      ->check(CLI::Range(int64_t{0}, int64_t{4096}));
  train->add_option("--epochs", to.epochs, "epochs")->check(CLI::Range(1, 1000000));
  train->add_option("--steps-per-epoch", to.steps_per_epoch, "steps per epoch")
      ->check(CLI::Range(1, 100000000));
  train->add_option("--batch", to.batch, "scenes per step")->check(CLI::Range(1, 4096));
  train
      ->add_option("--val-scenes", to.val_scenes,
                   "held-out scenes (classifier: batches of 16 shapes) evaluated per epoch")
      ->check(CLI::Range(1, 100000));
  train->add_option("--voxel", to.voxel, "voxel size (m; default: scenes 0.1, shapes 0.04)");
  train->add_option("--lr", to.lr, "base learning rate");
  train->add_option("--optimizer", to.optimizer, "adam, adamw or sgd");
  train->add_option("--schedule", to.schedule, "constant, step, cosine or poly");
  train->add_option("--warmup", to.warmup, "linear warm-up steps")->check(non_negative());
  train
      ->add_option("--lr-step", to.lr_step,
                   "--schedule step: steps between decays (0: a third of the steps after warm-up)")
      ->check(non_negative());
  train->add_option("--lr-gamma", to.lr_gamma, "--schedule step: the factor of each decay");
  train->add_option("--weight-decay", to.weight_decay, "weight decay")->check(non_negative());
  train->add_option("--clip", to.clip, "clip the gradient norm to this (0: off)")
      ->check(non_negative());
  train->add_option("--precision", to.precision,
                    "f32, bf16 or fp16: autocast with f32 master weights (fp16: loss scaling)");
  train->add_option("--device", to.device,
                    "cpu, cuda or cuda:N: the network, features and labels live there");
  train->add_option("--coords", to.coords,
                    "with a CUDA --device: device (the default: each batch's coordinates move "
                    "there and its kernel maps are built there) or host (built on the host "
                    "and uploaded)");
  train->add_option("--seed", to.seed, "seed of the weights and the scenes")
      ->check(non_negative_seed());
  train->add_option("--threads", to.threads, "threads (0: default)")->check(thread_count());
  train->add_option("--out", to.out, "output folder (log.csv, best.ckpt, last.ckpt)");
  train->add_flag("--resume", to.resume, "continue from OUT/last.ckpt");
  train->add_flag("--deterministic", to.deterministic,
                  "the same weights for a --seed run to run and at any --threads: one "
                  "convolution path, not the fastest by timing (whose choice can differ "
                  "between runs)");
  CLI::App* predict =
      app.add_subcommand("predict", "label a point file, a generated scene or a shape");
  predict->add_option(
      "--model", po.model,
      "minkunet (segmentation) or resnet14, 18, 34, 50, 101 (shape classification)");
  predict->add_option("--variant", po.variant, "MinkUNet variant of the checkpoint (default 14A)");
  predict->add_option("--planes", po.planes, "ResNet stage widths a,b,c,d of the checkpoint");
  predict->add_option("--checkpoint", po.checkpoint, "checkpoint file")->required();
  predict->add_option(
      "--input", po.input,
      "point file (.ply, .npy, .xyz, .txt); default: a generated scene (ResNet: shape)");
  predict->add_option("--scene-seed", po.scene_seed, "seed of the generated scene or shape")
      ->check(non_negative_seed());
  predict->add_option("--voxel", po.voxel,
                      "voxel size (m; default: the checkpoint's, else scenes 0.1, shapes 0.04)");
  predict->add_option("--precision", po.precision, "f32, bf16 or fp16: autocast of the forward");
  predict->add_option("--ply", po.ply, "write the labelled cloud, coloured by class");
  predict->add_option("--labels", po.labels, "write the predicted labels (int64 .npy)");
  predict->add_option("--device", po.device,
                      "cpu, cuda or cuda:N: the network, features and coordinates live there");
  predict->add_option("--threads", po.threads, "threads (0: default)")->check(thread_count());
  c.train = train;
  c.predict = predict;
  return c;
}

// Options the command would ignore without a word are refused by name, as
// network.cpp refuses --planes for a MinkUNet.
void refuse_unused(const Commands& c, const Options& opt) {
  const auto given = [](CLI::App* app, const char* name) { return app->count(name) > 0; };
  if (*c.train) {
    const auto& o = opt.to;
    FK_CHECK(!given(c.train, "--val-scenes") || o.data.empty(), "minkowski train --val-scenes",
             "no --val-scenes with --data (the held-out files are the last fifth by name)",
             fk::to_text(o.val_scenes));
    FK_CHECK(!given(c.train, "--coords") || o.device != "cpu", "minkowski train --coords",
             "a CUDA --device beside it (with --device cpu everything is on the host)",
             "'" + o.coords + "' with --device " + o.device);
    for (const char* name : {"--lr-step", "--lr-gamma"})
      FK_CHECK(!given(c.train, name) || o.schedule == "step",
               std::string("minkowski train ") + name, "--schedule step beside it",
               "--schedule " + o.schedule);
  }
  if (*c.predict)
    FK_CHECK(!given(c.predict, "--scene-seed") || opt.po.input.empty(),
             "minkowski predict --scene-seed",
             "no --scene-seed with --input (it seeds a generated scene or shape)",
             "--input " + opt.po.input);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"minkowski: sparse convolution engine tools"};
  app.require_subcommand(1);
  CLI::App* bench = app.add_subcommand("bench", "benchmarks");
  bench->require_subcommand(1);
  Options opt;
  const Commands c = add_model_commands(app, opt, add_bench_commands(*bench, opt, {}));
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return cli_checks::flushed_status("minkowski", app.exit(e), 1);
  } catch (const CLI::CallForAllHelp& e) {
    return cli_checks::flushed_status("minkowski", app.exit(e), 1);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "minkowski: %s\n", e.what());
    return 2;
  }
  int status = 0;
  try {
    // Every knob's environment value up front, as fk-info and nefi check them.
    for (const fk::Knob* k : fk::knobs()) k->validate();
    (void)fk::get_num_threads();  // OMP_NUM_THREADS too, before any work
    refuse_unused(c, opt);
    if (*c.conv) status = minkowski_app::bench_conv(opt.o);
    if (*c.ops) status = minkowski_app::bench_ops(opt.oo);
    if (*c.bench_train) status = minkowski_app::bench_train(opt.bto);
    if (*c.train) status = minkowski_app::train(opt.to);
    if (*c.predict) status = minkowski_app::predict(opt.po);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "minkowski: error: %s\n", e.what());
    return 1;
  }
  return cli_checks::flushed_status("minkowski", status, 1);
}
