#include "minkowski/coords/coordinate_manager.h"

#include <atomic>
#include <limits>
#include <set>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/parallel.h"
#include "fk/profile.h"

namespace minkowski {

namespace {
std::string join(const std::vector<int32_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(v[i]);
  }
  return s;
}
// floor(c / t) * t (toward -inf), exact in 64 bits.
int64_t floor_to(int64_t c, int64_t t) {
  const int64_t q = c >= 0 ? c / t : -((-c + t - 1) / t);
  return q * t;
}
bool fits_int32(int64_t v) {
  return v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max();
}
// Throws naming the first spatial coordinate of rows (n x (1+D)) outside
// [-kCoordinateLimit, kCoordinateLimit]; `bounds` gives the columns' ranges
// (a map's packer), so in-range input costs no pass of its own.
void check_coordinate_range(const int32_t* rows, int64_t n, int dimension,
                            const CoordinatePacker& bounds, const char* where) {
  bool inside = true;
  for (int c = 1; c <= dimension && n > 0; ++c)
    inside = inside && bounds.min(c) >= -kCoordinateLimit &&
             bounds.min(c) + bounds.extent(c) <= kCoordinateLimit;
  const int w = dimension + 1;
  for (int64_t i = 0; i < n && !inside; ++i)
    for (int a = 0; a < dimension; ++a) {
      const int32_t v = rows[i * w + 1 + a];
      FK_CHECK(v >= -kCoordinateLimit && v <= kCoordinateLimit, where,
               "spatial coordinates within [-2^30, 2^30]",
               "coordinate " + fk::to_text(v) + " on axis " + fk::to_text(a) + " of row " +
                   fk::to_text(i));
    }
}
// Throws naming the first spatial coordinate of rows (n x (1+D)) that is not
// a multiple of the tensor stride ts; row i is named as input row
// input_row[i] when given (rows deduplicated on a device).
void check_multiples(const int32_t* rows, int64_t n, int dimension, const std::vector<int32_t>& ts,
                     const std::vector<int64_t>* input_row) {
  const int w = dimension + 1;
  // One pass per axis without a division (strides are mostly 1 or powers of
  // two); the first offending coordinate is looked up only when there is one.
  bool multiples = true;
  for (int a = 0; a < dimension; ++a) {
    const int32_t t = ts[a];
    if (t == 1) continue;
    const int32_t* col = rows + 1 + a;
    if ((t & (t - 1)) == 0) {
      int32_t bad = 0;
      for (int64_t i = 0; i < n; ++i) bad |= col[i * w] & (t - 1);
      multiples = multiples && bad == 0;
    } else {
      for (int64_t i = 0; i < n && multiples; ++i) multiples = col[i * w] % t == 0;
    }
  }
  for (int64_t i = 0; i < n && !multiples; ++i)
    for (int a = 0; a < dimension; ++a) {
      int32_t v = rows[i * w + 1 + a];
      FK_CHECK(v % ts[a] == 0, "minkowski::CoordinateManager::insert",
               "coordinates that are multiples of the tensor stride [" + join(ts) + "]",
               "coordinate " + fk::to_text(v) + " on axis " + fk::to_text(a) + " of row " +
                   fk::to_text(input_row ? (*input_row)[i] : i));
    }
}
std::vector<int64_t> widen(const fk::Tensor& t) {
  const std::vector<int32_t> v = t.to_vector<int32_t>();
  return std::vector<int64_t>(v.begin(), v.end());
}
}  // namespace

std::string MapKey::str() const {
  return "ts[" + join(tensor_stride) + "]" + (tag.empty() ? "" : "#" + tag);
}

CoordinateManager::CoordinateManager(int dimension) : dimension_(dimension) {
  FK_CHECK(dimension >= 1, "minkowski::CoordinateManager", "dimension >= 1",
           fk::to_text(dimension));
}

std::string CoordinateManager::unique_tag(const std::vector<int32_t>& ts,
                                          const std::string& tag) const {
  if (!maps_.count(MapKey{ts, tag})) return tag;
  for (int64_t i = counter_;; ++i) {
    std::string t = tag + "~" + std::to_string(i);
    if (!maps_.count(MapKey{ts, t})) return t;
  }
}

CoordinateManager::Inserted CoordinateManager::insert(const fk::Tensor& coordinates,
                                                      const std::vector<int32_t>& tensor_stride,
                                                      const std::string& tag) {
  const char* where = "minkowski::CoordinateManager::insert";
  const fk::profile::TraceScope trace("minkowski.coordinates.insert");
  FK_CHECK(coordinates.defined(), where, "a coordinate tensor", "an undefined tensor");
  FK_CHECK(coordinates.dtype() == fk::DType::I32, where, "int32 coordinates",
           std::string(fk::name(coordinates.dtype())) + " coordinates");
  FK_CHECK(coordinates.dim() == 2 && coordinates.size(1) == dimension_ + 1, where,
           "coordinates of shape N x " + fk::to_text(dimension_ + 1) + " (batch, x_1..x_" +
               fk::to_text(dimension_) + ")",
           coordinates.shape().str());
  auto ts = expand_axes(tensor_stride, dimension_, where, "tensor stride");
  if (coordinates.device().is_cuda()) return insert_on_device(coordinates, ts, tag);
  fk::Tensor c = coordinates.contiguous();
  const int32_t* rows = c.data<int32_t>();
  int64_t n = c.size(0);
  check_multiples(rows, n, dimension_, ts, nullptr);
  return insert_rows(rows, n, ts, tag);
}

CoordinateManager::Inserted CoordinateManager::insert_rows(const int32_t* rows, int64_t n,
                                                           const std::vector<int32_t>& ts,
                                                           const std::string& tag) {
  Inserted r;
  auto m = std::make_shared<CoordinateMap>(rows, n, dimension_ + 1, ts, &r.unique_rows, &r.inverse);
  check_coordinate_range(rows, n, dimension_, m->packer(), "minkowski::CoordinateManager::insert");
  std::lock_guard<std::mutex> lock(mu_);
  r.key = MapKey{ts, unique_tag(ts, tag)};
  ++counter_;
  maps_[r.key] = std::move(m);
  return r;
}

// The rows are deduplicated on the device; the one download (unique rows,
// unique_rows, inverse) feeds the host map and the checks. The device
// builders' limits (device_coordinates.h: D <= 7, 63-bit keys) apply: a cloud
// beyond them is their fk::Error, not a silent CPU fallback (its caller can
// insert CPU coordinates instead).
CoordinateManager::Inserted CoordinateManager::insert_on_device(const fk::Tensor& coordinates,
                                                                const std::vector<int32_t>& ts,
                                                                const std::string& tag) {
  cuda::DeviceUnique u =
      cuda::unique_coordinates(coordinates.contiguous(), ts, RowOrder::kFirstOccurrence);
  Inserted r;
  r.unique_rows = widen(u.unique_rows);
  r.inverse = widen(u.inverse);
  const std::vector<int32_t> rows = u.map.coordinates.to_vector<int32_t>();
  check_multiples(rows.data(), u.map.size, dimension_, ts, &r.unique_rows);
  // The rows are unique already: first-occurrence order keeps them as they are.
  auto m = std::make_shared<CoordinateMap>(rows.data(), u.map.size, dimension_ + 1, ts);
  check_coordinate_range(rows.data(), u.map.size, dimension_, m->packer(),
                         "minkowski::CoordinateManager::insert");
  std::lock_guard<std::mutex> lock(mu_);
  r.key = MapKey{ts, unique_tag(ts, tag)};
  ++counter_;
  maps_[r.key] = std::move(m);
  device_maps_[r.key] = std::make_shared<const cuda::DeviceCoordinateMap>(std::move(u.map));
  return r;
}

std::shared_ptr<const CoordinateMap> CoordinateManager::host_map_of(
    const cuda::DeviceCoordinateMap& d, RowOrder order) const {
  const std::vector<int32_t> rows = d.coordinates.to_vector<int32_t>();
  return std::make_shared<CoordinateMap>(rows.data(), d.size, d.width, d.tensor_stride, nullptr,
                                         nullptr, order);
}

CoordinateManager::DeviceMap CoordinateManager::device_map(const MapKey& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = device_maps_.find(key);
  return it == device_maps_.end() ? nullptr : it->second;
}

bool CoordinateManager::has(const MapKey& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  return maps_.count(key) > 0;
}

std::shared_ptr<const CoordinateMap> CoordinateManager::map(const MapKey& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = maps_.find(key);
  FK_CHECK(it != maps_.end(), "minkowski::CoordinateManager", "a coordinate map key it holds",
           key.str());
  return it->second;
}

fk::Tensor CoordinateManager::coordinates(const MapKey& key) const {
  auto m = map(key);
  return fk::from_blob_copy(m->coordinates().data(), {m->size(), m->width()}, fk::DType::I32);
}

MapKey CoordinateManager::stride(const MapKey& in, const std::vector<int32_t>& stride) {
  const char* where = "minkowski::CoordinateManager::stride";
  auto s = expand_axes(stride, dimension_, where, "stride");
  auto src = map(in);
  MapKey out{in.tensor_stride, in.tag};
  bool unit = true;
  for (int a = 0; a < dimension_; ++a) {
    const int64_t ts = int64_t{out.tensor_stride[a]} * s[a];
    FK_CHECK(ts <= kCoordinateLimit, where, "tensor strides of at most 2^30",
             fk::to_text(out.tensor_stride[a]) + " x " + fk::to_text(s[a]) + " on axis " +
                 fk::to_text(a));
    out.tensor_stride[a] = static_cast<int32_t>(ts);
    unit = unit && s[a] == 1;
  }
  if (unit || has(out)) return out;
  const fk::profile::TraceScope trace("minkowski.coordinates.stride");
  if (DeviceMap d = device_map(in)) {
    auto dm = std::make_shared<const cuda::DeviceCoordinateMap>(
        cuda::stride_coordinates(*d, s, RowOrder::kKeys));
    auto m = host_map_of(*dm, RowOrder::kKeys);
    std::lock_guard<std::mutex> lock(mu_);
    maps_.emplace(out, std::move(m));
    device_maps_.emplace(out, std::move(dm));
    return out;
  }
  const int w = dimension_ + 1;
  int64_t n = src->size();
  std::vector<int32_t> rows(src->coordinates());
  // Inserted coordinates (|c| <= 2^30) always land inside int32; only an
  // expanded map near the int32 limits can leave it.
  std::atomic<bool> outside{false};
  fk::parallel_for(0, n, 32768, [&](int64_t lo, int64_t hi) {
    bool out_of_range = false;
    for (int64_t i = lo; i < hi; ++i)
      for (int a = 0; a < dimension_; ++a) {
        const int64_t v = floor_to(rows[i * w + 1 + a], out.tensor_stride[a]);
        out_of_range |= !fits_int32(v);
        rows[i * w + 1 + a] = static_cast<int32_t>(v);
      }
    if (out_of_range) outside.store(true, std::memory_order_relaxed);
  });
  FK_CHECK(!outside.load(), where, "strided coordinates within int32",
           "a coordinate of " + in.str() + " that strides below -2^31");
  auto m = std::make_shared<CoordinateMap>(rows.data(), n, w, out.tensor_stride, nullptr, nullptr,
                                           RowOrder::kKeys);
  std::lock_guard<std::mutex> lock(mu_);
  maps_.emplace(out, std::move(m));
  return out;
}

MapKey CoordinateManager::expand(const MapKey& in, const KernelRegion& region,
                                 const std::vector<int32_t>& out_ts) {
  const char* where = "minkowski::CoordinateManager::expand";
  auto ts = expand_axes(out_ts, dimension_, where, "tensor stride");
  auto src = map(in);
  auto off = region.offsets(ts);
  if (DeviceMap d = device_map(in)) {
    auto dm =
        std::make_shared<const cuda::DeviceCoordinateMap>(cuda::expand_coordinates(*d, off, ts));
    auto m = host_map_of(*dm, RowOrder::kFirstOccurrence);
    std::lock_guard<std::mutex> lock(mu_);
    MapKey key{ts, unique_tag(ts, "gen")};
    ++counter_;
    maps_.emplace(key, std::move(m));
    device_maps_.emplace(key, std::move(dm));
    return key;
  }
  const int w = dimension_ + 1;
  int64_t n = src->size(), K = static_cast<int64_t>(off.size()) / dimension_;
  std::vector<int32_t> rows(static_cast<size_t>(n * K * w));
  std::atomic<bool> outside{false};
  fk::parallel_for(0, n, 4096, [&](int64_t lo, int64_t hi) {
    bool out_of_range = false;
    for (int64_t i = lo; i < hi; ++i) {
      const int32_t* c = src->row(i);
      for (int64_t k = 0; k < K; ++k) {
        int32_t* r = rows.data() + (i * K + k) * w;
        r[0] = c[0];
        for (int a = 0; a < dimension_; ++a) {
          const int64_t v = int64_t{c[1 + a]} + off[k * dimension_ + a];
          out_of_range |= !fits_int32(v);
          r[1 + a] = static_cast<int32_t>(v);
        }
      }
    }
    if (out_of_range) outside.store(true, std::memory_order_relaxed);
  });
  FK_CHECK(!outside.load(), where, "expanded coordinates within int32",
           "a coordinate of " + in.str() + " that leaves it by a kernel offset");
  auto m = std::make_shared<CoordinateMap>(rows.data(), n * K, w, ts);
  std::lock_guard<std::mutex> lock(mu_);
  MapKey key{ts, unique_tag(ts, "gen")};
  ++counter_;
  maps_.emplace(key, std::move(m));
  return key;
}

namespace {
std::string region_key(const MapKey& fine, const MapKey& coarse, const std::string& region) {
  return "F|" + fine.str() + "|" + coarse.str() + "|" + region;
}
std::string transposed_key(const MapKey& in, const MapKey& out, const std::string& region) {
  return "T|" + in.str() + "|" + out.str() + "|" + region;
}
// `host`'s device copy is `dev` itself: the device ops find it there
// (cuda::device_copy_of) and upload nothing. Returns the copy `host` keeps:
// another thread's, when it adopted one first (a transposed map shares its
// forward map's copies).
std::shared_ptr<const cuda::DeviceKernelMap> adopt_device_copy(
    const KernelMap& host, const std::shared_ptr<const cuda::DeviceKernelMap>& dev) {
  return std::static_pointer_cast<const cuda::DeviceKernelMap>(
      host.device_copy(dev->device, [&] { return std::static_pointer_cast<const void>(dev); }));
}
}  // namespace

std::shared_ptr<const KernelMap> CoordinateManager::build_forward(const MapKey& fine,
                                                                  const MapKey& coarse,
                                                                  const KernelRegion& region,
                                                                  const std::string& key) {
  auto fm = map(fine), cm = map(coarse);
  if (fine == coarse && region.is_identity(dimension_)) return KernelMap::make_identity(fm->size());
  const fk::profile::TraceScope trace("minkowski.kernel_map.build");
  const std::vector<int32_t> offsets = region.offsets(fm->tensor_stride());
  DeviceMap df = device_map(fine), dc = device_map(coarse);
  if (!df || !dc || df->device != dc->device) return build_kernel_map(*fm, *cm, offsets);
  auto dk = std::make_shared<const cuda::DeviceKernelMap>(
      cuda::build_device_kernel_map(*df, *dc, offsets));
  std::shared_ptr<const KernelMap> host = dk->to_host();
  adopt_device_copy(*host, dk);
  std::lock_guard<std::mutex> lock(mu_);
  device_kernel_maps_.emplace(key, std::move(dk));
  return host;
}

std::shared_ptr<const KernelMap> CoordinateManager::kernel_map(const MapKey& in, const MapKey& out,
                                                               const KernelRegion& region,
                                                               bool transpose) {
  const std::string rs = region.str(dimension_);
  // Forward direction: fine (or same) map -> coarse map.
  const MapKey& fine = transpose ? out : in;
  const MapKey& coarse = transpose ? in : out;
  const std::string fwd_key = region_key(fine, coarse, rs);
  const std::string key = transpose ? transposed_key(in, out, rs) : fwd_key;
  std::shared_ptr<const KernelMap> fwd;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = kernel_maps_.find(key);
    if (it != kernel_maps_.end()) return it->second;
    it = kernel_maps_.find(fwd_key);
    if (it != kernel_maps_.end()) fwd = it->second;
  }
  if (!fwd) {
    fwd = build_forward(fine, coarse, region, fwd_key);
    std::lock_guard<std::mutex> lock(mu_);
    fwd = kernel_maps_.emplace(fwd_key, fwd).first->second;
  }
  if (!transpose) return fwd;
  std::shared_ptr<const KernelMap> t = fwd->transposed();
  DeviceKernelMapPtr dfwd, dt;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = device_kernel_maps_.find(fwd_key);
    if (it != device_kernel_maps_.end()) dfwd = it->second;
  }
  if (dfwd)
    dt = adopt_device_copy(*t,
                           std::make_shared<const cuda::DeviceKernelMap>(cuda::transposed(*dfwd)));
  std::lock_guard<std::mutex> lock(mu_);
  if (dt) device_kernel_maps_.emplace(key, std::move(dt));
  return kernel_maps_.emplace(key, t).first->second;
}

std::shared_ptr<const cuda::DeviceKernelMap> CoordinateManager::device_kernel_map(
    const MapKey& in, const MapKey& out, const KernelRegion& region, bool transpose) {
  kernel_map(in, out, region, transpose);
  const std::string rs = region.str(dimension_);
  const std::string key = transpose ? transposed_key(in, out, rs) : region_key(in, out, rs);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = device_kernel_maps_.find(key);
  return it == device_kernel_maps_.end() ? nullptr : it->second;
}

void CoordinateManager::clear() {
  std::lock_guard<std::mutex> lock(mu_);
  maps_.clear();
  kernel_maps_.clear();
  device_maps_.clear();
  device_kernel_maps_.clear();
}

int64_t CoordinateManager::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t b = 0;
  for (const auto& [k, m] : maps_) b += m->bytes();
  // A transposed map's row indices are its forward map's: count each once.
  std::set<const RowIndex*> indices;
  for (const auto& [k, m] : kernel_maps_) {
    b += m->pair_bytes();
    for (const auto& idx : m->row_indices())
      if (indices.insert(idx.get()).second) b += idx->bytes();
  }
  return b;
}

int64_t CoordinateManager::num_maps() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(maps_.size());
}

int64_t CoordinateManager::num_kernel_maps() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(kernel_maps_.size());
}

}  // namespace minkowski
