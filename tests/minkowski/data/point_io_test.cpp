// Point readers: ASCII and binary PLY (with and without colours and labels,
// extra properties skipped) and XYZ text agree with the values written; each
// malformed, truncated, NaN-bearing or inconsistent file is a one-line
// fk::Error naming the file and the place.
#include "minkowski/data/point_io.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/io/npy.h"
#include "fk/test_util.h"
#include "minkowski/data/batch.h"
#include "scratch_dir.h"

namespace minkowski::data {
namespace {

std::string write(const std::string& name, const std::string& bytes) {
  const std::string path = (fieldkit_test::scratch_dir() / name).string();
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

// The message of the fk::Error reading the file at path throws; the file is removed.
std::string read_error(const std::string& path) {
  const std::string e = fk::test::error_of([&] { read_points(path); });
  std::remove(path.c_str());
  return e;
}

// An ASCII x y z header declaring `count` vertices and nothing after them.
std::string kXyzHeader(const std::string& count) {
  return "ply\nformat ascii 1.0\nelement vertex " + count +
         "\nproperty float x\nproperty float y\nproperty float z\nend_header\n";
}
std::string kXyzHeader(int count) {
  return kXyzHeader(std::to_string(count));
}

const std::string kAsciiHeader =
    "ply\nformat ascii 1.0\ncomment made by hand\nelement vertex 2\nproperty float x\n"
    "property float y\nproperty float z\nproperty uchar red\nproperty uchar green\n"
    "property uchar blue\nproperty int label\nelement face 0\n"
    "property list uchar int vertex_indices\nend_header\n";

TEST(DataPointIo, AsciiPlyWithColoursAndLabels) {
  const std::string path =
      write("a.ply", kAsciiHeader + "1 2 3 255 0 51 4\n-1.5 0 2e1 0 255 0 -100\n");
  const PointCloud p = read_points(path);
  EXPECT_EQ(p.xyz, (std::vector<double>{1, 2, 3, -1.5, 0, 20}));
  EXPECT_FALSE(p.f64);  // float x y z
  EXPECT_EQ(p.rgb, (std::vector<float>{1, 0, 0.2f, 0, 1, 0}));
  EXPECT_EQ(p.labels, (std::vector<int64_t>{4, -100}));
  std::remove(path.c_str());
}

// A binary PLY: double x y z, an int16 'intensity' to skip, uchar colours, int label.
std::string binary_ply(int declared, int written) {
  std::string s = "ply\nformat binary_little_endian 1.0\nelement vertex " +
                  std::to_string(declared) +
                  "\nproperty double x\nproperty double y\nproperty double z\nproperty short "
                  "intensity\nproperty uchar red\nproperty uchar green\nproperty uchar blue\n"
                  "property int label\nend_header\n";
  for (int v = 0; v < written; ++v) {
    const double xyz[3] = {v + 0.5, -v * 2.0, 3.25};
    const int16_t intensity = -7;
    const uint8_t rgb[3] = {0, 255, static_cast<uint8_t>(v)};
    const int32_t label = v;
    s.append(reinterpret_cast<const char*>(xyz), sizeof(xyz));
    s.append(reinterpret_cast<const char*>(&intensity), 2);
    s.append(reinterpret_cast<const char*>(rgb), 3);
    s.append(reinterpret_cast<const char*>(&label), 4);
  }
  return s;
}

// A file written on Windows: every line ends in \r\n. The same points.
TEST(DataPointIo, AsciiPlyWithCrlfLineEnds) {
  std::string lf = kAsciiHeader + "1 2 3 255 0 51 4\n-1 0.5 2 0 0 0 0\n", crlf;
  for (char c : lf) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
  const PointCloud a = read_points(write("lf.ply", lf)), b = read_points(write("crlf.ply", crlf));
  EXPECT_EQ(a.xyz, b.xyz);
  EXPECT_EQ(a.rgb, b.rgb);
  EXPECT_EQ(a.labels, b.labels);
  EXPECT_EQ(b.xyz.size(), 6u);
}

TEST(DataPointIo, BinaryPlySkipsOtherProperties) {
  // (A closing line break after the binary data, as some writers add, is no data.)
  const std::string path = write("b.ply", binary_ply(3, 3) + "\n");
  const PointCloud p = read_points(path);
  EXPECT_EQ(p.xyz, (std::vector<double>{0.5, 0, 3.25, 1.5, -2, 3.25, 2.5, -4, 3.25}));
  EXPECT_TRUE(p.f64);  // double x y z
  EXPECT_EQ(p.labels, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_FLOAT_EQ(p.rgb[5], 1.0f / 255);
  std::remove(path.c_str());
}

// 16-bit colours span 0..65535; a file's extension is read in any case and
// only from its name (a dot in a folder's name is no extension).
TEST(DataPointIo, UshortColoursAndExtensionCase) {
  const std::string path =
      write("U.PLY",
            "ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nproperty float y\n"
            "property float z\nproperty ushort red\nproperty ushort green\nproperty ushort "
            "blue\nend_header\n1 2 3 65535 0 32768\n");
  const PointCloud p = read_points(path);
  EXPECT_EQ(p.rgb[0], 1.0f);
  EXPECT_NEAR(p.rgb[2], 0.5, 1e-4);
  std::remove(path.c_str());
  EXPECT_EQ(point_file_extension("/a/dir.v2/noext"), "");
  EXPECT_EQ(point_file_extension("scan.XYZ"), ".xyz");
}

TEST(DataPointIo, XyzWidths) {
  const std::string a = write("a.xyz", "# x y z\n0 1 2\n\n3 4 5\n");
  EXPECT_EQ(read_points(a).size(), 2);
  EXPECT_FALSE(read_points(a).has_labels());
  const std::string b = write("b.txt", "0 1 2 0.5 0.5 0.5 3\n1 1 1 0 0 1 0\n");
  const PointCloud p = read_points(b);
  EXPECT_EQ(p.labels, (std::vector<int64_t>{3, 0}));
  EXPECT_EQ(p.rgb.size(), 6u);
  std::remove(a.c_str());
  std::remove(b.c_str());
}

TEST(DataPointIo, NpyLayouts) {
  const std::string path = write("p.npy", "");
  fk::write_npy(
      path,
      fk::from_vector(std::vector<double>{0, 1, 2, 0.5, 0.25, 1, 3, 4, 5, 6, 0, 0, 0, 1}, {2, 7}));
  const PointCloud p = read_points(path);
  EXPECT_EQ(p.xyz, (std::vector<double>{0, 1, 2, 4, 5, 6}));
  EXPECT_EQ(p.rgb, (std::vector<float>{0.5f, 0.25f, 1, 0, 0, 0}));
  EXPECT_EQ(p.labels, (std::vector<int64_t>{3, 1}));
  fk::write_npy(path, fk::from_vector(std::vector<int32_t>{1, 2, 3, 4}, {1, 4}));
  EXPECT_EQ(read_points(path).labels, (std::vector<int64_t>{4}));
  fk::write_npy(path, fk::from_vector(std::vector<float>{1, 2, 3, 4, 5}, {1, 5}));
  EXPECT_NE(read_error(path).find("shape [1, 5] (expected N x 3, 4, 6 or 7)"), std::string::npos);
  // Complex values are refused, not read as their real parts.
  fk::write_npy(path, fk::from_vector(std::vector<float>{1, 2, 3}, {1, 3}).to(fk::DType::C64));
  EXPECT_NE(read_error(path).find("dtype c64 (expected real or integer values)"),
            std::string::npos);
  const std::string nan = write("n.npy", "");
  fk::write_npy(nan, fk::from_vector(std::vector<float>{1, 2, NAN}, {1, 3}));
  EXPECT_NE(read_error(nan).find("row 0: a NaN"), std::string::npos);
  EXPECT_NE(read_error(write("t.npy", "\x93NUMPY")).find("t.npy"), std::string::npos);
}

// Map-projected positions (~5e6 m) keep a double file's precision: ten
// points 0.1 m apart are ten 0.1 m voxels (as float, whose step is 0.5 m
// there, they were three). A float file divides in f32, as torch does.
TEST(DataPointIo, DoublePositionsAreVoxelizedInDouble) {
  std::vector<double> v;
  for (int k = 0; k < 10; ++k) v.insert(v.end(), {5e6 + k * 0.1 + 0.05, 0.05, 0.05});
  const std::string f64 = write("utm64.npy", ""), f32 = write("utm32.npy", "");
  fk::write_npy(f64, fk::from_vector(v, {10, 3}));
  fk::write_npy(f32, fk::from_vector(v, {10, 3}).to(fk::DType::F32));
  const PointCloud d = read_points(f64), f = read_points(f32);
  EXPECT_TRUE(d.f64);
  EXPECT_FALSE(f.f64);
  EXPECT_EQ(d.xyz, v);
  EXPECT_EQ(voxelize(d, 0.1).coordinates.size(0), 10);
  EXPECT_LT(voxelize(f, 0.1).coordinates.size(0), 10);
  // Text holds decimals: read as double, as numpy.loadtxt.
  std::string text;
  for (int k = 0; k < 10; ++k) text += fmt::format("{:.2f} 0.05 0.05\n", 5e6 + k * 0.1 + 0.05);
  EXPECT_EQ(voxelize(read_points(write("utm.xyz", text)), 0.1).coordinates.size(0), 10);
}

// A directory named like a point file is named as one (its stream's own
// error named no path); read_error's remove takes the empty directory.
TEST(DataPointIo, ADirectoryIsNamed) {
  for (const char* name : {"d.ply", "d.xyz"}) {
    const std::string dir = write(name, "");
    std::remove(dir.c_str());
    std::filesystem::create_directories(dir);
    EXPECT_NE(read_error(dir).find("a directory, not a point file"), std::string::npos) << name;
  }
}

TEST(DataPointIo, BadFilesAreOneLineErrors) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {read_error(write("t.ply", binary_ply(3, 2))), "truncated: 3 vertices declared, 2 present"},
      {read_error(write("u.ply", kAsciiHeader + "1 2 3 255 0 51 4\n")), "truncated"},
      {read_error(write("n.ply", kAsciiHeader + "1 nan 3 255 0 51 4\n1 2 3 0 0 0 0\n")),
       "vertex 0: a NaN"},
      {read_error(write("l.ply", kAsciiHeader + "1 2 3 255 0 51 -3\n1 2 3 0 0 0 0\n")),
       "vertex 0: label"},
      {read_error(write("w.ply", kAsciiHeader + "1 2 3 255 0 51\n")), "too few values"},
      {read_error(write("m.ply", kAsciiHeader + "1 2 3 255 0 51 4 9\n1 2 3 0 0 0 0\n")),
       "vertex 0: more values than the header's 7 properties"},
      {read_error(write("d.ply",
                        "ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\n"
                        "property float y\nproperty float z\nproperty float x\n"
                        "end_header\n1 2 3 4\n")),
       "vertex property 'x' twice"},
      {read_error(write("zero.ply",
                        "ply\nformat ascii 1.0\nelement vertex 0\nproperty float x\n"
                        "property float y\nproperty float z\nend_header\n")),
       "zero.ply: no points"},
      {read_error(write("x.ply", kAsciiHeader + "1 2 3 255 0 5x 4\n")), "'5x' is not a number"},
      {read_error(write("f.ply", "solid cube\nfacet normal 0 0 1\n")), "not a PLY file"},
      {read_error(write("big.ply", "ply\nformat ascii 1.0\ncomment " + std::string(70000, 'x') +
                                       "\nelement vertex 0\nend_header\n")),
       "a PLY header under 64 KiB"},
      {read_error(write("e.ply", "ply\nformat binary_big_endian 1.0\nend_header\n")),
       "binary_big_endian"},
      {read_error(write("z.ply",
                        "ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nproperty float "
                        "y\nend_header\n1 2\n")),
       "without x, y and z"},
      {read_error(write(
           "list.ply",
           "ply\nformat ascii 1.0\nelement vertex 1\nproperty list uchar int x\nend_header\n")),
       "list property"},
      {read_error(write("m.xyz", "0 1 2 5\n0 1 2\n")), "line 2: 3 values, earlier lines 4"},
      {read_error(write("k.xyz", "0 1 2 3 4\n")), "line 1: 5 values"},
      {read_error(write("i.xyz", "0 inf 2\n")), "line 1: a NaN, infinite or beyond-float"},
      // Finite as a double, infinite as a float (found by the point_file fuzzer).
      {read_error(write("big.xyz", "0 0 0\n2.1e46 3 1\n")),
       "line 2: a NaN, infinite or beyond-float"},
      {read_error(write("q.xyz", "0 1 two\n")), "'two' is not a number"},
      {read_error(write("empty.xyz", "# nothing\n")), "no points"},
      {read_error(write("c.csv", "0,1,2\n")), "unknown extension '.csv'"},
      {read_error("/nonexistent/dir/p.ply"), "cannot open"},
      // A header whose count is short of the data, with no element after
      // the vertices: the rest was dropped without a word.
      {read_error(write("short.ply", kXyzHeader(1) + "1 2 3\n4 5 6\n")),
       "more rows than the 1 vertices declared"},
      {read_error(write("short_b.ply", binary_ply(2, 3))), "bytes past the 2 vertices declared"},
      {read_error(write("junk.ply", kXyzHeader("2abc") + "1 2 3\n4 5 6\n")),
       "bad vertex count '2abc'"},
      // Only a line that is end_header ends the header.
      {read_error(write("ceh.ply", "ply\nformat ascii 1.0\ncomment no end_header\n")),
       "not a PLY file"},
      {read_error(write("nofmt.ply",
                        "ply\nelement vertex 1\nproperty float x\nproperty float "
                        "y\nproperty float z\nend_header\n1 2 3\n")),
       "no PLY format line"},
      {read_error(write("v2.ply", "ply\nformat ascii 2.0\nend_header\n")), "format version '2.0'"},
      {read_error(write("pfirst.ply", "ply\nformat ascii 1.0\nproperty float x\nend_header\n")),
       "a PLY property before any element"},
      {read_error(write("kw.ply", "ply\nformat ascii 1.0\nelemnt vertex 1\nend_header\n")),
       "PLY header line 'elemnt vertex 1'"},
      {read_error(write("lc.ply",
                        "ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\n"
                        "property float y\nproperty float z\nproperty int label\n"
                        "property int class\nend_header\n1 2 3 4 5\n")),
       "both a label and a class property"},
      {read_error(write("l9.xyz", "0 1 2 2000000000\n")),
       "label 2e+09 is not a class id (a whole number in [0, 1e9)) or -100"},
  };
  for (const auto& [message, expected] : cases) {
    EXPECT_NE(message.find(expected), std::string::npos)
        << "'" << message << "' lacks '" << expected << "'";
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    EXPECT_NE(message.find("read points /"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace minkowski::data
