#pragma once
// FNV-1a, 64-bit: the short fingerprints written into run directories and
// benchmark shards (config hash, protocol hash, measurement pairing check).
// Not for security; stable across runs, builds and machines (byte order:
// x86-64's, little-endian).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

namespace nefi {

inline uint64_t fnv1a(const void* data, size_t bytes, uint64_t h = 14695981039346656037ull) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < bytes; ++i) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return h;
}

// The first `digits` (<= 16) hex digits of fnv1a(text).
inline std::string fnv1a_hex(const std::string& text, int digits) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx",
                static_cast<unsigned long long>(fnv1a(text.data(), text.size())));
  return std::string(buf, static_cast<size_t>(digits));
}
inline std::string fnv1a_hex8(const std::string& text) {
  return fnv1a_hex(text, 8);
}

}  // namespace nefi
