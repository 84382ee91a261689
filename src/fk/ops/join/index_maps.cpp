#include "fk/ops/join/index_maps.h"

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

namespace fk::join_detail {

using cpu::Bytes16;
using cpu::visit_width;

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

namespace {

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

}  // namespace

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

}  // namespace fk::join_detail
