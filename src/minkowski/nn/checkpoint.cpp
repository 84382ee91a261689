#include "minkowski/nn/checkpoint.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <vector>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/io/replace_file.h"
#include "fk/shape.h"

namespace minkowski::nn {
namespace {

static_assert(std::endian::native == std::endian::little, "checkpoints are little-endian");

constexpr char kMagic[8] = {'F', 'K', 'M', 'K', 'N', 'N', '0', '1'};
constexpr uint32_t kMaxNameLength = 4096;
constexpr int kMaxRank = 16;

template <typename T>
void put(std::ofstream& out, const T& v) {
  out.write(reinterpret_cast<const char*>(&v), sizeof(T));
}

// Reads a file that is already in memory, so every length is checked against
// the bytes left before it is used.
class Reader {
 public:
  Reader(std::string path, std::vector<char> bytes)
      : path_(std::move(path)), bytes_(std::move(bytes)) {}
  template <typename T>
  T get(const std::string& what) {
    T v;
    std::memcpy(&v, take(sizeof(T), what), sizeof(T));
    return v;
  }
  const char* take(size_t n, const std::string& what) {
    FK_CHECK(n <= bytes_.size() - pos_, "read checkpoint " + path_,
             fk::to_text(n) + " more bytes for " + what,
             "a file truncated at byte " + fk::to_text(bytes_.size()));
    const char* p = bytes_.data() + pos_;
    pos_ += n;
    return p;
  }
  bool at_end() const { return pos_ == bytes_.size(); }

 private:
  std::string path_;
  std::vector<char> bytes_;
  size_t pos_ = 0;
};

std::vector<char> read_file(const std::string& path) {
  // A directory opens as a stream whose read throws a message naming no path.
  FK_CHECK(!std::filesystem::is_directory(path), "read checkpoint", "a readable file",
           "'" + path + "', a directory");
  std::ifstream in(path, std::ios::binary);
  FK_CHECK(in.good(), "read checkpoint", "a readable file", "'" + path + "'");
  return std::vector<char>(std::istreambuf_iterator<char>(in), {});
}

std::pair<std::string, fk::Tensor> read_entry(Reader& r, const std::string& path) {
  const auto name_length = r.get<uint32_t>("a name length");
  FK_CHECK(name_length > 0 && name_length <= kMaxNameLength, "read checkpoint " + path,
           "a name length in [1, 4096]", fk::to_text(name_length));
  std::string name(r.take(name_length, "a name"), name_length);
  const auto dtype = r.get<uint8_t>("the dtype of " + name);
  FK_CHECK(dtype < fk::kNumDTypes, "read checkpoint " + path + " tensor " + name,
           "a dtype code below " + fk::to_text(fk::kNumDTypes), fk::to_text(dtype));
  const auto rank = r.get<uint8_t>("the rank of " + name);
  FK_CHECK(rank <= kMaxRank, "read checkpoint " + path + " tensor " + name, "rank <= 16",
           fk::to_text(rank));
  fk::Dims shape;
  uint64_t numel = 1;
  for (int d = 0; d < rank; ++d) {
    const auto n = r.get<int64_t>("the shape of " + name);
    FK_CHECK(n >= 0 && n < (int64_t{1} << 40), "read checkpoint " + path + " tensor " + name,
             "dimensions in [0, 2^40)", fk::to_text(n));
    shape.push_back(n);
    numel *= static_cast<uint64_t>(n);
    FK_CHECK(numel < (uint64_t{1} << 40), "read checkpoint " + path + " tensor " + name,
             "fewer than 2^40 elements", "more");
  }
  const auto type = static_cast<fk::DType>(dtype);
  const size_t nbytes = numel * fk::itemsize(type);
  const char* data = r.take(nbytes, "the data of " + name);
  return {name, nbytes == 0 ? fk::empty(shape, {type}) : fk::from_blob_copy(data, shape, type)};
}

}  // namespace

static void write_tensors(const std::string& path, const std::string& named,
                          const NamedTensors& tensors);

// Written whole (fk::replace_file): truncating the checkpoint in place lost
// the last good last.ckpt when a write failed.
void save_tensors(const std::string& path, const NamedTensors& tensors) {
  fk::replace_file(
      path, [&](const std::string& tmp) { write_tensors(tmp, path, tensors); }, "save checkpoint",
      "'" + path + "'");
}

// Writes `path`; errors name `named`, the file the caller means.
static void write_tensors(const std::string& path, const std::string& named,
                          const NamedTensors& tensors) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  FK_CHECK(out.good(), "save checkpoint", "a writable path", "'" + named + "'");
  out.write(kMagic, sizeof(kMagic));
  put(out, kCheckpointVersion);
  put(out, static_cast<uint32_t>(tensors.size()));
  for (const auto& [name, t] : tensors) {
    put(out, static_cast<uint32_t>(name.size()));
    out.write(name.data(), static_cast<std::streamsize>(name.size()));
    put(out, static_cast<uint8_t>(t.dtype()));
    put(out, static_cast<uint8_t>(t.dim()));
    for (int d = 0; d < t.dim(); ++d) put(out, static_cast<int64_t>(t.size(d)));
    const fk::Tensor host = t.detach().to(fk::kCPU).contiguous();
    if (host.numel() > 0) out.write(static_cast<const char*>(host.data_ptr()), host.nbytes());
  }
  out.close();
  FK_CHECK(!out.fail(), "save checkpoint", "all bytes written", "a write error on '" + named + "'");
}

NamedTensors read_tensors(const std::string& path) {
  Reader r(path, read_file(path));
  const char* magic = r.take(sizeof(kMagic), "the magic");
  FK_CHECK(std::memcmp(magic, kMagic, sizeof(kMagic)) == 0, "read checkpoint " + path,
           "a file starting with FKMKNN01", "another file type");
  const auto version = r.get<uint32_t>("the version");
  FK_CHECK(version == kCheckpointVersion, "read checkpoint " + path,
           "format version " + fk::to_text(kCheckpointVersion), fk::to_text(version));
  const auto count = r.get<uint32_t>("the tensor count");
  NamedTensors out;
  for (uint32_t i = 0; i < count; ++i) out.push_back(read_entry(r, path));
  FK_CHECK(r.at_end(), "read checkpoint " + path, "the file to end after the last tensor",
           "trailing bytes");
  return out;
}

void copy_named(const NamedTensors& targets, const NamedTensors& source, const std::string& where) {
  std::map<std::string, const fk::Tensor*> by_name;
  for (const auto& [name, t] : source) by_name[name] = &t;
  for (const auto& [name, t] : targets) {
    auto it = by_name.find(name);
    FK_CHECK(it != by_name.end(), where, "a tensor named " + name, "none (another architecture?)");
    const fk::Tensor& s = *it->second;
    FK_CHECK(s.shape() == t.shape() && s.dtype() == t.dtype(), where + " tensor " + name,
             t.shape().str() + " " + fk::name(t.dtype()),
             s.shape().str() + " " + fk::name(s.dtype()));
  }
  FK_CHECK(source.size() == targets.size(), where, fk::to_text(targets.size()) + " tensors",
           fk::to_text(source.size()) + " (another architecture?)");
  fk::autograd::NoGradGuard no_grad;
  for (const auto& [name, t] : targets) {
    fk::Tensor target = t;
    target.copy_(*by_name[name]);
  }
}

void save_state(const Module& module, const std::string& path) {
  save_tensors(path, module.state());
}

void check_finite(const NamedTensors& tensors, const std::string& where) {
  for (const auto& [name, t] : tensors) {
    if (!fk::is_floating(t.dtype())) continue;
    const std::vector<double> v = t.to_vector<double>();
    const auto bad = std::find_if(v.begin(), v.end(), [](double x) { return !std::isfinite(x); });
    FK_CHECK(bad == v.end(), where, "finite weights", fk::to_text(*bad) + " in " + name);
  }
}

void load_state(Module& module, const std::string& path) {
  NamedTensors source;
  for (auto& [name, t] : read_tensors(path))
    if (!name.starts_with(kMetaPrefix)) source.emplace_back(name, t);
  check_finite(source, "load checkpoint " + path);
  copy_named(module.state(), source, "load checkpoint " + path);
}

}  // namespace minkowski::nn
