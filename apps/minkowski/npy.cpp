#include "npy.h"

#include <cstring>
#include <fstream>
#include <limits>
#include <regex>
#include <stdexcept>

namespace minkowski_app {

NpyInts read_npy_ints(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  char magic[8];
  if (!in.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0)
    throw std::runtime_error(path + ": not a .npy file");
  uint32_t hlen = 0;
  if (magic[6] == 1) {
    unsigned char b[2];
    in.read(reinterpret_cast<char*>(b), 2);
    hlen = b[0] | (b[1] << 8);
  } else if (magic[6] == 2 || magic[6] == 3) {
    unsigned char b[4];
    in.read(reinterpret_cast<char*>(b), 4);
    hlen = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<uint32_t>(b[3]) << 24);
  } else {
    throw std::runtime_error(path + ": unsupported .npy version " + std::to_string(magic[6]));
  }
  std::string header(hlen, '\0');
  if (!in.read(header.data(), hlen)) throw std::runtime_error(path + ": truncated header");
  std::smatch m;
  if (!std::regex_search(header, m, std::regex("'descr':\\s*'([<>|=]?)([iu])([48])'")))
    throw std::runtime_error(path + ": expected an int32 or int64 array, header " + header);
  if (m[1] == ">") throw std::runtime_error(path + ": big-endian arrays are not supported");
  int width = std::stoi(m[3]);
  bool is_unsigned = m[2] == "u";
  if (std::regex_search(header, std::regex("'fortran_order':\\s*True")))
    throw std::runtime_error(path + ": Fortran-order arrays are not supported");
  if (!std::regex_search(header, m, std::regex("'shape':\\s*\\((\\d+),\\s*(\\d+)\\s*,?\\)")))
    throw std::runtime_error(path + ": expected a 2-D array, header " + header);
  NpyInts r;
  r.rows = std::stoll(m[1]);
  r.cols = std::stoll(m[2]);
  int64_t n = r.rows * r.cols;
  r.data.resize(n);
  if (width == 4) {
    if (!in.read(reinterpret_cast<char*>(r.data.data()), n * 4))
      throw std::runtime_error(path + ": truncated data");
    if (is_unsigned)
      for (int32_t v : r.data)
        if (v < 0) throw std::runtime_error(path + ": uint32 value above the int32 range");
  } else {
    std::vector<int64_t> tmp(n);
    if (!in.read(reinterpret_cast<char*>(tmp.data()), n * 8))
      throw std::runtime_error(path + ": truncated data");
    for (int64_t i = 0; i < n; ++i) {
      if (tmp[i] < std::numeric_limits<int32_t>::min() ||
          tmp[i] > std::numeric_limits<int32_t>::max())
        throw std::runtime_error(path + ": value " + std::to_string(tmp[i]) + " outside int32");
      r.data[i] = static_cast<int32_t>(tmp[i]);
    }
  }
  return r;
}

}  // namespace minkowski_app
