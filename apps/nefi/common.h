#pragma once
// Shared pieces of the nefi subcommands. Each command registers itself on the
// app and returns what to run when it is the one parsed; errors are
// exceptions, which main turns into one line and exit status 2.
#include <CLI/CLI.hpp>
#include <charconv>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

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

// A seed option's check (each value of a list): CLI11 would read "-1" into
// an unsigned seed as 2^64 - 1, and clamp a seed past 2^64 - 1 to it.
inline CLI::Validator non_negative_seed() {
  return CLI::Validator(
      [](std::string& s) {
        uint64_t v = 0;
        const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        return s.empty() || ec != std::errc() || end != s.data() + s.size()
                   ? "expected a seed in [0, 2^64), got '" + s + "'"
                   : std::string();
      },
      "SEED>=0");
}

// --threads: 0 (the default: 1, or $OMP_NUM_THREADS) up to 1024.
inline CLI::Validator thread_count() {
  return CLI::Range(0, 1024);
}

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
