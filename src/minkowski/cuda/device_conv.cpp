// The device convolution's host side: operand checks, offset groups,
// staging, and the gather -> cuBLAS -> scatter sequence on the current stream.
#include "minkowski/cuda/device_conv.h"

#include <algorithm>
#include <cstdint>
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
#include "fk/profile.h"
#include "minkowski/cuda/conv_plan.h"
#include "minkowski/cuda/implicit_conv.h"
#include "minkowski/cuda/kernels.h"
#include "minkowski/ops/conv.h"
#include "minkowski/ops/fused_copy.h"

namespace minkowski::cuda {

namespace {

thread_local DeviceConvInfo tl_info;

// Off until a GPU run compares it with the per-offset GEMMs (gpu-check's
// BM_DeviceConv grouped rows and the MinkUNet18 step's).
fk::Knob kGroupedGemm("ME_CONV_GROUPED_GEMM", fk::KnobChoices{{"off", "features", "all"}}, "off",
                      "minkowski device convolution (gather dataflow): the per-offset cuBLAS "
                      "GEMMs of a staging group as one grouped call (cublasGemmGroupedBatchedEx): "
                      "off, features (the forward's and the input gradient's) or all (the weight "
                      "gradient's too)",
                      fk::KnobRead::PerCall);

// Which products ME_CONV_GROUPED_GEMM groups.
struct GroupedProducts {
  bool features = false, weight = false;
};
GroupedProducts grouped_products() {
  const std::string v = kGroupedGemm.as_string();
  return {v != "off", v == "all"};
}

enum class Product { Forward, WeightGrad, InputGrad };

int dtype_code(fk::DType t) {
  return static_cast<int>(t);
}

void check_operand(const fk::Tensor& t, const DeviceKernelMap& m, const char* where,
                   const char* what, int64_t rows, int64_t cols) {
  FK_CHECK(t.defined(), where, std::string("a ") + what, "an undefined tensor");
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
  FK_CHECK(w.device() == fk::cuda_device(m.device) && w.is_contiguous(), where,
           "a contiguous weight on " + fk::cuda_device(m.device).str(),
           (w.is_contiguous() ? "" : "a strided view on ") + w.device().str());
  FK_CHECK(w.dim() == 3 && w.size(0) == m.volume && w.size(1) == cin, where,
           "a weight of shape (" + fk::to_text(m.volume) + ", " + fk::to_text(cin) + ", C_out)",
           w.shape().str());
}

// The dataflow of a product onto the rows of by_in (the input gradient) or
// by_out (the forward), as ME_CONV_DATAFLOW and conv_dataflow.h's rule say.
// Zero channels and maps without pairs stay on gather (its zeros need no
// launch, nor the map's row indices, which a hand-made empty map lacks); so
// does a dtype the implicit kernels refuse (f64), before the row masks are
// made, with the reason in *refusal.
ConvDataflow dataflow_for(const DeviceKernelMap& m, bool by_in, int64_t cin, int64_t cout,
                          fk::DType dtype, const char** refusal) {
  const ConvDataflow want = conv_dataflow_knob();
  *refusal = implicit_refusal(static_cast<int64_t>(fk::itemsize(dtype)));
  if (want == ConvDataflow::Gather || *refusal != nullptr || cin == 0 || cout == 0 ||
      m.pairs() == 0)
    return ConvDataflow::Gather;
  return choose_conv_dataflow(want, dataflow_problem(m, by_in, cin, cout, dtype));
}

// What an implicit call did (no groups, staging or GEMMs).
void note_implicit(fk::DType t, int device) {
  tl_info = {fused_copy_mode() != FusedCopy::Off,
             minkowski::is_deterministic(),
             t,
             0,
             0,
             0,
             0,
             ConvDataflow::Implicit,
             implicit_uses_tensor_cores(t, device),
             nullptr};
}

// The state of one call: dtype, groups, staging, stream.
struct Call {
  const DeviceKernelMap& m;
  fk::DType dtype;
  int code;
  int64_t esize, cin, cout;
  std::vector<OffsetGroup> groups;
  fk::Tensor staged_in, staged_out;  // in dtype
  void* stream;
  bool deterministic, tf32;

  Call(const DeviceKernelMap& map, fk::DType t, int64_t ci, int64_t co, const char* refusal)
      : m(map),
        dtype(t),
        code(dtype_code(t)),
        esize(static_cast<int64_t>(fk::itemsize(t))),
        cin(ci),
        cout(co),
        stream(fk::cuda::current_stream(map.device)),
        deterministic(minkowski::is_deterministic()),
        tf32(t == fk::DType::F32 && fk::amp::allow_tf32()) {
    // The knobs are the CPU convolution's (conv_kernel.cpp).
    const bool fused = fused_copy_mode() != FusedCopy::Off;  // auto: fused on a device
    int64_t rows = 0;
    // Zero channels: nothing to multiply (the results stay the zeros they start
    // as); cuBLAS would reject the zero leading dimensions and the cap divide by 0.
    if (cin > 0 && cout > 0) {
      std::vector<int64_t> pairs(static_cast<size_t>(m.volume));
      for (int64_t k = 0; k < m.volume; ++k) pairs[static_cast<size_t>(k)] = m.count(k);
      OffsetGroups planned = plan_offset_groups(pairs, (cin + cout) * esize, fused,
                                                fk::knob("ME_FUSED_COPY_MAX_MB").as_float());
      groups = std::move(planned.groups);
      rows = planned.max_rows;
    }
    const fk::TensorOptions o{dtype, fk::cuda_device(m.device)};
    staged_in = fk::empty({rows, cin}, o);
    staged_out = fk::empty({rows, cout}, o);
    tl_info = {fused,
               deterministic,
               dtype,
               static_cast<int64_t>(groups.size()),
               rows * (cin + cout) * esize,
               0,
               0,
               ConvDataflow::Gather,
               false,
               refusal};
  }
  int64_t begin(int64_t k) const { return m.offset_begin[k]; }
  // Offset k's first staged row in a group starting at pair p0.
  char* staged_at(const fk::Tensor& staged, int64_t p0, int64_t k, int64_t cols) const {
    return static_cast<char*>(staged.data_ptr()) + (begin(k) - p0) * cols * esize;
  }
  char* in_at(int64_t p0, int64_t k) const { return staged_at(staged_in, p0, k, cin); }
  char* out_at(int64_t p0, int64_t k) const { return staged_at(staged_out, p0, k, cout); }
  // W_k, or grad_W_k, of a (K, C_in, C_out) tensor in dtype.
  char* offset_matrix(const fk::Tensor& w, int64_t k) const {
    return static_cast<char*>(w.data_ptr()) + k * cin * cout * esize;
  }
  // Group g's products of one kind (offsets with pairs), on the staged rows:
  //   forward         staged_out_k = staged_in_k W_k
  //   weight grad     grad_W_k     = staged_in_k^T staged_out_k  (w: grad_W)
  //   input grad      staged_in_k  = staged_out_k W_k^T (over the F rows,
  //                   which the weight gradient read first: stream order)
  fk::cuda::GemmList products(Product kind, const OffsetGroup& g, const fk::Tensor& w) const {
    fk::cuda::GemmList p;
    const int64_t p0 = begin(g.first);
    for (int64_t k = g.first; k < g.last; ++k) {
      const int64_t n = m.count(k);
      if (n == 0) continue;
      char *in = in_at(p0, k), *out = out_at(p0, k), *wk = offset_matrix(w, k);
      switch (kind) {
        case Product::Forward:
          p.add({false, false, n, cout, cin, cin, cout, cout}, in, wk, out);
          break;
        case Product::WeightGrad:
          p.add({true, false, cin, cout, n, cin, cout, cout}, in, out, wk);
          break;
        case Product::InputGrad:
          p.add({false, true, n, cin, cout, cout, cout, cin}, out, wk, in);
          break;
      }
    }
    return p;
  }
  // The products: one grouped call (`grouped`, two or more products, a dtype
  // cuBLAS groups), else one call each. 16-bit operands and C with f32
  // accumulation, f32 (or TF32), or f64 (DGEMM) (fk::cuda::gemm).
  void run(const fk::cuda::GemmList& p, bool grouped) {
    const int64_t calls = fk::cuda::gemm_list(m.device, code, p, grouped, stream, tf32);
    tl_info.gemms += static_cast<int64_t>(p.size());
    tl_info.gemm_calls += calls;
    for (int64_t i = 0; i < calls; ++i) fk::profile::count_launch();
  }
  // staged[0, p1 - p0) = src's rows at `rows` [p0, p1) (cols wide).
  void gather(const fk::Tensor& src, const fk::Tensor& rows, int64_t p0, int64_t p1, int64_t cols,
              const fk::Tensor& staged) {
    fk::profile::count_launch();
    launch_gather_rows(code, src.data_ptr(), cols, rows.data<int32_t>() + p0, p1 - p0, cols,
                       staged.data_ptr(), stream);
  }
  // acc += the staged rows [p0, p1) of `staged` (cols wide) at `rows`.
  void scatter(const fk::Tensor& staged, int64_t p0, int64_t p1, const fk::Tensor& rows,
               const DeviceRowIndex& idx, int64_t n_rows, int64_t cols, const fk::Tensor& acc) {
    fk::profile::count_launch();
    if (deterministic)
      launch_scatter_add_ordered(code, staged.data_ptr(), p0, p1, idx.begin.data<int32_t>(),
                                 idx.pair.data<int32_t>(), n_rows, cols, acc.data_ptr(), stream);
    else
      launch_scatter_add_atomic(code, staged.data_ptr(), rows.data<int32_t>() + p0, p1 - p0, cols,
                                acc.data_ptr(), stream);
  }
  // The rows every offset's scatter adds into (f32; f64 for f64), and the
  // result in dtype (16 bits: converted once, after the last offset).
  fk::DType accumulator_dtype() const {
    return dtype == fk::DType::F64 ? fk::DType::F64 : fk::DType::F32;
  }
  fk::Tensor accumulator(int64_t rows, int64_t cols) const {
    return fk::zeros({rows, cols}, {accumulator_dtype(), fk::cuda_device(m.device)});
  }
  fk::Tensor result(const fk::Tensor& acc) const {
    return dtype == accumulator_dtype() ? acc : acc.to(dtype);
  }
};

}  // namespace

fk::Tensor conv_forward(const fk::Tensor& features, const fk::Tensor& weight,
                        const DeviceKernelMap& map) {
  const char* where = "minkowski::cuda::conv_forward";
  check_conv_dtypes(where, features, weight, nullptr);
  check_operand(features, map, where, "features", map.in_size, -1);
  const int64_t cin = features.size(1);
  check_weight(weight, map, where, cin);
  const int64_t cout = weight.size(2);
  fk::cuda::detail::DeviceGuard guard(map.device);
  const bool grouped = grouped_products().features;  // checked whichever dataflow runs
  const char* refusal = nullptr;
  if (dataflow_for(map, false, cin, cout, features.dtype(), &refusal) == ConvDataflow::Implicit) {
    fk::Tensor r = implicit_conv(features, weight, map, false);
    note_implicit(features.dtype(), map.device);
    fk::cuda::after_op(map.device);
    return r;
  }
  Call call(map, features.dtype(), cin, cout, refusal);
  const fk::Tensor out = call.accumulator(map.out_size, cout);
  for (const OffsetGroup& g : call.groups) {
    const int64_t p0 = call.begin(g.first), p1 = call.begin(g.last);
    call.gather(features, map.in_rows, p0, p1, cin, call.staged_in);
    call.run(call.products(Product::Forward, g, weight), grouped);
    call.scatter(call.staged_out, p0, p1, map.out_rows, map.by_out, map.out_size, cout, out);
  }
  fk::Tensor r = call.result(out);
  fk::cuda::after_op(map.device);
  return r;
}

DeviceConvGrads conv_backward(const fk::Tensor& grad_out, const fk::Tensor& features,
                              const fk::Tensor& weight, const DeviceKernelMap& map,
                              bool need_features, bool need_weight) {
  const char* where = "minkowski::cuda::conv_backward";
  check_conv_dtypes(where, features, weight, &grad_out);
  check_operand(features, map, where, "features", map.in_size, -1);
  const int64_t cin = features.size(1);
  check_weight(weight, map, where, cin);
  const int64_t cout = weight.size(2);
  check_operand(grad_out, map, where, "grad_out", map.out_size, cout);
  fk::cuda::detail::DeviceGuard guard(map.device);
  const GroupedProducts grouped = grouped_products();  // checked whichever dataflow runs
  DeviceConvGrads r;
  // The input gradient on the implicit dataflow; the weight gradient is
  // always gather-GEMM's.
  const char* refusal = implicit_refusal(static_cast<int64_t>(fk::itemsize(features.dtype())));
  if (need_features &&
      dataflow_for(map, true, cin, cout, features.dtype(), &refusal) == ConvDataflow::Implicit) {
    r.features = implicit_conv(grad_out, weight, map, true);
    need_features = false;
    note_implicit(features.dtype(), map.device);
    if (!need_weight) {
      fk::cuda::after_op(map.device);
      return r;
    }
  }
  const bool implicit_features = r.features.defined();
  Call call(map, features.dtype(), cin, cout, refusal);
  if (implicit_features) {
    tl_info.dataflow = ConvDataflow::Implicit;
    tl_info.tensor_cores = implicit_uses_tensor_cores(call.dtype, map.device);
  }
  // Each grad_W_k is one GEMM over all of offset k's pairs (f32 accumulation,
  // one rounding to dtype), written in place.
  if (need_weight)
    r.weight = fk::zeros({map.volume, cin, cout}, {call.dtype, fk::cuda_device(map.device)});
  const fk::Tensor gin = need_features ? call.accumulator(map.in_size, cin) : fk::Tensor();
  for (const OffsetGroup& g : call.groups) {
    const int64_t p0 = call.begin(g.first), p1 = call.begin(g.last);
    call.gather(grad_out, map.out_rows, p0, p1, cout, call.staged_out);
    if (need_weight) {
      call.gather(features, map.in_rows, p0, p1, cin, call.staged_in);
      call.run(call.products(Product::WeightGrad, g, r.weight), grouped.weight);
    }
    if (need_features) {
      // Stream order lets the input-gradient rows overwrite the staged F rows.
      call.run(call.products(Product::InputGrad, g, weight), grouped.features);
      call.scatter(call.staged_in, p0, p1, map.in_rows, map.by_in, map.in_size, cin, gin);
    }
  }
  if (need_features) r.features = call.result(gin);
  fk::cuda::after_op(map.device);
  return r;
}

DeviceConvInfo last_device_conv_call() {
  return tl_info;
}

}  // namespace minkowski::cuda
