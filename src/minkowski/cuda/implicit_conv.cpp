// The implicit-GEMM dataflow's host side: the knob, the choice, the cached
// row masks and the launch (implicit_conv.h).
#include "minkowski/cuda/implicit_conv.h"

#include <algorithm>
#include <memory>
#include <mutex>
#include <vector>

#include "fk/cuda/device_guard.h"
#include "fk/cuda/runtime.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/knobs.h"
#include "minkowski/cuda/device_buffers.h"
#include "minkowski/cuda/kernels.h"

namespace minkowski::cuda {

namespace {

// The default stays gather until the implicit kernel has run on a device
// (issue 19: scripts/gpu-check); then auto, once its thresholds are tuned.
fk::Knob kDataflow("ME_CONV_DATAFLOW", fk::KnobType::String, "gather",
                   "minkowski device convolution dataflow: auto (a cost model per call), gather "
                   "(gather, cuBLAS GEMM, scatter) or implicit (output-stationary implicit GEMM "
                   "over rows sorted by offset mask, where the map allows)",
                   fk::KnobRead::PerCall);

constexpr int64_t kMaxMaskVolume = 64;
constexpr int64_t kNarrowChannels = 64, kDenseChannels = 128;
constexpr double kDense = 0.5;

std::shared_ptr<const DeviceRowMasks> make_row_masks(const DeviceKernelMap& m, bool by_in) {
  auto r = std::make_shared<DeviceRowMasks>();
  if (m.volume > kMaxMaskVolume) return r;
  const DeviceRowIndex& idx = by_in ? m.by_in : m.by_out;
  const int64_t rows = by_in ? m.in_size : m.out_size;
  const fk::Device dev = fk::cuda_device(m.device);
  fk::cuda::detail::DeviceGuard guard(m.device);
  void* stream = fk::cuda::current_stream(m.device);
  const fk::Tensor offset_begin =
      fk::from_vector(m.offset_begin, fk::Dims{static_cast<int64_t>(m.offset_begin.size())}, dev);
  const fk::Tensor mask = buffers::device_u64(rows, m.device);
  const fk::Tensor repeated = fk::zeros({1}, {fk::DType::I32, dev});
  launch_row_masks(buffers::i32(idx.begin), buffers::i32(idx.pair), rows,
                   offset_begin.data<int64_t>(), m.volume, buffers::u64(mask),
                   buffers::i32(repeated), stream);
  const fk::Tensor rows_in_order = buffers::device_i32(rows, m.device);
  launch_iota(buffers::i32(rows_in_order), rows, stream);
  const fk::Tensor sorted_mask = buffers::device_u64(rows, m.device);
  r->order = buffers::device_i32(rows, m.device);
  if (rows > 0)
    sort_pairs_u64(buffers::u64(mask), buffers::i32(rows_in_order), buffers::u64(sorted_mask),
                   buffers::i32(r->order), rows, static_cast<int>(std::max<int64_t>(m.volume, 1)),
                   stream);
  r->mask = mask;  // the kernel reads masks by row, not in sorted order
  r->eligible = repeated.to_vector<int32_t>()[0] == 0;
  return r;
}

}  // namespace

const char* name(ConvDataflow d) {
  switch (d) {
    case ConvDataflow::Auto:
      return "auto";
    case ConvDataflow::Gather:
      return "gather";
    case ConvDataflow::Implicit:
      return "implicit";
  }
  return "?";
}

ConvDataflow parse_conv_dataflow(const std::string& text) {
  for (ConvDataflow d : {ConvDataflow::Auto, ConvDataflow::Gather, ConvDataflow::Implicit})
    if (text == name(d)) return d;
  FK_CHECK(false, "ME_CONV_DATAFLOW", "one of auto, gather, implicit", "'" + text + "'");
  return ConvDataflow::Auto;
}

ConvDataflow conv_dataflow_knob() {
  return parse_conv_dataflow(kDataflow.as_string());
}

ConvDataflow choose_conv_dataflow(ConvDataflow want, bool eligible, int64_t cin, int64_t cout,
                                  double density) {
  if (!eligible || want == ConvDataflow::Gather) return ConvDataflow::Gather;
  if (want == ConvDataflow::Implicit) return ConvDataflow::Implicit;
  const int64_t widest = std::max(cin, cout);
  const bool narrow = widest <= kNarrowChannels;
  const bool dense = density >= kDense && widest <= kDenseChannels;
  return narrow || dense ? ConvDataflow::Implicit : ConvDataflow::Gather;
}

const DeviceRowMasks& row_masks_of(const DeviceKernelMap& map, bool by_in) {
  DeviceRowMaskCache& c = *map.row_masks;
  std::lock_guard<std::mutex> lock(c.mu);
  std::shared_ptr<const DeviceRowMasks>& slot = by_in ? c.by_in : c.by_out;
  if (!slot) slot = make_row_masks(map, by_in);
  return *slot;
}

fk::Tensor implicit_conv(const fk::Tensor& src, const fk::Tensor& weight,
                         const DeviceKernelMap& map, bool transposed) {
  const DeviceRowMasks& rm = row_masks_of(map, transposed);
  FK_CHECK(rm.eligible, "minkowski::cuda::implicit_conv",
           "a map with volume <= 64 and at most one pair per (row, offset)",
           "volume " + std::to_string(map.volume) + " or repeated pairs");
  const int64_t cin = weight.size(1), cout = weight.size(2);
  const int64_t rows = transposed ? map.in_size : map.out_size;
  const int64_t inner = transposed ? cout : cin, cols = transposed ? cin : cout;
  fk::cuda::detail::DeviceGuard guard(map.device);
  fk::Tensor dst = fk::empty({rows, cols}, {src.dtype(), fk::cuda_device(map.device)});
  const DeviceRowIndex& idx = transposed ? map.by_in : map.by_out;
  ImplicitConvArgs a{};
  a.src = src.data_ptr();
  a.inner = inner;
  a.w = weight.data_ptr();
  a.w_k = cin * cout;
  a.w_c = transposed ? 1 : cout;  // W_k^T: element (c, n) is W_k[n, c]
  a.w_n = transposed ? cout : 1;
  a.cols = cols;
  a.order = buffers::i32(rm.order);
  a.begin = buffers::i32(idx.begin);
  a.pair = buffers::i32(idx.pair);
  a.other = buffers::i32(transposed ? map.out_rows : map.in_rows);
  a.mask = buffers::u64(rm.mask);
  a.rows = rows;
  a.dst = dst.data_ptr();
  launch_implicit_conv(static_cast<int>(src.dtype()), a, fk::cuda::current_stream(map.device));
  return dst;
}

}  // namespace minkowski::cuda
