// The implicit-GEMM dataflow's host side: the knob, the choice, the cached
// row masks and the launch (implicit_conv.h).
#include "minkowski/cuda/implicit_conv.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "fk/amp.h"
#include "fk/cuda/device_guard.h"
#include "fk/cuda/runtime.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/knobs.h"
#include "fk/profile.h"
#include "minkowski/cuda/device_buffers.h"
#include "minkowski/cuda/kernels.h"

namespace minkowski::cuda {

namespace {

// auto since the implicit kernels passed their tests on an H200 and the cost
// model's constants were fitted to its timings (conv_dataflow.cpp).
fk::Knob kDataflow("ME_CONV_DATAFLOW", fk::KnobChoices{{"auto", "gather", "implicit"}}, "auto",
                   "minkowski device convolution dataflow: auto (a cost model per call), gather "
                   "(gather, cuBLAS GEMM, scatter) or implicit (output-stationary implicit GEMM "
                   "over rows sorted by offset mask, where the map allows)",
                   fk::KnobRead::PerCall);
fk::Knob kImplicitMma("ME_CONV_IMPLICIT_MMA", fk::KnobType::Bool, "1",
                      "minkowski implicit-GEMM convolution on tensor cores (f16, bf16; f32 as "
                      "TF32 when allowed; sm_80+); 0: f32 FMAs for every dtype",
                      fk::KnobRead::PerCall);

constexpr int64_t kMaxMaskVolume = 64;

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
  // The two slot counts and the repeat flag in one buffer, read back at once
  // (one wait for the device per map, not two). The flag is an int32 in the
  // low half of the third zeroed int64 (little-endian on the host and device).
  static_assert(std::endian::native == std::endian::little);
  const fk::Tensor counts = fk::zeros({3}, {fk::DType::I64, dev});
  auto* slot = static_cast<unsigned long long*>(counts.data_ptr());
  launch_row_masks(buffers::i32(idx.begin), buffers::i32(idx.pair), rows,
                   offset_begin.data<int64_t>(), m.volume, buffers::u64(mask),
                   reinterpret_cast<int32_t*>(slot + 2), stream);
  const fk::Tensor rows_in_order = buffers::device_i32(rows, m.device);
  launch_iota(buffers::i32(rows_in_order), rows, stream);
  const fk::Tensor sorted_mask = buffers::device_u64(rows, m.device);
  r->order = buffers::device_i32(rows, m.device);
  if (rows > 0)
    sort_pairs_u64(buffers::u64(mask), buffers::i32(rows_in_order), buffers::u64(sorted_mask),
                   buffers::i32(r->order), rows, static_cast<int>(std::max<int64_t>(m.volume, 1)),
                   stream);
  r->mask = mask;  // the kernel reads masks by row, not in sorted order
  launch_tile_slots(buffers::u64(sorted_mask), rows, 64, slot, stream);
  launch_tile_slots(buffers::u64(sorted_mask), rows, 128, slot + 1, stream);
  // masks, iota, the sort (counted as one), two slot counts; none at 0 rows
  if (rows > 0) fk::profile::count_launch(5);
  const std::vector<int64_t> counted = counts.to_vector<int64_t>();
  r->slots_64 = counted[0];
  r->slots_128 = counted[1];
  r->eligible = counted[2] == 0;
  return r;
}

}  // namespace

ConvDataflow conv_dataflow_knob() {
  return parse_conv_dataflow(kDataflow.as_string());
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
  // Before any device work: f64 is refused with its reason (conv_dataflow.h).
  const char* refused = implicit_refusal(static_cast<int64_t>(fk::itemsize(src.dtype())));
  FK_CHECK(refused == nullptr, "minkowski::cuda::implicit_conv",
           "operands of dtype f32, f16 or bf16",
           std::string(fk::name(src.dtype())) + " (" + refused + ")");
  const DeviceRowMasks& rm = row_masks_of(map, transposed);
  FK_CHECK(rm.eligible, "minkowski::cuda::implicit_conv",
           "a map with volume <= 64 and at most one pair per (row, offset)",
           map.volume > kMaxMaskVolume
               ? "volume " + fk::to_text(map.volume) + " (a 64-bit row mask holds 64 offsets)"
               : std::string("a row with two pairs in one offset"));
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
  a.transposed = transposed;
  void* stream = fk::cuda::current_stream(map.device);
  fk::profile::count_launch();
  if (!implicit_uses_tensor_cores(src.dtype(), map.device)) {
    launch_implicit_conv(static_cast<int>(src.dtype()), a, stream);
    return dst;
  }
  // 16-byte chunks: aligned pointers and rows of whole chunks.
  const int64_t chunk = 16 / static_cast<int64_t>(fk::itemsize(src.dtype()));
  auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  a.vec_src = aligned(a.src) && inner % chunk == 0;
  a.vec_w = aligned(a.w) && (transposed ? inner : cols) % chunk == 0;
  launch_implicit_conv_mma(static_cast<int>(src.dtype()), a, stream);
  return dst;
}

bool implicit_uses_tensor_cores(fk::DType dtype, int device) {
  if (!kImplicitMma.as_bool()) return false;
  const bool mma_dtype = dtype == fk::DType::F16 || dtype == fk::DType::BF16 ||
                         (dtype == fk::DType::F32 && fk::amp::allow_tf32());
  return mma_dtype && implicit_mma_supported(device);
}

DataflowProblem dataflow_problem(const DeviceKernelMap& map, bool by_in, int64_t cin, int64_t cout,
                                 fk::DType dtype) {
  DataflowProblem p;
  p.rows = by_in ? map.in_size : map.out_size;
  for (int64_t k = 0; k < map.volume; ++k) p.pairs_per_offset.push_back(map.count(k));
  p.inner = by_in ? cout : cin;
  p.cols = by_in ? cin : cout;
  p.element_bytes = static_cast<int64_t>(fk::itemsize(dtype));
  // f64 (8-byte elements) is refused by choose_conv_dataflow before any cost.
  p.precision = dtype == fk::DType::F16 || dtype == fk::DType::BF16 ? ConvPrecision::Half
                : dtype == fk::DType::F32 && fk::amp::allow_tf32()  ? ConvPrecision::Tf32
                                                                    : ConvPrecision::F32;
  p.implicit_tensor_cores = implicit_uses_tensor_cores(dtype, map.device);
  const DeviceRowMasks& rm = row_masks_of(map, by_in);
  p.padded_slots = rm.eligible ? rm.slots(implicit_tile_rows(p.cols)) : -1;
  return p;
}

}  // namespace minkowski::cuda
