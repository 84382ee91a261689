#include "minkowski/data/point_io.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>
#include <vector>

#include "fk/error.h"
#include "fk/io/npy.h"

namespace minkowski::data {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw fk::Error("read points " + path + ": " + what);
}

std::vector<char> slurp(const std::string& path) {
  // A directory opens as a stream whose read throws a message naming no path.
  if (std::filesystem::is_directory(path)) fail(path, "a directory, not a point file");
  std::ifstream in(path, std::ios::binary);
  if (!in.good()) fail(path, "cannot open the file");
  return std::vector<char>(std::istreambuf_iterator<char>(in), {});
}

// Checks one point's values and appends them.
void add_point(PointCloud& cloud, const std::string& path, const std::string& where,
               const double* xyz, const double* rgb, const double* label) {
  for (int a = 0; a < 3; ++a) {
    // Also beyond float's range: the conversion would make it infinite (UB).
    if (!(std::abs(xyz[a]) <= std::numeric_limits<float>::max()))
      fail(path, where + ": a NaN, infinite or beyond-float coordinate");
    cloud.xyz.push_back(cloud.at_precision(xyz[a]));
  }
  if (rgb != nullptr) {
    for (int a = 0; a < 3; ++a) {
      if (!(rgb[a] >= 0.0 && rgb[a] <= 1.0)) fail(path, where + ": a colour outside [0, 1]");
      cloud.rgb.push_back(static_cast<float>(rgb[a]));
    }
  }
  if (label != nullptr) {
    const double l = *label;
    if (!(l == std::floor(l) && (l >= 0 || l == -100) && l < 1e9)) {
      fail(path, where + ": label " + fk::to_text(l) +
                     " is not a class id (a whole number in [0, 1e9)) or -100");
    }
    cloud.labels.push_back(static_cast<int64_t>(l));
  }
}

// --- PLY -------------------------------------------------------------------

struct PlyProperty {
  std::string name;
  int bytes = 0;
  char kind = 'f';  // 'i' signed, 'u' unsigned, 'f' float
};

PlyProperty ply_property(const std::string& path, const std::string& type,
                         const std::string& name) {
  static const struct {
    const char* names[2];
    int bytes;
    char kind;
  } kTypes[] = {{{"char", "int8"}, 1, 'i'},     {{"uchar", "uint8"}, 1, 'u'},
                {{"short", "int16"}, 2, 'i'},   {{"ushort", "uint16"}, 2, 'u'},
                {{"int", "int32"}, 4, 'i'},     {{"uint", "uint32"}, 4, 'u'},
                {{"float", "float32"}, 4, 'f'}, {{"double", "float64"}, 8, 'f'}};
  for (const auto& t : kTypes) {
    if (type == t.names[0] || type == t.names[1]) return {name, t.bytes, t.kind};
  }
  fail(path, "unknown PLY property type '" + type + "'");
}

struct PlyHeader {
  bool binary = false;
  int64_t vertices = -1;
  std::vector<PlyProperty> properties;
  size_t data_start = 0;
  bool more_elements = false;  // elements after the vertices (faces, ...)
};

// A PLY count: the whole token a whole number (std::stoll read "2abc" as 2).
int64_t ply_count(const std::string& path, const std::string& token) {
  int64_t n = -1;
  const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), n);
  if (token.empty() || ec != std::errc() || end != token.data() + token.size())
    fail(path, "bad vertex count '" + token + "'");
  if (n < 0) fail(path, "negative vertex count");
  return n;
}

PlyHeader parse_ply_header(const std::string& path, const std::vector<char>& bytes) {
  constexpr size_t kMaxHeader = 1 << 16;
  const std::string text(bytes.data(), std::min(bytes.size(), kMaxHeader));
  // Lines end in \n, or \r\n as a file written on Windows has them.
  const std::string eol = text.rfind("ply\r\n", 0) == 0 ? "\r\n" : "\n";
  const std::string marker = "end_header" + eol;
  // A line that is end_header (a comment ending in it is not one).
  const size_t at = text.find(eol + marker);
  const size_t end = at == std::string::npos ? at : at + eol.size();
  if (text.rfind("ply" + eol, 0) != 0 || end == std::string::npos) {
    if (text.rfind("ply", 0) == 0 && bytes.size() > kMaxHeader)
      fail(path, "no 'end_header' in the first 64 KiB (expected a PLY header under 64 KiB)");
    fail(path, "not a PLY file (expected 'ply' ... 'end_header')");
  }
  PlyHeader h;
  h.data_start = end + marker.size();
  std::istringstream lines(text.substr(0, end));
  bool in_vertex = false, seen_element = false, seen_format = false;
  std::string line;
  std::getline(lines, line);  // "ply"
  while (std::getline(lines, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::istringstream w(line);
    std::string key, a, b;
    w >> key >> a >> b;
    if (key == "format") {
      if (a == "binary_little_endian") {
        h.binary = true;
      } else if (a != "ascii") {
        fail(path, "PLY format '" + a + "' (expected ascii or binary_little_endian)");
      }
      if (b != "1.0") fail(path, "PLY format version '" + b + "' (expected 1.0)");
      seen_format = true;
    } else if (key == "element") {
      if (!seen_element && a != "vertex")
        fail(path, "the first PLY element is '" + a + "', not vertex");
      in_vertex = !seen_element;
      h.more_elements = seen_element;
      seen_element = true;
      if (in_vertex) h.vertices = ply_count(path, b);
    } else if (key == "property") {
      if (!seen_element) fail(path, "a PLY property before any element");
      if (!in_vertex) continue;
      if (a == "list") fail(path, "list property in the vertex element");
      for (const PlyProperty& q : h.properties)
        if (q.name == b) fail(path, "vertex property '" + b + "' twice");
      h.properties.push_back(ply_property(path, a, b));
    } else if (key != "comment" && key != "obj_info" && !key.empty()) {
      fail(path, "PLY header line '" + line +
                     "' (expected format, element, property, comment "
                     "or obj_info)");
    }
  }
  if (!seen_format) fail(path, "no PLY format line (expected 'format ascii 1.0' or binary)");
  if (h.vertices < 0) fail(path, "no vertex element");
  return h;
}

double read_binary(const char* p, const PlyProperty& q) {
  auto get = [p]<typename T>(T) {
    T v;
    std::memcpy(&v, p, sizeof(T));
    return static_cast<double>(v);
  };
  switch (q.bytes * 4 + (q.kind == 'i' ? 0 : q.kind == 'u' ? 1 : 2)) {
    case 4:
      return get(int8_t{});
    case 5:
      return get(uint8_t{});
    case 8:
      return get(int16_t{});
    case 9:
      return get(uint16_t{});
    case 16:
      return get(int32_t{});
    case 17:
      return get(uint32_t{});
    case 18:
      return get(float{});
    case 34:
      return get(double{});
  }
  return 0.0;
}

// Column of each wanted property (-1 when absent).
struct PlyColumns {
  int x = -1, y = -1, z = -1, r = -1, g = -1, b = -1, label = -1;
};

PlyColumns ply_columns(const std::string& path, const std::vector<PlyProperty>& props) {
  PlyColumns c;
  for (int i = 0; i < static_cast<int>(props.size()); ++i) {
    const std::string& n = props[i].name;
    if (n == "x") c.x = i;
    if (n == "y") c.y = i;
    if (n == "z") c.z = i;
    if (n == "red") c.r = i;
    if (n == "green") c.g = i;
    if (n == "blue") c.b = i;
    if (n == "label" || n == "class") {
      if (c.label >= 0) fail(path, "both a label and a class property (which is the label?)");
      c.label = i;
    }
  }
  if (c.x < 0 || c.y < 0 || c.z < 0) fail(path, "vertex element without x, y and z");
  if ((c.r >= 0) != (c.g >= 0) || (c.r >= 0) != (c.b >= 0)) {
    fail(path, "some but not all of red, green, blue");
  }
  return c;
}

void add_ply_vertex(PointCloud& cloud, const std::string& path, int64_t v,
                    const std::vector<double>& row, const std::vector<PlyProperty>& props,
                    const PlyColumns& c) {
  const double xyz[3] = {row[c.x], row[c.y], row[c.z]};
  double rgb[3];
  if (c.r >= 0) {
    const int cols[3] = {c.r, c.g, c.b};
    for (int a = 0; a < 3; ++a) {
      // Integer colours span their type: uchar 0..255, ushort 0..65535.
      const PlyProperty& q = props[cols[a]];
      rgb[a] = q.kind == 'f' ? row[cols[a]] : row[cols[a]] / (q.bytes == 2 ? 65535.0 : 255.0);
    }
  }
  add_point(cloud, path, "vertex " + std::to_string(v), xyz, c.r >= 0 ? rgb : nullptr,
            c.label >= 0 ? &row[c.label] : nullptr);
}

}  // namespace

std::string point_file_extension(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  for (char& ch : ext) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return ext;
}

PointCloud read_ply(const std::string& path) {
  const std::vector<char> bytes = slurp(path);
  const PlyHeader h = parse_ply_header(path, bytes);
  if (h.vertices == 0) fail(path, "no points");  // as an empty .xyz or .npy
  const PlyColumns c = ply_columns(path, h.properties);
  const size_t width = h.properties.size();
  PointCloud cloud;
  // Positions a float holds exactly: float or an integer of up to 16 bits.
  for (const int col : {c.x, c.y, c.z}) {
    const PlyProperty& q = h.properties[static_cast<size_t>(col)];
    if (q.bytes > (q.kind == 'f' ? 4 : 2)) cloud.f64 = true;
  }
  std::vector<double> row(width);
  if (h.binary) {
    static_assert(std::endian::native == std::endian::little);
    size_t record = 0;
    for (const auto& p : h.properties) record += p.bytes;
    const size_t available = bytes.size() - h.data_start;
    if (available / record < static_cast<size_t>(h.vertices)) {
      fail(path, "truncated: " + std::to_string(h.vertices) + " vertices declared, " +
                     std::to_string(available / record) + " present");
    }
    // Bytes past the vertices with no element after them: the header's
    // count is short of the data (they were dropped without a word).
    // (A closing line break, as some writers add, is no data.)
    const size_t past = available - std::min(available, static_cast<size_t>(h.vertices) * record);
    const char* tail = bytes.data() + h.data_start + (available - past);
    const bool blank = past < record && std::all_of(tail, tail + past, [](char ch) {
                         return ch == '\n' || ch == '\r';
                       });
    if (!h.more_elements && past > 0 && !blank)
      fail(path, std::to_string(past) + " bytes past the " + std::to_string(h.vertices) +
                     " vertices declared and no element after them");
    const char* p = bytes.data() + h.data_start;
    for (int64_t v = 0; v < h.vertices; ++v) {
      for (size_t k = 0; k < width; ++k) {
        row[k] = read_binary(p, h.properties[k]);
        p += h.properties[k].bytes;
      }
      add_ply_vertex(cloud, path, v, row, h.properties, c);
    }
    return cloud;
  }
  std::istringstream in(
      std::string(bytes.begin() + static_cast<std::ptrdiff_t>(h.data_start), bytes.end()));
  std::string line;
  for (int64_t v = 0; v < h.vertices; ++v) {
    if (!std::getline(in, line)) {
      fail(path, "truncated: " + std::to_string(h.vertices) + " vertices declared, " +
                     std::to_string(v) + " present");
    }
    std::istringstream w(line);
    for (size_t k = 0; k < width; ++k) {
      std::string token;
      if (!(w >> token)) fail(path, "vertex " + std::to_string(v) + ": too few values");
      char* end = nullptr;
      row[k] = std::strtod(token.c_str(), &end);
      if (*end != '\0')
        fail(path, "vertex " + std::to_string(v) + ": '" + token + "' is not a number");
    }
    // A value past the declared properties means the header and the data
    // disagree: which columns are x, y and z is then a guess.
    if (std::string extra; w >> extra)
      fail(path, "vertex " + std::to_string(v) + ": more values than the header's " +
                     std::to_string(width) + " properties");
    add_ply_vertex(cloud, path, v, row, h.properties, c);
  }
  // Rows past the vertices with no element after them: the header's count
  // is short of the data (they were dropped without a word).
  for (std::string rest; !h.more_elements && std::getline(in, rest);)
    if (rest.find_first_not_of(" \t\r") != std::string::npos)
      fail(path, "more rows than the " + std::to_string(h.vertices) +
                     " vertices declared and no element after them");
  return cloud;
}

PointCloud read_xyz(const std::string& path) {
  const std::vector<char> bytes = slurp(path);
  std::istringstream in(std::string(bytes.begin(), bytes.end()));
  PointCloud cloud;
  cloud.f64 = true;  // decimals, read as numpy.loadtxt reads them
  size_t width = 0;
  int64_t line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    const size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    std::istringstream w(line);
    std::vector<double> v;
    for (std::string token; w >> token;) {
      char* end = nullptr;
      const double x = std::strtod(token.c_str(), &end);
      if (*end != '\0')
        fail(path, "line " + std::to_string(line_no) + ": '" + token + "' is not a number");
      v.push_back(x);
    }
    const std::string where = "line " + std::to_string(line_no);
    if (v.size() != 3 && v.size() != 4 && v.size() != 6 && v.size() != 7) {
      fail(path, where + ": " + std::to_string(v.size()) + " values (expected 3, 4, 6 or 7)");
    }
    if (width == 0) width = v.size();
    if (v.size() != width) {
      fail(path, where + ": " + std::to_string(v.size()) + " values, earlier lines " +
                     std::to_string(width));
    }
    add_point(cloud, path, where, v.data(), width >= 6 ? v.data() + 3 : nullptr,
              width == 4   ? &v[3]
              : width == 7 ? &v[6]
                           : nullptr);
  }
  if (cloud.size() == 0) fail(path, "no points");
  return cloud;
}

PointCloud read_npy_points(const std::string& path) {
  const fk::Tensor t = fk::read_npy(path);
  // A conversion to f64 would drop an imaginary part.
  if (fk::is_complex(t.dtype()))
    fail(path, "dtype " + std::string(fk::name(t.dtype())) + " (expected real or integer values)");
  const int64_t width = t.dim() == 2 ? t.size(1) : 0;
  if (width != 3 && width != 4 && width != 6 && width != 7) {
    fail(path, "shape " + t.shape().str() + " (expected N x 3, 4, 6 or 7)");
  }
  if (t.size(0) == 0) fail(path, "no points");
  const std::vector<double> v = t.to_vector<double>();
  PointCloud cloud;
  // Types a float does not hold exactly (fk reads narrower integers as i32).
  cloud.f64 =
      t.dtype() == fk::DType::F64 || t.dtype() == fk::DType::I32 || t.dtype() == fk::DType::I64;
  for (int64_t r = 0; r < t.size(0); ++r) {
    const double* row = v.data() + r * width;
    add_point(cloud, path, "row " + std::to_string(r), row, width >= 6 ? row + 3 : nullptr,
              width == 4   ? row + 3
              : width == 7 ? row + 6
                           : nullptr);
  }
  return cloud;
}

PointCloud read_points(const std::string& path) {
  const std::string ext = point_file_extension(path);
  if (ext == ".ply") return read_ply(path);
  if (ext == ".xyz" || ext == ".txt") return read_xyz(path);
  if (ext == ".npy") return read_npy_points(path);
  fail(path, "unknown extension '" + ext + "' (expected .ply, .npy, .xyz or .txt)");
}

}  // namespace minkowski::data
