#include "minkowski/sparse_tensor.h"

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/index.h"
#include "fk/parallel.h"
#include "fk/random.h"
#include "minkowski/ops/max_order.h"
#include "minkowski/ops/quantize_device.h"

namespace minkowski {

namespace {
// Features may live on a CUDA device: quantization and the ops then run
// there. Their coordinates are either on the host (the maps are built there,
// with a cached device copy of each kernel map) or on the features' device
// (the maps are built there too, coordinate_manager.h).
void check_features(const fk::Tensor& f, const char* where) {
  FK_CHECK(f.defined(), where, "a feature tensor", "an undefined tensor");
  FK_CHECK(fk::is_floating(f.dtype()), where, "f32, f64, f16 or bf16 features",
           fk::name(f.dtype()));
  FK_CHECK(f.dim() == 2, where, "2-D features (N x C)", f.shape().str());
}

}  // namespace

std::vector<int64_t> subsample_rows(const std::vector<int64_t>& inverse, int64_t m, uint64_t seed) {
  const int64_t n = static_cast<int64_t>(inverse.size());
  // The input rows of each map row, in input order (a counting sort).
  std::vector<int64_t> start(static_cast<size_t>(m) + 1, 0);
  for (int64_t r : inverse) {
    FK_CHECK(r >= 0 && r < m, "minkowski::subsample_rows",
             "map rows in [0, " + fk::to_text(m) + ")", fk::to_text(r));
    ++start[r + 1];
  }
  for (int64_t r = 0; r < m; ++r) {
    FK_CHECK(start[r + 1] > 0, "minkowski::subsample_rows", "an inverse mapping onto every map row",
             "no input row for map row " + fk::to_text(r));
    start[r + 1] += start[r];
  }
  std::vector<int64_t> members(static_cast<size_t>(n)), fill(start.begin(), start.end() - 1);
  for (int64_t i = 0; i < n; ++i) members[fill[inverse[i]]++] = i;
  std::vector<int64_t> kept(static_cast<size_t>(m));
  const fk::Generator gen(seed);
  fk::parallel_for(0, m, 4096, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      uint64_t count = static_cast<uint64_t>(start[r + 1] - start[r]);
      if (count == 1) {
        kept[r] = members[start[r]];
        continue;
      }
      auto w = gen.block(static_cast<uint64_t>(r));
      uint64_t u = (static_cast<uint64_t>(w[0]) << 32) | w[1];
      kept[r] = members[start[r] + static_cast<int64_t>(u % count)];
    }
  });
  return kept;
}

fk::Tensor quantize_features(const fk::Tensor& features, const std::vector<int64_t>& kept_rows,
                             const std::vector<int64_t>& inverse, QuantizationMode mode) {
  int64_t m = static_cast<int64_t>(kept_rows.size()), n = features.size(0), c = features.size(1);
  if (m == n) return features;  // no duplicates: rows are already in order
  // fk's index ops run on the features' device, in the same order there.
  const fk::Device dev = features.device();
  switch (mode) {
    case QuantizationMode::RandomSubsample:
    case QuantizationMode::FirstOccurrence:
      return fk::index_select(features, 0, kept_rows);  // checked on the host, uploaded
    case QuantizationMode::UnweightedSum:
    case QuantizationMode::UnweightedAverage: {
      fk::Tensor s = fk::index_add(fk::zeros({m, c}, {features.dtype(), dev}), 0, inverse,
                                   features);  // checked on the host, uploaded
      if (mode == QuantizationMode::UnweightedSum) return s;
      std::vector<double> count(m, 0.0);
      for (int64_t r : inverse) count[r] += 1;
      return fk::div(s, fk::from_vector(count, fk::Dims{m, 1}, dev).to(features.dtype()));
    }
    case QuantizationMode::MaxPool: {
      // The row holding each channel's max (first one on ties), then a gather,
      // which carries the gradient to that row only.
      if (dev.is_cuda()) return fk::gather(features, 0, device_group_argmax(features, inverse, m));
      fk::Tensor f = features.to(fk::DType::F64).contiguous();
      const double* fp = f.data<double>();
      std::vector<int64_t> arg(m * c, -1);
      for (int64_t i = 0; i < n; ++i) {
        int64_t r = inverse[i];
        for (int64_t x = 0; x < c; ++x) {
          int64_t& a = arg[r * c + x];
          if (a < 0 || replaces_max(fp[i * c + x], fp[a * c + x])) a = i;
        }
      }
      return fk::gather(features, 0, arg, fk::Dims{m, c});  // checked on the host, uploaded
    }
  }
  return features;
}

SparseTensor::SparseTensor(const fk::Tensor& features, const fk::Tensor& coordinates,
                           const std::vector<int32_t>& tensor_stride, QuantizationMode mode,
                           std::shared_ptr<CoordinateManager> manager, uint64_t seed) {
  const char* where = "minkowski::SparseTensor";
  check_features(features, where);
  FK_CHECK(coordinates.defined() && coordinates.dim() == 2 && coordinates.size(1) >= 2, where,
           "coordinates of shape N x (1+D), D >= 1",
           coordinates.defined() ? coordinates.shape().str() : "undefined");
  FK_CHECK(coordinates.device().is_cpu() || features.device() == coordinates.device(), where,
           "features on the coordinates' device (" + coordinates.device().str() + ")",
           "features on " + features.device().str());
  FK_CHECK(coordinates.size(0) == features.size(0), where,
           "as many coordinate rows as feature rows (" + fk::to_text(features.size(0)) + ")",
           fk::to_text(coordinates.size(0)));
  if (!manager) {
    manager = std::make_shared<CoordinateManager>(static_cast<int>(coordinates.size(1)) - 1);
  }
  auto ins = manager->insert(coordinates, tensor_stride);
  if (mode == QuantizationMode::RandomSubsample)
    ins.unique_rows =
        subsample_rows(ins.inverse, static_cast<int64_t>(ins.unique_rows.size()), seed);
  features_ = quantize_features(features, ins.unique_rows, ins.inverse, mode);
  manager_ = std::move(manager);
  key_ = ins.key;
  unique_index_ = std::move(ins.unique_rows);
  inverse_ = std::move(ins.inverse);
}

SparseTensor::SparseTensor(const fk::Tensor& features, const MapKey& key,
                           std::shared_ptr<CoordinateManager> manager)
    : features_(features), manager_(std::move(manager)), key_(key) {
  const char* where = "minkowski::SparseTensor";
  check_features(features, where);
  FK_CHECK(manager_ != nullptr, where, "a coordinate manager", "null");
  int64_t n = manager_->size(key);
  FK_CHECK(features.size(0) == n, where,
           fk::to_text(n) + " feature rows (the map " + key.str() + ")",
           fk::to_text(features.size(0)));
}

SparseTensor SparseTensor::with_features(const fk::Tensor& features) const {
  const char* where = "minkowski::SparseTensor::with_features";
  FK_CHECK(defined(), where, "a sparse tensor", "an empty handle");
  check_features(features, where);
  FK_CHECK(features.size(0) == size(), where,
           fk::to_text(size()) + " feature rows (the map " + key_.str() + ")",
           fk::to_text(features.size(0)));
  SparseTensor s = *this;
  s.features_ = features;
  return s;
}

void check_same_manager(const SparseTensor& a, const SparseTensor& b, const char* where) {
  FK_CHECK(a.defined() && b.defined(), where, "two sparse tensors", "an empty handle");
  FK_CHECK(a.manager() == b.manager(), where, "tensors of the same coordinate manager",
           "tensors of different managers (maps " + a.key().str() + " and " + b.key().str() +
               "; equal keys do not make the same map)");
}

void check_same_manager(const SparseTensor& a, const MapRef& b, const char* where) {
  FK_CHECK(a.defined(), where, "a sparse tensor", "an empty handle");
  FK_CHECK(b.manager != nullptr, where, "a target map with its coordinate manager",
           "a MapRef without a manager (map " + b.key.str() + ")");
  FK_CHECK(
      a.manager() == b.manager, where,
      "a target map of the input's coordinate manager (the input's map is " + a.key().str() + ")",
      "the map " + b.key.str() + " of another manager (equal keys do not make the same map)");
  FK_CHECK(b.manager->has(b.key), where, "a target map present in its manager",
           "the map " + b.key.str() + ", which the manager does not hold");
}

}  // namespace minkowski
