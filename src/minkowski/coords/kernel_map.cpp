#include "minkowski/coords/kernel_map.h"

#include <numeric>

#include "fk/parallel.h"
#include "fk/profile.h"

namespace minkowski {

namespace {

std::shared_ptr<RowIndex> group_rows(const KernelMap& m, const std::vector<int32_t>& rows,
                                     const std::vector<int32_t>& others, int64_t n) {
  auto idx = std::make_shared<RowIndex>();
  int64_t p = m.pairs();
  idx->begin.assign(n + 1, 0);
  idx->entries.resize(p);
  if (m.identity) {
    std::iota(idx->begin.begin(), idx->begin.end(), int64_t{0});
    for (int64_t i = 0; i < p; ++i)
      idx->entries[i] = {static_cast<int32_t>(i), static_cast<int32_t>(i), 0};
    return idx;
  }
  for (int64_t i = 0; i < p; ++i) ++idx->begin[rows[i] + 1];
  for (int64_t r = 0; r < n; ++r) idx->begin[r + 1] += idx->begin[r];
  std::vector<int64_t> cursor(idx->begin.begin(), idx->begin.end() - 1);
  for (int64_t k = 0; k < m.volume; ++k)
    for (int64_t i = m.offset_begin[k]; i < m.offset_begin[k + 1]; ++i) {
      int64_t at = cursor[rows[i]]++;
      idx->entries[at] = {static_cast<int32_t>(i), others[i], static_cast<int32_t>(k)};
    }
  return idx;
}

// by_in of a symmetric map from its by_out: the pairs with input row i are the
// mirrors of the pairs with output row i.
std::shared_ptr<RowIndex> mirror_rows(const KernelMap& m, const RowIndex& by_out) {
  auto idx = std::make_shared<RowIndex>();
  idx->begin = by_out.begin;
  idx->entries.resize(by_out.entries.size());
  int64_t n = static_cast<int64_t>(by_out.begin.size()) - 1;
  for (int64_t r = 0; r < n; ++r) {
    RowEntry* e = idx->entries.data() + by_out.begin[r];
    int64_t cnt = by_out.begin[r + 1] - by_out.begin[r];
    for (int64_t j = 0; j < cnt; ++j) {
      const RowEntry& o = by_out.entries[by_out.begin[r] + j];
      int32_t mk = m.mirror[o.offset];
      e[j] = {static_cast<int32_t>(m.offset_begin[mk] + (o.pair - m.offset_begin[o.offset])),
              o.other, mk};
    }
    // offset order (= pair order): a short insertion sort
    for (int64_t j = 1; j < cnt; ++j)
      for (int64_t q = j; q > 0 && e[q - 1].pair > e[q].pair; --q) std::swap(e[q - 1], e[q]);
  }
  return idx;
}

}  // namespace

int64_t KernelMap::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t b = static_cast<int64_t>((in_rows.capacity() + out_rows.capacity()) * 4 +
                                   offset_begin.capacity() * 8);
  for (const auto* r : {by_out_.get(), by_in_.get()})
    if (r)
      b += static_cast<int64_t>(r->begin.capacity() * 8 + r->entries.capacity() * sizeof(RowEntry));
  return b;
}

const RowIndex& KernelMap::by_out() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!by_out_) by_out_ = group_rows(*this, out_rows, in_rows, out_size);
  return *by_out_;
}

const RowIndex& KernelMap::by_in() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!by_in_) {
    if (!mirror.empty()) {
      if (!by_out_) by_out_ = group_rows(*this, out_rows, in_rows, out_size);
      by_in_ = mirror_rows(*this, *by_out_);
    } else {
      by_in_ = group_rows(*this, in_rows, out_rows, in_size);
    }
  }
  return *by_in_;
}

std::shared_ptr<KernelMap> KernelMap::transposed() const {
  auto t = std::make_shared<KernelMap>();
  t->volume = volume;
  t->in_size = out_size;
  t->out_size = in_size;
  t->identity = identity;
  t->offset_begin = offset_begin;
  t->in_rows = out_rows;
  t->out_rows = in_rows;
  return t;
}

std::shared_ptr<KernelMap> KernelMap::make_identity(int64_t n) {
  auto m = std::make_shared<KernelMap>();
  m->volume = 1;
  m->in_size = m->out_size = n;
  m->identity = true;
  m->offset_begin = {0, n};
  return m;
}

std::shared_ptr<KernelMap> build_kernel_map(const CoordinateMap& in, const CoordinateMap& out,
                                            const std::vector<int32_t>& offsets) {
  const int w = in.width(), d = w - 1;
  const int64_t K = static_cast<int64_t>(offsets.size()) / d;
  const int64_t n_out = out.size(), n_in = in.size();
  auto m = std::make_shared<KernelMap>();
  m->volume = K;
  m->in_size = n_in;
  m->out_size = n_out;
  m->offset_begin.assign(K + 1, 0);
  if (n_out == 0 || n_in == 0) return m;

  // Merge join instead of hashing: walk the output rows in key order; for a
  // fixed offset the neighbours' keys (packed with the input's layout, rows
  // outside the input's bounding box skipped) are then ascending too, so one
  // forward pointer over the input's sorted keys finds them all, with purely
  // sequential memory access.
  const SortedRows& is = in.sorted();
  const SortedRows& os = out.sorted();
  const CoordinatePacker& pk = in.packer();
  std::vector<int64_t> ext(w), shifts(w);
  for (int c = 0; c < w; ++c) ext[c] = pk.extent(c), shifts[c] = pk.shift(c);
  // Output coordinates relative to the input's minimum, in output key order.
  std::vector<int64_t> rel(static_cast<size_t>(n_out * w));
  fk::parallel_for(0, n_out, 16384, [&](int64_t lo, int64_t hi) {
    for (int64_t j = lo; j < hi; ++j) {
      const int32_t* c = out.row(os.rows[j]);
      for (int i = 0; i < w; ++i) rel[j * w + i] = static_cast<int64_t>(c[i]) - pk.min(i);
    }
  });
  std::vector<std::vector<int32_t>> pairs(K);  // per offset: (in, out) interleaved
  // A map onto itself (submanifold) is symmetric: (i, o) at offset v means
  // (o, i) at offset -v. When every offset's negation is in the region, only
  // one of each +-v pair is searched and its mirror is the swap.
  std::vector<int64_t> mirror(K, -1);
  if (&in == &out) {
    for (int64_t k = 0; k < K; ++k)
      for (int64_t q = 0; q < K && mirror[k] < 0; ++q) {
        bool neg = true;
        for (int i = 0; i < d && neg; ++i) neg = offsets[q * d + i] == -offsets[k * d + i];
        if (neg) mirror[k] = q;
      }
    for (int64_t k = 0; k < K; ++k)
      if (mirror[k] < 0) mirror.assign(K, -1);
  }
  std::vector<int64_t> search;
  for (int64_t k = 0; k < K; ++k)
    if (mirror[k] < 0 || mirror[k] >= k) search.push_back(k);
  const int64_t ns = static_cast<int64_t>(search.size());
  fk::profile::count_launch();
  // One offset per task; small maps stay on the calling thread.
  int64_t grain = n_out * ns < (int64_t{1} << 18) ? ns : 1;
  fk::parallel_for(0, ns, grain, [&](int64_t slo, int64_t shi) {
    for (int64_t si = slo; si < shi; ++si) {
      const int64_t k = search[si];
      const int32_t* off = offsets.data() + k * d;
      std::vector<int32_t>& p = pairs[k];
      int64_t ptr = 0;
      for (int64_t j = 0; j < n_out; ++j) {
        const int64_t* r = rel.data() + j * w;
        if (r[0] < 0 || r[0] > ext[0]) continue;
        Key128 key = static_cast<Key128>(r[0]) << shifts[0];
        bool inside = true;
        for (int i = 1; i < w; ++i) {
          int64_t v = r[i] + off[i - 1];
          if (v < 0 || v > ext[i]) {
            inside = false;
            break;
          }
          key |= static_cast<Key128>(v) << shifts[i];
        }
        if (!inside) continue;
        while (ptr < n_in && is.keys[ptr] < key) ++ptr;
        if (ptr == n_in) break;
        if (is.keys[ptr] == key) {
          p.push_back(is.rows[ptr]);
          p.push_back(os.rows[j]);
        }
      }
    }
  });
  for (int64_t k = 0; k < K; ++k) {
    int64_t q = mirror[k];
    if (q < 0 || q >= k) continue;  // searched
    const std::vector<int32_t>& src = pairs[q];
    std::vector<int32_t>& dst = pairs[k];
    dst.resize(src.size());
    for (size_t j = 0; j < src.size(); j += 2) dst[j] = src[j + 1], dst[j + 1] = src[j];
  }
  if (mirror[0] >= 0) m->mirror.assign(mirror.begin(), mirror.end());
  int64_t total = 0;
  for (int64_t k = 0; k < K; ++k) {
    m->offset_begin[k] = total;
    total += static_cast<int64_t>(pairs[k].size() / 2);
  }
  m->offset_begin[K] = total;
  m->in_rows.resize(total);
  m->out_rows.resize(total);
  fk::parallel_for(0, K, grain, [&](int64_t klo, int64_t khi) {
    for (int64_t k = klo; k < khi; ++k) {
      int64_t s = m->offset_begin[k];
      const std::vector<int32_t>& p = pairs[k];
      for (size_t j = 0; j < p.size() / 2; ++j) {
        m->in_rows[s + j] = p[2 * j];
        m->out_rows[s + j] = p[2 * j + 1];
      }
      std::vector<int32_t>().swap(pairs[k]);
    }
  });
  return m;
}

}  // namespace minkowski
