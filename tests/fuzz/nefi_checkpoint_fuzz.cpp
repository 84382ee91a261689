// nefi's checkpoint files (`nefi run --resume`): load_checkpoint on arbitrary
// bytes. A Checkpoint or an fk::Error, never a crash, an allocation the file
// cannot back, or another exception.
//
// Calls (nefi/solve/checkpoint.h): load_checkpoint.
#include <cstdint>

#include "fk/error.h"
#include "fuzz/fuzz_input.h"
#include "nefi/solve/checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fieldkit_fuzz::ScratchFile scratch("nefi_checkpoint");
  const std::string& path = scratch.write(data, size);
  try {
    const nefi::Checkpoint ck = nefi::load_checkpoint(path);
    int64_t bytes = 0;
    for (const auto* group : {&ck.params, &ck.adam_m, &ck.adam_v})
      for (const fk::Tensor& t : *group) bytes += t.nbytes();
    if (static_cast<size_t>(bytes) > size) __builtin_trap();
  } catch (const fk::Error&) {
  }
  return 0;
}
