// nefi's YAML run configs (`nefi run <config>`, `nefi bench <config>`):
// load_run_config_file on arbitrary text, and apply_config_file on top of
// each registered instance's defaults (the first byte picks the instance).
// A RunConfig or an fk::Error, never a crash or another exception.
//
// Calls (nefi/io/run_config.h): load_run_config_file, default_run_config,
// apply_config_file, to_yaml; (nefi/instances/instance.h): all_instances.
#include <cstdint>

#include "fk/error.h"
#include "fuzz/fuzz_input.h"
#include "nefi/instances/instance.h"
#include "nefi/io/run_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fieldkit_fuzz::ScratchFile scratch("nefi_config");
  const std::string& path = scratch.write(data, size);
  try {
    nefi::to_yaml(nefi::load_run_config_file(path));
  } catch (const fk::Error&) {
  }
  const auto& instances = nefi::all_instances();
  const size_t pick = size > 0 ? data[0] % instances.size() : 0;
  try {
    nefi::RunConfig cfg = nefi::default_run_config(instances[pick]->name());
    nefi::apply_config_file(cfg, path);
    nefi::to_yaml(cfg);
  } catch (const fk::Error&) {
  }
  return 0;
}
