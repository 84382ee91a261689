// nefi's `--set KEY=VALUE` values: the input's first byte picks a registered
// instance, each further line is one assignment applied to its defaults
// (apply_set), then the config is rendered and hashed as a run does. A
// RunConfig or an fk::Error per assignment, never a crash or another
// exception.
//
// Calls (nefi/io/run_config.h): default_run_config, apply_set, to_yaml,
// config_hash; (nefi/instances/instance.h): all_instances.
#include <cstdint>
#include <string_view>

#include "fk/error.h"
#include "fuzz/fuzz_input.h"
#include "nefi/instances/instance.h"
#include "nefi/io/run_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const auto& instances = nefi::all_instances();
  nefi::RunConfig cfg = nefi::default_run_config(instances[data[0] % instances.size()]->name());
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  for (const std::string& line : fieldkit_fuzz::split(text, "\n", 64)) {
    try {
      nefi::apply_set(cfg, line);
    } catch (const fk::Error&) {
    }
  }
  nefi::config_hash(cfg);
  return 0;
}
