#pragma once
// Writes small .npy files of int32 rows for the minkowski CLI tests.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace fieldkit_test {

// A .npy of int32 rows (N x cols), version 1.0, little endian.
inline void write_npy_i32(const std::filesystem::path& path, const std::vector<int32_t>& v,
                          int64_t cols) {
  std::string header = "{'descr': '<i4', 'fortran_order': False, 'shape': (" +
                       std::to_string(static_cast<int64_t>(v.size()) / cols) + ", " +
                       std::to_string(cols) + "), }";
  header.append(64 - (10 + header.size() + 1) % 64, ' ');
  header += '\n';
  std::ofstream f(path, std::ios::binary);
  f.write("\x93NUMPY\x01\x00", 8);
  const uint16_t len = static_cast<uint16_t>(header.size());
  f.write(reinterpret_cast<const char*>(&len), 2);
  f << header;
  f.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * 4));
}

}  // namespace fieldkit_test
