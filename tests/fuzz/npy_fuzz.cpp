// fk::read_npy_bytes on arbitrary bytes: a tensor or an fk::Error, never a
// crash, an allocation beyond the input's size or another exception. A tensor
// read back must hold exactly the bytes after the header, and survive a
// write/read round trip.
#include <cstdint>
#include <cstring>
#include <string_view>

#include "fk/error.h"
#include "fk/io/npy.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fieldkit_fuzz::ScratchFile scratch("npy");
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  fk::Tensor t;
  try {
    t = fk::read_npy_bytes(bytes, "fuzz.npy");
  } catch (const fk::Error&) {
    return 0;
  }
  if (static_cast<size_t>(t.nbytes()) > size) __builtin_trap();
  if (t.nbytes() > 0 && std::memcmp(t.data_ptr(), data + (size - t.nbytes()), t.nbytes()) != 0)
    __builtin_trap();
  // The file path reads the same bytes the same way.
  const std::string& path = scratch.write(data, size);
  const fk::Tensor u = fk::read_npy(path);
  if (u.shape() != t.shape() || u.dtype() != t.dtype() ||
      (t.nbytes() > 0 && std::memcmp(u.data_ptr(), t.data_ptr(), t.nbytes()) != 0))
    __builtin_trap();
  return 0;
}
