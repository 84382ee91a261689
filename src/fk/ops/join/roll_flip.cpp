#include "fk/ops/join/roll_flip.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "fk/autograd.h"
#include "fk/cuda/kernels.h"
#include "fk/factory.h"
#include "fk/ops/cpu/copy_bytes.h"
#include "fk/ops/cpu/dispatch.h"
#include "fk/ops/cpu/loops.h"
#include "fk/ops/cuda_dispatch.h"
#include "fk/ops/index.h"
#include "fk/ops/join/index_maps.h"
#include "fk/parallel.h"
#include "fk/profile.h"

namespace fk {
namespace {

using join_detail::DimMaps;
using join_detail::gather_by_maps;
using join_detail::gather_by_maps_cuda;
using join_detail::identity_maps;

// --- roll of a contiguous CPU tensor ------------------------------------------------
//
// Let `last` be the innermost dim with a non-zero shift s and I the number of
// elements after it. Dims after the last other rolled dim, up to the end, form
// blocks of B contiguous elements; inside a block the result is the source
// block moved right by s*I elements, except that the first s*I elements of
// each row of L = size(last)*I wrap around from that row's end. So a block is
// one long copy plus a short fix-up copy per row: copy speed whatever the
// rolled dims, where a per-element gather pays index arithmetic per row and a
// memmove call per run (a roll of the last dim of 64x64x16 ran at ~10 GB/s).
// Copies go through cpu::copy_bytes: the long one is misaligned by the shift,
// which libc's memcpy handles ~14x slower (see copy_bytes.h).
// Only bytes move, so any dtype and any thread split give identical results.

Tensor roll_contiguous_cpu(const Tensor& t, const std::vector<int64_t>& shift) {
  Tensor out = empty(t.shape(), {t.dtype()});
  const int n = t.dim();
  int last = n - 1;
  while (last >= 0 && shift[last] == 0) --last;
  if (last < 0 || t.numel() == 0) {
    if (t.numel() > 0) cpu::copy_bytes(out.data_ptr(), t.data_ptr(), t.nbytes());
    return out;
  }
  int first = last;  // dims [0, first) pick the source block; [first, n) are the block
  while (first > 0 && shift[first - 1] == 0) --first;
  const int64_t es = static_cast<int64_t>(t.itemsize());
  const int64_t inner = numel_between(t.shape(), last + 1, n) * es;  // bytes
  const int64_t row = t.size(last) * inner, wrap = shift[last] * inner;
  const int64_t block = numel_between(t.shape(), first, n) * es;
  const int64_t blocks = t.numel() * es / block;
  const char* src = static_cast<const char*>(t.data_ptr());
  char* dst = static_cast<char*>(out.data_ptr());
  // Byte offset of the source block of output block b.
  auto source_block = [&](int64_t b) {
    int64_t off = 0, stride = block;
    for (int d = first - 1; d >= 0; --d) {
      const int64_t size = t.size(d), i = b % size;
      b /= size;
      off += ((i - shift[d] + size) % size) * stride;
      stride *= size;
    }
    return off;
  };
  // Within a row, out[j] = src[(j - wrap) mod row]. The bulk moves as one copy
  // shifted right by `wrap` (or left by row - wrap, whichever leaves the shorter
  // wrapped part per row); then each row's wrapped part, `len` bytes at `at`,
  // is patched from `from` in the same source row.
  const bool head = wrap <= row - wrap;
  const int64_t len = head ? wrap : row - wrap, at = head ? 0 : wrap, from = head ? row - wrap : 0;
  const int64_t shift_bytes = head ? wrap : wrap - row;  // out[i] = src[i - shift_bytes]
  // Patches of a few bytes (a roll by one element along the last dim) as fixed-size
  // moves; a general copy call per row cost as much as the bulk copy.
  auto patch_rows = [&](char* o, const char* s, int64_t r_begin, int64_t r_end, auto size) {
    constexpr int64_t kSize = decltype(size)::value;
    // Locals, not captures: byte stores may alias them, which made every
    // iteration reload them.
    char* op = o + at;
    const char* sp = s + from;
    const int64_t step = row, n = len;
    for (int64_t r = r_begin; r < r_end; r += step) {
      if constexpr (kSize > 0) {
        std::memcpy(op + r, sp + r, kSize);
      } else {
        cpu::copy_bytes(op + r, sp + r, n);
      }
    }
  };
  // Output bytes [lo, hi) of one block, whose source starts at s.
  auto block_range = [&](char* o, const char* s, int64_t lo, int64_t hi) {
    const int64_t a = std::max(lo, shift_bytes), e = std::min(hi, block + shift_bytes);
    if (a < e) cpu::copy_bytes(o + a, s + a - shift_bytes, e - a);
    // Rows whose patch lies wholly inside [lo, hi), then the (at most two) cut ones.
    const int64_t r_begin = (lo - at + row - 1) / row * row;
    const int64_t r_end = hi - at - len < 0 ? 0 : (hi - at - len) / row * row + row;
    using std::integral_constant;
    switch (len) {
      case 4:
        patch_rows(o, s, r_begin, r_end, integral_constant<int64_t, 4>{});
        break;
      case 8:
        patch_rows(o, s, r_begin, r_end, integral_constant<int64_t, 8>{});
        break;
      case 16:
        patch_rows(o, s, r_begin, r_end, integral_constant<int64_t, 16>{});
        break;
      default:
        patch_rows(o, s, r_begin, r_end, integral_constant<int64_t, 0>{});
    }
    for (int64_t r : {r_begin - row, std::max(r_begin, r_end)}) {
      if (r < 0) continue;
      const int64_t b = std::max(lo, r + at), f = std::min(hi, r + at + len);
      if (b < f) cpu::copy_bytes(o + b, s + b - at + from, f - b);
    }
  };
  // Split by bytes (rounded to elements) so one long block still uses every thread.
  parallel_for(0, t.numel(), cpu::kElementwiseGrain, [&](int64_t lo_el, int64_t hi_el) {
    const int64_t lo = lo_el * es, hi = hi_el * es;
    for (int64_t b = lo / block; b < blocks && b * block < hi; ++b) {
      const int64_t base = b * block;
      block_range(dst + base, src + source_block(b), std::max(lo, base) - base,
                  std::min(hi, base + block) - base);
    }
  });
  return out;
}

Tensor roll_forward(const Tensor& t, const std::vector<int64_t>& shifts,
                    const std::vector<int64_t>& dims) {
  FK_CHECK(shifts.size() == dims.size(), "roll",
           "one shift per dim (" + fk::to_text(dims.size()) + " dims)",
           fk::to_text(shifts.size()) + " shifts");
  FK_CHECK(t.dim() >= 1, "roll", "a tensor with at least 1 dimension", "a 0-dim tensor");
  std::vector<int64_t> total(t.dim(), 0);
  for (size_t i = 0; i < dims.size(); ++i) total[wrap_dim(dims[i], t.dim(), "roll")] += shifts[i];
  for (int d = 0; d < t.dim(); ++d) {
    const int64_t n = t.size(d);
    total[d] = n == 0 ? 0 : ((total[d] % n) + n) % n;
  }
  if (t.device().is_cpu() && t.is_contiguous()) return roll_contiguous_cpu(t, total);
  DimMaps maps = identity_maps(t.shape());
  for (int d = 0; d < t.dim(); ++d) {
    const int64_t n = t.size(d);
    for (int64_t i = 0; i < n; ++i) maps[d][i] = (i - total[d] + n) % n;
  }
  if (t.device().is_cuda()) return gather_by_maps_cuda(t, maps);
  return gather_by_maps(t, t.shape(), maps, Tensor());
}

std::vector<int> flip_dims(const Tensor& t, const std::vector<int64_t>& dims) {
  std::vector<int> out;
  FK_CHECK(t.dim() >= 1 || dims.empty(), "flip", "a tensor with at least 1 dimension",
           "a 0-dim tensor");
  std::vector<bool> seen(t.dim(), false);
  for (int64_t d : dims) {
    int w = wrap_dim(d, t.dim(), "flip");
    FK_CHECK(!seen[w], "flip", "each dim at most once", "dim " + fk::to_text(d) + " twice");
    seen[w] = true;
    out.push_back(w);
  }
  return out;
}

Tensor flip_forward(const Tensor& t, const std::vector<int64_t>& dims) {
  DimMaps maps = identity_maps(t.shape());
  for (int d : flip_dims(t, dims)) {
    const int64_t n = t.size(d);
    for (int64_t i = 0; i < n; ++i) maps[d][i] = n - 1 - i;
  }
  if (t.device().is_cuda()) return gather_by_maps_cuda(t, maps);
  return gather_by_maps(t, t.shape(), maps, Tensor());
}

struct RollBackward : autograd::Node {
  std::vector<int64_t> shifts, dims;
  std::vector<Tensor> apply(std::vector<Tensor>&& g) override {
    return {roll_backward(g[0], shifts, dims)};
  }
  const char* name() const override { return "RollBackward"; }
};

struct FlipBackward : autograd::Node {
  std::vector<int64_t> dims;
  std::vector<Tensor> apply(std::vector<Tensor>&& g) override {
    return {flip_backward(g[0], dims)};
  }
  const char* name() const override { return "FlipBackward"; }
};

}  // namespace

Tensor roll(const Tensor& t, const std::vector<int64_t>& shifts, const std::vector<int64_t>& dims) {
  if (dims.empty()) {
    FK_CHECK(shifts.size() == 1, "roll", "one shift when no dims are given (flattened roll)",
             fk::to_text(shifts.size()) + " shifts");
    return roll(t.reshape({t.numel()}), shifts, {0}).reshape(t.shape());
  }
  profile::OpScope scope("roll");
  Tensor out;
  {
    autograd::NoGradGuard ng;
    out = roll_forward(t, shifts, dims);
  }
  if (autograd::needs_grad(t)) {
    auto node = std::make_shared<RollBackward>();
    node->shifts = shifts;
    node->dims = dims;
    autograd::record(node, {t}, out);
  }
  return out;
}

Tensor flip(const Tensor& t, const std::vector<int64_t>& dims) {
  profile::OpScope scope("flip");
  Tensor out;
  {
    autograd::NoGradGuard ng;
    out = flip_forward(t, dims);
  }
  if (autograd::needs_grad(t)) {
    auto node = std::make_shared<FlipBackward>();
    node->dims = dims;
    autograd::record(node, {t}, out);
  }
  return out;
}

Tensor roll_backward(const Tensor& g, const std::vector<int64_t>& shifts,
                     const std::vector<int64_t>& dims) {
  std::vector<int64_t> back(shifts.size());
  for (size_t i = 0; i < shifts.size(); ++i) back[i] = -shifts[i];
  return roll(g, back, dims);
}

Tensor flip_backward(const Tensor& g, const std::vector<int64_t>& dims) {
  return flip(g, dims);
}

}  // namespace fk
