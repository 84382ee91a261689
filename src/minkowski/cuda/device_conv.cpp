// The device convolution's host side: operand checks, offset groups,
// staging, and the gather -> cuBLAS -> scatter sequence on the current stream.
#include "minkowski/cuda/device_conv.h"

#include <algorithm>
#include <string>
#include <vector>

#include "fk/amp.h"
#include "fk/cuda/blas.h"
#include "fk/cuda/device_guard.h"
#include "fk/cuda/kernels.h"
#include "fk/cuda/runtime.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/knobs.h"
#include "minkowski/cuda/kernels.h"
#include "minkowski/ops/conv.h"

namespace minkowski::cuda {

namespace {

thread_local DeviceConvInfo tl_info;

void check_operand(const fk::Tensor& t, const DeviceKernelMap& m, const char* where,
                   const char* what, int64_t rows, int64_t cols) {
  FK_CHECK(t.defined(), where, std::string("a ") + what, "an undefined tensor");
  FK_CHECK(t.dtype() == fk::DType::F32, where, std::string(what) + " of dtype f32",
           fk::name(t.dtype()));
  FK_CHECK(t.device() == fk::cuda_device(m.device), where,
           std::string(what) + " on " + fk::cuda_device(m.device).str(), t.device().str());
  FK_CHECK(t.is_contiguous(), where, std::string(what) + " contiguous", "a strided view");
  std::string shape = std::string(what) + " of shape (";
  shape += std::to_string(rows);
  shape += cols < 0 ? std::string(", C)") : ", " + std::to_string(cols) + ")";
  FK_CHECK(t.dim() == 2 && t.size(0) == rows && (cols < 0 || t.size(1) == cols), where, shape,
           t.shape().str());
}

void check_weight(const fk::Tensor& w, const DeviceKernelMap& m, const char* where, int64_t cin) {
  FK_CHECK(w.defined(), where, "a weight", "an undefined tensor");
  FK_CHECK(
      w.dtype() == fk::DType::F32 && w.device() == fk::cuda_device(m.device) && w.is_contiguous(),
      where, "a contiguous f32 weight on " + fk::cuda_device(m.device).str(),
      std::string(fk::name(w.dtype())) + " on " + w.device().str());
  FK_CHECK(
      w.dim() == 3 && w.size(0) == m.volume && w.size(1) == cin, where,
      "a weight of shape (" + std::to_string(m.volume) + ", " + std::to_string(cin) + ", C_out)",
      w.shape().str());
}

// Offsets [first, last) of each group.
struct Group {
  int64_t first, last;
};

// Groups of whole offsets under the staging cap (one offset per group when
// ME_FUSED_COPY=0). The knobs are the CPU convolution's (conv_kernel.cpp).
std::vector<Group> plan_groups(const DeviceKernelMap& m, int64_t row_bytes, bool fused,
                               int64_t* max_rows) {
  double mb = fk::knob("ME_FUSED_COPY_MAX_MB").as_float();
  if (mb == 0) mb = 2048;
  int64_t largest = 0;
  for (int64_t k = 0; k < m.volume; ++k) largest = std::max(largest, m.count(k));
  const int64_t cap =
      std::max(largest, static_cast<int64_t>(mb * 1048576.0 / static_cast<double>(row_bytes)));
  std::vector<Group> groups;
  *max_rows = 0;
  for (int64_t k = 0; k < m.volume;) {
    int64_t last = k + 1, rows = m.count(k);
    while (fused && last < m.volume && rows + m.count(last) <= cap) rows += m.count(last++);
    if (rows > 0) groups.push_back({k, last});
    *max_rows = std::max(*max_rows, rows);
    k = last;
  }
  return groups;
}

// The state of one call: groups, staging, stream.
struct Call {
  const DeviceKernelMap& m;
  int64_t cin, cout;
  std::vector<Group> groups;
  fk::Tensor staged_in, staged_out;
  void* stream;
  bool deterministic, tf32;

  Call(const DeviceKernelMap& map, int64_t ci, int64_t co)
      : m(map),
        cin(ci),
        cout(co),
        stream(fk::cuda::current_stream(map.device)),
        deterministic(minkowski::is_deterministic()),
        tf32(fk::amp::allow_tf32()) {
    const bool fused = fk::knob("ME_FUSED_COPY").as_bool();
    int64_t rows = 0;
    groups = plan_groups(m, (cin + cout) * 4, fused, &rows);
    const fk::TensorOptions o{fk::DType::F32, fk::cuda_device(m.device)};
    staged_in = fk::empty({rows, cin}, o);
    staged_out = fk::empty({rows, cout}, o);
    tl_info = {fused, deterministic, static_cast<int64_t>(groups.size()), rows * (cin + cout) * 4,
               0};
  }
  int64_t begin(int64_t k) const { return m.offset_begin[k]; }
  float* in_at(int64_t p0, int64_t k) const {
    return staged_in.data<float>() + (begin(k) - p0) * cin;
  }
  float* out_at(int64_t p0, int64_t k) const {
    return staged_out.data<float>() + (begin(k) - p0) * cout;
  }
  void gemm(bool ta, bool tb, int64_t rows_m, int64_t cols_n, int64_t inner, const float* a,
            int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc) {
    fk::cuda::gemm(m.device, fk::cuda::kF32, ta, tb, rows_m, cols_n, inner, 1.0, a, lda, b, ldb,
                   0.0, c, ldc, stream, tf32);
    ++tl_info.gemms;
  }
  // dst += the staged rows [p0, p1) of `staged` (cols wide) at `rows`.
  void scatter(const float* staged, int64_t p0, int64_t p1, const fk::Tensor& rows,
               const DeviceRowIndex& idx, int64_t n_rows, int64_t cols, float* dst) {
    if (deterministic)
      launch_scatter_add_ordered(staged, p0, p1, idx.begin.data<int32_t>(),
                                 idx.pair.data<int32_t>(), n_rows, cols, dst, stream);
    else
      launch_scatter_add_atomic(staged, rows.data<int32_t>() + p0, p1 - p0, cols, dst, stream);
  }
};

}  // namespace

fk::Tensor conv_forward(const fk::Tensor& features, const fk::Tensor& weight,
                        const DeviceKernelMap& map) {
  const char* where = "minkowski::cuda::conv_forward";
  check_operand(features, map, where, "features", map.in_size, -1);
  const int64_t cin = features.size(1);
  check_weight(weight, map, where, cin);
  const int64_t cout = weight.size(2);
  fk::cuda::detail::DeviceGuard guard(map.device);
  Call call(map, cin, cout);
  fk::Tensor out = fk::zeros({map.out_size, cout}, {fk::DType::F32, fk::cuda_device(map.device)});
  const float* f = features.data<float>();
  const float* w = weight.data<float>();
  for (const Group& g : call.groups) {
    const int64_t p0 = call.begin(g.first), p1 = call.begin(g.last);
    launch_gather_rows(f, cin, map.in_rows.data<int32_t>() + p0, p1 - p0, cin,
                       call.staged_in.data<float>(), call.stream);
    for (int64_t k = g.first; k < g.last; ++k)
      if (map.count(k) > 0)
        call.gemm(false, false, map.count(k), cout, cin, call.in_at(p0, k), cin, w + k * cin * cout,
                  cout, call.out_at(p0, k), cout);
    call.scatter(call.staged_out.data<float>(), p0, p1, map.out_rows, map.by_out, map.out_size,
                 cout, out.data<float>());
  }
  fk::cuda::after_op(map.device);
  return out;
}

DeviceConvGrads conv_backward(const fk::Tensor& grad_out, const fk::Tensor& features,
                              const fk::Tensor& weight, const DeviceKernelMap& map,
                              bool need_features, bool need_weight) {
  const char* where = "minkowski::cuda::conv_backward";
  check_operand(features, map, where, "features", map.in_size, -1);
  const int64_t cin = features.size(1);
  check_weight(weight, map, where, cin);
  const int64_t cout = weight.size(2);
  check_operand(grad_out, map, where, "grad_out", map.out_size, cout);
  fk::cuda::detail::DeviceGuard guard(map.device);
  Call call(map, cin, cout);
  const fk::TensorOptions o{fk::DType::F32, fk::cuda_device(map.device)};
  DeviceConvGrads r;
  if (need_features) r.features = fk::zeros({map.in_size, cin}, o);
  if (need_weight) r.weight = fk::zeros({map.volume, cin, cout}, o);
  const float* f = features.data<float>();
  const float* w = weight.data<float>();
  for (const Group& g : call.groups) {
    const int64_t p0 = call.begin(g.first), p1 = call.begin(g.last);
    launch_gather_rows(grad_out.data<float>(), cout, map.out_rows.data<int32_t>() + p0, p1 - p0,
                       cout, call.staged_out.data<float>(), call.stream);
    if (need_weight) {
      launch_gather_rows(f, cin, map.in_rows.data<int32_t>() + p0, p1 - p0, cin,
                         call.staged_in.data<float>(), call.stream);
      for (int64_t k = g.first; k < g.last; ++k)
        if (map.count(k) > 0)
          call.gemm(true, false, cin, cout, map.count(k), call.in_at(p0, k), cin,
                    call.out_at(p0, k), cout, r.weight.data<float>() + k * cin * cout, cout);
    }
    if (need_features) {
      // Stream order lets the input-gradient rows overwrite the staged F rows.
      for (int64_t k = g.first; k < g.last; ++k)
        if (map.count(k) > 0)
          call.gemm(false, true, map.count(k), cin, cout, call.out_at(p0, k), cout,
                    w + k * cin * cout, cout, call.in_at(p0, k), cin);
      call.scatter(call.staged_in.data<float>(), p0, p1, map.in_rows, map.by_in, map.in_size, cin,
                   r.features.data<float>());
    }
  }
  fk::cuda::after_op(map.device);
  return r;
}

DeviceConvInfo last_device_conv_call() {
  return tl_info;
}

}  // namespace minkowski::cuda
