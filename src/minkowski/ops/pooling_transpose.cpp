#include "minkowski/ops/pooling_transpose.h"

#include <string>

#include "fk/error.h"

namespace minkowski {

namespace {

std::string join(const std::vector<int32_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

// The finer tensor stride ts / s (exact on every axis).
std::vector<int32_t> finer_stride(const std::vector<int32_t>& ts, const std::vector<int32_t>& s,
                                  const char* where) {
  std::vector<int32_t> r(ts.size());
  for (size_t a = 0; a < ts.size(); ++a) {
    FK_CHECK(ts[a] % s[a] == 0, where, "a stride dividing the input tensor stride on every axis",
             "stride " + join(s) + " for tensor stride " + join(ts));
    r[a] = ts[a] / s[a];
  }
  return r;
}

// The map reduces over pooling_region's region (ME's stride map where the
// kernel size is the stride).
SparseTensor unpool_onto(const SparseTensor& x, PoolingMode mode, const KernelRegion& kernel,
                         const std::vector<int32_t>& stride, const MapKey& out) {
  auto map =
      x.manager()->kernel_map(x.key(), out, pooling_region(kernel, stride, x.dimension()), true);
  return SparseTensor(pool_features(x.F(), std::move(map), mode), out, x.manager());
}

}  // namespace

SparseTensor pooling_transpose(const SparseTensor& x, PoolingMode mode, const KernelRegion& kernel,
                               const std::vector<int32_t>& stride,
                               const std::optional<MapRef>& out) {
  const char* where = "minkowski::pooling_transpose";
  FK_CHECK(x.defined(), where, "a sparse tensor", "an empty handle");
  const auto s = expand_axes(stride, x.dimension(), where, "stride");
  auto ts = finer_stride(x.tensor_stride(), s, where);
  auto& mgr = x.manager();
  if (out) {
    check_same_manager(x, *out, where);
    FK_CHECK(out->key.tensor_stride == ts, where,
             "an output map of tensor stride " + join(ts) + " (input " + join(x.tensor_stride()) +
                 " / stride)",
             "tensor stride " + join(out->key.tensor_stride));
    return unpool_onto(x, mode, kernel, s, out->key);
  }
  MapKey same_tag{ts, x.key().tag}, plain{ts, ""};
  MapKey ok = mgr->has(same_tag) ? same_tag
              : mgr->has(plain)
                  ? plain
                  : mgr->expand(x.key(), pooling_region(kernel, s, x.dimension()), ts);
  return unpool_onto(x, mode, kernel, s, ok);
}

SparseTensor generative_pooling_transpose(const SparseTensor& x, PoolingMode mode,
                                          const KernelRegion& kernel,
                                          const std::vector<int32_t>& stride) {
  const char* where = "minkowski::generative_pooling_transpose";
  FK_CHECK(x.defined(), where, "a sparse tensor", "an empty handle");
  const auto s = expand_axes(stride, x.dimension(), where, "stride");
  auto ts = finer_stride(x.tensor_stride(), s, where);
  // The coordinates of the region the features go to (unpool_onto's).
  const MapKey out = x.manager()->expand(x.key(), pooling_region(kernel, s, x.dimension()), ts);
  return unpool_onto(x, mode, kernel, s, out);
}

}  // namespace minkowski
