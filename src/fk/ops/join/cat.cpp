#include "fk/ops/join/cat.h"

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

Tensor grad_as(const Tensor& g, DType dtype) {
  Tensor r = g;
  if (is_complex(r.dtype()) && !is_complex(dtype)) r = r.real();
  return r.dtype() == dtype ? r : r.to(dtype);
}

// The pieces of g along dim for the inputs `need` names.
std::vector<Tensor> cat_pieces(const Tensor& g, int64_t dim, const std::vector<int64_t>& sizes,
                               const std::vector<DType>& dtypes, const std::vector<bool>& need) {
  std::vector<Tensor> out(sizes.size());
  int64_t at = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (need[i]) out[i] = grad_as(g.narrow(dim, at, sizes[i]), dtypes[i]);
    at += sizes[i];
  }
  return out;
}

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

struct CatBackward : autograd::Node {
  int64_t dim = 0;
  std::vector<int64_t> sizes;
  std::vector<DType> dtypes;
  std::vector<Tensor> apply(std::vector<Tensor>&& g) override {
    std::vector<bool> need(sizes.size());
    for (size_t i = 0; i < sizes.size(); ++i) need[i] = next[i].fn != nullptr;
    return cat_pieces(g[0], dim, sizes, dtypes, need);
  }
  const char* name() const override { return "CatBackward"; }
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
             "tensor " + fk::to_text(i) + " on " + t.device().str());
    bool same = t.dim() == first.dim();
    for (int k = 0; same && k < t.dim(); ++k) same = k == d || t.size(k) == shape[k];
    if (!same) {
      Dims want = shape;
      std::string w = "[";
      for (int k = 0; k < want.size(); ++k) {
        w += (k ? ", " : "") + (k == d ? std::string("*") : std::to_string(want[k]));
      }
      throw Error("cat", "tensors of shape " + w + "] (any size at dim " + fk::to_text(d) + ")",
                  "tensor " + fk::to_text(i) + " of shape " + t.shape().str());
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
             "tensor " + fk::to_text(i) + " of shape " + ts[i].shape().str());
    parts.push_back(ts[i].unsqueeze(d));
  }
  return cat(parts, d);
}

std::vector<Tensor> split(const Tensor& t, int64_t size, int64_t dim) {
  FK_CHECK(t.dim() >= 1, "split", "a tensor with at least 1 dimension", "a 0-dim tensor");
  const int d = wrap_dim(dim, t.dim(), "split");
  const int64_t n = t.size(d);
  FK_CHECK(size > 0, "split", "a chunk size > 0", fk::to_text(size));
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
    FK_CHECK(s >= 0, "split", "sizes >= 0", fk::to_text(s));
    total += s;
    list += (list.empty() ? "" : ", ") + std::to_string(s);
  }
  FK_CHECK(total == t.size(d), "split",
           "sizes summing to " + fk::to_text(t.size(d)) + " (dim " + fk::to_text(d) + ")",
           "sizes [" + list + "] summing to " + fk::to_text(total));
  std::vector<Tensor> out;
  int64_t at = 0;
  for (int64_t s : sizes) {
    out.push_back(t.narrow(d, at, s));
    at += s;
  }
  return out;
}

std::vector<Tensor> cat_backward(const Tensor& g, int64_t dim, const std::vector<int64_t>& sizes,
                                 const std::vector<DType>& dtypes) {
  FK_CHECK(sizes.size() == dtypes.size(), "cat_backward", "one dtype per size",
           fk::to_text(dtypes.size()) + " dtypes for " + fk::to_text(sizes.size()) + " sizes");
  const int d = wrap_dim(dim, g.dim(), "cat_backward");
  return cat_pieces(g, d, sizes, dtypes, std::vector<bool>(sizes.size(), true));
}

}  // namespace fk
