#include "fk/io/npy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <complex>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/memory.h"
#include "scratch_dir.h"

namespace {

namespace fs = std::filesystem;

fs::path scratch() {
  return fieldkit_test::scratch_dir();
}

// A .npy file as NumPy lays it out: magic, version 1.0, header length, the
// header dict padded with spaces to a multiple of 64 bytes and a newline, data.
std::string npy_bytes(const std::string& dict, const std::string& data, int major = 1) {
  std::string header = dict;
  const size_t fixed = major == 1 ? 10 : 12;
  header.append((64 - (fixed + header.size() + 1) % 64) % 64, ' ');
  header.push_back('\n');
  std::string b = "\x93NUMPY";
  b.push_back(static_cast<char>(major));
  b.push_back(0);
  const size_t n = header.size();
  for (size_t i = 0; i < (major == 1 ? 2u : 4u); ++i) b.push_back(static_cast<char>(n >> (8 * i)));
  return b + header + data;
}

template <typename T>
std::string raw(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

fs::path write_file(const std::string& name, const std::string& bytes) {
  const fs::path p = scratch() / name;
  std::ofstream(p, std::ios::binary) << bytes;
  return p;
}

// The fk::Error of reading `bytes` from a file named `name`, checked to name the file.
std::string refusal(const std::string& name, const std::string& bytes) {
  const fs::path p = write_file(name, bytes);
  try {
    fk::read_npy(p.string());
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    // The same bytes from memory give the same refusal.
    EXPECT_THROW(fk::read_npy_bytes(bytes, name), fk::Error);
    return e.what();
  }
  ADD_FAILURE() << name << " was read";
  return "";
}

const std::string kDict2x3I4 = "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }";

TEST(Npy, ReadsTheBytesNumPyWrites) {
  const std::vector<int32_t> v{1, -2, 3, 2147483647, -2147483647 - 1, 0};
  const fs::path p = write_file("ints.npy", npy_bytes(kDict2x3I4, raw(v)));
  fk::Tensor t = fk::read_npy(p.string());
  ASSERT_EQ(t.dtype(), fk::DType::I32);
  ASSERT_EQ(t.shape(), (fk::Dims{2, 3}));
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(t.data<int32_t>()[i], v[i]);
}

TEST(Npy, ReadsVersionsTwoAndThreeAndDoubleQuotesAndNoTrailingComma) {
  const std::vector<double> v{0.5, -1.25};
  for (int major : {2, 3}) {
    fk::Tensor t = fk::read_npy_bytes(
        npy_bytes("{\"shape\": (2,), \"fortran_order\": False, \"descr\": \"<f8\"}", raw(v), major),
        "v.npy");
    ASSERT_EQ(t.shape(), (fk::Dims{2}));
    EXPECT_EQ(t.data<double>()[0], 0.5);
    EXPECT_EQ(t.data<double>()[1], -1.25);
  }
}

TEST(Npy, RoundTripsEveryNumPyDType) {
  const fs::path p = scratch() / "round.npy";
  auto round = [&](const fk::Tensor& t) {
    fk::write_npy(p.string(), t);
    fk::Tensor r = fk::read_npy(p.string());
    EXPECT_EQ(r.dtype(), t.dtype());
    EXPECT_EQ(r.shape(), t.shape());
    EXPECT_EQ(std::memcmp(r.data_ptr(), t.data_ptr(), t.nbytes()), 0) << fk::name(t.dtype());
  };
  round(fk::from_vector(std::vector<int32_t>{1, 2, 3, 4, 5, 6}, {3, 2}));
  round(fk::from_vector(std::vector<int64_t>{int64_t{1} << 40, -7}, {2, 1, 1}));
  round(fk::from_vector(std::vector<float>{1.5f, -2.f, 3.25f}));
  round(fk::from_vector(std::vector<double>{1e300, -0.0}));
  round(fk::from_vector(std::vector<fk::c64>{{1, 2}, {3, -4}}));
  round(fk::from_vector(std::vector<fk::c128>{{1, 2}}));
  round(fk::from_vector(std::vector<float>{0.5f, -3.f}).to(fk::DType::F16));
  round(fk::from_vector(std::vector<int32_t>{1, 0, 1}).to(fk::DType::Bool));
  round(fk::zeros({0, 4}, {fk::DType::F32}));
  round(fk::from_vector(std::vector<float>{7.f}, fk::Dims{}));
}

TEST(Npy, WritesTheLogicalOrderOfAView) {
  fk::Tensor t = fk::from_vector(std::vector<int32_t>{1, 2, 3, 4, 5, 6}, {2, 3}).transpose(0, 1);
  const fs::path p = scratch() / "view.npy";
  fk::write_npy(p.string(), t);
  fk::Tensor r = fk::read_npy(p.string());
  ASSERT_EQ(r.shape(), (fk::Dims{3, 2}));
  const std::vector<int32_t> expected{1, 4, 2, 5, 3, 6};
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(r.data<int32_t>()[i], expected[i]);
}

TEST(Npy, WriteRefusesBf16) {
  fk::Tensor t = fk::zeros({2}, {fk::DType::BF16});
  EXPECT_THROW(fk::write_npy((scratch() / "bf16.npy").string(), t), fk::Error);
}

TEST(Npy, TruncatedDataIsRefusedBeforeAllocating) {
  // The header claims 2^30 int32 (4 GiB); the file holds 8 bytes of data.
  const int64_t peak = fk::memory_stats().peak;
  const std::string e =
      refusal("claims_4gb.npy",
              npy_bytes("{'descr': '<i4', 'fortran_order': False, 'shape': (268435456, 4), }",
                        raw(std::vector<int32_t>{1, 2})));
  EXPECT_NE(e.find("4294967296 bytes of data"), std::string::npos) << e;
  EXPECT_NE(e.find("8 bytes after the header (truncated)"), std::string::npos) << e;
  EXPECT_LT(fk::memory_stats().peak - peak, int64_t{1} << 20);
  refusal("short.npy", npy_bytes(kDict2x3I4, raw(std::vector<int32_t>{1, 2, 3, 4, 5})));
}

TEST(Npy, TrailingBytesAreRefused) {
  const std::string e =
      refusal("long.npy", npy_bytes(kDict2x3I4, raw(std::vector<int32_t>{1, 2, 3, 4, 5, 6, 7})));
  EXPECT_NE(e.find("trailing"), std::string::npos) << e;
}

TEST(Npy, AShapeWhoseProductOverflowsIsRefused) {
  // 2^32 x 2^32 elements: 2^64 wraps to 0 in 64 bits (an empty array).
  std::string e = refusal(
      "wraps.npy",
      npy_bytes("{'descr': '<i4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }",
                ""));
  EXPECT_NE(e.find("fits 63 bits"), std::string::npos) << e;
  // A zero dimension does not excuse the others: they still make strides.
  refusal("zero_wraps.npy",
          npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (0, 4611686018427387904), "
                    "}",
                    ""));
  e = refusal("huge_dim.npy", npy_bytes("{'descr': '<i4', 'fortran_order': False, 'shape': "
                                        "(99999999999999999999,), }",
                                        ""));
  EXPECT_NE(e.find("below 2^63"), std::string::npos) << e;
}

TEST(Npy, AbsurdHeadersAreRefused) {
  // Version 2 with a header length of 2^31.
  std::string b = "\x93NUMPY\x02";
  b += std::string("\0\0\0\0\x80", 5);
  std::string e = refusal("huge_header.npy", b + "{}");
  EXPECT_NE(e.find("2147483648 bytes"), std::string::npos) << e;
  // A header longer than the file.
  e = refusal("cut_header.npy", npy_bytes(kDict2x3I4, "").substr(0, 40));
  EXPECT_NE(e.find("truncated"), std::string::npos) << e;
  refusal(
      "nine_dims.npy",
      npy_bytes("{'descr': '<i4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1), }", ""));
  refusal("no_shape.npy", npy_bytes("{'descr': '<i4', 'fortran_order': False, }", ""));
  refusal("twice.npy",
          npy_bytes("{'descr': '<i4', 'descr': '<i4', 'fortran_order': False, 'shape': (), }", ""));
  refusal("unknown_key.npy",
          npy_bytes("{'descr': '<i4', 'fortran_order': False, 'shape': (), 'x': 1}", ""));
  refusal("negative.npy", npy_bytes("{'descr': '<i4', 'fortran_order': False, 'shape': (-1,), }",
                                    raw(std::vector<int32_t>{1})));
  refusal("unclosed.npy", npy_bytes("{'descr': '<i4", ""));
  refusal("not_a_dict.npy", npy_bytes("[1, 2]", ""));
  refusal("magic.npy", "PK\x03\x04 a zip file");
  refusal("empty.npy", "");
  refusal("version.npy", npy_bytes(kDict2x3I4, "", 7));
}

// The integers fk has no dtype for are widened exactly: a uint8 mask or
// image (np.uint8 is PNG's and OpenCV's), int16 and uint16 samples, uint32.
TEST(Npy, NarrowIntegersAreWidenedExactly) {
  const auto read = [](const char* descr, const std::string& data, const char* shape = "(3,)") {
    return fk::read_npy_bytes(npy_bytes(std::string("{'descr': '") + descr +
                                            "', 'fortran_order': False, 'shape': " + shape + ", }",
                                        data),
                              "narrow.npy");
  };
  fk::Tensor u1 = read("|u1", std::string("\x00\x7f\xff", 3));
  EXPECT_EQ(u1.dtype(), fk::DType::I32);
  EXPECT_EQ(u1.to_vector<int32_t>(), (std::vector<int32_t>{0, 127, 255}));
  EXPECT_EQ(read("|i1", std::string("\x00\x7f\xff", 3)).to_vector<int32_t>(),
            (std::vector<int32_t>{0, 127, -1}));
  EXPECT_EQ(read("<i2", std::string("\x01\x00\x00\x80\xff\xff", 6)).to_vector<int32_t>(),
            (std::vector<int32_t>{1, -32768, -1}));
  EXPECT_EQ(read(">i2", std::string("\x00\x01\x80\x00\xff\xff", 6)).to_vector<int32_t>(),
            (std::vector<int32_t>{1, -32768, -1}));
  EXPECT_EQ(read("<u2", std::string("\x01\x00\x00\x80\xff\xff", 6)).to_vector<int32_t>(),
            (std::vector<int32_t>{1, 32768, 65535}));
  fk::Tensor u4 = read(">u4", std::string("\x00\x00\x00\x01\xff\xff\xff\xff", 8), "(2,)");
  EXPECT_EQ(u4.dtype(), fk::DType::I64);
  EXPECT_EQ(u4.to_vector<int64_t>(), (std::vector<int64_t>{1, 4294967295}));
  // Fortran order and a file on disk, as np.save writes a transposed uint8 array.
  const fs::path p =
      write_file("u1f.npy", npy_bytes("{'descr': '|u1', 'fortran_order': True, 'shape': (2, 3), }",
                                      std::string("\x01\x04\x02\x05\x03\x06", 6)));
  EXPECT_EQ(fk::read_npy(p.string()).to_vector<int32_t>(),
            (std::vector<int32_t>{1, 2, 3, 4, 5, 6}));
  refusal("short_u1.npy",
          npy_bytes("{'descr': '|u1', 'fortran_order': False, 'shape': (4,), }", "abc"));
}

TEST(Npy, UnsupportedDTypesAreRefused) {
  for (const char* descr : {"<u8", ">u8", "<f16", "|O", "<V8", "", "<M8[ns]"}) {
    const std::string e =
        refusal("dtype.npy", npy_bytes(std::string("{'descr': '") + descr +
                                           "', 'fortran_order': False, 'shape': (1,), }",
                                       std::string(8, '\0')));
    EXPECT_NE(e.find("a b1, i1, u1, i2, u2, i4, u4, i8, f2, f4, f8, c8 or c16 array"),
              std::string::npos)
        << e;
  }
}

// np.save of a transposed array writes Fortran order: the bytes run down the
// columns. Read into C order, as numpy reads it.
TEST(Npy, ReadsFortranOrderIntoCOrder) {
  // The 2 x 3 array [[1, 2, 3], [4, 5, 6]] in column-major bytes.
  fk::Tensor t =
      fk::read_npy_bytes(npy_bytes("{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3), }",
                                   raw(std::vector<int32_t>{1, 4, 2, 5, 3, 6})),
                         "f.npy");
  ASSERT_EQ(t.shape(), (fk::Dims{2, 3}));
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.to_vector<int32_t>(), (std::vector<int32_t>{1, 2, 3, 4, 5, 6}));
  // 3-D: element (i, j, k) at byte offset i + 2 j + 6 k.
  std::vector<double> col(2 * 3 * 4), want(col.size());
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k)
        col[i + 2 * j + 6 * k] = want[(i * 3 + j) * 4 + k] = 100 * i + 10 * j + k;
  const fs::path p = write_file(
      "f3.npy",
      npy_bytes("{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3, 4), }", raw(col)));
  EXPECT_EQ(fk::read_npy(p.string()).to_vector<double>(), want);
  // One dimension: Fortran and C order are the same bytes.
  EXPECT_EQ(fk::read_npy_bytes(npy_bytes("{'descr': '<i4', 'fortran_order': True, 'shape': (2,), }",
                                         raw(std::vector<int32_t>{1, 2})),
                               "f.npy")
                .to_vector<int32_t>(),
            (std::vector<int32_t>{1, 2}));
}

// '>' arrays (a file written on a big-endian machine, or dtype('>f4')): each
// element's bytes reversed, a complex number's parts each.
TEST(Npy, ReadsBigEndianArrays) {
  auto big = [](std::string bytes, size_t word) {
    for (size_t at = 0; at < bytes.size(); at += word)
      std::reverse(bytes.begin() + at, bytes.begin() + at + word);
    return bytes;
  };
  const std::vector<float> f{1.5f, -2.25f, 3e7f};
  fk::Tensor t = fk::read_npy_bytes(
      npy_bytes("{'descr': '>f4', 'fortran_order': False, 'shape': (3,), }", big(raw(f), 4)),
      "be.npy");
  EXPECT_EQ(t.to_vector<float>(), f);
  const std::vector<int64_t> i{1, -2, int64_t{1} << 40};
  t = fk::read_npy_bytes(
      npy_bytes("{'descr': '>i8', 'fortran_order': False, 'shape': (3,), }", big(raw(i), 8)),
      "be.npy");
  EXPECT_EQ(t.to_vector<int64_t>(), i);
  const std::vector<std::complex<double>> c{{1.0, -2.0}, {0.5, 4.0}};
  t = fk::read_npy_bytes(
      npy_bytes("{'descr': '>c16', 'fortran_order': True, 'shape': (1, 2), }", big(raw(c), 8)),
      "be.npy");
  const auto* got = static_cast<const std::complex<double>*>(t.data_ptr());
  EXPECT_EQ(got[0], c[0]);
  EXPECT_EQ(got[1], c[1]);
}

TEST(Npy, BoolBytesOtherThanZeroOrOneAreRefused) {
  refusal("bools.npy",
          npy_bytes("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", "\x01\x02\x00"));
}

TEST(Npy, AMissingFileOrADirectoryIsAnErrorNamingIt) {
  for (const fs::path& p : {scratch() / "missing.npy", scratch()}) {
    try {
      fk::read_npy(p.string());
      ADD_FAILURE() << "read " << p;
    } catch (const fk::Error& e) {
      EXPECT_NE(std::string(e.what()).find(p.string()), std::string::npos) << e.what();
    }
  }
}

}  // namespace
