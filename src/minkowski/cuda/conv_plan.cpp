// The device convolution's host-side plan (conv_plan.h).
#include "minkowski/cuda/conv_plan.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "fk/error.h"

namespace minkowski::cuda {

void check_conv_dtypes(const char* where, const fk::Tensor& f, const fk::Tensor& w,
                       const fk::Tensor* g) {
  FK_CHECK(f.defined(), where, "defined features", "an undefined tensor");
  const fk::DType t = f.dtype();
  FK_CHECK(
      t == fk::DType::F32 || t == fk::DType::F16 || t == fk::DType::BF16 || t == fk::DType::F64,
      where, "features of dtype f32, f16, bf16 or f64", fk::name(t));
  FK_CHECK(w.defined(), where, "a weight", "an undefined tensor");
  FK_CHECK(w.dtype() == t, where, std::string("a weight of the features' dtype ") + fk::name(t),
           fk::name(w.dtype()));
  if (g == nullptr || !g->defined()) return;
  FK_CHECK(g->dtype() == t, where, std::string("a grad_out of the features' dtype ") + fk::name(t),
           fk::name(g->dtype()));
}

void check_device_pair_count(const char* where, int64_t pairs) {
  FK_CHECK(pairs < (int64_t{1} << 31), where,
           "a kernel map of < 2^31 pairs on a device (i32 pair ids)", fk::to_text(pairs));
}

OffsetGroups plan_offset_groups(const std::vector<int64_t>& pairs, int64_t row_bytes, bool fused,
                                double cap_mb) {
  const char* where = "minkowski::cuda::plan_offset_groups";
  FK_CHECK(row_bytes > 0, where, "row_bytes > 0", fk::to_text(row_bytes));
  FK_CHECK(cap_mb >= 0, where, "a cap >= 0 MiB (0: 2048)", fk::to_text(cap_mb));
  if (cap_mb == 0) cap_mb = 2048;
  const int64_t volume = static_cast<int64_t>(pairs.size());
  int64_t largest = 0;
  for (int64_t n : pairs) largest = std::max(largest, n);
  // Rows under the cap in double: a cap past int64's rows (an inf among
  // them) is no cap, not an out-of-range conversion.
  const double cap_rows = std::floor(cap_mb * 1048576.0 / static_cast<double>(row_bytes));
  const int64_t cap =
      std::max(largest, cap_rows >= 9e18 ? INT64_MAX : static_cast<int64_t>(cap_rows));
  OffsetGroups r;
  for (int64_t k = 0; k < volume;) {
    int64_t last = k + 1, rows = pairs[k];
    while (fused && last < volume && rows + pairs[last] <= cap) rows += pairs[last++];
    if (rows > 0) r.groups.push_back({k, last});
    r.max_rows = std::max(r.max_rows, rows);
    k = last;
  }
  return r;
}

}  // namespace minkowski::cuda
