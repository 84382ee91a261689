#include "minkowski/coords/kernel_map.h"

#include <numeric>

#include "fk/parallel.h"
#include "fk/profile.h"

namespace minkowski {

namespace {

std::shared_ptr<RowIndex> group_rows(const KernelMap& m, const std::vector<int32_t>& rows,
                                     int64_t n) {
  auto idx = std::make_shared<RowIndex>();
  int64_t p = m.pairs();
  idx->begin.assign(n + 1, 0);
  idx->pairs.resize(p);
  if (m.identity) {
    std::iota(idx->begin.begin(), idx->begin.end(), int64_t{0});
    std::iota(idx->pairs.begin(), idx->pairs.end(), 0);
    return idx;
  }
  for (int64_t i = 0; i < p; ++i) ++idx->begin[rows[i] + 1];
  for (int64_t r = 0; r < n; ++r) idx->begin[r + 1] += idx->begin[r];
  std::vector<int64_t> cursor(idx->begin.begin(), idx->begin.end() - 1);
  for (int64_t i = 0; i < p; ++i) idx->pairs[cursor[rows[i]]++] = static_cast<int32_t>(i);
  return idx;
}

}  // namespace

int64_t KernelMap::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t b = static_cast<int64_t>((in_rows.capacity() + out_rows.capacity()) * 4 +
                                   offset_begin.capacity() * 8);
  for (const auto* r : {by_out_.get(), by_in_.get()})
    if (r) b += static_cast<int64_t>(r->begin.capacity() * 8 + r->pairs.capacity() * 4);
  return b;
}

const RowIndex& KernelMap::by_out() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!by_out_) by_out_ = group_rows(*this, out_rows, out_size);
  return *by_out_;
}

const RowIndex& KernelMap::by_in() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!by_in_) by_in_ = group_rows(*this, in_rows, in_size);
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
  const int64_t n_out = out.size();
  auto m = std::make_shared<KernelMap>();
  m->volume = K;
  m->in_size = in.size();
  m->out_size = n_out;
  m->offset_begin.assign(K + 1, 0);
  if (n_out == 0 || in.size() == 0) return m;

  // Fixed blocks of output rows: pairs of block b for offset k land after those
  // of blocks < b, so within an offset pairs are sorted by output row whatever
  // the thread count.
  constexpr int64_t kBlock = 4096;
  const int64_t nblocks = (n_out + kBlock - 1) / kBlock;
  std::vector<std::vector<int32_t>> found(nblocks);  // per block: (k, in, out) packed per k
  std::vector<int64_t> counts(static_cast<size_t>(nblocks * K), 0);
  const CoordinatePacker& pk = in.packer();
  std::vector<int64_t> ext(w), shifts(w);
  for (int c = 0; c < w; ++c) ext[c] = pk.extent(c), shifts[c] = pk.shift(c);

  fk::profile::count_launch();
  fk::parallel_for(0, nblocks, 1, [&](int64_t blo, int64_t bhi) {
    std::vector<std::vector<int32_t>> per_k(K);
    std::vector<int64_t> rel(w);
    for (int64_t b = blo; b < bhi; ++b) {
      for (auto& v : per_k) v.clear();
      int64_t r0 = b * kBlock, r1 = std::min(n_out, r0 + kBlock);
      for (int64_t o = r0; o < r1; ++o) {
        const int32_t* c = out.row(o);
        for (int i = 0; i < w; ++i) rel[i] = static_cast<int64_t>(c[i]) - pk.min(i);
        if (rel[0] < 0 || rel[0] > ext[0]) continue;
        Key128 base = static_cast<Key128>(rel[0]) << shifts[0];
        for (int64_t k = 0; k < K; ++k) {
          const int32_t* off = offsets.data() + k * d;
          Key128 key = base;
          bool inside = true;
          for (int i = 1; i < w; ++i) {
            int64_t v = rel[i] + off[i - 1];
            if (v < 0 || v > ext[i]) {
              inside = false;
              break;
            }
            key |= static_cast<Key128>(v) << shifts[i];
          }
          if (!inside) continue;
          int64_t r = in.find_key(key);
          if (r < 0) continue;
          per_k[k].push_back(static_cast<int32_t>(r));
          per_k[k].push_back(static_cast<int32_t>(o));
        }
      }
      auto& f = found[b];
      f.clear();
      for (int64_t k = 0; k < K; ++k) {
        counts[b * K + k] = static_cast<int64_t>(per_k[k].size() / 2);
        f.insert(f.end(), per_k[k].begin(), per_k[k].end());
      }
    }
  });
  // Placement: offset-major, then block order.
  std::vector<int64_t> start(static_cast<size_t>(nblocks * K));
  int64_t total = 0;
  for (int64_t k = 0; k < K; ++k) {
    m->offset_begin[k] = total;
    for (int64_t b = 0; b < nblocks; ++b) {
      start[b * K + k] = total;
      total += counts[b * K + k];
    }
  }
  m->offset_begin[K] = total;
  m->in_rows.resize(total);
  m->out_rows.resize(total);
  fk::parallel_for(0, nblocks, 4, [&](int64_t blo, int64_t bhi) {
    for (int64_t b = blo; b < bhi; ++b) {
      const int32_t* src = found[b].data();
      for (int64_t k = 0; k < K; ++k) {
        int64_t s = start[b * K + k];
        for (int64_t j = 0; j < counts[b * K + k]; ++j, src += 2) {
          m->in_rows[s + j] = src[0];
          m->out_rows[s + j] = src[1];
        }
      }
    }
  });
  return m;
}

}  // namespace minkowski
