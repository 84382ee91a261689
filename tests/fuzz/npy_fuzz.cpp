// fk::read_npy_bytes on arbitrary bytes: a tensor or an fk::Error, never a
// crash, an allocation beyond 4x the input's size (a u1 array widens to i32)
// or another exception. The file path reads the same tensor, and the tensor
// survives a write/read round trip. (Its bytes are the file's only for a
// little-endian, C-order array of an fk dtype: big-endian, Fortran-order and
// narrow-integer files are converted.)
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
  if (static_cast<size_t>(t.nbytes()) > 4 * size) __builtin_trap();
  const auto same = [](const fk::Tensor& a, const fk::Tensor& b) {
    return a.shape() == b.shape() && a.dtype() == b.dtype() &&
           (a.nbytes() == 0 || std::memcmp(a.data_ptr(), b.data_ptr(), a.nbytes()) == 0);
  };
  // The file path reads the same bytes the same way.
  const std::string& path = scratch.write(data, size);
  if (!same(fk::read_npy(path), t)) __builtin_trap();
  // What it read writes and reads back unchanged.
  fk::write_npy(path, t);
  if (!same(fk::read_npy(path), t)) __builtin_trap();
  return 0;
}
