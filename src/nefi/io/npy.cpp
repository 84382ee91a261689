#include "nefi/io/npy.h"

#include <fstream>

#include "fk/error.h"

namespace nefi {

void write_npy(const std::string& path, const fk::Tensor& t) {
  FK_CHECK(t.dtype() == fk::DType::F32 || t.dtype() == fk::DType::F64, "nefi::write_npy",
           "an f32/f64 tensor", fk::name(t.dtype()));
  const fk::Tensor c = t.contiguous();
  std::string shape = "(";
  for (int i = 0; i < c.dim(); ++i)
    shape += std::to_string(c.size(i)) + (c.dim() == 1 ? "," : (i + 1 < c.dim() ? ", " : ""));
  shape += ")";
  std::string header = std::string("{'descr': '") + (c.dtype() == fk::DType::F64 ? "<f8" : "<f4") +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Magic (6) + version (2) + length (2) + header, padded to a multiple of 64.
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  std::ofstream f(path, std::ios::binary);
  FK_CHECK(f.good(), "nefi::write_npy", "a writable path", path);
  const unsigned char magic[8] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  f.write(reinterpret_cast<const char*>(magic), 8);
  const uint16_t len = static_cast<uint16_t>(header.size());
  const unsigned char lb[2] = {static_cast<unsigned char>(len & 0xff),
                               static_cast<unsigned char>(len >> 8)};
  f.write(reinterpret_cast<const char*>(lb), 2);
  f << header;
  f.write(static_cast<const char*>(c.data_ptr()), c.nbytes());
  FK_CHECK(f.good(), "nefi::write_npy", "a successful write", path);
}

}  // namespace nefi
