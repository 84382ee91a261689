// nefi gallery [--budget 1] [--out runs/gallery] [--instances a,b]: every
// registered instance's smoke preset run (its methods, at --budget times its
// steps) into OUT/<instance>/ as `nefi run` writes it, then OUT/index.html
// (nefi/io/gallery_html.h) and OUT/gallery.json. A failing instance is a
// section with its error; the others go on.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <numeric>
#include <variant>

#include <fmt/format.h>

#include "common.h"
#include "fk/error.h"
#include "fk/parallel.h"
#include "nefi/bench/campaign.h"
#include "nefi/bench/merge.h"
#include "nefi/io/gallery_html.h"
#include "nefi/io/run_writer.h"
#include "run_request.h"

namespace fs = std::filesystem;

namespace nefi::cli {
namespace {

struct GalleryRequest {
  double budget = 1.0;
  std::string out = "runs/gallery";
  std::vector<std::string> instances;
  int threads = 0;
};

// The preset's total steps: its `steps` list summed, or its one count.
int64_t total_steps(const Params& config) {
  for (const auto& e : config.entries()) {
    if (e.key != "steps") continue;
    if (const auto* l = std::get_if<std::vector<double>>(&e.value))
      return std::llround(std::accumulate(l->begin(), l->end(), 0.0));
    if (const auto* i = std::get_if<int64_t>(&e.value)) return *i;
  }
  return 0;
}

GalleryEntry run_instance(const Instance& inst, const GalleryRequest& g,
                          const std::vector<fs::path>& dirs) {
  GalleryEntry e;
  e.instance = inst.name();
  e.summary = inst.summary();
  e.dir = inst.name();
  const auto t0 = std::chrono::steady_clock::now();
  try {
    RunRequest r;
    r.target = inst.name();
    r.smoke = true;
    r.smoke_steps = 0;
    RunConfig cfg = resolve_config(r, dirs);
    // Every stage's steps times the budget (`steps`, the budget of the
    // neural field and of most baselines). Below 1 the preset's total also
    // caps every solver method (a grid or PINN baseline's own steps key
    // included); an instance without `steps` runs as its preset says.
    if (g.budget != 1.0 && cfg.config.has("steps")) {
      bench::scale_steps(cfg.config, g.budget);
      if (g.budget < 1.0) cfg.max_total_steps = std::max<int64_t>(1, total_steps(cfg.config));
    }
    std::vector<RunOutput> outs;
    for (const auto& m : cfg.methods)
      outs.push_back(inst.run(cfg.config, m, cfg.seed, solver_options(cfg)));
    const fs::path dir = fs::path(g.out) / e.dir;
    write_run_dir(dir.string(), cfg, outs, fk::get_num_threads());
    for (const char* f : {"panel.png", "history.png"})
      if (fs::exists(dir / f)) e.images.push_back(e.dir + "/" + f);
    for (const RunOutput& o : outs)
      e.methods.push_back({o.method, o.metrics, o.result.total_s, o.result.total_steps()});
  } catch (const std::exception& ex) {
    e.error = ex.what();
  }
  e.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return e;
}

int gallery_cmd(const GalleryRequest& g, const std::vector<fs::path>& dirs) {
  FK_CHECK(std::isfinite(g.budget) && g.budget > 0 && g.budget <= 100, "--budget",
           "a factor in (0, 100]", fmt::format("{}", g.budget));
  set_threads(g.threads);
  std::vector<InstancePtr> chosen;
  std::string names;  // the registered ones, for the error
  for (const auto& i : all_instances()) names += (names.empty() ? "" : ", ") + i->name();
  for (const auto& name : g.instances) {
    for (const auto& earlier : chosen)
      FK_CHECK(earlier->name() != name, "--instances", "each instance once",
               "'" + name + "' twice");
    const auto all = all_instances();
    const auto it = std::find_if(all.begin(), all.end(),
                                 [&name](const InstancePtr& i) { return i->name() == name; });
    FK_CHECK(it != all.end(), "--instances", "registered instances (" + names + ")",
             "'" + name + "'");
    chosen.push_back(*it);
  }
  if (chosen.empty()) chosen = all_instances();
  bench::prepare_out_dir(g.out);
  std::vector<GalleryEntry> entries;
  for (const auto& inst : chosen) {
    entries.push_back(run_instance(*inst, g, dirs));
    const GalleryEntry& e = entries.back();
    std::cerr << fmt::format("[gallery] {} {:.2f} s{}\n", e.instance, e.wall_s,
                             e.error.empty() ? "" : ": failed: " + e.error);
  }
  // Each text formed before its file is opened: a failure leaves no empty file.
  const std::string html = gallery_html(entries, "nefi gallery: smoke runs of every instance");
  const std::string json = gallery_json(entries);
  std::ofstream(fs::path(g.out) / "index.html") << html;
  std::ofstream(fs::path(g.out) / "gallery.json") << json;
  int failed = 0;
  for (const auto& e : entries) failed += !e.error.empty();
  std::cout << fmt::format("gallery: {} instances ({} failed) -> {}/index.html\n", entries.size(),
                           failed, g.out);
  return failed ? 1 : 0;
}

}  // namespace

Command add_gallery(CLI::App& app, const Context& ctx) {
  auto g = std::make_shared<GalleryRequest>();
  auto* sub = app.add_subcommand(
      "gallery", "run every instance's smoke preset and write an HTML page of the results");
  sub->add_option("--budget", g->budget,
                  "multiply each smoke preset's total steps (default 1: its own budget)");
  sub->add_option("--out,-o", g->out, "output directory (default runs/gallery)")
      ->check(non_empty_directory());
  sub->add_option("--instances", g->instances, "comma list (default: every registered instance)")
      ->delimiter(',');
  sub->add_option("--threads", g->threads,
                  "fk threads (default, and 0: $OMP_NUM_THREADS if set, else 1)")
      ->check(thread_count());
  sub->footer(
      "Examples:\n  nefi gallery\n  nefi gallery --budget 0.2 --out runs/gallery\n"
      "  nefi gallery --instances toy1d,deconvolution");
  return {sub, [g, &ctx] { return gallery_cmd(*g, ctx.config_dirs); }};
}

}  // namespace nefi::cli
