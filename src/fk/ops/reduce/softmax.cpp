#include "fk/ops/reduce/softmax.h"

#include <array>
#include <cmath>
#include <limits>

#include "fk/autograd.h"
#include "fk/cpu_isa.h"
#include "fk/cuda/kernels.h"
#include "fk/factory.h"
#include "fk/ops/cpu/dispatch.h"
#include "fk/ops/cpu/exp_shifted.h"
#include "fk/ops/cpu/extrema.h"
#include "fk/ops/cpu/reduce_block.h"
#include "fk/ops/cuda_dispatch.h"
#include "fk/ops/reduce/plan.h"
#include "fk/parallel.h"
#include "fk/profile.h"

namespace fk {
namespace {

using cpu::exp_shifted_lanes;
using cpu::exp_shifted_run;
using cpu::kLaneBlock;
using cpu::reduce_block;
using cpu::SumAcc;
using detail::in_inexact_type;
using detail::keep;
using detail::Split;
using detail::split_at;

// Calls f(offset, w) for blocks of up to kLaneBlock neighbouring lanes (a, c)
// of a contiguous [A, R, C] block: lane j of the block is the R elements at
// offset + j + r * C. Each lane is handled by one thread; rows of w elements
// are read contiguously, so a leading dim is processed without a transpose.
template <typename F>
void for_each_lane_block(const Split& s, const F& f) {
  const int64_t nc = (s.C + kLaneBlock - 1) / kLaneBlock;
  const int64_t tasks = s.A * nc;
  const int64_t per_task = std::max<int64_t>(1, s.R * std::min(s.C, kLaneBlock));
  const int64_t grain = std::max<int64_t>(1, cpu::kElementwiseGrain / per_task);
  parallel_for(0, tasks, grain, [&](int64_t lo, int64_t hi) {
    for (int64_t task = lo; task < hi; ++task) {
      const int64_t a = task / nc, c0 = (task % nc) * kLaneBlock;
      f(a * s.R * s.C + c0, std::min(s.C, c0 + kLaneBlock) - c0);
    }
  });
}

// y = exp(x - m) / sum exp(x - m) with m the lane's max (or x - m - log sum for
// log_softmax): exp never overflows.
// f32 on an AVX2 CPU takes the vector exp (<= 1 ulp, vec_math.h); the sums
// keep their order, so only the exp's last bit differs between the paths.
template <typename T, bool kLog>
void softmax_kernel(const T* x, T* y, const Split& s) {
  using Acc = typename SumAcc<T>::type;
  const int64_t C = s.C;
  const bool vec = cpu_isa() >= CpuIsa::Avx2;
  for_each_lane_block(s, [&](int64_t off, int64_t w) {
    if (C == 1) {
      // Over the last dim: one lane, a contiguous run. Straight loops over it
      // (the lane loops below would run one element per row); the sum over 8
      // lanes in a fixed order (cpu/lane_sums.h).
      const T* xr = x + off;
      T* yr = y + off;
      T m = -std::numeric_limits<T>::infinity();
      if (vec) {
        bool nan = false;  // a NaN makes the row NaN through its exp
        m = cpu::avx2::max_ignoring_nan_run(xr, s.R, &nan);
      } else {
        for (int64_t r = 0; r < s.R; ++r) m = m < xr[r] ? xr[r] : m;  // std::max
      }
      // An all -inf row shifts by 0 (not inf - inf); a +inf keeps its shift,
      // so the row is NaN as torch's (a 0 shift gave 0s around a NaN).
      if (m == -std::numeric_limits<T>::infinity()) m = T(0);
      const Acc total = exp_shifted_run<T, !kLog>(xr, yr, s.R, m, vec);
      const T k = kLog ? m + static_cast<T>(std::log(total)) : static_cast<T>(1.0 / total);
      for (int64_t r = 0; r < s.R; ++r) {
        if constexpr (kLog) {
          yr[r] = xr[r] - k;
        } else {
          yr[r] *= k;
        }
      }
      return;
    }
    std::array<T, kLaneBlock> m{};  // {}: GCC cannot see that lanes < w are all set
    std::array<Acc, kLaneBlock> total;
    for (int64_t j = 0; j < w; ++j) {
      m[j] = -std::numeric_limits<T>::infinity();
      total[j] = 0;
    }
    for (int64_t r = 0; r < s.R; ++r) {
      const T* xr = x + off + r * C;
      for (int64_t j = 0; j < w; ++j) m[j] = std::max(m[j], xr[j]);
    }
    for (int64_t j = 0; j < w; ++j) {
      if (m[j] == -std::numeric_limits<T>::infinity()) m[j] = T(0);  // all -inf: not inf - inf
    }
    exp_shifted_lanes<T, !kLog>(x + off, y + off, s.R, C, w, m.data(), total.data(), vec);
    std::array<T, kLaneBlock> k;  // log_softmax: the shift m + log(total); softmax: 1 / total
    for (int64_t j = 0; j < w; ++j) {
      k[j] = kLog ? m[j] + static_cast<T>(std::log(total[j])) : static_cast<T>(1.0 / total[j]);
    }
    for (int64_t r = 0; r < s.R; ++r) {
      const T* xr = x + off + r * C;
      T* yr = y + off + r * C;
      for (int64_t j = 0; j < w; ++j) {
        if constexpr (kLog) {
          yr[j] = xr[j] - k[j];
        } else {
          yr[j] *= k[j];
        }
      }
    }
  });
}

// softmax: gx = y (g - sum(g y)); log_softmax: gx = g - exp(y) sum(g).
template <typename T, bool kLog>
void softmax_backward_kernel(const T* g, const T* y, T* gx, const Split& s) {
  using Acc = typename SumAcc<T>::type;
  const int64_t C = s.C;
  for_each_lane_block(s, [&](int64_t off, int64_t w) {
    std::array<Acc, kLaneBlock> total;
    for (int64_t j = 0; j < w; ++j) total[j] = 0;
    for (int64_t r = 0; r < s.R; ++r) {
      const T* gr = g + off + r * C;
      const T* yr = y + off + r * C;
      for (int64_t j = 0; j < w; ++j) {
        total[j] +=
            kLog ? static_cast<Acc>(gr[j]) : static_cast<Acc>(gr[j]) * static_cast<Acc>(yr[j]);
      }
    }
    std::array<T, kLaneBlock> tot;
    for (int64_t j = 0; j < w; ++j) tot[j] = static_cast<T>(total[j]);
    for (int64_t r = 0; r < s.R; ++r) {
      const T* gr = g + off + r * C;
      const T* yr = y + off + r * C;
      T* out = gx + off + r * C;
      for (int64_t j = 0; j < w; ++j) {
        out[j] = kLog ? gr[j] - std::exp(yr[j]) * tot[j] : yr[j] * (gr[j] - tot[j]);
      }
    }
  });
}

// CUDA: the softmax dim moved last (one row per block), then moved back.
Tensor softmax_cuda(const Tensor& t, const Tensor* grad, int d, bool log) {
  Tensor x = t.detach().transpose(d, -1).contiguous();
  Tensor y = empty(x.shape(), {x.dtype(), x.device()});
  int64_t inner = x.dim() ? x.shape()[x.dim() - 1] : 1, outer = inner ? x.numel() / inner : 0;
  if (grad) {
    Tensor g = grad->to(x.dtype()).transpose(d, -1).contiguous();
    cuda::launch_softmax_backward_lastdim(static_cast<int>(x.dtype()), g.data_ptr(), x.data_ptr(),
                                          y.data_ptr(), outer, inner, log, cuda_ops::stream_of(x));
  } else {
    cuda::launch_softmax_lastdim(static_cast<int>(x.dtype()), x.data_ptr(), y.data_ptr(), outer,
                                 inner, log, cuda_ops::stream_of(x));
  }
  cuda_ops::launched(x);
  return y.transpose(d, -1).contiguous();
}

Tensor softmax_forward(const Tensor& t, int d, bool log) {
  profile::OpScope scope(log ? "log_softmax" : "softmax");
  if (t.device().is_cuda()) return softmax_cuda(t, nullptr, d, log);
  Tensor x = t.detach().contiguous();
  Tensor y = empty(x.shape(), {x.dtype(), x.device()});
  Split s = split_at(x.shape(), d);
  cpu::visit_float(x.dtype(), log ? "log_softmax" : "softmax", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (log) {
      softmax_kernel<T, true>(x.data<T>(), y.data<T>(), s);
    } else {
      softmax_kernel<T, false>(x.data<T>(), y.data<T>(), s);
    }
  });
  return y;
}

Tensor softmax_backward(const Tensor& g_in, const Tensor& y_in, int d, bool log) {
  profile::OpScope scope(log ? "log_softmax_backward" : "softmax_backward");
  if (y_in.device().is_cuda()) return softmax_cuda(y_in, &g_in, d, log);
  Tensor y = y_in.contiguous();
  Tensor g = g_in.to(y.dtype()).contiguous();
  Tensor gx = empty(y.shape(), {y.dtype(), y.device()});
  Split s = split_at(y.shape(), d);
  cpu::visit_float(y.dtype(), "softmax_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (log) {
      softmax_backward_kernel<T, true>(g.data<T>(), y.data<T>(), gx.data<T>(), s);
    } else {
      softmax_backward_kernel<T, false>(g.data<T>(), y.data<T>(), gx.data<T>(), s);
    }
  });
  return gx;
}

struct SoftmaxBackward : autograd::Node {
  autograd::SavedTensor out;
  int dim = 0;
  bool log = false;
  std::vector<Tensor> apply(std::vector<Tensor>&& g) override {
    return {softmax_backward(g[0], out.unpack(name()), dim, log)};
  }
  const char* name() const override { return log ? "LogSoftmaxBackward" : "SoftmaxBackward"; }
  void for_each_saved(const std::function<void(autograd::SavedTensor&)>& fn) override { fn(out); }
};

Tensor softmax_impl(const Tensor& t, int64_t dim, bool log) {
  const char* op = log ? "log_softmax" : "softmax";
  int d = wrap_dim(dim, t.dim(), op);
  FK_CHECK(!is_complex(t.dtype()), op, "a real dtype", name(t.dtype()));
  if (auto r = in_inexact_type(t, [&](const Tensor& c) { return softmax_impl(c, dim, log); }))
    return *r;
  Tensor out = softmax_forward(t, d, log);
  if (autograd::needs_grad(t)) {
    auto node = std::make_shared<SoftmaxBackward>();
    node->out = out.detach();
    node->dim = d;
    node->log = log;
    autograd::record(node, {t}, out);
  }
  return out;
}

}  // namespace

Tensor softmax(const Tensor& t, int64_t dim) {
  return softmax_impl(t, dim, false);
}
Tensor log_softmax(const Tensor& t, int64_t dim) {
  return softmax_impl(t, dim, true);
}

Tensor softmax_backward(const Tensor& g, const Tensor& out, int64_t dim) {
  return softmax_backward(g, out.detach(), wrap_dim(dim, out.dim(), "softmax_backward"), false);
}
Tensor log_softmax_backward(const Tensor& g, const Tensor& out, int64_t dim) {
  return softmax_backward(g, out.detach(), wrap_dim(dim, out.dim(), "log_softmax_backward"), true);
}

}  // namespace fk
