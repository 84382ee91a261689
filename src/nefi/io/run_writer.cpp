#include "nefi/io/run_writer.h"

#include <chrono>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "fk/error.h"
#include "fk/io/npy.h"
#include "fk/io/replace_file.h"
#include "nefi/diagnostics/data_fit.h"
#include "nefi/io/run_figures.h"

namespace nefi {
namespace {

// A run's files are written whole (fk::replace_file): a full disk once left
// a 0-byte metrics.json and exit 0, a kill a half field.
void write_text(const std::string& path, const std::string& text) {
  fk::replace_file(
      path,
      [&](const std::string& tmp) {
        std::ofstream f(tmp);
        FK_CHECK(f.good(), "nefi::write_run_dir", "a writable path", path);
        f << text;
        f.close();
        FK_CHECK(!f.fail(), "nefi::write_run_dir", "a successful write", path);
      },
      "nefi::write_run_dir");
}

void write_npy_whole(const std::string& path, const fk::Tensor& t) {
  fk::replace_file(
      path,
      [&](const std::string& tmp) {
        try {
          fk::write_npy(tmp, t);
        } catch (const fk::Error&) {  // it names the temporary
          throw fk::Error("nefi::write_run_dir", "a successful write", path);
        }
      },
      "nefi::write_run_dir");
}

// A run written into the folder of an earlier one replaces that run's
// outputs: files this run may not write again (another method's field, a
// ground truth or a figure it has none of) would otherwise sit beside its
// own and contradict metrics.json. Only an earlier run's outputs go (the
// methods its metrics.json names and the fixed names), never the run's
// inputs; checkpoints stay (a resume reads them).
void clear_earlier_run(const std::string& dir, const RunConfig& cfg) {
  namespace fs = std::filesystem;
  const fs::path metrics = fs::path(dir) / "metrics.json";
  if (!fs::is_regular_file(metrics)) return;
  std::vector<std::string> names{"ground_truth.npy", "panel.png", "history.png", "history.csv"};
  try {
    const nlohmann::json j = nlohmann::json::parse(std::ifstream(metrics));
    // Only a folder this writer made (its metrics.json's own keys) is
    // cleared: another program's metrics.json leaves everything alone.
    if (!j.is_object() || !j.contains("instance") || !j.contains("config_hash") ||
        !j.contains("methods") || !j["methods"].is_object())
      return;
    for (const auto& [m, _] : j["methods"].items()) {
      // A method is a plain name: nothing outside the folder is named.
      if (m.empty() || fs::path(m).filename() != m || m == "." || m == "..") continue;
      names.push_back(m + ".npy");
      names.push_back("history-" + m + ".csv");
      const nlohmann::json& e = j["methods"][m];
      if (e.is_object() && e.contains("fields") && e["fields"].is_array())
        for (const auto& f : e["fields"])
          if (f.is_string() &&
              fs::path(m + "-" + f.get<std::string>()).filename() == m + "-" + f.get<std::string>())
            names.push_back(m + "-" + f.get<std::string>() + ".npy");
    }
  } catch (const nlohmann::json::exception&) {
    return;  // not a metrics.json we wrote
  }
  std::error_code ec;
  for (const std::string& n : names) {
    const fs::path p = fs::path(dir) / n;
    if (fs::equivalent(p, cfg.data, ec) || fs::equivalent(p, cfg.mask, ec)) continue;
    fs::remove(p, ec);
  }
  // The earlier run's metrics.json goes first too: a rewrite that fails
  // part way left it, complete-looking, beside this run's config and fields.
  fs::remove(metrics, ec);
}

}  // namespace

void write_run_dir(const std::string& dir, const RunConfig& cfg, const std::vector<RunOutput>& outs,
                   int threads, bool figures, const std::map<std::string, std::string>& failed) {
  FK_CHECK(!outs.empty(), "nefi::write_run_dir", "at least one method's output", "none");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  FK_CHECK(!ec, "nefi::write_run_dir", "a directory that can be created",
           dir + " (" + ec.message() + ")");
  clear_earlier_run(dir, cfg);
  write_text(dir + "/config.yaml", to_yaml(cfg));
  nlohmann::json j;
  j["instance"] = cfg.instance;
  j["seed"] = cfg.seed;
  j["scene"] = cfg.config.has("scene") ? cfg.config.s("scene") : "";
  j["device"] = cfg.device;
  j["threads"] = threads;
  // The run folder's name. Not --smoke's: its preset and step cap are in the
  // config, so its config.yaml re-run gets this folder back.
  j["config_hash"] = config_hash(cfg);
  bool history_written = false;
  for (const RunOutput& o : outs) {
    nlohmann::json m;
    m["metrics"] = o.metrics;
    const Result& r = o.result;
    m["timing"] = {{"total_s", r.total_s},
                   {"ms_per_step", r.ms_per_step()},
                   {"ops_per_step", r.ops_per_step()}};
    m["n_parameters"] = r.n_parameters;
    if (!r.stages.empty()) {  // a trained method: the start it kept (run.init_seed reruns it)
      m["init_seed"] = r.seed;
      m["restart"] = r.restart;
    }
    // Where the method's field trained (method_options: the run's device or the CPU).
    m["device"] = o.result.device;
    if (const auto fit = diagnostics::data_fit(o.measurement, r.prediction)) {
      m["data_fit"] = {{"rmse", fit->rmse}, {"data_psnr", fit->psnr_db}};
      // The reference's name for RMSE / sigma.
      if (fit->rmse_over_sigma) m["data_fit"]["discrepancy_ratio"] = *fit->rmse_over_sigma;
    }
    nlohmann::json stages = nlohmann::json::array();
    for (const auto& s : r.stages) {
      stages.push_back({{"name", s.name},
                        {"shape", s.shape.vec()},
                        {"steps", s.steps},
                        {"seconds", s.seconds},
                        {"stop", s.stop},
                        {"final_total", s.final_total},
                        {"final_data_loss", s.final_data_loss},
                        {"lr_mult", s.lr_mult},
                        {"final_progress", s.final_progress},
                        {"ops_per_step", s.steps ? static_cast<double>(s.ops) / s.steps : 0.0},
                        {"ms_per_step", s.steps ? 1e3 * s.seconds / s.steps : 0.0}});
      if (!s.device_note.empty()) {  // device solves: CUDA graph replays, or why none
        stages.back()["device_note"] = s.device_note;
        stages.back()["graph_steps"] = s.graph_steps;
      }
    }
    m["stage_results"] = stages;
    // A field of several (nv_relaxometry's rho and omega_L): each one as
    // <method>-<field>.npy, the primary beside <method>.npy (omega_L, the
    // Larmor map larmor_mae scores, was written nowhere).
    if (r.fields.size() > 1) {
      m["fields"] = nlohmann::json::array();
      for (const auto& [name, t] : r.fields) {
        // (a field name is a plain word: nothing outside the folder is named)
        if (name.empty() || std::filesystem::path(name).filename() != name) continue;
        write_npy_whole(dir + "/" + o.method + "-" + name + ".npy", t.to(fk::DType::F64));
        m["fields"].push_back(name);
      }
    }
    j["methods"][o.method] = m;
    write_npy_whole(dir + "/" + o.method + ".npy", o.reconstruction);
    // history.csv: the first method's; another method's: history-<method>.csv.
    if (!r.history.rows.empty()) {
      write_text(dir + (history_written ? "/history-" + o.method + ".csv" : "/history.csv"),
                 r.history.csv());
      history_written = true;
    }
  }
  if (!failed.empty()) j["failed_methods"] = failed;
  if (outs.front().gt.defined()) write_npy_whole(dir + "/ground_truth.npy", outs.front().gt);
  write_npy_whole(dir + "/measurement.npy", outs.front().measurement.data);
  const auto t0 = std::chrono::steady_clock::now();
  if (figures) write_run_figures(dir, cfg, outs);
  j["figures_s"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  write_text(dir + "/metrics.json", j.dump(2) + "\n");
}

}  // namespace nefi
