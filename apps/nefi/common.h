#pragma once
// Shared pieces of the nefi subcommands. Each command registers itself on the
// app and returns what to run when it is the one parsed; errors are
// exceptions, which main turns into one line and exit status 2.
#include <CLI/CLI.hpp>
#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "cli_checks.h"

namespace nefi::cli {

struct Context {
  std::vector<std::filesystem::path> config_dirs;  // $NEFI_CONFIG_DIR, ./configs, <repo>/configs
};

using Command = std::pair<CLI::App*, std::function<int()>>;

// An output directory option's check: an empty one would fall back to the
// default silently.
inline CLI::Validator non_empty_directory() {
  return CLI::Validator(
      [](std::string& s) { return s.empty() ? std::string("expected a directory, got ''") : ""; },
      "DIR");
}

using cli_checks::non_negative_seed;
using cli_checks::thread_count;

Command add_list(CLI::App& app, const Context& ctx);
Command add_run(CLI::App& app, const Context& ctx);
Command add_profile(CLI::App& app, const Context& ctx);
Command add_bench(CLI::App& app, const Context& ctx);
Command add_bench_merge(CLI::App& app, const Context& ctx);
Command add_ablate(CLI::App& app, const Context& ctx);
Command add_sweep(CLI::App& app, const Context& ctx);
Command add_diagnose(CLI::App& app, const Context& ctx);
Command add_autotune(CLI::App& app, const Context& ctx);
Command add_gallery(CLI::App& app, const Context& ctx);
Command add_fit(CLI::App& app, const Context& ctx);

std::vector<std::filesystem::path> config_dirs(const char* argv0);
std::filesystem::path find_config(const std::vector<std::filesystem::path>& dirs,
                                  const std::string& file);
// One thread unless asked (--threads N, else $OMP_NUM_THREADS): these solves
// are small, and on a shared 2-vCPU machine two threads made a 32^2
// deconvolution step 30x slower (64 ms against 2 ms) with identical results.
void set_threads(int threads);
// True when stderr is a terminal (progress lines).
bool stderr_is_tty();

}  // namespace nefi::cli
