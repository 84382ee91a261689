// Channelwise (depthwise) convolution: out[o,c] = sum over the map of
// F[i,c] W[k,c], and its gradients (conv_kernel.h); features on a CUDA device
// take conv_channelwise_device.h's kernels, in the same order.
#include <algorithm>
#include <string>
#include <vector>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/profile.h"
#include "minkowski/ops/conv_channelwise_device.h"
#include "minkowski/ops/conv_kernel.h"
#include "minkowski/ops/conv_kernel_common.h"
#include "minkowski/ops/feature_rows.h"

namespace minkowski {

using conv_detail::add_row;
using conv_detail::check_operands;
using conv_detail::kWeightBlock;
using detail::check_same_device;
using detail::compute_dtype;

namespace {

template <typename T>
void cw_forward(const T* F, const T* W, int64_t c, const KernelMap& m, T* out) {
  const RowIndex& idx = m.by_out();
  fk::parallel_for(0, m.out_size, 1024, [&](int64_t lo, int64_t hi) {
    for (int64_t o = lo; o < hi; ++o) {
      T* d = out + o * c;
      for (int64_t j = idx.begin[o]; j < idx.begin[o + 1]; ++j) {
        int64_t p = idx.entries[j].pair;
        int64_t i = m.identity ? p : m.in_rows[p];
        int64_t k = m.identity ? 0
                               : std::upper_bound(m.offset_begin.begin(), m.offset_begin.end(), p) -
                                     m.offset_begin.begin() - 1;
        const T* s = F + i * c;
        const T* w = W + k * c;
        for (int64_t x = 0; x < c; ++x) d[x] += s[x] * w[x];
      }
    }
  });
}

template <typename T>
void cw_backward(const T* G, const T* F, const T* W, int64_t c, const KernelMap& m, T* gin, T* gw) {
  auto offset_of = [&](int64_t p) {
    return m.identity ? int64_t{0}
                      : std::upper_bound(m.offset_begin.begin(), m.offset_begin.end(), p) -
                            m.offset_begin.begin() - 1;
  };
  if (gin) {
    const RowIndex& idx = m.by_in();
    fk::parallel_for(0, m.in_size, 1024, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        T* d = gin + i * c;
        for (int64_t j = idx.begin[i]; j < idx.begin[i + 1]; ++j) {
          int64_t p = idx.entries[j].pair;
          int64_t o = m.identity ? p : m.out_rows[p];
          const T* g = G + o * c;
          const T* w = W + offset_of(p) * c;
          for (int64_t x = 0; x < c; ++x) d[x] += g[x] * w[x];
        }
      }
    });
  }
  if (gw) {
    // Per offset, fixed blocks of pairs summed in block order.
    struct Job {
      int64_t k, p0, p1;
    };
    std::vector<Job> jobs;
    for (int64_t k = 0; k < m.volume; ++k)
      for (int64_t p = m.offset_begin[k]; p < m.offset_begin[k + 1]; p += kWeightBlock)
        jobs.push_back({k, p, std::min(p + kWeightBlock, m.offset_begin[k + 1])});
    int64_t nj = static_cast<int64_t>(jobs.size());
    std::vector<T> part(static_cast<size_t>(nj * c), T(0));
    int64_t grain = m.pairs() * c < (int64_t{1} << 20) ? nj : 1;
    fk::parallel_for(0, nj, grain, [&](int64_t lo, int64_t hi) {
      for (int64_t j = lo; j < hi; ++j) {
        T* d = part.data() + j * c;
        for (int64_t p = jobs[j].p0; p < jobs[j].p1; ++p) {
          int64_t i = m.identity ? p : m.in_rows[p], o = m.identity ? p : m.out_rows[p];
          for (int64_t x = 0; x < c; ++x) d[x] += F[i * c + x] * G[o * c + x];
        }
      }
    });
    for (int64_t j = 0; j < nj; ++j) add_row(gw + jobs[j].k * c, part.data() + j * c, c);
  }
}

}  // namespace

fk::Tensor channelwise_forward(const fk::Tensor& features, const fk::Tensor& weight,
                               const KernelMap& m) {
  const char* where = "minkowski::channelwise_convolution";
  check_operands(where, features, weight, m);
  int64_t c = features.size(1);
  FK_CHECK(weight.dim() == 2 && weight.size(0) == m.volume && weight.size(1) == c, where,
           "a weight of shape (K=" + fk::to_text(m.volume) + ", C=" + fk::to_text(c) + ")",
           weight.shape().str());
  fk::profile::count_launch();
  fk::DType ct = compute_dtype(features.dtype());
  fk::Tensor f = features.to(ct).contiguous(), w = weight.to(ct).contiguous();
  if (f.device().is_cuda()) return device_channelwise_forward(f, w, m).to(features.dtype());
  fk::Tensor out = fk::zeros({m.out_size, c}, {ct});
  if (ct == fk::DType::F32)
    cw_forward<float>(f.data<float>(), w.data<float>(), c, m, out.data<float>());
  else
    cw_forward<double>(f.data<double>(), w.data<double>(), c, m, out.data<double>());
  return out.to(features.dtype());
}

ConvGrads channelwise_backward(const fk::Tensor& grad_out, const fk::Tensor& features,
                               const fk::Tensor& weight, const KernelMap& m, bool need_features,
                               bool need_weight) {
  int64_t c = features.size(1);
  check_same_device(features, grad_out, "minkowski::channelwise_convolution", "the gradient");
  check_same_device(features, weight, "minkowski::channelwise_convolution", "the weight");
  fk::profile::count_launch();
  fk::DType ct = compute_dtype(features.dtype());
  fk::Tensor g = grad_out.to(ct).contiguous(), f = features.to(ct).contiguous(),
             w = weight.to(ct).contiguous();
  ConvGrads r;
  if (f.device().is_cuda()) {
    r = device_channelwise_backward(g, f, w, m, need_features, need_weight);
    if (need_features) r.features = r.features.to(features.dtype());
    if (need_weight) r.weight = r.weight.to(weight.dtype());
    return r;
  }
  fk::Tensor gin = need_features ? fk::zeros({m.in_size, c}, {ct}) : fk::Tensor();
  fk::Tensor gw = need_weight ? fk::zeros(weight.shape(), {ct}) : fk::Tensor();
  if (ct == fk::DType::F32)
    cw_backward<float>(g.data<float>(), f.data<float>(), w.data<float>(), c, m,
                       need_features ? gin.data<float>() : nullptr,
                       need_weight ? gw.data<float>() : nullptr);
  else
    cw_backward<double>(g.data<double>(), f.data<double>(), w.data<double>(), c, m,
                        need_features ? gin.data<double>() : nullptr,
                        need_weight ? gw.data<double>() : nullptr);
  if (need_features) r.features = gin.to(features.dtype());
  if (need_weight) r.weight = gw.to(weight.dtype());
  return r;
}

}  // namespace minkowski
