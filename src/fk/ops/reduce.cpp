#include "fk/ops/reduce.h"

#include "fk/autograd.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/cpu/dispatch.h"
#include "fk/ops/cpu/loops.h"
#include "fk/ops/view.h"
#include "fk/profile.h"

namespace fk {
namespace {

struct ReducePlan {
  Dims out_shape;       // with keepdim applied
  Dims keep_shape;      // reduced dims as size 1
  Dims order;           // permutation: kept dims first, reduced dims last
  int64_t outer = 1, inner = 1;
};

ReducePlan plan_reduce(const Tensor& t, const Dims& dims, bool keepdim, const char* op) {
  int n = t.dim();
  bool reduced[kMaxDims] = {};
  if (dims.empty()) {
    for (int i = 0; i < n; ++i) reduced[i] = true;
  } else {
    for (int64_t d : dims) {
      int w = wrap_dim(d, n, op);
      FK_CHECK(!reduced[w], op, "distinct dimensions", dims.str());
      reduced[w] = true;
    }
  }
  ReducePlan p;
  Dims kept_order, red_order;
  for (int i = 0; i < n; ++i) {
    if (reduced[i]) {
      red_order.push_back(i);
      p.inner *= t.shape()[i];
      p.keep_shape.push_back(1);
      if (keepdim) p.out_shape.push_back(1);
    } else {
      kept_order.push_back(i);
      p.outer *= t.shape()[i];
      p.keep_shape.push_back(t.shape()[i]);
      p.out_shape.push_back(t.shape()[i]);
    }
  }
  p.order = kept_order;
  for (int64_t d : red_order) p.order.push_back(d);
  return p;
}

// Rows of `inner` contiguous elements, one output each, reduced by one thread
// in index order (deterministic for any thread count).
template <typename T, typename Acc, typename F>
void reduce_rows(const T* in, T* out, int64_t outer, int64_t inner, const F& combine, Acc init) {
  int64_t grain = std::max<int64_t>(1, cpu::kElementwiseGrain / std::max<int64_t>(inner, 1));
  parallel_for(0, outer, grain, [&](int64_t lo, int64_t hi) {
    for (int64_t o = lo; o < hi; ++o) {
      const T* row = in + o * inner;
      Acc acc = init;
      for (int64_t i = 0; i < inner; ++i) acc = combine(acc, row[i]);
      out[o] = static_cast<T>(acc);
    }
  });
}

template <typename T>
struct SumAcc {
  using type = T;
};
template <>
struct SumAcc<float> {
  using type = double;
};
template <>
struct SumAcc<c64> {
  using type = c128;
};

Tensor sum_forward(const Tensor& t_in, const Dims& dims, bool keepdim) {
  profile::OpScope scope("sum");
  FK_CHECK(t_in.device().is_cpu(), "sum", "a CPU tensor (CUDA reductions are not built yet)",
           t_in.device().str());
  ReducePlan p = plan_reduce(t_in, dims, keepdim, "sum");
  DType rt = is_integral(t_in.dtype()) ? DType::I64 : t_in.dtype();
  DType ct = compute_type(rt);
  Tensor t = t_in.to(ct).permute(p.order).contiguous();
  Tensor out = empty(p.out_shape, {ct, t.device()});
  cpu::visit_numeric(ct, "sum", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Acc = typename SumAcc<T>::type;
    reduce_rows<T, Acc>(t.data<T>(), out.data<T>(), p.outer, p.inner,
                        [](Acc a, T v) { return a + static_cast<Acc>(v); }, Acc(0));
  });
  return out.dtype() == rt ? out : out.to(rt);
}

struct SumBackward : autograd::Node {
  Dims in_shape, keep_shape;
  std::vector<Tensor> apply(std::vector<Tensor>&& g) override {
    return {g[0].reshape(keep_shape).expand(in_shape).contiguous()};
  }
  const char* name() const override { return "SumBackward"; }
};

}  // namespace

Tensor sum(const Tensor& t, const Dims& dims, bool keepdim) {
  Tensor out = sum_forward(t, dims, keepdim);
  if (autograd::needs_grad(t)) {
    auto node = std::make_shared<SumBackward>();
    node->in_shape = t.shape();
    node->keep_shape = plan_reduce(t, dims, keepdim, "sum").keep_shape;
    autograd::record(node, {t}, out);
  }
  return out;
}

Tensor mean(const Tensor& t, const Dims& dims, bool keepdim) {
  ReducePlan p = plan_reduce(t, dims, keepdim, "mean");
  Tensor s = sum(is_integral(t.dtype()) ? t.to(DType::F32) : t, dims, keepdim);
  return div(s, static_cast<double>(std::max<int64_t>(p.inner, 1)));
}

}  // namespace fk
