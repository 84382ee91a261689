#include "fk/ops/view.h"

#include <algorithm>
#include <optional>
#include <string>

#include "fk/autograd.h"
#include "fk/factory.h"
#include "fk/ops/copy.h"
#include "fk/profile.h"

namespace fk {
namespace {

Tensor restride(const Tensor& t, const Dims& shape, const Dims& strides, int64_t offset) {
  profile::count_view();
  return make_tensor(t.storage(), t.dtype(), shape, strides, offset);
}

// The element count of `shape` (sizes >= 0), refused where the product of its
// sizes, 0s counted as 1 as contiguous strides count them, passes int64: a
// wrapped count let [2, 2^62 + 1, 4] view 8 elements, reaching far past them.
int64_t counted_elements(const Dims& shape, const char* where) {
  int64_t span = 1;
  bool empty = false;
  for (int64_t d : shape) {
    empty = empty || d == 0;
    FK_CHECK(!__builtin_mul_overflow(span, std::max<int64_t>(d, 1), &span), where,
             "sizes whose product fits in 64 bits", shape.str());
  }
  return empty ? 0 : span;
}

Dims infer_shape(const Dims& shape, int64_t numel, const char* where) {
  Dims out = shape;
  int infer = -1;
  for (int i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      FK_CHECK(infer < 0, where, "at most one -1 in the shape", shape.str());
      infer = i;
      out[i] = 1;
    } else {
      FK_CHECK(out[i] >= 0, where, "sizes >= 0 or -1", shape.str());
    }
  }
  if (infer >= 0) {
    const int64_t known = counted_elements(out, where);
    FK_CHECK(known != 0 && numel % known == 0, where,
             "a shape compatible with " + fk::to_text(numel) + " elements", shape.str());
    out[infer] = numel / known;
  }
  FK_CHECK(counted_elements(out, where) == numel, where,
           "a shape with " + fk::to_text(numel) + " elements", shape.str());
  return out;
}

struct ReshapeBackward : autograd::Node {
  Dims src_shape;
  std::vector<Tensor> apply(std::vector<Tensor>&& g) override {
    return {reshape_backward(g[0], src_shape)};
  }
  const char* name() const override { return "ReshapeBackward"; }
};

struct PermuteBackward : autograd::Node {
  Dims inverse;
  std::vector<Tensor> apply(std::vector<Tensor>&& g) override { return {g[0].permute(inverse)}; }
  const char* name() const override { return "PermuteBackward"; }
};

struct ExpandBackward : autograd::Node {
  Dims src_shape;
  std::vector<Tensor> apply(std::vector<Tensor>&& g) override {
    return {expand_backward(g[0], src_shape)};
  }
  const char* name() const override { return "ExpandBackward"; }
};

// Gradient of a strided sub-view: zeros of the source's shape with the
// incoming gradient written through the same view geometry.
struct SubviewBackward : autograd::Node {
  Dims src_shape;
  Dims shape, strides;  // the view, relative to a contiguous source
  int64_t offset = 0;
  std::vector<Tensor> apply(std::vector<Tensor>&& g) override {
    Tensor z = zeros(src_shape, {g[0].dtype(), g[0].device()});
    Tensor v = as_strided(z, shape, strides, offset);
    v.copy_(g[0]);
    return {z};
  }
  const char* name() const override { return "SubviewBackward"; }
};

// g written into the real or imaginary parts of complex zeros.
Tensor complex_part_backward(const Tensor& g, DType src_dtype, bool imag_part) {
  Tensor z = zeros(g.shape(), {src_dtype, g.device()});
  Tensor part = imag_part ? fk::imag(z) : fk::real(z);
  part.copy_(g);
  return z;
}

struct ComplexPartBackward : autograd::Node {
  bool imag_part = false;
  DType src_dtype;
  std::vector<Tensor> apply(std::vector<Tensor>&& g) override {
    return {complex_part_backward(g[0], src_dtype, imag_part)};
  }
  const char* name() const override { return "ComplexPartBackward"; }
};

template <typename NodeT>
Tensor record_view(const Tensor& in, Tensor out, std::shared_ptr<NodeT> node) {
  if (autograd::needs_grad(in)) autograd::record(node, {in}, out);
  return out;
}

// A sub-view (narrow/slice/select): geometry relative to a contiguous source so
// the backward can rebuild it on a fresh zeros tensor.
Tensor record_subview(const Tensor& in, Tensor out, const Dims& rel_strides, int64_t rel_offset) {
  if (!autograd::needs_grad(in)) return out;
  auto node = std::make_shared<SubviewBackward>();
  node->src_shape = in.shape();
  node->shape = out.shape();
  node->strides = rel_strides;
  node->offset = rel_offset;
  autograd::record(node, {in}, out);
  return out;
}

}  // namespace

Tensor as_strided(const Tensor& t, const Dims& shape, const Dims& strides, int64_t offset) {
  const char* where = "as_strided";
  FK_CHECK(t.defined(), where, "a tensor", "an undefined one");
  FK_CHECK(shape.size() == strides.size(), where, "one stride per size",
           shape.str() + " and strides " + strides.str());
  FK_CHECK(offset >= 0, where, "an offset >= 0", fk::to_text(offset));
  int64_t last = offset;  // the furthest element the view reaches
  bool empty = false;
  for (int i = 0; i < shape.size(); ++i) {
    FK_CHECK(shape[i] >= 0 && strides[i] >= 0, where, "sizes and strides >= 0",
             shape.str() + " and strides " + strides.str());
    empty = empty || shape[i] == 0;
    int64_t reach = 0;
    FK_CHECK(!__builtin_mul_overflow(shape[i] > 0 ? shape[i] - 1 : 0, strides[i], &reach) &&
                 !__builtin_add_overflow(last, reach, &last),
             where, "a view whose extent fits 63 bits",
             shape.str() + " and strides " + strides.str());
  }
  const int64_t elements = static_cast<int64_t>(t.storage()->nbytes / t.itemsize());
  FK_CHECK(empty || last < elements, where,
           "a view within the tensor's storage (" + fk::to_text(elements) + " elements)",
           "one reaching element " + fk::to_text(last));
  // Its elements may repeat (overlapping windows): no gradient is recorded
  // for it, so one through it would be silently wrong.
  FK_CHECK(!autograd::needs_grad(t), where,
           "a tensor that needs no gradient (as_strided is not differentiable; narrow, slice, "
           "select, expand and unfold are)",
           "one that requires grad");
  return restride(t, shape, strides, offset);
}

namespace {

// The strides that read a strided tensor (shape, strides; elements > 0) as
// `to` in row-major order without a copy, if any (torch's rule): `to` must
// split or merge only runs of dims that are contiguous with each other (a
// run: each dim's stride is the next one's times its size; size-1 dims join
// any run). Walking both shapes from the last dim, each run of the input is
// matched by consecutive dims of `to` covering the same element count.
std::optional<Dims> view_strides(const Dims& shape, const Dims& strides, const Dims& to) {
  Dims out = Dims::filled(to.size(), 0);
  int v = to.size() - 1;
  int64_t base = strides[shape.size() - 1], run = 1, covered = 1;
  for (int d = shape.size() - 1; d >= 0; --d) {
    run *= shape[d];
    const bool run_ends = d == 0 || (shape[d - 1] != 1 && strides[d - 1] != run * base);
    if (!run_ends) continue;
    while (v >= 0 && (covered < run || to[v] == 1)) {
      out[v] = covered * base;
      covered *= to[v];
      --v;
    }
    if (covered != run) return std::nullopt;
    if (d > 0) {
      base = strides[d - 1];
      run = covered = 1;
    }
  }
  if (v != -1) return std::nullopt;
  return out;
}

}  // namespace

Tensor view(const Tensor& t, const Dims& shape) {
  Dims s = infer_shape(shape, t.numel(), "view");
  // No elements, no layout to keep: an empty tensor of any strides (a
  // transposed or stacked one) views as any empty shape, as in torch. A
  // strided one views where its layout allows (a transposed tensor merged
  // along its untouched dims, a narrowed one along the dims before the cut).
  Dims st = contiguous_strides(s);
  if (!t.is_contiguous() && t.numel() > 0) {
    const std::optional<Dims> kept = view_strides(t.shape(), t.strides(), s);
    FK_CHECK(
        kept.has_value(), "view",
        "a shape this layout can be read as without a copy (use reshape to copy)",
        "shape " + s.str() + " of shape " + t.shape().str() + " with strides " + t.strides().str());
    st = *kept;
  }
  auto node = std::make_shared<ReshapeBackward>();
  node->src_shape = t.shape();
  return record_view(t, restride(t, s, st, t.offset()), node);
}

Tensor reshape(const Tensor& t, const Dims& shape) {
  if (t.is_contiguous()) return view(t, shape);
  Dims s = infer_shape(shape, t.numel(), "reshape");
  return view(contiguous(t), s);
}

Tensor permute(const Tensor& t, const Dims& order) {
  int n = t.dim();
  FK_CHECK(order.size() == n, "permute", fk::to_text(n) + " dimensions", order.str());
  Dims shape = t.shape(), strides = t.strides(), inverse = Dims::filled(n, -1);
  for (int i = 0; i < n; ++i) {
    int d = wrap_dim(order[i], n, "permute");
    FK_CHECK(inverse[d] < 0, "permute", "a permutation of the dimensions", order.str());
    inverse[d] = i;
    shape[i] = t.shape()[d];
    strides[i] = t.strides()[d];
  }
  auto node = std::make_shared<PermuteBackward>();
  node->inverse = inverse;
  return record_view(t, restride(t, shape, strides, t.offset()), node);
}

Tensor transpose(const Tensor& t, int64_t d0, int64_t d1) {
  int n = t.dim();
  Dims order = Dims::filled(n, 0);
  for (int i = 0; i < n; ++i) order[i] = i;
  int a = wrap_dim(d0, n, "transpose"), b = wrap_dim(d1, n, "transpose");
  if (n == 0) return t;
  std::swap(order[a], order[b]);
  return permute(t, order);
}

Tensor expand(const Tensor& t, const Dims& shape) {
  int n = shape.size();
  FK_CHECK(n >= t.dim(), "expand", "at least " + fk::to_text(t.dim()) + " dimensions", shape.str());
  Dims out = shape, strides = Dims::filled(n, 0);
  for (int i = 0; i < n; ++i) {
    int src = t.dim() - n + i;
    int64_t want = shape[i];
    if (src < 0) {
      FK_CHECK(want >= 0, "expand", "explicit sizes for new leading dims", shape.str());
      continue;
    }
    int64_t have = t.shape()[src];
    if (want == -1) want = have;
    FK_CHECK(want >= 0, "expand", "sizes >= 0 or -1", shape.str());
    out[i] = want;
    if (have == want) {
      strides[i] = t.strides()[src];
    } else {
      FK_CHECK(have == 1, "expand",
               "size 1 where sizes differ (" + t.shape().str() + " to " + shape.str() + ")",
               "size " + fk::to_text(have) + " at dim " + fk::to_text(src));
    }
  }
  counted_elements(out, "expand");
  if (out == t.shape()) return t;
  auto node = std::make_shared<ExpandBackward>();
  node->src_shape = t.shape();
  return record_view(t, restride(t, out, strides, t.offset()), node);
}

Tensor squeeze(const Tensor& t) {
  Dims shape, strides;
  for (int i = 0; i < t.dim(); ++i) {
    if (t.shape()[i] != 1) {
      shape.push_back(t.shape()[i]);
      strides.push_back(t.strides()[i]);
    }
  }
  auto node = std::make_shared<ReshapeBackward>();
  node->src_shape = t.shape();
  return record_view(t, restride(t, shape, strides, t.offset()), node);
}

Tensor squeeze(const Tensor& t, int64_t dim) {
  int d = wrap_dim(dim, t.dim(), "squeeze");
  if (t.dim() == 0 || t.shape()[d] != 1) return t;
  Dims shape = t.shape(), strides = t.strides();
  shape.erase(d);
  strides.erase(d);
  auto node = std::make_shared<ReshapeBackward>();
  node->src_shape = t.shape();
  return record_view(t, restride(t, shape, strides, t.offset()), node);
}

Tensor unsqueeze(const Tensor& t, int64_t dim) {
  int d = wrap_dim(dim, t.dim() + 1, "unsqueeze");
  Dims shape = t.shape(), strides = t.strides();
  int64_t st = d < t.dim() ? t.strides()[d] * t.shape()[d] : 1;
  shape.insert(d, 1);
  strides.insert(d, st);
  auto node = std::make_shared<ReshapeBackward>();
  node->src_shape = t.shape();
  return record_view(t, restride(t, shape, strides, t.offset()), node);
}

// slice, narrow and select index a dim: a 0-d tensor has none (wrap_dim
// takes dim 0 of one, for reductions; select then erased a dim it lacked).
namespace {
void check_has_dims(const Tensor& t, const char* op) {
  FK_CHECK(t.dim() > 0, op, "a tensor with at least one dim", "a 0-d tensor");
}
}  // namespace

Tensor slice(const Tensor& t, int64_t dim, int64_t start, int64_t end, int64_t step) {
  check_has_dims(t, "slice");
  int d = wrap_dim(dim, t.dim(), "slice");
  FK_CHECK(step > 0, "slice", "a positive step", fk::to_text(step));
  int64_t n = t.shape()[d];
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, start, n);
  int64_t len = (end - start + step - 1) / step;
  Dims shape = t.shape(), strides = t.strides();
  shape[d] = len;
  strides[d] *= step;
  Tensor out = restride(t, shape, strides, t.offset() + start * t.strides()[d]);
  Dims rel = contiguous_strides(t.shape());
  int64_t rel_offset = start * rel[d];
  rel[d] *= step;
  return record_subview(t, out, rel, rel_offset);
}

Tensor narrow(const Tensor& t, int64_t dim, int64_t start, int64_t length) {
  check_has_dims(t, "narrow");
  int d = wrap_dim(dim, t.dim(), "narrow");
  int64_t n = t.shape()[d];
  const int64_t given = start;  // the error names the caller's start, not its wrap
  if (start < 0) start += n;
  FK_CHECK(start >= 0 && length >= 0 && start + length <= n, "narrow",
           "a range inside [0, " + fk::to_text(n) + ")",
           "start " + fk::to_text(given) + ", length " + fk::to_text(length));
  return slice(t, d, start, start + length, 1);
}

Tensor select(const Tensor& t, int64_t dim, int64_t index) {
  check_has_dims(t, "select");
  int d = wrap_dim(dim, t.dim(), "select");
  int64_t n = t.shape()[d];
  FK_CHECK(index >= -n && index < n, "select",
           "an index in [" + fk::to_text(-n) + ", " + fk::to_text(n) + ")", fk::to_text(index));
  if (index < 0) index += n;
  Dims shape = t.shape(), strides = t.strides();
  shape.erase(d);
  strides.erase(d);
  Tensor out = restride(t, shape, strides, t.offset() + index * t.strides()[d]);
  Dims rel = contiguous_strides(t.shape());
  int64_t rel_offset = index * rel[d];
  rel.erase(d);
  return record_subview(t, out, rel, rel_offset);
}

namespace {
Tensor complex_part(const Tensor& t, bool imag_part) {
  DType r = real_type(t.dtype());
  Dims strides = t.strides();
  for (int i = 0; i < strides.size(); ++i) strides[i] *= 2;
  profile::count_view();
  Tensor out =
      make_tensor(t.storage(), r, t.shape(), strides, t.offset() * 2 + (imag_part ? 1 : 0));
  if (autograd::needs_grad(t)) {
    auto node = std::make_shared<ComplexPartBackward>();
    node->imag_part = imag_part;
    node->src_dtype = t.dtype();
    autograd::record(node, {t}, out);
  }
  return out;
}
}  // namespace

Tensor real(const Tensor& t) {
  return is_complex(t.dtype()) ? complex_part(t, false) : t;
}

Tensor imag(const Tensor& t) {
  FK_CHECK(is_complex(t.dtype()), "imag", "a complex tensor", name(t.dtype()));
  return complex_part(t, true);
}

Tensor reshape_backward(const Tensor& g, const Dims& in_shape) {
  return g.reshape(in_shape);
}

Tensor permute_backward(const Tensor& g, const Dims& order) {
  const int n = g.dim();
  FK_CHECK(order.size() == n, "permute_backward", fk::to_text(n) + " dimensions", order.str());
  Dims inverse = Dims::filled(n, 0);
  for (int i = 0; i < n; ++i) inverse[wrap_dim(order[i], n, "permute_backward")] = i;
  return g.permute(inverse);
}

Tensor expand_backward(const Tensor& g, const Dims& in_shape) {
  return autograd::sum_to(g, in_shape);
}

Tensor slice_backward(const Tensor& g, const Dims& in_shape, int64_t dim, int64_t start,
                      int64_t end, int64_t step) {
  Tensor z = zeros(in_shape, {g.dtype(), g.device()});
  z.slice(dim, start, end, step).copy_(g);
  return z;
}

Tensor select_backward(const Tensor& g, const Dims& in_shape, int64_t dim, int64_t index) {
  Tensor z = zeros(in_shape, {g.dtype(), g.device()});
  z.select(dim, index).copy_(g);
  return z;
}

Tensor real_backward(const Tensor& g, DType in_dtype) {
  return is_complex(in_dtype) ? complex_part_backward(g, in_dtype, false) : g;
}

Tensor imag_backward(const Tensor& g, DType in_dtype) {
  FK_CHECK(is_complex(in_dtype), "imag_backward", "a complex input dtype", name(in_dtype));
  return complex_part_backward(g, in_dtype, true);
}

}  // namespace fk
