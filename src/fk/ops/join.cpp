#include "fk/ops/join.h"

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
#include "fk/parallel.h"
#include "fk/profile.h"

namespace fk {

const char* name(PadMode mode) {
  static const char* names[] = {"constant", "reflect", "replicate", "circular"};
  return names[static_cast<int>(mode)];
}

namespace {

using cpu::Bytes16;
using cpu::visit_width;

Tensor grad_as(const Tensor& g, DType dtype) {
  Tensor r = g;
  if (is_complex(r.dtype()) && !is_complex(dtype)) r = r.real();
  return r.dtype() == dtype ? r : r.to(dtype);
}

// --- one gather through per-dim index tables (pad, roll, flip) ---------------------

// maps[d][i] is the source coordinate along d of output coordinate i, or -1
// where the output takes `fill` (a 0-dim tensor of t's dtype).
using DimMaps = std::vector<std::vector<int64_t>>;

Tensor gather_by_maps(const Tensor& t, const Dims& shape, const DimMaps& maps, const Tensor& fill) {
  Tensor out = empty(shape, {t.dtype()});
  const int n = shape.size();
  if (out.numel() == 0) return out;
  // Trailing dims copied whole (identity map over a source laid out
  // contiguously there) fold into one run per row: a roll, flip or pad of the
  // outer dims then moves long runs instead of gathering element by element.
  int c = n;
  int64_t inner = 1;
  while (c > 0) {
    const int d = c - 1;
    bool id = shape[d] == t.size(d) && (t.stride(d) == inner || shape[d] == 1);
    for (int64_t i = 0; id && i < shape[d]; ++i) id = maps[d][i] == i;
    if (!id) break;
    inner *= shape[d];
    --c;
  }
  if (c == 0) {
    out.copy_(t);
    return out;
  }
  constexpr int64_t kFill = std::numeric_limits<int64_t>::min();
  std::vector<std::vector<int64_t>> offs(n);  // element offsets into t
  for (int d = 0; d < n; ++d) {
    offs[d].resize(shape[d]);
    for (int64_t i = 0; i < shape[d]; ++i) {
      int64_t m = maps[d][i];
      offs[d][i] = m < 0 ? kFill : m * t.stride(d);
    }
  }
  const bool folded = c < n;
  const int outer = folded ? c : n - 1;  // dims that pick a row's source
  const int64_t last = folded ? inner : shape[n - 1], rows = out.numel() / last;
  // The unfolded last dim as runs of consecutive source elements (a roll has
  // two per row); used when the runs are long enough to pay for themselves.
  struct Run {
    int64_t dst, src, len;
  };
  std::vector<Run> runs;
  if (!folded) {
    const int64_t* o = offs[n - 1].data();
    for (int64_t j = 0; j < last; ++j) {
      const bool both_fill = j > 0 && o[j] == kFill && o[j - 1] == kFill;
      const bool next_elem = j > 0 && o[j] != kFill && o[j - 1] != kFill && t.stride(n - 1) == 1 &&
                             o[j] == o[j - 1] + 1;
      const bool extend = both_fill || next_elem;
      if (extend) {
        ++runs.back().len;
      } else {
        runs.push_back({j, o[j], 1});
      }
    }
  }
  const bool use_runs = folded || static_cast<int64_t>(runs.size()) * 8 <= last;
  if (folded) runs = {{0, 0, inner}};
  const int64_t grain = std::max<int64_t>(1, cpu::kElementwiseGrain / last);
  if (rows > grain && get_num_threads() > 1) profile::count_launch();
  visit_width(t.itemsize(), [&](auto tag) {
    using W = typename decltype(tag)::type;
    const W* src = static_cast<const W*>(t.data_ptr());
    W* dst = static_cast<W*>(out.data_ptr());
    const W v = fill.defined() ? *static_cast<const W*>(fill.data_ptr()) : W{};
    const int64_t* off_last = offs[n - 1].data();
    parallel_for(0, rows, grain, [&](int64_t lo, int64_t hi) {
      for (int64_t r = lo; r < hi; ++r) {
        int64_t base = 0, rem = r;
        bool filled = false;
        for (int d = outer - 1; d >= 0; --d) {
          int64_t o = offs[d][rem % shape[d]];
          rem /= shape[d];
          filled = filled || o == kFill;
          base += filled ? 0 : o;
        }
        W* row = dst + r * last;
        if (filled) {
          std::fill_n(row, last, v);
          continue;
        }
        const W* s = src + base;
        if (use_runs) {
          for (const Run& run : runs) {
            if (run.src == kFill) {
              std::fill_n(row + run.dst, run.len, v);
            } else {
              std::copy_n(s + run.src, run.len, row + run.dst);
            }
          }
        } else {
          for (int64_t j = 0; j < last; ++j) row[j] = off_last[j] == kFill ? v : s[off_last[j]];
        }
      }
    });
  });
  return out;
}

// CUDA: t's rows along d picked by the table m (every entry in [0, size(d)):
// the callers build it so, hence no range check and no host read), through
// the index_select kernel.
Tensor select_cuda(const Tensor& t, int d, const std::vector<int64_t>& m) {
  Dims shape = t.shape();
  shape[d] = static_cast<int64_t>(m.size());
  Tensor out = empty(shape, {t.dtype(), t.device()});
  if (out.numel() == 0) return out;
  Tensor src = t.contiguous();
  Tensor idx = from_vector(m).to(t.device());
  cuda::launch_index_select(static_cast<int>(t.dtype()), src.data_ptr(), idx.data<int64_t>(),
                            out.data_ptr(), numel_between(shape, 0, d), t.size(d),
                            numel_between(shape, d + 1, shape.size()), shape[d], {},
                            cuda_ops::stream_of(t));
  cuda_ops::launched(t);
  return out;
}

// CUDA: the same gather as one row selection per dim whose map is not the
// identity (maps without -1 entries: roll, flip, and pad's non-constant modes).
// Each pass moves the whole tensor once; the tables are built on the host.
Tensor gather_by_maps_cuda(const Tensor& t, const DimMaps& maps) {
  Tensor r = t;
  bool copied = false;
  for (int d = 0; d < t.dim(); ++d) {
    const std::vector<int64_t>& m = maps[d];
    bool identity = static_cast<int64_t>(m.size()) == t.size(d);
    for (size_t i = 0; identity && i < m.size(); ++i) identity = m[i] == static_cast<int64_t>(i);
    if (identity) continue;
    r = select_cuda(r, d, m);
    copied = true;
  }
  return copied ? r : t.clone();
}

DimMaps identity_maps(const Dims& shape) {
  DimMaps maps(shape.size());
  for (int d = 0; d < shape.size(); ++d) {
    maps[d].resize(shape[d]);
    for (int64_t i = 0; i < shape[d]; ++i) maps[d][i] = i;
  }
  return maps;
}

// --- pad --------------------------------------------------------------------------

// Source coordinate of each of the n + l + r output cells along one dim.
std::vector<int64_t> pad_map(int64_t n, int64_t l, int64_t r, PadMode mode) {
  std::vector<int64_t> m(static_cast<size_t>(n + l + r));
  for (int64_t i = 0; i < n + l + r; ++i) {
    int64_t s = i - l;
    switch (mode) {
      case PadMode::Constant:
        s = (s >= 0 && s < n) ? s : -1;
        break;
      case PadMode::Reflect:
        if (s < 0) s = -s;
        if (s >= n) s = 2 * (n - 1) - s;
        break;
      case PadMode::Replicate:
        s = std::min(std::max<int64_t>(s, 0), n - 1);
        break;
      case PadMode::Circular:
        s = ((s % n) + n) % n;
        break;
    }
    m[i] = s;
  }
  return m;
}

// Validates pads against t's shape; returns the padded shape.
Dims padded_shape(const Dims& in, const std::vector<int64_t>& pads, PadMode mode) {
  const char* op = "pad";
  FK_CHECK(pads.size() % 2 == 0, op, "an even number of pads ((left, right) pairs)",
           std::to_string(pads.size()) + " pads");
  FK_CHECK(static_cast<int>(pads.size() / 2) <= in.size(), op,
           "at most one (left, right) pair per dimension (" + std::to_string(in.size()) + " dims)",
           std::to_string(pads.size() / 2) + " pairs");
  Dims out = in;
  for (size_t p = 0; p < pads.size() / 2; ++p) {
    int d = in.size() - 1 - static_cast<int>(p);
    int64_t l = pads[2 * p], r = pads[2 * p + 1], n = in[d];
    std::string at = " for dim " + std::to_string(d) + " of size " + std::to_string(n);
    std::string given = "pads (" + std::to_string(l) + ", " + std::to_string(r) + ")" + at;
    if (mode == PadMode::Constant) {
      FK_CHECK(n + l + r >= 0, op, "pads leaving a size >= 0", given);
    } else {
      FK_CHECK(l >= 0 && r >= 0, op, std::string("pads >= 0 in ") + name(mode) + " mode", given);
    }
    if (mode == PadMode::Reflect) {
      FK_CHECK((l < n && r < n) || (l == 0 && r == 0), op,
               "reflect pads smaller than the dimension size", given);
    }
    if (mode == PadMode::Replicate) {
      FK_CHECK(n > 0 || (l == 0 && r == 0), op, "a non-empty dimension to replicate", given);
    }
    if (mode == PadMode::Circular) {
      FK_CHECK(l <= n && r <= n, op, "circular pads no larger than the dimension size", given);
    }
    out[d] = n + l + r;
  }
  return out;
}

// CUDA, constant mode: the output filled with `value`, then the part of t
// that survives cropping (negative pads) copied into its place.
Tensor pad_constant_cuda(const Tensor& t, const std::vector<int64_t>& pads, const Dims& shape,
                         double value) {
  Tensor out = full(shape, value, {t.dtype(), t.device()});
  Tensor src = t, dst = out;
  for (size_t p = 0; p < pads.size() / 2; ++p) {
    const int d = t.dim() - 1 - static_cast<int>(p);
    const int64_t l = pads[2 * p], r = pads[2 * p + 1];
    const int64_t len = t.size(d) + std::min<int64_t>(l, 0) + std::min<int64_t>(r, 0);
    if (len <= 0) return out;
    src = src.narrow(d, std::max<int64_t>(-l, 0), len);
    dst = dst.narrow(d, std::max<int64_t>(l, 0), len);
  }
  if (dst.numel() > 0) dst.copy_(src);
  return out;
}

Tensor pad_forward(const Tensor& t, const std::vector<int64_t>& pads, PadMode mode, double value) {
  Dims shape = padded_shape(t.shape(), pads, mode);
  if (t.device().is_cuda() && mode == PadMode::Constant) {
    return pad_constant_cuda(t, pads, shape, value);
  }
  DimMaps maps = identity_maps(t.shape());
  for (size_t p = 0; p < pads.size() / 2; ++p) {
    int d = t.dim() - 1 - static_cast<int>(p);
    maps[d] = pad_map(t.size(d), pads[2 * p], pads[2 * p + 1], mode);
  }
  if (t.device().is_cuda()) return gather_by_maps_cuda(t, maps);
  Tensor fill;
  if (mode == PadMode::Constant) fill = full(Dims{}, value, {t.dtype()});
  return gather_by_maps(t, shape, maps, fill);
}

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
  const int64_t total = t.numel() * es;
  const int64_t grain = cpu::kElementwiseGrain * es;
  if (total > grain && get_num_threads() > 1) profile::count_launch();
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
           "one shift per dim (" + std::to_string(dims.size()) + " dims)",
           std::to_string(shifts.size()) + " shifts");
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
    FK_CHECK(!seen[w], "flip", "each dim at most once", "dim " + std::to_string(d) + " twice");
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

// --- cat ----------------------------------------------------------------------------

Tensor cat_forward(const std::vector<Tensor>& ts, int d, DType rt, const Dims& shape) {
  Tensor out = empty(shape, {rt, ts[0].device()});
  if (out.numel() == 0) return out;
  if (out.device().is_cuda()) {  // one strided device copy (with conversion) per input
    int64_t at = 0;
    for (const Tensor& t : ts) {
      const int64_t n = t.size(d);
      if (n > 0) {
        Tensor v = out.narrow(d, at, n);
        v.copy_(t);
      }
      at += n;
    }
    return out;
  }
  const int64_t outer = numel_between(shape, 0, d),
                inner = numel_between(shape, d + 1, shape.size());
  const int64_t out_row = shape[d] * inner * static_cast<int64_t>(itemsize(rt));
  struct Rows {
    const char* src;
    int64_t bytes;   // one input row: size(d) * inner elements
    int64_t offset;  // its place in an output row
  };
  std::vector<Rows> rows;
  int64_t at = 0;
  for (const Tensor& t : ts) {
    const int64_t n = t.size(d);
    if (n > 0) {
      if (t.dtype() == rt && t.is_contiguous()) {
        rows.push_back({static_cast<const char*>(t.data_ptr()),
                        n * inner * static_cast<int64_t>(itemsize(rt)),
                        at * inner * static_cast<int64_t>(itemsize(rt))});
      } else {
        Tensor v = out.narrow(d, at, n);
        v.copy_(t);
      }
    }
    at += n;
  }
  if (rows.empty()) return out;
  char* dst = static_cast<char*>(out.data_ptr());
  const int64_t grain = std::max<int64_t>(1, cpu::kElementwiseGrain * 8 / out_row);
  if (outer > grain && get_num_threads() > 1) profile::count_launch();
  parallel_for(0, outer, grain, [&](int64_t lo, int64_t hi) {
    // Tiles of output rows (~16 KiB, L1-resident while every input fills its
    // part), input by input: rows of one length each, so copy_rows can use
    // fixed-size moves for short rows. Inputs sit at any offset from the output
    // (views, odd row sizes): copy_bytes keeps misaligned long rows at copy speed.
    const int64_t tile = std::max<int64_t>(1, 16384 / out_row);
    for (int64_t t0 = lo; t0 < hi; t0 += tile) {
      const int64_t count = std::min(hi, t0 + tile) - t0;
      for (const Rows& r : rows) {
        cpu::copy_rows(dst + t0 * out_row + r.offset, out_row, r.src + t0 * r.bytes, r.bytes,
                       r.bytes, count);
      }
    }
  });
  return out;
}

// --- autograd nodes ------------------------------------------------------------------

struct CatBackward : autograd::Node {
  int64_t dim = 0;
  std::vector<int64_t> sizes;
  std::vector<DType> dtypes;
  std::vector<Tensor> apply(std::vector<Tensor>&& g) override {
    std::vector<Tensor> out(sizes.size());
    int64_t at = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (next[i].fn) out[i] = grad_as(g[0].narrow(dim, at, sizes[i]), dtypes[i]);
      at += sizes[i];
    }
    return out;
  }
  const char* name() const override { return "CatBackward"; }
};

struct PadBackward : autograd::Node {
  Dims in_shape;
  std::vector<int64_t> pads;
  PadMode mode = PadMode::Constant;
  std::vector<Tensor> apply(std::vector<Tensor>&& g) override {
    return {pad_backward(g[0], in_shape, pads, mode)};
  }
  const char* name() const override { return "PadBackward"; }
};

struct RollBackward : autograd::Node {
  std::vector<int64_t> shifts, dims;
  std::vector<Tensor> apply(std::vector<Tensor>&& g) override {
    std::vector<int64_t> back(shifts.size());
    for (size_t i = 0; i < shifts.size(); ++i) back[i] = -shifts[i];
    return {roll(g[0], back, dims)};
  }
  const char* name() const override { return "RollBackward"; }
};

struct FlipBackward : autograd::Node {
  std::vector<int64_t> dims;
  std::vector<Tensor> apply(std::vector<Tensor>&& g) override { return {flip(g[0], dims)}; }
  const char* name() const override { return "FlipBackward"; }
};

}  // namespace

Tensor cat(const std::vector<Tensor>& ts, int64_t dim) {
  profile::OpScope scope("cat");
  FK_CHECK(!ts.empty(), "cat", "at least one tensor", "an empty list");
  const Tensor& first = ts[0];
  FK_CHECK(first.dim() >= 1, "cat", "tensors with at least 1 dimension",
           "a 0-dim tensor at position 0");
  const int d = wrap_dim(dim, first.dim(), "cat");
  Dims shape = first.shape();
  DType rt = first.dtype();
  int64_t total = 0;
  for (size_t i = 0; i < ts.size(); ++i) {
    const Tensor& t = ts[i];
    FK_CHECK(t.device() == first.device(), "cat",
             "tensors on one device (" + first.device().str() + ")",
             "tensor " + std::to_string(i) + " on " + t.device().str());
    bool same = t.dim() == first.dim();
    for (int k = 0; same && k < t.dim(); ++k) same = k == d || t.size(k) == shape[k];
    if (!same) {
      Dims want = shape;
      std::string w = "[";
      for (int k = 0; k < want.size(); ++k) {
        w += (k ? ", " : "") + (k == d ? std::string("*") : std::to_string(want[k]));
      }
      throw Error("cat", "tensors of shape " + w + "] (any size at dim " + std::to_string(d) + ")",
                  "tensor " + std::to_string(i) + " of shape " + t.shape().str());
    }
    rt = promote(rt, t.dtype());
    total += t.size(d);
  }
  shape[d] = total;
  Tensor out;
  {
    autograd::NoGradGuard ng;
    out = cat_forward(ts, d, rt, shape);
  }
  if (autograd::any_needs_grad(ts)) {
    auto node = std::make_shared<CatBackward>();
    node->dim = d;
    for (const Tensor& t : ts) {
      node->sizes.push_back(t.size(d));
      node->dtypes.push_back(t.dtype());
    }
    autograd::record(node, ts, out);
  }
  return out;
}

Tensor stack(const std::vector<Tensor>& ts, int64_t dim) {
  FK_CHECK(!ts.empty(), "stack", "at least one tensor", "an empty list");
  const int d = wrap_dim(dim, ts[0].dim() + 1, "stack");
  std::vector<Tensor> parts;
  parts.reserve(ts.size());
  for (size_t i = 0; i < ts.size(); ++i) {
    FK_CHECK(ts[i].shape() == ts[0].shape(), "stack", "tensors of one shape " + ts[0].shape().str(),
             "tensor " + std::to_string(i) + " of shape " + ts[i].shape().str());
    parts.push_back(ts[i].unsqueeze(d));
  }
  return cat(parts, d);
}

std::vector<Tensor> split(const Tensor& t, int64_t size, int64_t dim) {
  FK_CHECK(t.dim() >= 1, "split", "a tensor with at least 1 dimension", "a 0-dim tensor");
  const int d = wrap_dim(dim, t.dim(), "split");
  const int64_t n = t.size(d);
  FK_CHECK(size > 0, "split", "a chunk size > 0", std::to_string(size));
  std::vector<Tensor> out;
  if (n == 0) out.push_back(t.narrow(d, 0, 0));
  for (int64_t at = 0; at < n; at += size) out.push_back(t.narrow(d, at, std::min(size, n - at)));
  return out;
}

std::vector<Tensor> split(const Tensor& t, const std::vector<int64_t>& sizes, int64_t dim) {
  FK_CHECK(t.dim() >= 1, "split", "a tensor with at least 1 dimension", "a 0-dim tensor");
  const int d = wrap_dim(dim, t.dim(), "split");
  int64_t total = 0;
  std::string list;
  for (int64_t s : sizes) {
    FK_CHECK(s >= 0, "split", "sizes >= 0", std::to_string(s));
    total += s;
    list += (list.empty() ? "" : ", ") + std::to_string(s);
  }
  FK_CHECK(total == t.size(d), "split",
           "sizes summing to " + std::to_string(t.size(d)) + " (dim " + std::to_string(d) + ")",
           "sizes [" + list + "] summing to " + std::to_string(total));
  std::vector<Tensor> out;
  int64_t at = 0;
  for (int64_t s : sizes) {
    out.push_back(t.narrow(d, at, s));
    at += s;
  }
  return out;
}

Tensor pad(const Tensor& t, const std::vector<int64_t>& pads, PadMode mode, double value) {
  profile::OpScope scope("pad");
  Tensor out;
  {
    autograd::NoGradGuard ng;
    out = pad_forward(t, pads, mode, value);
  }
  if (autograd::needs_grad(t)) {
    auto node = std::make_shared<PadBackward>();
    node->in_shape = t.shape();
    node->pads = pads;
    node->mode = mode;
    autograd::record(node, {t}, out);
  }
  return out;
}

Tensor pad_backward(const Tensor& g, const Dims& in_shape, const std::vector<int64_t>& pads,
                    PadMode mode) {
  if (mode == PadMode::Constant) {
    // The adjoint of padding by p (or cropping by -p) is cropping by p (padding by -p with zeros).
    std::vector<int64_t> inverse(pads.size());
    for (size_t i = 0; i < pads.size(); ++i) inverse[i] = -pads[i];
    return pad(g, inverse, PadMode::Constant, 0.0);
  }
  // The padding maps factor over dims, so the adjoint is one index_add per padded dim.
  Tensor r = g;
  for (size_t p = 0; p < pads.size() / 2; ++p) {
    const int d = in_shape.size() - 1 - static_cast<int>(p);
    std::vector<int64_t> m = pad_map(in_shape[d], pads[2 * p], pads[2 * p + 1], mode);
    Dims shape = r.shape();
    shape[d] = in_shape[d];
    r = index_add(zeros(shape, {r.dtype(), r.device()}), d, from_vector(m).to(r.device()), r);
  }
  return r;
}

Tensor roll(const Tensor& t, const std::vector<int64_t>& shifts, const std::vector<int64_t>& dims) {
  if (dims.empty()) {
    FK_CHECK(shifts.size() == 1, "roll", "one shift when no dims are given (flattened roll)",
             std::to_string(shifts.size()) + " shifts");
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

}  // namespace fk
