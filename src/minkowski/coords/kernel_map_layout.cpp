#include "minkowski/coords/kernel_map_layout.h"

#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <utility>

#include "fk/parallel.h"
#include "minkowski/coords/kernel_map.h"

namespace minkowski::kernel_map_build {

namespace {

template <typename Key>
Key pack_key(const BuildLayout& l, const int32_t* row, int w) {
  Key k = 0;
  for (int c = 0; c < w; ++c)
    k |= static_cast<Key>(static_cast<int64_t>(row[c]) - l.lo[c]) << l.shift[c];
  return k;
}

// Packing keys costs ~2 ns a row: threads pay only for millions of rows.
constexpr int64_t kPackGrain = int64_t{1} << 20;

}  // namespace

BuildLayout make_layout(const LayoutInputs& m, const std::vector<int32_t>& offsets) {
  const int w = static_cast<int>(m.in_lo.size()), d = w - 1;
  const int64_t K = static_cast<int64_t>(offsets.size()) / d;
  BuildLayout l;
  l.lo.resize(w);
  l.shift.resize(w);
  std::vector<int64_t> reach(w, 0);
  for (int64_t k = 0; k < K; ++k)
    for (int i = 0; i < d; ++i)
      reach[i + 1] = std::max<int64_t>(reach[i + 1], std::abs(int64_t{offsets[k * d + i]}));
  std::vector<int> order(d);  // columns from least to most significant, then 0
  std::iota(order.begin(), order.end(), 1);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return m.out_changes[a] > m.out_changes[b]; });
  order.push_back(0);
  l.line_axis = order[0];
  l.lexicographic = true;
  for (int i = 0; i < d; ++i) l.lexicographic &= order[i] == d - i;
  for (int c : order) {
    int64_t lo = std::min(m.in_lo[c], m.out_lo[c]) - reach[c];
    int64_t hi = std::max(m.in_hi[c], m.out_hi[c]) + reach[c];
    int b = 0;
    while (b < 63 && (int64_t{1} << b) <= hi - lo) ++b;
    l.lo[c] = lo;
    l.shift[c] = l.bits;
    l.bits += b;
  }
  return l;
}

BuildLayout make_layout(const CoordinateMap& in, const CoordinateMap& out,
                        const std::vector<int32_t>& offsets) {
  const int w = in.width();
  LayoutInputs m;
  auto bounds = [w](const CoordinatePacker& p, std::vector<int64_t>& lo, std::vector<int64_t>& hi) {
    for (int c = 0; c < w; ++c) {
      lo.push_back(p.min(c));
      hi.push_back(p.min(c) + p.extent(c));
    }
  };
  bounds(in.packer(), m.in_lo, m.in_hi);
  bounds(out.packer(), m.out_lo, m.out_hi);
  // How often each axis changes between consecutive output rows.
  m.out_changes.assign(w, 0);
  for (int64_t i = 1; i < out.size(); ++i) {
    const int32_t *a = out.row(i - 1), *b = out.row(i);
    for (int c = 1; c < w; ++c) m.out_changes[c] += a[c] != b[c];
  }
  return make_layout(m, offsets);
}

template <typename Key>
bool sorted_keys(const CoordinateMap& m, const BuildLayout& l, LargeArray<Key>& keys,
                 LargeArray<int32_t>& rows) {
  const int64_t n = m.size();
  const int w = m.width();
  LargeArray<Key> k2;
  LargeArray<int32_t> r2;
  keys.resize(n + kKeyPad);
  rows.resize(n + 1);
  rows[n] = -1;
  if (l.lexicographic) {  // the map's index already lists its rows in key order
    const int32_t* order = m.rows_in_key_order().data();
    fk::parallel_for(0, n, kPackGrain, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        rows[i] = order[i];
        keys[i] = pack_key<Key>(l, m.row(order[i]), w);
      }
    });
    bool identity = true;
    for (int64_t i = 0; i < n; ++i) identity &= rows[i] == i;
    std::fill(keys.begin() + n, keys.end(), ~Key{0});
    return identity;
  }
  fk::parallel_for(0, n, kPackGrain, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      keys[i] = pack_key<Key>(l, m.row(i), w);
      rows[i] = static_cast<int32_t>(i);
    }
  });
  bool sorted = true;  // rows already in key order (scenes often are): no sort
  for (int64_t i = 1; i < n && sorted; ++i) sorted = keys[i - 1] < keys[i];
  constexpr int kDigit = 11;
  std::vector<int64_t> count(size_t{1} << kDigit);
  for (int s = 0; s < l.bits && !sorted; s += kDigit) {
    std::fill(count.begin(), count.end(), 0);
    const Key mask = (Key{1} << kDigit) - 1;
    k2.resize(n);
    r2.resize(n + 1);
    r2[n] = -1;
    for (int64_t i = 0; i < n; ++i) ++count[static_cast<size_t>((keys[i] >> s) & mask)];
    int64_t sum = 0;
    for (auto& c : count) sum += std::exchange(c, sum);
    for (int64_t i = 0; i < n; ++i) {
      int64_t at = count[static_cast<size_t>((keys[i] >> s) & mask)]++;
      k2[at] = keys[i];
      r2[at] = rows[i];
    }
    std::copy(k2.begin(), k2.begin() + n, keys.begin());
    rows.swap(r2);
  }
  std::fill(keys.begin() + n, keys.end(), ~Key{0});
  return sorted;
}

template bool sorted_keys<uint32_t>(const CoordinateMap&, const BuildLayout&, LargeArray<uint32_t>&,
                                    LargeArray<int32_t>&);
template bool sorted_keys<uint64_t>(const CoordinateMap&, const BuildLayout&, LargeArray<uint64_t>&,
                                    LargeArray<int32_t>&);
template bool sorted_keys<Key128>(const CoordinateMap&, const BuildLayout&, LargeArray<Key128>&,
                                  LargeArray<int32_t>&);

std::vector<Line> make_lines(const std::vector<int32_t>& offsets, int d, const BuildLayout& l) {
  const int64_t K = static_cast<int64_t>(offsets.size()) / d;
  std::vector<Line> lines;
  std::vector<std::vector<int32_t>> rest;  // components 2..D of each line
  for (int64_t k = 0; k < K; ++k) {
    const int32_t* o = offsets.data() + k * d;
    std::vector<int32_t> r(o, o + d);
    r[l.line_axis - 1] = 0;
    size_t at = std::find(rest.begin(), rest.end(), r) - rest.begin();
    if (at == rest.size()) {
      rest.push_back(r);
      Key128 delta = 0;
      for (int i = 0; i < d; ++i)
        if (i + 1 != l.line_axis) delta += static_cast<Key128>(int64_t{o[i]}) << l.shift[i + 1];
      lines.push_back({delta, {}});
    }
    lines[at].dx.push_back({o[l.line_axis - 1], static_cast<int32_t>(k)});
  }
  for (Line& ln : lines) std::sort(ln.dx.begin(), ln.dx.end());
  return lines;
}

}  // namespace minkowski::kernel_map_build

namespace minkowski {

KernelMapKeyLayout kernel_map_key_layout(const CoordinateMap& in, const CoordinateMap& out,
                                         const std::vector<int32_t>& offsets) {
  kernel_map_build::BuildLayout l = kernel_map_build::make_layout(in, out, offsets);
  return {std::move(l.lo), std::move(l.shift), l.bits};
}

KernelMapKeyLayout kernel_map_key_layout(const kernel_map_build::LayoutInputs& maps,
                                         const std::vector<int32_t>& offsets) {
  kernel_map_build::BuildLayout l = kernel_map_build::make_layout(maps, offsets);
  return {std::move(l.lo), std::move(l.shift), l.bits};
}

}  // namespace minkowski
