// nefi fit (--matrix A.npy | --operator KIND ...) --data y.npy [--shape n,m]
// [--prior P] ...: a bring-your-own problem from the command line
// (nefi/byop/): the forward model is a dense matrix over the field's cells or
// one of the built-in operators (fit_operators.h), every other choice is
// auto_problem's. Writes the fields, prediction, report.md,
// fit.json, history and fit.png (byop/fit_output.h) and prints one summary
// line. --autotune LEVEL first chooses the lr, each penalty's strength and
// (standard, thorough) the budget by pilot solves (tune/fit_autotune.h) and
// writes autotune.md and autotune.json; --diagnose writes nefi diagnose's
// files for the model linearized at the fitted field into <out>/diagnostics;
// --refine MODE sharpens the fit into phases (solve/refine.h) and writes
// <out>/refine (the field to use, the refit and why it was kept or not).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "common.h"
#include "fit_operators.h"
#include "fk/device.h"
#include "fk/error.h"
#include "fk/io/npy.h"
#include "fk/ops/join.h"
#include "nefi/bench/merge.h"
#include "nefi/byop/fit_output.h"
#include "nefi/byop/matrix_model.h"
#include "nefi/byop/quick_report.h"
#include "nefi/byop/refine_fit.h"
#include "nefi/diagnostics/data_fit.h"
#include "nefi/diagnostics/report.h"
#include "nefi/operators/operator.h"
#include "nefi/tune/fit_autotune.h"

namespace nefi::cli {
namespace {

struct FitRequest {
  std::string matrix, data, mask, support, shape, noise = "auto", prior = "unconstrained";
  OperatorRequest op;  // a built-in operator instead of --matrix, with what it takes
  std::string representation = "neural", budget = "default", out = "runs/fit";
  std::string autotune;  // empty: none; else the level
  bool diagnose = false;
  std::string refine;  // empty: none; else the refine mode
  int refine_levels = 0;
  std::optional<double> lr;
  double tau = 1.0;
  uint64_t seed = 0;
  int threads = 0, rank = 8, shapes = 4, harmonics = 6, layers = 3, layer_axis = 0, modes = 0;
  int vertices = 6;
  double smoothness = 2.0;
  std::string device = "cpu";  // where the fit trains
  bool rank_given = false, shapes_given = false, harmonics_given = false, layers_given = false;
  bool spectral_given = false, vertices_given = false;
  bool quiet = false;
};

int fit_cmd(const FitRequest& r) {
  set_threads(r.threads);
  FK_CHECK(r.matrix.empty() != r.op.kind.empty(), "nefi fit", "one model: --matrix or --operator",
           r.matrix.empty() ? "neither" : "both");
  check_operator_options(r.op);
  const fk::Device device = fk::parse_device(r.device);
  fk::check_usable(device, "--device");  // before any work
  // Integers are numbers too: counts (photon or event numbers) as data, as
  // in run.data, and a 0/1 sampling matrix; a bool array is neither.
  const auto numbers = [](fk::Tensor t) {
    return t.dtype() == fk::DType::I32 || t.dtype() == fk::DType::I64 ? t.to(fk::DType::F64) : t;
  };
  Measurement m;
  m.data = numbers(fk::read_npy(r.data));
  Model model;
  if (r.op.kind.empty()) {
    const fk::Tensor a = numbers(fk::read_npy(r.matrix));
    FK_CHECK(a.dim() == 2, "--matrix", "a 2-D matrix (measurements, cells)", a.shape().str());
    model.shape = field_shape(r.shape, fk::Dims{a.size(1)}, "--matrix");
    model.op = matrix_operator(a, model.shape, m.data.shape());
  } else {
    model = builtin_model(r.op, r.shape, m);
  }
  const fk::Dims& shape = model.shape;
  if (!r.mask.empty()) m.mask = read_real_npy(r.mask, "--mask");
  // A weight per k-space sample weighs its real and imaginary parts alike.
  if (m.mask.defined() && m.data.dim() == 2 && m.data.size(0) == 2 &&
      r.op.kind == "fourier_sampling" && m.mask.shape() == fk::Dims({m.data.size(1)}))
    m.mask = fk::stack({m.mask, m.mask}, 0);
  FK_CHECK(!m.mask.defined() || m.mask.shape() == m.data.shape(), "--mask",
           "a mask of the data's shape " + m.data.shape().str(), m.mask.shape().str());
  AutoOptions o;
  o.prior = r.prior;
  if (!r.support.empty())  // its shape and values: auto_problem
    o.supports["x"] = read_real_npy(r.support, "--support").to(fk::DType::F64);
  o.representation = r.representation;
  o.rank = r.rank;
  o.shapes = r.shapes;
  o.harmonics = r.harmonics;
  o.vertices = r.vertices;
  o.layers = r.layers;
  o.layer_axis = r.layer_axis;
  o.modes = r.modes;
  o.smoothness = r.smoothness;
  FK_CHECK(!r.spectral_given || r.representation == "spectral", "--modes/--smoothness",
           "--representation spectral", "--representation " + r.representation);
  FK_CHECK(!r.rank_given || r.representation == "lowrank", "--rank", "--representation lowrank",
           "--representation " + r.representation);
  const bool over_layers = r.representation.starts_with("layers+");
  FK_CHECK(!r.shapes_given || r.representation == "blobs" || r.representation == "ellipses" ||
               r.representation == "stars" || r.representation == "polygons" || over_layers,
           "--shapes",
           "--representation blobs, ellipses, stars, polygons or layers+(blobs|ellipses)",
           "--representation " + r.representation);
  FK_CHECK(!r.vertices_given || r.representation == "polygons", "--vertices",
           "--representation polygons", "--representation " + r.representation);
  FK_CHECK(!r.harmonics_given || r.representation == "stars" || r.representation == "layers" ||
               over_layers,
           "--harmonics", "--representation stars, layers or layers+(blobs|ellipses)",
           "--representation " + r.representation);
  FK_CHECK(!r.layers_given || r.representation == "layers" || over_layers, "--layers/--layer-axis",
           "--representation layers or layers+(blobs|ellipses)",
           "--representation " + r.representation);
  o.budget = r.budget;
  o.seed = r.seed;
  FK_CHECK(std::isfinite(r.tau) && r.tau > 0, "--tau", "a finite factor > 0", fk::to_text(r.tau));
  o.discrepancy_tau = r.tau;
  if (r.lr) {
    FK_CHECK(*r.lr > 0, "--lr", "a learning rate > 0", fk::to_text(*r.lr));
    o.lr = r.lr;
  }
  if (r.noise != "auto") {
    char* end = nullptr;
    const double s = std::strtod(r.noise.c_str(), &end);
    FK_CHECK(!r.noise.empty() && *end == '\0' && s >= 0 && std::isfinite(s), "--noise",
             "auto or a finite sigma >= 0", "'" + r.noise + "'");
    o.noise_std = s;
  }
  std::optional<FitRefineOptions> refine;
  FK_CHECK(r.refine_levels == 0 || !r.refine.empty(), "--refine-levels", "--refine MODE beside it",
           "no --refine");
  if (!r.refine.empty()) {  // checked before the fit
    refine.emplace();
    refine->refine.mode = r.refine;
    refine->refine.levels = r.refine_levels;
    refine->seed = r.seed;
    refine->device = device;
    try {  // the engine's own checks, named by the flag
      refine->refine.validate();
    } catch (const fk::Error& e) {
      const bool levels = e.where().find("'levels'") != std::string::npos;
      throw fk::Error(levels ? "--refine-levels" : "--refine", e.expected(), e.given());
    }
    PriorSpec prior = parse_prior(r.prior);
    prior.known_support = prior.known_support || !r.support.empty();
    check_refinable(prior);
  }
  if (device.is_cuda()) {  // before the autotune pilots and the constant fits
    const std::string refusal = device_solve_refusal(*model.op, device);
    FK_CHECK(refusal.empty(), "--device", "a model with a device path", refusal);
  }
  std::optional<tune::LevelPlan> plan;
  if (!r.autotune.empty()) plan = tune::level_plan(r.autotune, "--autotune");
  bench::prepare_out_dir(r.out);
  std::optional<tune::FitTuneReport> tuned;
  if (plan) {  // pilot solves choose lr, strengths (and budget)
    const bool tty = stderr_is_tty() && !r.quiet;
    tuned = tune::autotune_fit(
        model.op, shape, m, o, *plan, {},
        [tty](const std::string& l) {
          if (tty) std::cerr << "[autotune] " << l << "\n";
        },
        device);  // the pilots train where the fit does
    std::string chosen;
    for (const tune::Decision& d : tuned->decisions)
      chosen += fmt::format("{}{} {} -> {}", chosen.empty() ? "" : ", ", d.key, d.before, d.chosen);
    std::cout << "autotune (" << plan->name << "): " << chosen << "\n";
  }
  const AutoProblem ap =
      tuned ? tune::tuned_problem(model.op, shape, m, *tuned) : auto_problem(model.op, shape, m, o);
  SolverOptions so;
  so.device = device;
  if (stderr_is_tty() && !r.quiet)
    so.callbacks.push_back([](const StepInfo& s) {
      if (s.global_step % 10 == 0 || s.global_step == s.total_steps)
        std::fprintf(stderr, "\rfit  step %d/%d  loss %.4e  lr %.2e   ", s.global_step,
                     s.total_steps, s.total, s.lr);
      return true;
    });
  const Result res = ap.solve(so);
  if (stderr_is_tty() && !r.quiet) std::fprintf(stderr, "\n");
  // What an earlier fit left here goes only now, with this one's solve done
  // (a fit that fails on the way leaves the earlier result whole).
  clear_fit_outputs(r.out);
  write_fit(r.out, ap, res);
  if (tuned) {
    const std::filesystem::path dir(r.out);
    for (const auto& [name, text] : {std::pair{"autotune.md", tune::fit_autotune_md(*tuned)},
                                     {"autotune.json", tune::fit_autotune_json(*tuned)}}) {
      std::ofstream f(dir / name);
      f << text;
      FK_CHECK(f.good(), "nefi fit --autotune", "a writable " + (dir / name).string(),
               "a failed write");
    }
  }
  std::string chi = "chi -";
  const auto fit = diagnostics::data_fit(ap.problem.measurement, res.prediction);
  if (fit && fit->rmse_over_sigma) chi = fmt::format("chi {:.3g}", *fit->rmse_over_sigma);
  std::cout << fmt::format("fit  {} steps ({})  data PSNR {:.2f} dB  {}  {:.2f} s{}  -> {}\n",
                           res.total_steps(), res.stages.back().stop, fit ? fit->psnr_db : 0.0, chi,
                           res.total_s, device.is_cuda() ? " on " + res.device : "", r.out);
  if (r.diagnose) {  // what the data tell about the fitted field
    diagnostics::DiagnoseOptions dopt;
    dopt.device = device;  // the products where the fit trained
    diagnostics::Diagnostics d = diagnostics::diagnose(
        *ap.problem.op, res.fields.at("x").to(fk::DType::F64), ap.problem.measurement, dopt);
    d.instance = "nefi fit";
    d.noise_estimated = ap.noise_estimated;
    d.method = ap.problem.op->kind();
    d.at = "the fitted field";
    const std::string dir = (std::filesystem::path(r.out) / "diagnostics").string();
    diagnostics::write_diagnostics(dir, d);
    const auto& sv = d.spectrum.singular_values;
    std::cout << fmt::format(
        "diagnose  sigma_1 {:.4g}  sigma_{} {:.4g}  condition {:.4g}  blind cells {:.1f} %  -> "
        "{}\n",
        sv.front(), sv.size(), sv.back(), d.condition, 100 * d.probes.blind_fraction, dir);
  }
  if (refine) {  // sharpen into phases, kept only where the data allow
    RefineOptions used;
    const RefineReport rep = refine_fit(ap, res.fields.at("x").to(fk::DType::F64), *refine, &used);
    const std::string dir = (std::filesystem::path(r.out) / "refine").string();
    write_refine(dir, used, rep);
    std::string levels;
    for (double v : rep.levels) levels += fmt::format("{}{:.4g}", levels.empty() ? "" : ", ", v);
    std::cout << fmt::format("refine {}  {}  chi^2 {:.3g} -> {:.3g}  levels [{}]  -> {}\n",
                             refine->refine.mode,
                             rep.accepted ? "accepted" : "refused: " + rep.reason, rep.chi_smooth,
                             rep.chi_refined, levels, dir);
  }
  if (!r.quiet) std::cout << quick_report(ap, res);
  return 0;
}

}  // namespace

Command add_fit(CLI::App& app, const Context&) {
  auto r = std::make_shared<FitRequest>();
  auto* sub = app.add_subcommand(
      "fit",
      "fit a neural field through your own forward model (a matrix or a built-in) to your data");
  sub->add_option("--matrix", r->matrix, "the forward model: A.npy of shape (measurements, cells)");
  add_operator_options(sub, r->op);
  sub->add_option("--data", r->data,
                  "the measurement: y.npy (A's rows in C order; complex for fourier_sampling, "
                  "the masked frequencies in numpy.fft order)")
      ->required();
  sub->add_option("--shape", r->shape,
                  "the field's grid, e.g. 64,64 (default: A's columns, or the pattern's shape)");
  sub->add_option("--mask", r->mask, "per-measurement weights in [0, 1] (.npy, the data's shape)");
  sub->add_option("--support", r->support,
                  "the field's known support (.npy, the field's shape, 1 inside, 0 outside)");
  sub->add_option("--noise", r->noise, "auto (estimated from the data) or the noise sigma");
  sub->add_option("--prior", r->prior,
                  "e.g. \"nonnegative + smooth\", \"bounded(0, 1) + tv(0.5)\", \"binary\", "
                  "\"conserved(1) + increasing(0)\" (default unconstrained)");
  sub->add_option("--representation", r->representation,
                  "neural | hash | grid | lowrank | blobs | ellipses | stars | polygons | "
                  "layers | layers+blobs | layers+ellipses | spectral");
  auto* rank = sub->add_option("--rank", r->rank, "lowrank: the CP rank (default 8)");
  auto* shapes = sub->add_option("--shapes", r->shapes,
                                 "blobs, ellipses, stars, polygons, layers+(blobs|ellipses): "
                                 "shapes per field (default 4)");
  auto* harmonics = sub->add_option("--harmonics", r->harmonics,
                                    "stars: the outline's highest angular degree, 3-8; layers and "
                                    "layers+(blobs|ellipses): the interfaces' lateral cosine "
                                    "degree, 0-8 (default 6)");
  auto* vertices = sub->add_option("--vertices", r->vertices,
                                   "polygons: corners per polygon, 3-16 (default 6; 2-D fields)");
  auto* layers = sub->add_option("--layers", r->layers,
                                 "layers, layers+(blobs|ellipses): strata per field (default 3)");
  auto* layer_axis = sub->add_option("--layer-axis", r->layer_axis,
                                     "layers, layers+(blobs|ellipses): the axis they stack along "
                                     "(default 0)");
  auto* modes =
      sub->add_option("--modes", r->modes, "spectral: cosines per axis (default 0: one per cell)");
  auto* smoothness = sub->add_option(
      "--smoothness", r->smoothness,
      "spectral: s in the modes' gains (1 + k^2)^(-s/2), k in half periods across the longest "
      "axis (default 2; 0: every mode alike)");
  sub->add_option("--budget", r->budget, "quick | default | thorough | a step count");
  sub->add_option(
      "--lr", r->lr,
      "learning rate (default: decided by the field's size; spectral: where each L-BFGS "
      "line search starts, 1)");
  sub->add_option("--tau", r->tau, "Morozov stop at RMSE <= tau sigma (default 1)");
  sub->add_flag("--diagnose", r->diagnose,
                "after the fit, the model linearized there: singular values, sensitivity and "
                "null space into <out>/diagnostics/ (nefi diagnose's files)");
  sub->add_option("--autotune", r->autotune,
                  "quick | standard | thorough: choose the lr, each penalty's strength (and the "
                  "budget) by pilot solves first; writes autotune.md and autotune.json");
  sub->add_option("--refine", r->refine,
                  "levelset | voxels | tv_sharpen | phasefield: after the fit, sharpen it into "
                  "phases, kept only when the data allow; writes <out>/refine/");
  sub->add_option("--refine-levels", r->refine_levels, "--refine's phase count (0: auto)");
  sub->add_option("--seed", r->seed, "the field's initialisation seed")->check(non_negative_seed());
  sub->add_option("--out,-o", r->out, "output directory (default runs/fit)")
      ->check(non_empty_directory());
  sub->add_option("--threads", r->threads,
                  "fk threads (default, and 0: $OMP_NUM_THREADS if set, else 1)")
      ->check(thread_count());
  sub->add_option("--device", r->device,
                  "where the fit trains: cpu (default) or cuda[:N], any representation "
                  "through a model with a device path, --autotune's "
                  "pilots, --diagnose's products and --refine's refit too");
  sub->add_flag("--quiet,-q", r->quiet,
                "no progress and no report: the summary line (and the --diagnose / --refine "
                "lines when asked)");
  sub->footer(
      "Writes <out>/x.npy, prediction.npy, report.md (chi verdict and every automatic decision),\n"
      "fit.json, history.csv, history.png and fit.png; with --refine, <out>/refine/.\n"
      "Examples:\n  nefi fit --matrix blur.npy --data y.npy --shape 64,64 --prior \"nonnegative + "
      "tv\"\n  nefi fit --operator fourier_sampling --pattern kmask.npy --data kspace.npy --prior "
      "\"nonnegative + tv\"");
  return {sub, [r, rank, shapes, harmonics, vertices, layers, layer_axis, modes, smoothness] {
            r->rank_given = rank->count() > 0;
            r->shapes_given = shapes->count() > 0;
            r->harmonics_given = harmonics->count() > 0;
            r->vertices_given = vertices->count() > 0;
            r->layers_given = layers->count() + layer_axis->count() > 0;
            r->spectral_given = modes->count() + smoothness->count() > 0;
            return fit_cmd(*r);
          }};
}

}  // namespace nefi::cli
