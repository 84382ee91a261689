// nefi fit --matrix A.npy --data y.npy [--shape n,m] [--prior P] ...: a
// bring-your-own problem from the command line (nefi/byop/): the forward
// model is a dense matrix over the field's cells, every other choice is
// auto_problem's. Writes the fields, prediction, report.md, fit.json,
// history and fit.png (byop/fit_output.h) and prints one summary line.
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "common.h"
#include "fk/error.h"
#include "fk/io/npy.h"
#include "nefi/bench/merge.h"
#include "nefi/byop/fit_output.h"
#include "nefi/byop/matrix_model.h"
#include "nefi/byop/quick_report.h"
#include "nefi/diagnostics/data_fit.h"

namespace nefi::cli {
namespace {

struct FitRequest {
  std::string matrix, data, mask, support, shape, noise = "auto", prior = "unconstrained";
  std::string representation = "neural", budget = "default", out = "runs/fit";
  std::optional<double> lr;
  double tau = 1.0;
  uint64_t seed = 0;
  int threads = 0, rank = 8;
  bool quiet = false;
};

fk::Dims parse_shape(const std::string& s, const fk::Tensor& a) {
  if (s.empty()) return fk::Dims{a.size(1)};
  std::vector<int64_t> dims;
  std::stringstream in(s);
  std::string part;
  while (std::getline(in, part, ',')) {
    char* end = nullptr;
    const long v = std::strtol(part.c_str(), &end, 10);
    FK_CHECK(!part.empty() && *end == '\0' && v >= 1, "--shape",
             "1 to 3 positive integers separated by commas", "'" + s + "'");
    dims.push_back(v);
  }
  FK_CHECK(dims.size() >= 1 && dims.size() <= 3, "--shape", "1 to 3 axes", "'" + s + "'");
  return fk::Dims(dims);
}

int fit_cmd(const FitRequest& r) {
  set_threads(r.threads);
  const fk::Tensor a = fk::read_npy(r.matrix);
  Measurement m;
  m.data = fk::read_npy(r.data);
  if (!r.mask.empty()) m.mask = fk::read_npy(r.mask);
  FK_CHECK(!m.mask.defined() || m.mask.shape() == m.data.shape(), "--mask",
           "a mask of the data's shape " + m.data.shape().str(), m.mask.shape().str());
  FK_CHECK(a.dim() == 2, "--matrix", "a 2-D matrix (measurements, cells)", a.shape().str());
  const fk::Dims shape = parse_shape(r.shape, a);
  AutoOptions o;
  o.prior = r.prior;
  if (!r.support.empty())  // its shape and values: auto_problem
    o.supports["x"] = fk::read_npy(r.support).to(fk::DType::F64);
  o.representation = r.representation;
  o.rank = r.rank;
  o.budget = r.budget;
  o.seed = r.seed;
  FK_CHECK(r.tau > 0, "--tau", "a factor > 0", std::to_string(r.tau));
  o.discrepancy_tau = r.tau;
  if (r.lr) {
    FK_CHECK(*r.lr > 0, "--lr", "a learning rate > 0", std::to_string(*r.lr));
    o.lr = r.lr;
  }
  if (r.noise != "auto") {
    char* end = nullptr;
    const double s = std::strtod(r.noise.c_str(), &end);
    FK_CHECK(!r.noise.empty() && *end == '\0' && s >= 0, "--noise", "auto or a sigma >= 0",
             "'" + r.noise + "'");
    o.noise_std = s;
  }
  const AutoProblem ap = auto_problem(matrix_operator(a, shape, m.data.shape()), shape, m, o);
  bench::prepare_out_dir(r.out);
  SolverOptions so;
  if (stderr_is_tty() && !r.quiet)
    so.callbacks.push_back([](const StepInfo& s) {
      if (s.global_step % 10 == 0 || s.global_step == s.total_steps)
        std::fprintf(stderr, "\rfit  step %d/%d  loss %.4e  lr %.2e   ", s.global_step,
                     s.total_steps, s.total, s.lr);
      return true;
    });
  const Result res = ap.solve(so);
  if (stderr_is_tty() && !r.quiet) std::fprintf(stderr, "\n");
  write_fit(r.out, ap, res);
  std::string chi = "chi -";
  const auto fit = diagnostics::data_fit(ap.problem.measurement, res.prediction);
  if (fit && fit->rmse_over_sigma) chi = fmt::format("chi {:.3g}", *fit->rmse_over_sigma);
  std::cout << fmt::format("fit  {} steps ({})  data PSNR {:.2f} dB  {}  {:.2f} s  -> {}\n",
                           res.total_steps(), res.stages.back().stop, fit ? fit->psnr_db : 0.0, chi,
                           res.total_s, r.out);
  if (!r.quiet) std::cout << quick_report(ap, res);
  return 0;
}

}  // namespace

Command add_fit(CLI::App& app, const Context&) {
  auto r = std::make_shared<FitRequest>();
  auto* sub = app.add_subcommand(
      "fit", "fit a neural field through your own forward model (a matrix) to your data");
  sub->add_option("--matrix", r->matrix, "the forward model: A.npy of shape (measurements, cells)")
      ->required();
  sub->add_option("--data", r->data, "the measurement: y.npy, A's rows in C order")->required();
  sub->add_option("--shape", r->shape, "the field's grid, e.g. 64,64 (default: A's columns)");
  sub->add_option("--mask", r->mask, "per-measurement weights in [0, 1] (.npy, the data's shape)");
  sub->add_option("--support", r->support,
                  "the field's known support (.npy, the field's shape, 1 inside, 0 outside)");
  sub->add_option("--noise", r->noise, "auto (estimated from the data) or the noise sigma");
  sub->add_option("--prior", r->prior,
                  "e.g. \"nonnegative + smooth\", \"bounded(0, 1) + tv(0.5)\", \"binary\", "
                  "\"conserved(1) + increasing(0)\" (default unconstrained)");
  sub->add_option("--representation", r->representation, "neural | hash | grid | lowrank");
  sub->add_option("--rank", r->rank, "lowrank: the CP rank (default 8)");
  sub->add_option("--budget", r->budget, "quick | default | thorough | a step count");
  sub->add_option("--lr", r->lr, "learning rate (default: decided by the field's size)");
  sub->add_option("--tau", r->tau, "Morozov stop at RMSE <= tau sigma (default 1)");
  sub->add_option("--seed", r->seed, "the field's initialisation seed");
  sub->add_option("--out,-o", r->out, "output directory (default runs/fit)");
  sub->add_option("--threads", r->threads, "fk threads (default 1, or $OMP_NUM_THREADS)");
  sub->add_flag("--quiet,-q", r->quiet, "only the summary line");
  sub->footer(
      "Writes <out>/x.npy, prediction.npy, report.md (chi verdict and every automatic decision),\n"
      "fit.json, history.csv, history.png and fit.png.\n"
      "Example:\n  nefi fit --matrix blur.npy --data y.npy --shape 64,64 --prior \"nonnegative + "
      "tv\"");
  return {sub, [r] { return fit_cmd(*r); }};
}

}  // namespace nefi::cli
