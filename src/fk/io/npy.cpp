#include "fk/io/npy.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <vector>

#include "fk/error.h"
#include "fk/factory.h"

namespace fk {

namespace {

// The fixed part before the header: magic, version, header length.
struct Preamble {
  size_t header_offset = 0;  // 10 (version 1) or 12 (versions 2 and 3)
  size_t header_length = 0;
};

struct Header {
  DType dtype = DType::F32;
  // A narrow integer kind fk lacks (i1, u1, i2, u2: read as i32; u4: as
  // i64): its bytes per element in the file and its sign; 0 for fk's own.
  int stored_item = 0;
  bool stored_signed = true;
  size_t item_bytes() const { return stored_item ? stored_item : itemsize(dtype); }
  Dims shape;
  size_t data_bytes = 0;
  bool fortran = false;     // the data in column-major order (np.save of a transposed array)
  bool big_endian = false;  // '>' in the descr
  // The shape the bytes fill in C order: the reversed shape for Fortran order.
  Dims stored_shape() const {
    if (!fortran) return shape;
    std::vector<int64_t> r(shape.begin(), shape.end());
    std::reverse(r.begin(), r.end());
    return Dims(r);
  }
};

std::string where_of(const std::string& name) {
  return "fk::read_npy(" + name + ")";
}

uint32_t little_endian(const unsigned char* b, int n) {
  uint32_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | b[i];
  return v;
}

// `first`: the file's first bytes (at least 12 when the file has them).
Preamble parse_preamble(std::string_view first, size_t file_size, const std::string& name) {
  const std::string where = where_of(name);
  FK_CHECK(first.size() >= 10 && std::memcmp(first.data(), "\x93NUMPY", 6) == 0, where,
           "a .npy file (magic \\x93NUMPY)",
           "another file of " + fk::to_text(file_size) + " bytes");
  const auto* b = reinterpret_cast<const unsigned char*>(first.data());
  const int major = b[6];
  FK_CHECK(major >= 1 && major <= 3, where, ".npy format version 1, 2 or 3",
           "version " + fk::to_text(major) + "." + fk::to_text(b[7]));
  Preamble p;
  p.header_offset = major == 1 ? 10 : 12;
  FK_CHECK(first.size() >= p.header_offset, where, "a complete .npy preamble",
           "a file of " + fk::to_text(file_size) + " bytes");
  p.header_length = little_endian(b + 8, major == 1 ? 2 : 4);
  FK_CHECK(p.header_length <= kMaxNpyHeaderBytes, where,
           "a header of at most " + fk::to_text(kMaxNpyHeaderBytes) + " bytes",
           fk::to_text(p.header_length) + " bytes");
  FK_CHECK(p.header_offset + p.header_length <= file_size, where,
           "a header of " + fk::to_text(p.header_length) + " bytes",
           "a file of " + fk::to_text(file_size) + " bytes (truncated)");
  return p;
}

// A reader of the header's Python dict literal, e.g.
//   {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
class DictReader {
 public:
  DictReader(std::string_view text, std::string where) : s_(text), where_(std::move(where)) {}

  void skip_space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r'))
      ++i_;
  }
  bool at(char c) {
    skip_space();
    return i_ < s_.size() && s_[i_] == c;
  }
  void expect(char c) {
    FK_CHECK(at(c), where_, std::string("'") + c + "' in the header", context());
    ++i_;
  }
  std::string quoted() {
    skip_space();
    FK_CHECK(i_ < s_.size() && (s_[i_] == '\'' || s_[i_] == '"'), where_,
             "a quoted string in the header", context());
    const char q = s_[i_++];
    const size_t end = s_.find(q, i_);
    FK_CHECK(end != std::string_view::npos, where_, "a closing quote in the header", context());
    std::string r(s_.substr(i_, end - i_));
    i_ = end + 1;
    return r;
  }
  bool boolean() {
    skip_space();
    for (const auto& [word, value] : {std::pair{"True", true}, std::pair{"False", false}})
      if (s_.substr(i_, std::strlen(word)) == word) {
        i_ += std::strlen(word);
        return value;
      }
    FK_CHECK(false, where_, "True or False in the header", context());
    return false;
  }
  // A tuple of non-negative integers ("(3, 4)", "(5,)", "()").
  Dims shape() {
    expect('(');
    Dims d;
    while (!at(')')) {
      FK_CHECK(d.size() < kMaxDims, where_, "at most " + fk::to_text(kMaxDims) + " dimensions",
               "more in the header");
      d.push_back(integer());
      if (at('L')) ++i_;  // Python 2 longs
      if (!at(',')) break;
      ++i_;
    }
    expect(')');
    return d;
  }
  void expect_end() {
    skip_space();
    FK_CHECK(i_ == s_.size(), where_, "nothing after the header's dict", context());
  }

 private:
  int64_t integer() {
    skip_space();
    FK_CHECK(i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9', where_,
             "a non-negative integer dimension in the header", context());
    int64_t v = 0;
    while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') {
      FK_CHECK(!__builtin_mul_overflow(v, 10, &v) && !__builtin_add_overflow(v, s_[i_] - '0', &v),
               where_, "dimensions below 2^63", context());
      ++i_;
    }
    return v;
  }
  std::string context() const {
    const size_t from = std::min(i_, s_.size());
    return "'" + std::string(s_.substr(from, 24)) + "' at byte " + std::to_string(from);
  }

  std::string_view s_;
  size_t i_ = 0;
  std::string where_;
};

// The descr's dtype into h (dtype, and the stored kind of a narrow integer).
void read_descr(const std::string& descr, Header& h, const std::string& where) {
  const std::string expected = "a b1, i1, u1, i2, u2, i4, u4, i8, f2, f4, f8, c8 or c16 array";
  FK_CHECK(!descr.empty(), where, expected, "descr '" + descr + "'");
  const std::string code = descr[0] == '<' || descr[0] == '>' || descr[0] == '|' || descr[0] == '='
                               ? descr.substr(1)
                               : descr;
  static const std::pair<const char*, DType> kCodes[] = {
      {"b1", DType::Bool}, {"i4", DType::I32}, {"i8", DType::I64}, {"f2", DType::F16},
      {"f4", DType::F32},  {"f8", DType::F64}, {"c8", DType::C64}, {"c16", DType::C128}};
  for (const auto& [c, t] : kCodes)
    if (code == c) {
      h.dtype = t;
      return;
    }
  // Integers fk has no dtype for, widened exactly (a uint8 mask or image).
  static const struct {
    const char* code;
    DType dtype;
    int bytes;
    bool is_signed;
  } kNarrow[] = {{"i1", DType::I32, 1, true},
                 {"u1", DType::I32, 1, false},
                 {"i2", DType::I32, 2, true},
                 {"u2", DType::I32, 2, false},
                 {"u4", DType::I64, 4, false}};
  for (const auto& n : kNarrow)
    if (code == n.code) {
      h.dtype = n.dtype;
      h.stored_item = n.bytes;
      h.stored_signed = n.is_signed;
      return;
    }
  FK_CHECK(false, where, expected, "descr '" + descr + "'");
}

// Element count and bytes of a shape, refusing overflow. Dimensions of zero
// are skipped in the check: the other dimensions still give strides.
size_t checked_bytes(const Dims& shape, size_t item_bytes, const std::string& where) {
  int64_t elements = 1, spanned = 1, bytes = 0;
  bool fits = true;
  for (int64_t d : shape) {
    fits = fits && !__builtin_mul_overflow(spanned, std::max<int64_t>(d, 1), &spanned);
    elements *= d == 0 ? 0 : 1;
  }
  fits = fits && !__builtin_mul_overflow(spanned, static_cast<int64_t>(item_bytes), &bytes);
  FK_CHECK(fits, where, "a shape whose size in bytes fits 63 bits", shape.str());
  return elements == 0 ? 0 : static_cast<size_t>(bytes);
}

Header parse_header(std::string_view text, const std::string& name) {
  const std::string where = where_of(name);
  DictReader r(text, where);
  std::optional<std::string> descr;
  std::optional<bool> fortran;
  std::optional<Dims> shape;
  r.expect('{');
  while (!r.at('}')) {
    const std::string key = r.quoted();
    r.expect(':');
    if (key == "descr" && !descr)
      descr = r.quoted();
    else if (key == "fortran_order" && !fortran)
      fortran = r.boolean();
    else if (key == "shape" && !shape)
      shape = r.shape();
    else
      FK_CHECK(false, where, "the keys descr, fortran_order and shape once each",
               "key '" + key + "'");
    if (!r.at(',')) break;
    r.expect(',');
  }
  r.expect('}');
  r.expect_end();
  FK_CHECK(descr && fortran && shape, where, "a header with descr, fortran_order and shape",
           std::string(text.substr(0, 80)));
  Header h;
  read_descr(*descr, h, where);
  h.shape = *shape;
  h.data_bytes = checked_bytes(h.shape, h.item_bytes(), where);
  h.fortran = *fortran && shape->size() > 1;
  h.big_endian = (*descr)[0] == '>' && h.item_bytes() > 1;
  return h;
}

// The bytes as read (stored_shape, file byte order) into the array the
// header describes: each element's bytes reversed from big-endian (a
// complex number's two parts each), a Fortran-order array transposed into C
// order.
Tensor in_memory_order(Tensor t, const Header& h) {
  if (h.big_endian && !h.stored_item) {  // a narrow integer is read in its byte order
    const bool complex = h.dtype == DType::C64 || h.dtype == DType::C128;
    const size_t word = itemsize(h.dtype) / (complex ? 2 : 1);
    auto* b = static_cast<unsigned char*>(t.data_ptr());
    for (size_t at = 0; at < h.data_bytes; at += word) std::reverse(b + at, b + at + word);
  }
  if (!h.fortran) return t;
  std::vector<int64_t> reversed;
  for (int64_t d = static_cast<int64_t>(h.shape.size()) - 1; d >= 0; --d) reversed.push_back(d);
  return t.permute(Dims(reversed)).contiguous();
}

void check_data_size(const Header& h, size_t available, const std::string& name) {
  FK_CHECK(h.data_bytes == available, where_of(name),
           fk::to_text(h.data_bytes) + " bytes of data (shape " + h.shape.str() + " of " +
               fk::name(h.dtype) + ")",
           fk::to_text(available) + " bytes after the header" +
               (available < h.data_bytes ? " (truncated)" : " (trailing bytes)"));
}

// NumPy's bool is one byte, 0 or 1; any other byte would be an invalid bool.
void check_bools(const Tensor& t, const std::string& name) {
  const auto* b = static_cast<const unsigned char*>(t.data_ptr());
  for (int64_t i = 0; i < t.numel(); ++i)
    FK_CHECK(b[i] <= 1, where_of(name), "bool bytes of 0 or 1",
             fk::to_text(b[i]) + " at element " + fk::to_text(i));
}

// The data bytes as the header describes them, in a new tensor of h.dtype
// (stored shape, file order): copied, or a narrow integer widened.
Tensor stored_tensor(const Header& h, const unsigned char* data) {
  Tensor t = empty(h.stored_shape(), {h.dtype});
  if (!h.stored_item) {
    if (h.data_bytes > 0) std::memcpy(t.data_ptr(), data, h.data_bytes);
    return t;
  }
  const int w = h.stored_item;
  const int64_t n = t.numel();
  auto value = [&](int64_t i) {
    uint64_t u = 0;
    for (int b = 0; b < w; ++b) {
      const unsigned char byte = data[i * w + (h.big_endian ? b : w - 1 - b)];
      u = (u << 8) | byte;
    }
    const uint64_t sign = uint64_t{1} << (8 * w - 1);
    return h.stored_signed && (u & sign) ? static_cast<int64_t>(u) - static_cast<int64_t>(sign << 1)
                                         : static_cast<int64_t>(u);
  };
  if (h.dtype == DType::I32) {
    auto* out = t.data<int32_t>();
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<int32_t>(value(i));
  } else {
    auto* out = t.data<int64_t>();
    for (int64_t i = 0; i < n; ++i) out[i] = value(i);
  }
  return t;
}

}  // namespace

Tensor read_npy_bytes(std::string_view bytes, const std::string& name) {
  const Preamble p = parse_preamble(bytes.substr(0, 12), bytes.size(), name);
  const Header h = parse_header(bytes.substr(p.header_offset, p.header_length), name);
  const size_t data_at = p.header_offset + p.header_length;
  check_data_size(h, bytes.size() - data_at, name);
  Tensor t = stored_tensor(h, reinterpret_cast<const unsigned char*>(bytes.data() + data_at));
  if (h.dtype == DType::Bool) check_bools(t, name);
  return in_memory_order(std::move(t), h);
}

Tensor read_npy(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  FK_CHECK(!ec, "fk::read_npy", "a readable file", path + " (" + ec.message() + ")");
  std::ifstream in(path, std::ios::binary);
  FK_CHECK(in.good(), "fk::read_npy", "a readable file", path);
  std::string first(static_cast<size_t>(std::min<uintmax_t>(size, 12)), '\0');
  in.read(first.data(), static_cast<std::streamsize>(first.size()));
  const Preamble p = parse_preamble(first, size, path);
  std::string header(p.header_length, '\0');
  in.seekg(static_cast<std::streamoff>(p.header_offset));
  in.read(header.data(), static_cast<std::streamsize>(header.size()));
  FK_CHECK(in.good(), where_of(path), "a readable header", "a read error");
  const Header h = parse_header(header, path);
  check_data_size(h, size - p.header_offset - p.header_length, path);
  std::vector<unsigned char> raw(h.stored_item ? h.data_bytes : 0);
  Tensor t = h.stored_item ? Tensor() : empty(h.stored_shape(), {h.dtype});
  char* into =
      h.stored_item ? reinterpret_cast<char*>(raw.data()) : static_cast<char*>(t.data_ptr());
  if (h.data_bytes > 0) in.read(into, static_cast<std::streamsize>(h.data_bytes));
  FK_CHECK(in.good(), where_of(path), fk::to_text(h.data_bytes) + " bytes of data", "a read error");
  if (h.stored_item) t = stored_tensor(h, raw.data());
  if (h.dtype == DType::Bool) check_bools(t, path);
  return in_memory_order(std::move(t), h);
}

void write_npy(const std::string& path, const Tensor& t) {
  const char* where = "fk::write_npy";
  static const char* kDescr[] = {"|b1", "<i4", "<i8", "<f2", nullptr, "<f4", "<f8", "<c8", "<c16"};
  const char* descr = kDescr[static_cast<int>(t.dtype())];
  FK_CHECK(descr != nullptr, where, "a dtype NumPy has (not bf16)", fk::name(t.dtype()));
  const Tensor c = t.to(kCPU).contiguous();
  std::string shape = "(";
  for (int i = 0; i < c.dim(); ++i)
    shape += std::to_string(c.size(i)) + (c.dim() == 1 ? "," : (i + 1 < c.dim() ? ", " : ""));
  shape += ")";
  std::string header =
      std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Magic (6) + version (2) + length (2) + header + '\n', padded to 64 bytes.
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header.push_back('\n');
  std::ofstream f(path, std::ios::binary);
  FK_CHECK(f.good(), where, "a writable path", path);
  const unsigned char preamble[10] = {0x93,
                                      'N',
                                      'U',
                                      'M',
                                      'P',
                                      'Y',
                                      1,
                                      0,
                                      static_cast<unsigned char>(header.size() & 0xff),
                                      static_cast<unsigned char>(header.size() >> 8)};
  f.write(reinterpret_cast<const char*>(preamble), sizeof preamble);
  f << header;
  if (c.nbytes() > 0) f.write(static_cast<const char*>(c.data_ptr()), c.nbytes());
  // Closed before the check: a small file's bytes are still buffered until
  // then, and a full disk failed them unseen (a 0-byte .npy, exit 0).
  f.close();
  FK_CHECK(!f.fail(), where, "a successful write", path);
}

}  // namespace fk
