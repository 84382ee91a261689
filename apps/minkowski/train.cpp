// `minkowski train`: MinkUNet on generated scenes or a folder of labelled
// point files, or a sparse ResNet classifier on generated shapes, in f32 or
// under bf16/fp16 autocast, on the CPU or a CUDA device (--device). In the output folder: one
// log.csv row per epoch (loss, held-out mIoU, accuracy, learning rate, voxels/s, steps the fp16
// loss scaler skipped), the learning curves (curves.png, redrawn from log.csv
// every epoch), the best checkpoint by mIoU and a resumable last checkpoint
// (model, optimizer, epoch, best mIoU, loss scale).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cloud_checks.h"
#include "cloud_colours.h"
#include "device_option.h"
#include "fk/fk.h"
#include "fk/io/replace_file.h"
#include "learning_curve.h"
#include "minkowski/data/batch.h"
#include "minkowski/data/point_io.h"
#include "minkowski/nn/autocast.h"
#include "minkowski/nn/checkpoint.h"
#include "minkowski/nn/loss.h"
#include "minkowski/nn/schedule.h"
#include "minkowski/nn/segmentation.h"
#include "minkowski/ops/conv.h"
#include "network.h"
#include "train.h"

namespace minkowski_app {
namespace {

using namespace minkowski;

bool classifier(const TrainOptions& o) {
  return is_classifier(o.model);
}

// The options with the data's defaults filled in, checked.
TrainOptions resolved(TrainOptions o) {
  check_model(o.model, "minkowski train");
  FK_CHECK(!classifier(o) || o.data.empty(), "minkowski train --data",
           "no --data with a classifier (it trains on generated shapes)", "'" + o.data + "'");
  FK_CHECK(o.data.empty() || o.classes > 0, "minkowski train --data", "--classes with --data",
           "none");
  const int64_t generated = classifier(o) ? data::kShapeClasses : data::kSceneClasses;
  if (o.classes == 0) o.classes = generated;
  FK_CHECK(!o.data.empty() || o.classes == generated, "minkowski train --classes",
           fk::to_text(generated) + " classes for the generated data", fk::to_text(o.classes));
  if (o.voxel == 0) o.voxel = classifier(o) ? 0.04 : 0.1;
  // Finite: CLI11's range checks pass nan, and an infinite voxel or a nan
  // clip failed (or clipped nothing) only once training had started.
  FK_CHECK(std::isfinite(o.voxel) && o.voxel > 0, "minkowski train --voxel",
           "a positive finite size", fk::to_text(o.voxel));
  FK_CHECK(std::isfinite(o.clip) && o.clip >= 0, "minkowski train --clip",
           "a finite norm >= 0 (0: off)", fk::to_text(o.clip));
  FK_CHECK(std::isfinite(o.lr) && o.lr > 0, "minkowski train --lr", "a finite rate > 0",
           fk::to_text(o.lr));
  FK_CHECK(std::isfinite(o.weight_decay) && o.weight_decay >= 0, "minkowski train --weight-decay",
           "a finite weight >= 0", fk::to_text(o.weight_decay));
  FK_CHECK(o.coords == "device" || o.coords == "host", "minkowski train --coords", "device or host",
           "'" + o.coords + "'");
  FK_CHECK(o.data.empty() || std::filesystem::is_directory(o.data), "minkowski train --data",
           "a folder of labelled point files", "'" + o.data + "'");
  FK_CHECK(o.classes >= 2, "minkowski train --classes", "at least 2 classes",
           fk::to_text(o.classes));
  const int64_t total = int64_t{o.epochs} * o.steps_per_epoch;
  FK_CHECK(o.warmup < total, "minkowski train --warmup",
           "fewer warm-up steps than the run's " + fk::to_text(total) + " steps",
           fk::to_text(o.warmup));
  FK_CHECK(std::isfinite(o.lr_gamma) && o.lr_gamma > 0 && o.lr_gamma <= 1,
           "minkowski train --lr-gamma", "a decay factor in (0, 1]", fk::to_text(o.lr_gamma));
  // A third of the steps after warm-up, rounded up: two decays, never three.
  if (o.lr_step == 0) o.lr_step = std::max<int64_t>(1, (total - o.warmup + 2) / 3);
  return o;
}

NetworkChoice network_choice(const TrainOptions& o) {
  return {o.model, o.variant, o.planes, o.classes};
}

std::unique_ptr<nn::Optimizer> make_optimizer(const TrainOptions& o, nn::Module& net) {
  if (o.optimizer == "sgd") {
    return std::make_unique<nn::Sgd>(net.parameters(),
                                     nn::SgdOptions{o.lr, 0.9, o.weight_decay, false});
  }
  if (o.optimizer == "adam" || o.optimizer == "adamw") {
    return std::make_unique<nn::Adam>(
        net.parameters(),
        nn::AdamOptions{o.lr, 0.9, 0.999, 1e-8, o.weight_decay, o.optimizer == "adamw"});
  }
  throw fk::Error("minkowski train --optimizer", "adam, adamw or sgd", "'" + o.optimizer + "'");
}

nn::NamedTensors prefixed(const nn::NamedTensors& in, const std::string& prefix) {
  nn::NamedTensors out;
  for (const auto& [n, t] : in) out.emplace_back(prefix + n, t);
  return out;
}

// The tensors of `all` whose names start with prefix, with it removed.
nn::NamedTensors strip(const nn::NamedTensors& all, const std::string& prefix) {
  nn::NamedTensors out;
  for (const auto& [n, t] : all) {
    if (n.starts_with(prefix)) out.emplace_back(n.substr(prefix.size()), t);
  }
  return out;
}

struct Progress {
  int epoch = 0;
  double best_miou = -1.0;
  double loss_scale = 0.0;     // fp16's GradScaler; 0: none
  int64_t growth_tracker = 0;  // its clean steps since the scale last moved
};

// The voxel size a net was trained at, saved beside its weights (predict
// reads it: a net fed another voxel size sees other geometry).
nn::NamedTensors with_voxel(nn::NamedTensors tensors, double voxel) {
  tensors.emplace_back(kVoxelTensor, fk::full({}, voxel, {fk::DType::F64}));
  return tensors;
}

// The optimizers by the number a checkpoint keeps for them (tensors hold no
// names): a resume under another one names both.
constexpr const char* kOptimizers[] = {"sgd", "adam", "adamw"};
constexpr const char* kRngOffset = "rng_offset";
// The run's --seed (its data, augmentations and dropout stream): a resume
// under another one went on as a hybrid of the two runs without a word.
constexpr const char* kSeed = "seed";

// The options a resume must keep besides those above, saved as
// "option<flag>" (f64; a choice as its index in `choices`): a resume under
// another --lr, --batch, --precision, ... trained on as a hybrid of two runs
// without a word. --epochs may grow (a longer run); --data may move. As
// given: --lr-step 0 (a third of the run) stays 0 when --epochs grows.
struct KeptOption {
  const char* flag;
  double value;
  std::vector<std::string> choices;  // empty: a number
  std::string text(double v) const {
    const auto i = static_cast<size_t>(v);
    return choices.empty() ? fmt::format("{}", v) : i < choices.size() ? choices[i] : "?";
  }
};

std::vector<KeptOption> kept_options(const TrainOptions& o) {
  const auto index = [](const std::vector<std::string>& names, const std::string& v) {
    return static_cast<double>(std::find(names.begin(), names.end(), v) - names.begin());
  };
  const std::vector<std::string> schedules{"constant", "step", "cosine", "poly"};
  const std::vector<std::string> precisions{"f32", "bf16", "fp16"};
  return {
      {"--lr", o.lr, {}},
      {"--schedule", index(schedules, o.schedule), schedules},
      {"--warmup", static_cast<double>(o.warmup), {}},
      {"--lr-step", static_cast<double>(o.lr_step), {}},
      {"--lr-gamma", o.lr_gamma, {}},
      {"--weight-decay", o.weight_decay, {}},
      {"--clip", o.clip, {}},
      {"--batch", static_cast<double>(o.batch), {}},
      {"--steps-per-epoch", static_cast<double>(o.steps_per_epoch), {}},
      // f16 is fp16's other name (nn::parse_precision)
      {"--precision", index(precisions, o.precision == "f16" ? "fp16" : o.precision), precisions}};
}

void save_last(const std::string& path, nn::Module& net, nn::Optimizer& opt, const Progress& p,
               double voxel, const std::string& optimizer, uint64_t seed,
               const std::vector<KeptOption>& kept) {
  nn::NamedTensors all = with_voxel(prefixed(net.state(), "model."), voxel);
  for (const KeptOption& k : kept)
    all.emplace_back(std::string("option") + k.flag, fk::full({}, k.value, {fk::DType::F64}));
  const auto kind = std::find(std::begin(kOptimizers), std::end(kOptimizers), optimizer);
  all.emplace_back(
      "optimizer_kind",
      fk::full({}, static_cast<double>(kind - std::begin(kOptimizers)), {fk::DType::I64}));
  for (auto& e : prefixed(opt.state(), "optim.")) all.push_back(e);
  all.emplace_back("epoch", fk::full({}, p.epoch, {fk::DType::I64}));
  // Where the default generator stands (dropout's masks draw from it): a
  // resume goes on from there, not from the seed's first draws.
  all.emplace_back(
      kRngOffset,
      fk::from_vector(std::vector<int64_t>{static_cast<int64_t>(fk::default_generator().offset())},
                      fk::Dims{}));
  all.emplace_back(kSeed, fk::from_vector(std::vector<int64_t>{static_cast<int64_t>(seed)},
                                          fk::Dims{}));  // the bits of the uint64
  all.emplace_back("best_miou", fk::full({}, p.best_miou, {fk::DType::F64}));
  if (p.loss_scale > 0) {
    all.emplace_back("loss_scale", fk::full({}, p.loss_scale, {fk::DType::F64}));
    all.emplace_back("loss_scale_growth_tracker",
                     fk::full({}, static_cast<double>(p.growth_tracker), {fk::DType::I64}));
  }
  nn::save_tensors(path, all);
}

Progress load_last(const std::string& path, nn::Module& net, nn::Optimizer& opt, double voxel,
                   const std::string& optimizer, uint64_t seed,
                   const std::vector<KeptOption>& kept) {
  const nn::NamedTensors all = nn::read_tensors(path);
  for (const auto& [n, t] : all) {
    for (const KeptOption& k : kept)  // an older checkpoint without them: not checked
      FK_CHECK(n != std::string("option") + k.flag || t.item() == k.value,
               "minkowski train --resume " + path,
               fmt::format("{} {} (the run being resumed)", k.flag, k.text(t.item())),
               fmt::format("{} {}", k.flag, k.text(k.value)));
    if (n == kSeed && t.dtype() == fk::DType::I64 && t.numel() == 1) {
      const auto saved = static_cast<uint64_t>(t.to_vector<int64_t>()[0]);
      FK_CHECK(saved == seed, "minkowski train --resume " + path,
               fmt::format("--seed {} (the run being resumed)", saved),
               fmt::format("--seed {}", seed));
    }
    FK_CHECK(n != kVoxelTensor || t.item() == voxel, "minkowski train --resume " + path,
             fmt::format("--voxel {} (the run being resumed)", t.item()),
             fmt::format("--voxel {}", voxel));
    if (n != "optimizer_kind") continue;
    // Another optimizer's state reads as another architecture's otherwise.
    const auto kind = static_cast<size_t>(t.item());
    FK_CHECK(kind < std::size(kOptimizers) && kOptimizers[kind] == optimizer,
             "minkowski train --resume " + path,
             fmt::format("--optimizer {} (the run being resumed)",
                         kind < std::size(kOptimizers) ? kOptimizers[kind] : "?"),
             "--optimizer " + optimizer);
  }
  nn::check_finite(all, "resume " + path);  // model and optimizer state alike
  nn::copy_named(net.state(), strip(all, "model."), "resume " + path);
  opt.load_state(strip(all, "optim."));
  Progress p;
  for (const auto& [n, t] : all) {
    if (n == "epoch") p.epoch = static_cast<int>(t.item());
    if (n == "best_miou") p.best_miou = t.item();
    if (n == "loss_scale") p.loss_scale = t.item();
    if (n == "loss_scale_growth_tracker") p.growth_tracker = static_cast<int64_t>(t.item());
    if (n == kRngOffset && t.dtype() == fk::DType::I64 && t.numel() == 1)
      fk::default_generator().set_offset(static_cast<uint64_t>(t.to_vector<int64_t>()[0]));
  }
  return p;
}

// A resumed run's log keeps its header and the rows of the epochs its
// checkpoint holds (1..epoch): a row written for an epoch whose checkpoint
// the run did not live to write is run again.
void rows_through(const std::string& log_path, int epoch) {
  std::ifstream in(log_path);
  std::string header, line, kept;
  std::getline(in, header);
  bool dropped = false;
  while (std::getline(in, line)) {
    // A row past the checkpoint, or one cut short (no newline: a full disk
    // or a kill mid-write), which the next row would otherwise extend.
    if (std::atoi(line.c_str()) > epoch || in.eof()) {
      dropped = true;
      continue;
    }
    kept += line + "\n";
  }
  if (!dropped) return;
  fk::replace_file(
      log_path,
      [&](const std::string& tmp) {
        std::ofstream out(tmp);
        out << header << "\n" << kept;
        FK_CHECK(out.good(), "minkowski train --resume", "a writable log", "'" + log_path + "'");
      },
      "minkowski train --resume");
}

// Where batches come from: generated scenes, generated shapes (classifier),
// or the point files of a folder (sorted by name; the last fifth, at least
// one, held out for validation).
class Source {
 public:
  explicit Source(const TrainOptions& o) : o_(o) {
    if (o.data.empty()) return;
    for (const auto& e : std::filesystem::directory_iterator(o.data)) {
      // Hidden files (macOS's ._x.ply beside x.ply) are no one's points.
      if (e.path().filename().string().starts_with(".")) continue;
      const std::string ext = data::point_file_extension(e.path().string());
      if (ext == ".ply" || ext == ".npy" || ext == ".xyz" || ext == ".txt")
        files_.push_back(e.path().string());
    }
    std::sort(files_.begin(), files_.end());
    FK_CHECK(files_.size() >= 2, "minkowski train --data " + o.data,
             "at least two .ply/.npy/.xyz/.txt files", fk::to_text(files_.size()));
    held_out_ = std::max<size_t>(1, files_.size() / 5);
    // Every file is read and its labels checked now, before step 0: read as
    // a step first met it, a malformed training file or a bad label stopped
    // a run in its second epoch (or never, with fewer steps than files).
    bool held_out_labelled = false;
    for (size_t k = 0; k < files_.size(); ++k) {  // the held-out files first
      const size_t i = (files_.size() - held_out_ + k) % files_.size();
      const data::PointCloud c = load(files_[i]);
      if (i >= files_.size() - held_out_)
        held_out_labelled =
            held_out_labelled || std::any_of(c.labels.begin(), c.labels.end(),
                                             [](int64_t l) { return l != nn::kIgnoreIndex; });
    }
    // With every held-out point ignored no epoch scores (mIoU NaN), so no
    // best.ckpt was written and the run reported a best mIoU of -1.
    FK_CHECK(
        held_out_labelled, "minkowski train --data " + o.data,
        "held-out files (the last " + fk::to_text(held_out_) + " by name) with some labelled point",
        "every held-out point ignored (-100)");
  }
  data::Batch train_batch(int64_t step) const {
    const data::AugmentOptions aug;
    if (files_.empty()) {
      std::vector<uint64_t> seeds;
      for (int b = 0; b < o_.batch; ++b) seeds.push_back(o_.seed * 1000003 + step * o_.batch + b);
      if (classifier(o_)) return data::shape_batch({}, seeds, o_.voxel);
      return data::scene_batch({}, seeds, o_.voxel, &aug);
    }
    std::vector<data::Voxelized> items;
    const size_t n = files_.size() - held_out_;
    for (int b = 0; b < o_.batch; ++b) {
      data::PointCloud c = load(files_[(step * o_.batch + b) % n]);
      data::augment(c, aug, o_.seed * 1000003 + step * o_.batch + b);
      items.push_back(data::voxelize(with_colours(std::move(c)), o_.voxel));
    }
    return data::collate(items);
  }
  std::vector<data::Batch> validation_batches() const {
    std::vector<data::Batch> out;
    if (files_.empty()) {
      // Held-out seeds live far from the training ones.
      const uint64_t first = (uint64_t{1} << 40) + o_.seed * 1000003;
      for (uint64_t i = 0; i < static_cast<uint64_t>(o_.val_scenes); ++i) {
        if (!classifier(o_)) {
          out.push_back(data::scene_batch({}, {first + i}, o_.voxel));
          continue;
        }
        std::vector<uint64_t> seeds;
        for (uint64_t b = 0; b < 16; ++b) seeds.push_back(first + 16 * i + b);
        out.push_back(data::shape_batch({}, seeds, o_.voxel));
      }
      return out;
    }
    for (size_t i = files_.size() - held_out_; i < files_.size(); ++i) {
      out.push_back(data::collate({data::voxelize(with_colours(load(files_[i])), o_.voxel)}));
    }
    return out;
  }

 private:
  data::PointCloud load(const std::string& path) const {
    data::PointCloud c = data::read_points(path);
    FK_CHECK(c.has_labels(), "minkowski train " + path, "per-point labels", "none");
    check_cloud(c, "minkowski train " + path, o_.classes, "--classes " + fk::to_text(o_.classes),
                o_.voxel);
    return c;
  }
  const TrainOptions& o_;
  std::vector<std::string> files_;
  size_t held_out_ = 0;
};

nn::ConfusionMatrix validate(nn::SparseModule& net, const TrainOptions& o, const Source& source,
                             fk::Device device) {
  nn::ConfusionMatrix confusion(o.classes);
  for (const data::Batch& b : source.validation_batches()) {
    const data::Batch d = data::to_device(b, device, o.coords == "device");
    nn::evaluate(net, d.input, d.labels, confusion);
  }
  return confusion;
}

}  // namespace

int train(const TrainOptions& options) {
  const TrainOptions o = resolved(options);
  if (o.threads > 0) fk::set_num_threads(o.threads);
  if (o.deterministic) minkowski::set_deterministic(true);
  const std::string last = o.out + "/last.ckpt", best = o.out + "/best.ckpt";
  // A resume reads a run that exists: its folder is not made for it.
  FK_CHECK(!o.resume || std::filesystem::exists(last), "minkowski train --resume",
           "a run folder with last.ckpt", "'" + o.out + "'");
  const fk::DType precision = nn::parse_precision(o.precision, "minkowski train --precision");
  const fk::Device device = device_option(o.device, "minkowski train --device");
  fk::manual_seed(o.seed);
  const std::unique_ptr<nn::SparseModule> network =
      make_network(network_choice(o), "minkowski train");
  nn::SparseModule& net = *network;
  // Before the optimizer: its moment buffers are made on the parameters' device.
  net.to(device);
  auto opt = make_optimizer(o, net);
  Progress progress;
  if (o.resume)
    progress = load_last(last, net, *opt, o.voxel, o.optimizer, o.seed, kept_options(options));
  // fp16 gradients underflow without loss scaling; bf16 has f32's range.
  std::optional<fk::amp::GradScaler> scaler;
  if (precision == fk::DType::F16) {
    scaler.emplace(fk::amp::GradScalerOptions{});
    // The scale and its count of clean steps: resumed with the scale alone,
    // the next growth came growth_interval steps after the resume, not
    // after the last change, and the runs parted.
    if (progress.loss_scale > 0) scaler->restore(progress.loss_scale, progress.growth_tracker);
  }
  const nn::StepOptions step_options{-100, {}, o.clip, precision, scaler ? &*scaler : nullptr};
  nn::ScheduleKind kind{};
  try {
    kind = nn::schedule_kind(o.schedule);
  } catch (const fk::Error& e) {  // named by the option
    throw fk::Error("minkowski train --schedule", e.expected(), e.given());
  }
  nn::LrSchedule schedule{kind, o.lr, int64_t{o.epochs} * o.steps_per_epoch, o.warmup};
  schedule.step_size = o.lr_step;
  schedule.gamma = o.lr_gamma;
  // The held-out data are read before the log is touched, and a new run's
  // log replaces an earlier run's only with its first row (with its
  // checkpoints): a bad --data file, held out or met mid-epoch, leaves the
  // earlier run's folder as it was.
  const Source source(o);
  // After every option, the device and the data are read: a refused one
  // leaves no empty run folder.
  std::filesystem::create_directories(o.out);
  const std::string log_path = o.out + "/log.csv";
  const bool log_has_rows =
      o.resume && std::filesystem::exists(log_path) && std::filesystem::file_size(log_path) > 0;
  if (log_has_rows) rows_through(log_path, progress.epoch);
  FK_CHECK(std::ofstream(log_path, std::ios::app).good(), "minkowski train --out",
           "a writable folder", "'" + o.out + "'");
  std::ofstream log;
  const bool tty = isatty(fileno(stderr));
  for (int epoch = progress.epoch; epoch < o.epochs; ++epoch) {
    double loss_sum = 0;
    int64_t voxels = 0, skipped = 0;  // the inputs (voxels: several points may share one)
    const auto start = std::chrono::steady_clock::now();
    for (int s = 0; s < o.steps_per_epoch; ++s) {
      const int64_t step = int64_t{epoch} * o.steps_per_epoch + s;
      opt->set_lr(schedule.at(step));
      // --coords device: each step's kernel maps are built on the device (a
      // MinkUNet18 step on 100k points took 0.60-0.72 of the host-coordinate
      // step's time on an H200; docs/performance.md, session 28).
      const data::Batch batch =
          data::to_device(source.train_batch(step), device, o.coords == "device");
      const nn::StepResult r = nn::train_step(net, *opt, batch.input, batch.labels, step_options);
      loss_sum += r.loss;
      skipped += r.skipped;
      voxels += batch.input.size();
      const double secs =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (tty) {
        std::fprintf(stderr, "\repoch %d/%d step %d/%d loss %.4f %.0f voxels/s   ", epoch + 1,
                     o.epochs, s + 1, o.steps_per_epoch, loss_sum / (s + 1), voxels / secs);
      }
    }
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const nn::ConfusionMatrix c = validate(net, o, source, device);
    progress.epoch = epoch + 1;
    if (scaler) {
      progress.loss_scale = scaler->scale_value();
      progress.growth_tracker = scaler->growth_tracker();
    }
    if (!log.is_open()) {
      log.open(log_path, log_has_rows ? std::ios::app : std::ios::trunc);
      if (!log_has_rows) log << "epoch,loss,val_miou,val_accuracy,lr,voxels_per_s,skipped_steps\n";
    }
    const bool improved = c.miou() > progress.best_miou;
    if (improved) {
      progress.best_miou = c.miou();
      nn::save_tensors(best, with_voxel(net.state(), o.voxel));
    }
    // The row before the checkpoint: a kill between them leaves a row for an
    // epoch the resume runs again (and drops: rows_through), where the other
    // order lost that epoch's row for good.
    log << epoch + 1 << ',' << loss_sum / o.steps_per_epoch << ',' << c.miou() << ','
        << c.accuracy() << ',' << opt->lr() << ',' << voxels / secs << ',' << skipped << '\n';
    log.flush();
    FK_CHECK(!log.fail(), "minkowski train", "a successful write", "'" + o.out + "/log.csv'");
    save_last(last, net, *opt, progress, o.voxel, o.optimizer, o.seed, kept_options(options));
    write_learning_curves(o.out + "/log.csv", o.out + "/curves.png",
                          "minkowski train: " + network_name(network_choice(o)) + ", " +
                              std::to_string(o.classes) + " classes, " + o.precision);
    std::fprintf(stderr, "%sepoch %d: loss %.4f, val mIoU %.4f, accuracy %.4f%s\n", tty ? "\r" : "",
                 epoch + 1, loss_sum / o.steps_per_epoch, c.miou(), c.accuracy(),
                 improved ? " (best)" : "");
  }
  std::printf("best val mIoU %.4f; checkpoints and log.csv in %s\n", progress.best_miou,
              o.out.c_str());
  return 0;
}

}  // namespace minkowski_app
